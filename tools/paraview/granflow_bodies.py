"""Every body of a granflow run as the surface it is, for ParaView: spheres, boxes, capsules with
their round ends, cylinders, clumps as their member spheres, each cell carrying its body's data
(velocity, speed, angular_velocity, angular_speed, id, material, shape, radius, owner_rank,
dimensions), so that bodies can be coloured, thresholded and picked like any other cells.

tools/paraview/gf_bodies.py sets it up for a run (a Programmable Filter over the particles'
reader, `<prefix>.xmf`, and the clumps' member spheres, `<prefix>_clumps.xmf`, running
PROGRAMMABLE_SCRIPT below). The surfaces are made with numpy from what every snapshot holds per
body: position, shape, dimensions and `axes` (the body's y, z and x axes scaled to its full size
along each, of which only the directions are used here); numpy alone runs `surfaces`.
"""
import numpy as np

SPHERE, BOX, CAPSULE, CYLINDER, CLUMP = range(5)
# Arrays of the readers that are not the bodies' data.
SKIP = {"vtkOriginalIndices"}


def _ring_mesh(rings, segments, closed_ends):
    """Faces of a surface of `rings` rings of `segments` points each (points numbered ring by
    ring), quads between consecutive rings; closed_ends adds a polygon over the first and the
    last ring (their points in order)."""
    faces = []
    for a in range(rings - 1):
        for k in range(segments):
            k1 = (k + 1) % segments
            faces.append([a * segments + k, a * segments + k1, (a + 1) * segments + k1,
                          (a + 1) * segments + k])
    if closed_ends:
        faces.append(list(range(segments))[::-1])
        faces.append([(rings - 1) * segments + k for k in range(segments)])
    return faces


def template(shape, segments=24, bands=6):
    """The unit surface of a shape in its body frame: (points U, shift s, faces). A body's point
    is R (S U + s h e_z) + centre with S its scaling (radius, half extents) and h its half length:
    the shift puts a capsule's hemispheres at the ends of its cylinder."""
    phi = 2 * np.pi * np.arange(segments) / segments
    circle = np.stack([np.cos(phi), np.sin(phi), np.zeros(segments)], axis=1)
    if shape == BOX:
        U = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], float)
        faces = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2],
                 [1, 3, 7, 5]]
        return U, np.zeros(8), faces
    if shape == CYLINDER:
        U = np.concatenate([circle + [0, 0, -1], circle + [0, 0, 1]])
        return U, np.zeros(len(U)), _ring_mesh(2, segments, True)
    # Spheres and capsules: rings of latitude from the south pole's neighbourhood to the north's,
    # the equator twice for a capsule (once per hemisphere), closed by a small polygon at each pole.
    lat = np.pi * (np.arange(2 * bands - 1) + 1) / (2 * bands) - np.pi / 2
    rings, shift = [], []
    for theta in lat:
        for half in ((-1, 1) if (shape == CAPSULE and abs(theta) < 1e-12) else
                     (np.sign(theta) if shape == CAPSULE else 0,)):
            rings.append(np.cos(theta) * circle + [0, 0, np.sin(theta)])
            shift.append(np.full(segments, half))
    U = np.concatenate(rings)
    s = np.concatenate(shift)
    faces = _ring_mesh(len(rings), segments, True)
    # The polar polygons sit at the poles' latitude circles; fan them to the poles themselves so
    # that the surface reaches the body's full extent.
    n = len(U)
    U = np.concatenate([U, [[0, 0, -1], [0, 0, 1]]])
    s = np.concatenate([s, [-1 if shape == CAPSULE else 0, 1 if shape == CAPSULE else 0]])
    south, north = faces.pop(-2), faces.pop(-1)
    faces += [[south[k], south[(k + 1) % segments], n] for k in range(segments)]
    faces += [[north[k], north[(k + 1) % segments], n + 1] for k in range(segments)]
    return U, s, faces


def rotations(axes):
    """Body-to-world rotation matrices (B x 3 x 3) from the `axes` rows (B x 9): VTK column order,
    the columns being the body y, z and x axes scaled."""
    A = np.asarray(axes, float).reshape(-1, 3, 3)  # A[b, c] is column c
    cols = A / np.linalg.norm(A, axis=2, keepdims=True)
    return np.stack([cols[:, 2], cols[:, 0], cols[:, 1]], axis=2)


def surfaces(position, shape, dimensions, axes, radius, members=None, segments=24, bands=6):
    """Every body's surface: (points P x 3, faces as a list of point-index arrays, the body row of
    each face). members = (centres K x 3, radii K, body row K) draws clumps by their spheres."""
    position, shape = np.asarray(position, float), np.asarray(shape)
    dimensions, radius = np.asarray(dimensions, float), np.asarray(radius, float)
    R = rotations(axes) if len(shape) else np.zeros((0, 3, 3))
    pts, faces, owner = [], [], []
    count = 0

    def add(U, s, tface, centre, rot, scale, half, rows):
        nonlocal count
        if len(rows) == 0:
            return
        local = scale[:, None, :] * U[None] + (half[:, None] * s[None])[..., None] * [0, 0, 1]
        world = np.einsum("bij,bkj->bki", rot, local) + centre[:, None, :]
        pts.append(world.reshape(-1, 3))
        k = len(U)
        for b in range(len(rows)):
            base = count + b * k
            faces.extend([np.asarray(f) + base for f in tface])
        owner.append(np.repeat(rows, len(tface)))
        count += k * len(rows)

    for code in (SPHERE, BOX, CAPSULE, CYLINDER):
        rows = np.nonzero(shape == code)[0]
        U, s, tf = template(code, segments, bands)
        d = dimensions[rows]
        if code == BOX:
            scale, half = d, np.zeros(len(rows))
        elif code == SPHERE:
            scale, half = np.repeat(d[:, :1], 3, axis=1), np.zeros(len(rows))
        elif code == CAPSULE:
            scale, half = np.repeat(d[:, :1], 3, axis=1), d[:, 1]
        else:
            scale, half = np.stack([d[:, 0], d[:, 0], d[:, 1]], axis=1), np.zeros(len(rows))
        add(U, s, tf, position[rows], R[rows], scale, half, rows)
    if members is not None:
        centre, r, rows = (np.asarray(a) for a in members)
        U, s, tf = template(SPHERE, segments, bands)
        add(U, s, tf, centre.astype(float), np.broadcast_to(np.eye(3), (len(rows), 3, 3)),
            np.repeat(r.astype(float)[:, None], 3, axis=1), np.zeros(len(rows)), rows)
    P = np.concatenate(pts) if pts else np.zeros((0, 3))
    return P, faces, (np.concatenate(owner) if owner else np.zeros(0, int))


# --- VTK: the points of a reader's output in, the surfaces out ---------------------------------
def _leaves(obj):
    """The datasets of a data object (itself, or the leaves of a composite one)."""
    if obj is None:
        return []
    if not obj.IsA("vtkCompositeDataSet"):
        return [obj] if obj.GetNumberOfPoints() else []
    it = obj.NewIterator()
    it.InitTraversal()
    out = []
    while not it.IsDoneWithTraversal():
        o = it.GetCurrentDataObject()
        if o is not None and o.GetNumberOfPoints():
            out.append(o)
        it.GoToNextItem()
    return out


def _point_table(obj):
    """(positions N x 3, {name: array}) of the points of every leaf of obj, concatenated."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    leaves = _leaves(obj)
    if not leaves:
        return np.zeros((0, 3)), {}
    pos = np.concatenate([vtk_to_numpy(o.GetPoints().GetData()) for o in leaves])
    names = None
    for o in leaves:
        pd = o.GetPointData()
        here = {pd.GetArrayName(k) for k in range(pd.GetNumberOfArrays())}
        names = here if names is None else names & here
    data = {}
    for name in sorted(names - SKIP):
        data[name] = np.concatenate(
            [np.array(vtk_to_numpy(o.GetPointData().GetArray(name))) for o in leaves])
    return np.array(pos, float), data


def to_polydata(pos, data, members_obj=None, segments=24, bands=6):
    """The bodies of the point table (pos, data) as a vtkPolyData with their data on the cells."""
    from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
    out = vtkPolyData()
    need = {"shape", "dimensions", "axes", "radius"}
    if len(pos) == 0 or not need <= set(data):
        return out
    members = None
    mpos, mdata = _point_table(members_obj)
    if len(mpos) and "id" in mdata and "id" in data:
        index = {int(i): k for k, i in enumerate(data["id"])}
        rows = np.array([index.get(int(i), -1) for i in mdata["id"]])
        keep = rows >= 0  # members of clumps of this snapshot
        members = (mpos[keep], mdata["radius"][keep], rows[keep])
    P, faces, owner = surfaces(pos, data["shape"], data["dimensions"], data["axes"],
                               data["radius"], members, segments, bands)
    points = vtkPoints()
    points.SetData(numpy_to_vtk(np.ascontiguousarray(P), deep=1))
    out.SetPoints(points)
    sizes = np.array([len(f) for f in faces], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    conn = np.concatenate(faces).astype(np.int64) if faces else np.zeros(0, np.int64)
    cells = vtkCellArray()
    cells.SetData(numpy_to_vtkIdTypeArray(offsets, deep=1), numpy_to_vtkIdTypeArray(conn, deep=1))
    out.SetPolys(cells)
    cd = out.GetCellData()
    cell = dict(data)
    cell.pop("axes", None)
    if "velocity" in cell:
        cell["speed"] = np.linalg.norm(cell["velocity"], axis=1)
    if "angular_velocity" in cell:
        cell["angular_speed"] = np.linalg.norm(cell["angular_velocity"], axis=1)
    for name, arr in cell.items():
        a = numpy_to_vtk(np.ascontiguousarray(arr[owner]), deep=1)
        a.SetName(name)
        cd.AddArray(a)
    if "speed" in cell:
        cd.SetActiveScalars("speed")
    return out


# The script of the Programmable Filter that gf_bodies.py sets up (a Python plugin would be nicer
# in the menus, but Debian 12's ParaView 5.11 cannot load one under Python 3.11: its plugin
# layer imports inspect.getargspec). Inputs: the particles' reader, then optionally the clumps'.
PROGRAMMABLE_SCRIPT = """
import sys
if {dir!r} not in sys.path:
    sys.path.insert(0, {dir!r})
import granflow_bodies as gb
n = self.GetNumberOfInputConnections(0)
pos, data = gb._point_table(self.GetInputDataObject(0, 0))
members = self.GetInputDataObject(0, 1) if n > 1 else None
self.GetPolyDataOutput().ShallowCopy(gb.to_polydata(pos, data, members, {segments}, {bands}))
"""
