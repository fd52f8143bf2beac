"""Opens a run's XDMF file in ParaView's readers and glyphs its bodies the documented way
(tools/paraview/gf_bodies.py); every glyph must lie on its body as the HDF5 snapshot describes it
(position, orientation quaternion, dimensions), reach its full extent along each body axis, and
every body must be shown.  pvpython tests/paraview_bodies.py RUN.xmf SNAPSHOT.h5"""
import os
import sys

import numpy as np
from paraview import servermanager as sm
from paraview.simple import XDMFReader, Xdmf3ReaderT
from vtkmodules.util.numpy_support import vtk_to_numpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "paraview"))
import gf_bodies  # noqa: E402

xmf, h5 = sys.argv[1], sys.argv[2]


def points(src, t):
    src.UpdatePipeline(t)
    d = sm.Fetch(src)
    pts = []
    it = d.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        o = it.GetCurrentDataObject()
        if o.GetNumberOfPoints():
            # a copy: the VTK array goes with its data object
            pts.append(np.array(vtk_to_numpy(o.GetPoints().GetData()), dtype=float))
        it.GoToNextItem()
    return np.concatenate(pts) if pts else np.zeros((0, 3))


glyphs = {}
for name, make in (("Xdmf3", lambda: Xdmf3ReaderT(FileName=[xmf])),
                   ("legacy", lambda: XDMFReader(FileNames=[xmf]))):
    reader = make()
    tv = reader.TimestepValues
    t = tv[-1] if isinstance(tv, (list, tuple)) or hasattr(tv, "__len__") else tv
    built = gf_bodies.build(reader)
    glyphs[name] = {k: points(v, t) for k, v in built.items() if k not in ("geometry", "contacts")}
    # The geometry block: the box walls' polygons span the domain exactly.
    geo = built["geometry"]
    geo.UpdatePipeline(t)
    info = geo.GetDataInformation()
    glyphs[name]["geometry_bounds"] = info.GetBounds()
    glyphs[name]["geometry_cells"] = info.GetNumberOfCells()

# h5py only now: it brings its own HDF5 library, which must not serve the XDMF readers
import h5py  # noqa: E402

f = h5py.File(h5, "r")
P = f["particles"]
x, q, dim, shape, radius = (P[k][()] for k in ("position", "orientation", "dimensions",
                                                "shape", "radius"))
M = f["clump_members"]
mx, mr, mid = M["position"][()], M["radius"][()], M["id"][()]
ids = P["id"][()]


def rot(qq):
    w, a, b, c = qq
    return np.array([[1 - 2 * (b * b + c * c), 2 * (a * b - w * c), 2 * (a * c + w * b)],
                     [2 * (a * b + w * c), 1 - 2 * (a * a + c * c), 2 * (b * c - w * a)],
                     [2 * (a * c - w * b), 2 * (b * c + w * a), 1 - 2 * (a * a + b * b)]])


# The full extent along body x, y, z of each kind as its glyph shows it.
def extent(i):
    s, d = shape[i], dim[i]
    if s == 1:
        return np.array([d[0], d[1], d[2]]), "box"
    if s == 0:
        return np.array([d[0]] * 3), "round"
    return np.array([d[0], d[0], d[1] + (d[0] if s == 2 else 0.0)]), "cylinder"


failures = []
lo, hi = f.attrs["box_min"], f.attrs["box_max"]
G = f["geometry"]
for reader, out in glyphs.items():
    b = out.pop("geometry_bounds")
    ncells = out.pop("geometry_cells")
    want = [v for d in range(3) for v in (lo[d], hi[d])]
    print(f"{reader} geometry: {ncells} cells (file {len(G['kind'])}), bounds {b}")
    if ncells != len(G["kind"]) or max(abs(x - y) for x, y in zip(b, want)) > 1e-9:
        failures.append(f"{reader} geometry")
    for code, (name, _) in gf_bodies.KINDS.items():
        idx = np.where(shape == code)[0]
        pts = out[name]
        if len(idx) == 0:
            continue
        reach = {}
        worst = 0.0
        for p in pts:
            i = idx[np.argmin(np.linalg.norm(x[idx] - p, axis=1))]
            b = rot(q[i]).T @ (p - x[i])
            e, kind = extent(i)
            if kind == "box":
                rel = np.abs(b) / e
                out_by = np.max(np.abs(b) - e)
            elif kind == "round":
                rel = np.array([np.linalg.norm(b) / e[0]] * 3)
                out_by = np.linalg.norm(b) - e[0]
            else:
                rad = np.hypot(b[0], b[1])
                rel = np.array([rad / e[0], rad / e[0], abs(b[2]) / e[2]])
                out_by = max(rad - e[0], abs(b[2]) - e[2])
            worst = max(worst, out_by / radius[i])
            reach[i] = np.maximum(reach.get(i, 0.0), rel)
        least = min(np.min(v) for v in reach.values()) if reach else 0.0
        print(f"{reader} {name}: {len(idx)} bodies, {len(reach)} shown, glyph points at most "
              f"{worst:.2g} radii outside, least reach {least:.6f}")
        if len(reach) != len(idx) or worst > 1e-5 or least < 0.999:
            failures.append(f"{reader} {name}")
    # Clumps: every glyph point on some member sphere (members overlap), every member shown.
    pts = out["clumps"]
    bad, shown = 0.0 if len(pts) else 1.0, set()
    for p in pts:
        err = np.abs(np.linalg.norm(mx - p, axis=1) - mr) / mr
        k = int(np.argmin(err))
        bad = max(bad, err[k])
        shown.add(k)
    print(f"{reader} clumps: {len(mr)} member spheres, {len(shown)} shown, radius error {bad:.2g}")
    if len(shown) != len(mr) or bad > 1e-5:
        failures.append(f"{reader} clumps")
for k, c in enumerate(mid):
    i = int(np.where(ids == c)[0][0])
    if shape[i] != 4 or np.linalg.norm(mx[k] - x[i]) + mr[k] > radius[i] * (1 + 1e-9):
        failures.append(f"member {k} outside its clump {c}")
        break
if failures:
    sys.exit("FAILED: " + ", ".join(failures))
print("all bodies shown as they are")
