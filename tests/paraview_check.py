"""Real ParaView (pvpython) on a run's output, as a user would use it (issue 34).

Readers: each of the run's .xmf files (particles, clumps, geometry, contacts) opened on its own
in each of ParaView's three XDMF readers (Xdmf3ReaderS, Xdmf3ReaderT, XDMFReader), shown and
rendered at every frame, then every frame backwards and forwards again; at each frame the data
must hold what the HDF5 snapshot of that time holds (points of the particles and of the clumps'
member spheres, the geometry's points, two per contact), empty snapshots included.

Bodies: tools/paraview/gf_bodies.py in each reader; every body's cells must lie on the body's
surface as the snapshot describes it (sphere, box, capsule with round ends, cylinder, clump
members), reach its full extent along each body axis, carry the body's id, velocity, speed and
shape, and the force chains must be the contacts that carry an impulse.

    pvpython tests/paraview_check.py FILL_DRAIN_DIR MIXED_DIR [--no-render]
"""
import os
import sys

import numpy as np
from paraview import servermanager as sm
from paraview.simple import (Delete, GetActiveViewOrCreate, Hide, Render, Show, XDMFReader,
                             Xdmf3ReaderS, Xdmf3ReaderT)
from vtkmodules.util.numpy_support import vtk_to_numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                                "paraview"))
import gf_bodies  # noqa: E402

fill_drain, mixed = sys.argv[1], sys.argv[2]
render = "--no-render" not in sys.argv
READERS = {"Xdmf3ReaderS": lambda p: Xdmf3ReaderS(FileName=[p]),
           "Xdmf3ReaderT": lambda p: Xdmf3ReaderT(FileName=[p]),
           "XDMFReader": lambda p: XDMFReader(FileNames=[p])}
PARTS = ("", "_clumps", "_geometry", "_contacts")
view = GetActiveViewOrCreate("RenderView") if render else None
failures = []


def times_of(reader):
    tv = reader.TimestepValues
    return list(tv) if hasattr(tv, "__len__") else [tv]


# --- readers: every file, every reader, every frame there and back ----------------------------
seen = {}  # (part, reader) -> [(time, points)]
for part in PARTS:
    path = os.path.join(fill_drain, "run%s.xmf" % part)
    if not os.path.exists(path):
        failures.append("the fill-and-drain run has no %s" % os.path.basename(path))
        continue
    for name, make in READERS.items():
        reader = make(path)
        ts = times_of(reader)
        shown = Show(reader, view) if render else None
        got = []
        for t in ts + ts[::-1] + ts:
            reader.UpdatePipeline(t)
            if render:
                view.ViewTime = t
                Render(view)
            got.append((t, reader.GetDataInformation().GetNumberOfPoints()))
        if part == "":  # Open, Apply shows the bodies with their data
            reader.UpdatePipeline(ts[len(ts) // 3])
            arrays = {reader.PointData[k].Name for k in range(len(reader.PointData))}
            missing = {"velocity", "angular_velocity", "id", "shape", "material"} - arrays
            if missing:
                failures.append("%s run.xmf lacks point data %s" % (name, sorted(missing)))
        seen[(part, name)] = got
        print("%s %s: %d frames there and back, points %s" % (
            name, os.path.basename(path), len(ts), [n for _, n in got[:len(ts)]]), flush=True)
        if render:
            Hide(reader, view)
        Delete(reader)

# --- bodies: gf_bodies.py in each reader ------------------------------------------------------
bodies = {}
for name, make in READERS.items():
    for run in (mixed, fill_drain):
        xmf = os.path.join(run, "run.xmf")
        reader = make(xmf)
        ts = times_of(reader)
        t = ts[-1] if run == mixed else ts[2]  # the fill-and-drain run full, in contact
        out = gf_bodies.build(reader, view)
        got = {}
        for key, src in out.items():
            src.UpdatePipeline(t)
            d = sm.Fetch(src)
            if key != "bodies":  # the geometry and contacts readers' blocks: cells only
                got[key] = (None, None, None, src.GetDataInformation().GetNumberOfCells())
                continue
            cd = d.GetCellData()
            arrays = {cd.GetArrayName(k): np.array(vtk_to_numpy(cd.GetArray(k)))
                      for k in range(cd.GetNumberOfArrays())}
            pts = (np.array(vtk_to_numpy(d.GetPoints().GetData()), float)
                   if d.GetNumberOfPoints() else np.zeros((0, 3)))
            cells = [[d.GetCell(c).GetPointId(k) for k in range(d.GetCell(c).GetNumberOfPoints())]
                     for c in range(d.GetNumberOfCells())]
            got[key] = (pts, cells, arrays, d.GetNumberOfCells())
        if render:
            view.ViewTime = t
            Render(view)
        bodies[(name, run)] = (t, got)

# h5py only now: it brings its own HDF5 library, which must not serve the XDMF readers
import builtins  # noqa: E402

import h5py  # noqa: E402

# ParaView runs a Programmable Filter's script in this module's namespace, whose numpy
# algorithms then shadow the builtins of these names
max, min, abs = builtins.max, builtins.min, builtins.abs


def snapshot_at(run, t):
    for f in sorted(os.listdir(run)):
        if f.endswith(".h5") and f.startswith("run_"):
            h = h5py.File(os.path.join(run, f), "r")
            if abs(float(h.attrs["time"]) - t) <= 1e-12 * max(1.0, abs(t)):
                return h
            h.close()
    raise SystemExit("no snapshot at t = %r in %s" % (t, run))


def rows(h, dset):
    return h[dset].shape[0] if dset in h else 0


WANT = {"": lambda h: int(h.attrs["particle_count"]),
        "_clumps": lambda h: rows(h, "clump_members/position"),
        "_geometry": lambda h: rows(h, "geometry/position"),
        "_contacts": lambda h: 2 * rows(h, "contacts/pair")}
states = set()
for (part, name), got in seen.items():
    for t, n in got:
        h = snapshot_at(fill_drain, t)
        want = WANT[part](h)
        states.add((part, want > 0))
        h.close()
        if n != want:
            failures.append("%s run%s.xmf at t = %g: %d points, the snapshot has %d" % (
                name, part, t, n, want))
            break
# the run must have shown every state: each part empty at some frame and not at another
for part in PARTS:
    for full in (False, True):
        if (part, full) not in states:
            failures.append("the fill-and-drain run never has %s run%s.xmf" % (
                "a full" if full else "an empty", part))


def rot(q):
    w, a, b, c = q
    return np.array([[1 - 2 * (b * b + c * c), 2 * (a * b - w * c), 2 * (a * c + w * b)],
                     [2 * (a * b + w * c), 1 - 2 * (a * a + c * c), 2 * (b * c - w * a)],
                     [2 * (a * c - w * b), 2 * (b * c + w * a), 1 - 2 * (a * a + b * b)]])


def off_surface(shape, d, b):
    """How far body-frame points b lie off the surface of a body (shape, dimensions d), and the
    body's half extent along x, y, z."""
    r = d[0]
    if shape == 0:
        return np.abs(np.linalg.norm(b, axis=1) - r), np.array([r, r, r])
    if shape == 1:
        inside = np.max(np.abs(b) / d, axis=1)
        return np.abs(inside - 1) * np.min(d), d
    rho, z, h = np.hypot(b[:, 0], b[:, 1]), b[:, 2], d[1]
    if shape == 2:
        zc = np.clip(z, -h, h)
        return np.abs(np.hypot(rho, z - zc) - r), np.array([r, r, h + r])
    side = np.where(np.abs(z) <= h * (1 + 1e-12), np.abs(rho - r), np.inf)
    cap = np.where(rho <= r * (1 + 1e-12), np.abs(np.abs(z) - h), np.inf)
    return np.minimum(side, cap), np.array([r, r, h])


for (name, run), (t, got) in bodies.items():
    h = snapshot_at(run, t)
    P = h["particles"]
    ids, x, q, v = (P[k][()] for k in ("id", "position", "orientation", "velocity"))
    shape, dim, radius = P["shape"][()], P["dimensions"][()], P["radius"][()]
    pts, cells, arrays, ncells = got["bodies"]
    label = "%s %s" % (name, os.path.basename(run))
    cell_id = arrays.get("id")
    if cell_id is None or ncells == 0:
        failures.append("%s: no bodies drawn" % label)
        continue
    at = {int(i): k for k, i in enumerate(ids)}
    worst, short = 0.0, 0.0
    drawn = set()
    for i in np.unique(cell_id):
        k = at[int(i)]
        mine = np.nonzero(cell_id == i)[0]
        idx = np.unique(np.concatenate([cells[c] for c in mine]))
        if np.abs(arrays["velocity"][mine] - v[k]).max() > 0 or \
                np.abs(arrays["speed"][mine] - np.linalg.norm(v[k])).max() > 1e-12 * (
                    1 + np.linalg.norm(v[k])) or np.any(arrays["shape"][mine] != shape[k]):
            failures.append("%s: body %d's cells do not carry its data" % (label, i))
        drawn.add(int(i))
        if shape[k] == 4:
            M = h["clump_members"]
            sel = M["id"][()] == i
            c, r = M["position"][()][sel], M["radius"][()][sel]
            dist = np.min(np.abs(np.linalg.norm(pts[idx][:, None] - c[None], axis=2) - r), axis=1)
            worst = max(worst, dist.max() / radius[k])
            continue
        b = (pts[idx] - x[k]) @ rot(q[k])  # rows: R^T (p - x)
        off, ext = off_surface(shape[k], dim[k], b)
        worst = max(worst, off.max() / radius[k])
        short = max(short, np.max(1 - np.abs(b).max(axis=0) / ext))
    kinds = sorted({int(s) for s in shape})
    print("%s: %d bodies (shapes %s), %d drawn, points at most %.2g radii off their surface, "
          "extent short by at most %.2g" % (label, len(ids), kinds, len(drawn), worst, short))
    if len(drawn) != len(ids) or worst > 1e-9 or short > 1e-9:
        failures.append("%s: bodies not drawn as they are" % label)
    if run == mixed and kinds != [0, 1, 2, 3, 4]:
        failures.append("%s: the mixed run lacks a shape (%s)" % (label, kinds))
    if "contacts" in got:
        ni = h["contacts/normal_impulse"][()] if "contacts" in h else np.zeros(0)
        n = got["contacts"][3]
        print("%s: %d force chains, %d of %d contacts carry an impulse" % (
            label, n, int(np.sum(ni > 0)), len(ni)))
        if n != int(np.sum(ni > 0)):
            failures.append("%s: force chains are not the loaded contacts" % label)
    h.close()

if failures:
    sys.exit("FAILED:\n  " + "\n  ".join(failures))
print("every reader opened every file at every frame; every body drawn as it is")
