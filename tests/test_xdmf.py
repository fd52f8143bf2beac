"""The XDMF file of a run checked against its HDF5 snapshots, with no XDMF library (issue 14).

Every DataItem that points into an HDF5 file must name a dataset that exists, with the
Dimensions, NumberType and Precision of that dataset; every grid's topology must have as many
elements as its connectivity holds, connectivities index existing points (a Polyvertex's is
0..N-1, one vertex cell per point), attributes have a row per point (or cell) and the columns of
their type; each grid's Time is its file's `time` attribute; each temporal collection lists each
snapshot once in step order, and the particles collection lists every snapshot of the directory.
A checker that finds nothing is no proof: the second half of the tests breaks copies of a good
.xmf in each of these ways and requires the checker to report each.

    python3 tests/test_xdmf.py --granflow build/granflow [--mpiexec mpiexec] [--source .]
"""
import os
import re
import shutil
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

import granflow_runs as gr

# XDMF NumberType and Precision (bytes) of each numpy dtype kind; XDMF's defaults are Float, 4.
NUMBER_TYPE = {"f": "Float", "i": "Int", "u": "UInt"}
SMALL_TYPES = {("i", 1): "Char", ("u", 1): "UChar"}
# Points per cell of XDMF's fixed-size topologies (Polyvertex, Polyline and Polygon say it in
# NodesPerElement).
FIXED_NODES = {"Triangle": 3, "Quadrilateral": 4, "Tetrahedron": 4, "Pyramid": 5, "Wedge": 6,
               "Hexahedron": 8, "Edge_3": 3}
# Mixed topology (XDMF 3): the cell codes with a fixed number of points; 1 polyvertex, 2 polyline
# and 3 polygon give their number of points after the code.
MIXED_NODES = {4: 3, 5: 4, 6: 4, 7: 5, 8: 6, 9: 8}
MIXED_COUNTED = {1, 2, 3}
# Columns of each AttributeType.
COLUMNS = {"Scalar": 1, "Vector": 3, "Tensor": 9, "Tensor6": 6}


def dims(item):
    return tuple(int(x) for x in item.get("Dimensions", "").split())


def number_type(dtype):
    """The XDMF (NumberType, Precision) of a numpy dtype."""
    kind, size = dtype.kind, dtype.itemsize
    return SMALL_TYPES.get((kind, size), NUMBER_TYPE.get(kind, "?" + dtype.str)), size


class Checker:
    """Collects every disagreement between an .xmf file and the HDF5 files it points to."""

    def __init__(self, xmf):
        self.xmf = xmf
        self.dir = os.path.dirname(xmf)
        self.problems = []
        self.files = {}

    def check_mixed(self, where, conn, ncells, npoints):
        """Walks a mixed-topology stream: known cell codes, the stated number of cells, point
        indices in range, nothing left over."""
        k, cells = 0, 0
        while k < conn.size:
            code = int(conn[k])
            if code in MIXED_COUNTED and k + 1 < conn.size:
                n, k = int(conn[k + 1]), k + 2
            elif code in MIXED_NODES:
                n, k = MIXED_NODES[code], k + 1
            else:
                self.problem(where, "unknown mixed cell code %d at entry %d" % (code, k))
                return
            idx = conn[k:k + n]
            if idx.size != n:
                self.problem(where, "mixed cell %d is cut short" % cells)
                return
            if npoints is not None and n and (idx.min() < 0 or idx.max() >= npoints):
                self.problem(where, "mixed cell %d indexes outside 0..%d" % (cells, npoints - 1))
            k += n
            cells += 1
        if cells != ncells:
            self.problem(where, "NumberOfElements %d, but the mixed topology holds %d cells" %
                         (ncells, cells))

    def problem(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    def h5(self, name):
        if name not in self.files:
            path = os.path.join(self.dir, name)
            self.files[name] = h5py.File(path, "r") if os.path.exists(path) else None
        return self.files[name]

    def close(self):
        for f in self.files.values():
            if f is not None:
                f.close()

    def values(self, item, where):
        """The content of a DataItem as a numpy array (None where it cannot be had), after
        checking it against its declaration."""
        fmt = item.get("Format", "XML")
        shape = dims(item)
        ntype = item.get("NumberType", item.get("DataType", "Float"))
        prec = int(item.get("Precision", "4"))
        if item.get("ItemType", "Uniform") != "Uniform":
            # HyperSlab, Function, ...: the parts are items of their own
            for k, sub in enumerate(item.findall("DataItem")):
                self.values(sub, "%s/DataItem[%d]" % (where, k))
            return None
        text = (item.text or "").strip()
        if fmt == "XML":
            vals = np.array(text.split(), dtype=float)
            if vals.size != int(np.prod(shape)):
                self.problem(where, "%d values for Dimensions %s" % (vals.size, shape))
                return None
            return vals.reshape(shape)
        if fmt != "HDF":
            self.problem(where, "unknown Format %s" % fmt)
            return None
        name, sep, dset = text.partition(":")
        if not sep:
            self.problem(where, "'%s' is not file:/dataset" % text)
            return None
        f = self.h5(name)
        if f is None:
            self.problem(where, "file %s does not exist" % name)
            return None
        if dset not in f or not isinstance(f[dset], h5py.Dataset):
            self.problem(where, "%s has no dataset %s" % (name, dset))
            return None
        d = f[dset]
        if d.shape != shape:
            self.problem(where, "Dimensions %s, but %s:%s is %s" % (shape, name, dset, d.shape))
        if (ntype, prec) != number_type(d.dtype):
            self.problem(where, "NumberType %s Precision %d, but %s:%s is %s" % (
                ntype, prec, name, dset, d.dtype))
        return d[()]

    def grid(self, grid, where):
        """Checks one Uniform grid; returns (its snapshot file, its time)."""
        t = grid.find("Time")
        time = float(t.get("Value")) if t is not None else None
        files = set()
        for item in grid.iter("DataItem"):
            if item.get("Format") == "HDF":
                files.add((item.text or "").strip().partition(":")[0])
        if len(files) > 1:  # none: all of its data is inline (XML)
            self.problem(where, "points into %d files (%s), not one snapshot" % (
                len(files), ", ".join(sorted(files))))
        file = min(files) if files else None
        geo = grid.find("Geometry")
        npoints = None
        if geo is None or geo.find("DataItem") is None:
            self.problem(where, "has no Geometry")
        else:
            gtype = geo.get("GeometryType", "XYZ")
            x = self.values(geo.find("DataItem"), where + "/Geometry")
            if gtype == "XYZ" and x is not None:
                if x.ndim != 2 or x.shape[1] != 3:
                    self.problem(where, "XYZ geometry of shape %s" % (x.shape,))
                npoints = x.shape[0]
        top = grid.find("Topology")
        ncells = None
        if top is None:
            self.problem(where, "has no Topology")
        else:
            ttype = top.get("TopologyType", top.get("Type"))
            ncells = int(top.get("NumberOfElements", top.get("Dimensions", "-1")).split()[0])
            per = FIXED_NODES.get(ttype, int(top.get("NodesPerElement", "1")))
            item = top.find("DataItem")
            conn = self.values(item, where + "/Topology") if item is not None else None
            if item is None:
                self.problem(where, "%s topology without connectivity (the XDMF 3 reader then "
                             "shows no cells)" % ttype)
            elif conn is not None and ttype == "Mixed":
                self.check_mixed(where, np.asarray(conn).ravel(), ncells, npoints)
            elif conn is not None:
                conn = np.asarray(conn).ravel()
                if conn.size != ncells * per:
                    self.problem(where, "NumberOfElements %d x %d points per cell, but the "
                                 "connectivity holds %d" % (ncells, per, conn.size))
                if npoints is not None and conn.size and (conn.min() < 0 or
                                                          conn.max() >= npoints):
                    self.problem(where, "connectivity outside 0..%d" % (npoints - 1))
                if ttype == "Polyvertex" and not np.array_equal(conn, np.arange(npoints or 0)):
                    self.problem(where, "Polyvertex connectivity is not 0..N-1 (N = %s)" %
                                 npoints)
            if ttype == "Polyvertex" and ncells != npoints:
                self.problem(where, "Polyvertex of %d elements over %s points" % (ncells,
                                                                                   npoints))
        for a in grid.findall("Attribute"):
            aw = "%s/Attribute[%s]" % (where, a.get("Name"))
            item = a.find("DataItem")
            v = self.values(item, aw) if item is not None else None
            if v is None:
                continue
            rows = npoints if a.get("Center", "Node") == "Node" else ncells
            if rows is not None and v.shape[:1] != (rows,):
                self.problem(aw, "%s rows for %s %s" % (v.shape[:1], rows, a.get("Center")))
            cols = v.shape[1] if v.ndim == 2 else 1
            want = COLUMNS.get(a.get("AttributeType", "Scalar"))
            if want is not None and cols != want:
                self.problem(aw, "%s with %d columns" % (a.get("AttributeType"), cols))
        if file is not None and self.h5(file) is not None:
            if time is None:
                self.problem(where, "has no Time")
            elif time != float(self.h5(file).attrs["time"]):
                self.problem(where, "Time %r, but %s was written at t = %r" % (
                    time, file, float(self.h5(file).attrs["time"])))
        return file, time

    def entry(self, entry, where):
        """Checks one snapshot of a temporal collection: a spatial collection naming its file in
        an Information element, holding that file's grid or nothing (an empty part); returns
        (its snapshot file, its time, whether it holds a grid)."""
        if entry.get("GridType") != "Collection" or entry.get("CollectionType") != "Spatial":
            self.problem(where, "is not a spatial collection (ParaView's readers crash on an "
                         "empty grid, not on an empty collection)")
            return None, None, False
        t = entry.find("Time")
        time = float(t.get("Value")) if t is not None else None
        info = [i.get("Value") for i in entry.findall("Information")
                if i.get("Name") == "snapshot"]
        file = info[0] if info else None
        if file is None:
            self.problem(where, "names no snapshot file")
        elif self.h5(file) is None:
            self.problem(where, "file %s does not exist" % file)
        elif time is None or time != float(self.h5(file).attrs["time"]):
            self.problem(where, "Time %r, but %s was written at t = %r" % (
                time, file, float(self.h5(file).attrs["time"])))
        grids = entry.findall("Grid")
        if len(grids) > 1:
            self.problem(where, "holds %d grids" % len(grids))
        for k, g in enumerate(grids):
            gfile, gtime = self.grid(g, "%s/Grid[%d]" % (where, k))
            if gfile is not None and gfile != file:
                self.problem(where, "names %s but its grid reads %s" % (file, gfile))
            if gtime != time:
                self.problem(where, "Time %r, its grid's %r" % (time, gtime))
        for item in entry.iter("DataItem"):
            if 0 in dims(item):
                self.problem(where, "a DataItem of Dimensions %r (ParaView's readers crash on "
                             "empty items)" % item.get("Dimensions"))
        return file, time, bool(grids)

    def check(self, snapshots=None, part="particles", rows=None):
        """Checks the whole file, one temporal collection named `part`; `snapshots` (file names)
        are those it must list, rows(h5 file) how many rows of the part each holds (an entry
        holds a grid exactly where there are some). Returns the problems found."""
        try:
            root = ET.parse(self.xmf).getroot()
        except ET.ParseError as e:
            self.problem(self.xmf, "not XML: %s" % e)
            return self.problems
        if root.tag != "Xdmf":
            self.problem(self.xmf, "the root element is %s" % root.tag)
        domain = root.find("Domain")
        colls = [g for g in (domain if domain is not None else []) if g.tag == "Grid"]
        names = [c.get("Name") for c in colls]
        if names != [part]:
            self.problem(self.xmf, "holds the collections %s, not %s alone" % (names, part))
        for c in colls:
            cw = "Grid[%s]" % c.get("Name")
            if c.get("GridType") != "Collection" or c.get("CollectionType") != "Temporal":
                self.problem(cw, "is not a temporal collection")
                continue
            listed = []
            for k, g in enumerate(c.findall("Grid")):
                listed.append(self.entry(g, "%s/Grid[%d]" % (cw, k)))
            files = [f for f, _, _ in listed if f is not None]
            if len(set(files)) != len(files):
                self.problem(cw, "lists a snapshot more than once: %s" % files)
            steps = [int(self.h5(f).attrs["step"]) if f and self.h5(f) else -1 for f in files]
            if steps != sorted(steps) or len(set(steps)) != len(steps):
                self.problem(cw, "snapshots not in increasing step order: %s" % steps)
            times = [t for _, t, _ in listed]
            if any(t is None for t in times) or times != sorted(times):
                self.problem(cw, "times not increasing: %s" % times)
            if snapshots is not None and files != snapshots:
                self.problem(cw, "lists %s, the directory holds %s" % (files, snapshots))
            for f, _, full in listed:
                if rows is not None and f and self.h5(f) is not None:
                    n = rows(self.h5(f))
                    if (n > 0) != full:
                        self.problem(cw, "%s has %d rows of %s and %s" % (
                            f, n, part, "a grid" if full else "no grid"))
        return self.problems


# The parts of a run's output: the file of each, and the rows each snapshot holds of it.
PARTS = {"particles": ("", lambda h: int(h.attrs["particle_count"])),
         "clumps": ("_clumps", lambda h: h["clump_members/id"].shape[0]
                    if "clump_members" in h else 0),
         "geometry": ("_geometry", lambda h: h["geometry/kind"].shape[0]
                      if "geometry" in h else 0),
         "contacts": ("_contacts", lambda h: h["contacts/pair"].shape[0]
                      if "contacts" in h else 0)}


def check(xmf, snapshots=None, part="particles"):
    c = Checker(xmf)
    try:
        return c.check(snapshots, part, PARTS[part][1])
    finally:
        c.close()


def check_run(d):
    """Every part's file of the run in directory d: a file for each part some snapshot holds, none
    for the others, each listing every snapshot."""
    snaps = snapshot_names(d)
    problems = []
    for part, (suffix, rows) in PARTS.items():
        path = os.path.join(d, "run%s.xmf" % suffix)
        any_rows = False
        for f in snaps:
            with h5py.File(os.path.join(d, f), "r") as h:
                any_rows |= rows(h) > 0
        if os.path.exists(path) != (any_rows or part == "particles"):
            problems.append("%s: %s, but the snapshots hold %s %s" % (
                os.path.basename(path), "written" if os.path.exists(path) else "missing",
                "some" if any_rows else "no", part))
        elif os.path.exists(path):
            problems += check(path, snaps, part)
    return problems


def uniform_grids(text):
    """The text of each snapshot's entry of the collection."""
    return re.findall(r"   <Grid Name=\"snapshot\".*?\n   </Grid>\n", text, re.S)


def snapshot_names(d):
    return [os.path.basename(f) for f in gr.snapshots(d)]


class XdmfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = gr.Runs()
        cls.addClassCleanup(cls.runs.close)  # also when a run fails
        # Touching spheres with contacts on 2 ranks (Output.contacts: their lines), and every
        # shape with clumps.
        cls.demo = cls.runs.run("demo_np2", "demo.cfg", 2, "-Time.steps=20",
                                "-Output.snapshot_every=10", "-Output.contacts=true",
                                "-Lattice.spacing=0.008")
        cls.mixed = cls.runs.run("mixed_np1", "mixed-pour.cfg", 1, "-Time.steps=20",
                                 "-Output.snapshot_every=10")
        # Empty at first, filled, drained: every part empty in some snapshots.
        cls.fill = cls.runs.run("fill_np2", "../tests/data/fill-drain.cfg", 2)

    def test_contacts_as_lines(self):
        """With Output.contacts each snapshot after the first step lists its contacts as a grid
        of line cells whose ends are the two bodies' centres (a wall's contact point), the second
        as the contact placed it at detection."""
        root = ET.parse(os.path.join(self.demo, "run_contacts.xmf")).getroot()
        grids = {g.get("Name"): g for g in root.find("Domain").findall("Grid")}
        self.assertIn("contacts", grids)
        steps = [e.find("Grid") for e in grids["contacts"].findall("Grid")]
        self.assertEqual(len(steps), 3)  # steps 0, 10 and 20; no contacts at step 0
        self.assertIsNone(steps[0])
        steps = steps[1:]
        for g in steps:
            item = g.find("Geometry").find("DataItem")
            fname, path = item.text.strip().split(":")
            with h5py.File(os.path.join(self.demo, fname), "r") as f:
                ends = f["contacts/position"][()]
                pair = f["contacts/pair"][()]
                ids, x = f["particles/id"][()], f["particles/position"][()]
                r, v = f["particles/radius"][()], f["particles/velocity"][()]
                dt = f.attrs["dt"]
                at = {int(i): k for k, i in enumerate(ids)}
                self.assertEqual(ends.shape, (2 * len(pair), 3))
                self.assertGreater(len(pair), 0)
                for j, (a, b) in enumerate(pair):
                    # The centres as they stood at detection, before the step moved them: off
                    # by at most the step's motion.
                    ka = at[int(a)]
                    slack = 1.01 * dt * np.linalg.norm(v[ka]) + 1e-12
                    self.assertLessEqual(np.linalg.norm(ends[2 * j] - x[ka]), slack)
                    if b >= 0:
                        kb = at[int(b)]
                        slack_b = 1.01 * dt * np.linalg.norm(v[kb]) + 1e-12
                        self.assertLessEqual(np.linalg.norm(ends[2 * j + 1] - x[kb]), slack_b)
                    else:  # a wall: the contact point, within the body's reach
                        self.assertLessEqual(np.linalg.norm(ends[2 * j + 1] - ends[2 * j]),
                                             r[ka] * (1 + 1e-9) + 0.01)

    def test_runs_agree_with_their_snapshots(self):
        for d in (self.demo, self.mixed, self.fill):
            snaps = snapshot_names(d)
            self.assertGreaterEqual(len(snaps), 2, d)
            problems = check_run(d)
            self.assertEqual(problems, [], "\n".join(problems))

    def test_filling_and_draining_has_empty_parts(self):
        """Each part's file has snapshots with and without a grid (the checker above requires the
        grid exactly where the snapshot holds rows of the part)."""
        for suffix in ("", "_clumps", "_geometry", "_contacts"):
            root = ET.parse(os.path.join(self.fill, "run%s.xmf" % suffix)).getroot()
            full = [e.find("Grid") is not None for e in root.iter("Grid")
                    if e.get("CollectionType") == "Spatial"]
            self.assertIn(True, full, suffix)
            self.assertIn(False, full, suffix)

    def test_particles_alone_in_the_run_file(self):
        """Open, Apply on <prefix>.xmf shows the bodies, not the geometry around them."""
        root = ET.parse(os.path.join(self.mixed, "run.xmf")).getroot()
        self.assertEqual([g.get("Name") for g in root.find("Domain").findall("Grid")],
                         ["particles"])
        self.assertTrue(os.path.exists(os.path.join(self.mixed, "run_geometry.xmf")))
        self.assertFalse(os.path.exists(os.path.join(self.mixed, "run_contacts.xmf")))

    def test_clumps_have_a_collection_of_their_own(self):
        root = ET.parse(os.path.join(self.mixed, "run_clumps.xmf")).getroot()
        names = [g.get("Name") for g in root.find("Domain").findall("Grid")]
        self.assertIn("clumps", names)
        with h5py.File(gr.snapshots(self.mixed)[-1], "r") as f:
            # a clump of the configuration has 3 spheres: 3 member rows per clump body
            self.assertEqual(f["clump_members/id"].shape[0],
                             3 * int(np.sum(f["particles/shape"][()] == 4)))

    def test_reader_lists_what_the_xdmf_lists(self):
        import granflow
        r = granflow.Run(os.path.join(self.mixed, "run.xmf"))
        self.assertEqual([os.path.basename(f) for f in r.files], snapshot_names(self.mixed))
        for s, t in zip(r, r.times):
            self.assertEqual(s.time, t)

    # --- the checker finds what is wrong ---------------------------------------------------

    def broken(self, edit, run=None, suffix=""):
        """The problems the checker finds in a copy of a run whose .xmf text (of the part of that
        suffix) went through edit(text); edit None removes the file."""
        src = run or self.mixed
        d = os.path.join(self.runs.tmp, "broken")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d)
        path = os.path.join(d, "run%s.xmf" % suffix)
        if edit is None:
            os.remove(path)
            return check_run(d)
        with open(path) as f:
            text = f.read()
        changed = edit(text)
        self.assertNotEqual(changed, text, "the edit changed nothing")
        with open(path, "w") as f:
            f.write(changed)
        return check_run(d)

    def assertFinds(self, edit, pattern, run=None, suffix=""):
        problems = self.broken(edit, run, suffix)
        self.assertTrue(any(re.search(pattern, p) for p in problems),
                        "expected a problem matching %r, got %s" % (pattern, problems))

    def test_finds_a_wrong_dataset(self):
        self.assertFinds(lambda t: t.replace("/particles/velocity<", "/particles/speed<", 1),
                         "has no dataset /particles/speed")

    def test_finds_a_missing_file(self):
        self.assertFinds(lambda t: t.replace("run_000000010.h5:", "run_000000011.h5:", 1),
                         "does not exist")

    def test_finds_a_wrong_dimension(self):
        with open(os.path.join(self.mixed, "run.xmf")) as f:
            n = re.search(r'NumberOfElements="(\d+)"', f.read()).group(1)
        self.assertFinds(lambda t: t.replace('Dimensions="%s 3"' % n,
                                             'Dimensions="%d 3"' % (int(n) - 1), 1),
                         r"Dimensions \(%d, 3\)" % (int(n) - 1))

    def test_finds_a_wrong_precision(self):
        self.assertFinds(lambda t: re.sub(r'(NumberType="Int" Precision=)"8"', r'\1"4"', t,
                                          count=1), "NumberType Int Precision 4, but .*int64")

    def test_finds_a_wrong_number_type(self):
        self.assertFinds(lambda t: t.replace('NumberType="Float" Precision="8" Format="HDF">'
                                             'run_000000010.h5:/particles/radius',
                                             'NumberType="Int" Precision="8" Format="HDF">'
                                             'run_000000010.h5:/particles/radius'),
                         "NumberType Int Precision 8, but .*float64")

    def test_finds_a_wrong_element_count(self):
        self.assertFinds(lambda t: re.sub(r'NumberOfElements="(\d+)"',
                                          lambda m: 'NumberOfElements="%d"' % (int(m.group(1))
                                                                              + 1), t, count=1),
                         "NumberOfElements")

    def test_finds_a_missing_connectivity(self):
        self.assertFinds(lambda t: re.sub(r"(<Topology[^>]*>)\s*<DataItem[^<]*</DataItem>",
                                          r"\1", t, count=1), "without connectivity")

    def test_finds_a_connectivity_that_is_not_the_rows(self):
        self.assertFinds(lambda t: t.replace("/particles/vertex<", "/particles/material<", 1),
                         "connectivity")

    def test_finds_a_wrong_time(self):
        self.assertFinds(lambda t: re.sub(r'<Time Value="([^"]+)"',
                                          lambda m: '<Time Value="%r"' % (float(m.group(1)) + 1e-3),
                                          t, count=1), "was written at t")

    def test_finds_a_snapshot_listed_twice(self):
        def twice(t):
            grids = uniform_grids(t)
            return t.replace(grids[-1], grids[-1] + grids[-1], 1)
        self.assertFinds(twice, "more than once")

    def test_finds_snapshots_out_of_order(self):
        def swap(t):
            grids = uniform_grids(t)
            return t.replace(grids[0] + grids[1], grids[1] + grids[0], 1)
        self.assertFinds(swap, "increasing step order")

    def test_finds_a_snapshot_left_out(self):
        def drop(t):
            grids = uniform_grids(t)
            return t.replace(grids[-1], "", 1)
        self.assertFinds(drop, "the directory holds")

    def test_finds_an_attribute_of_the_wrong_type(self):
        self.assertFinds(lambda t: t.replace('Name="velocity" AttributeType="Vector"',
                                             'Name="velocity" AttributeType="Scalar"', 1),
                         r"Scalar with 3 columns")

    def test_finds_a_missing_clump_file(self):
        self.assertFinds(None, "missing, but the snapshots hold some clumps", suffix="_clumps")

    def test_finds_an_empty_grid(self):
        """An empty snapshot written as a grid of no points, which crashes ParaView 5.11."""
        def empty_grid(t):
            grid = ('    <Grid Name="particles" GridType="Uniform">\n     <Topology '
                    'TopologyType="Polyvertex" NumberOfElements="0" NodesPerElement="1"/>\n'
                    '     <Geometry GeometryType="XYZ"><DataItem Dimensions="0 3" Format="XML">'
                    '</DataItem></Geometry>\n    </Grid>\n')
            return re.sub(r'(<Information Name="snapshot" Value="run_000000000.h5" />\n)',
                          lambda m: m.group(1) + grid, t, count=1)
        self.assertFinds(empty_grid, "crash on empty items", run=self.fill)

    def test_finds_a_grid_where_the_snapshot_has_none(self):
        def dropped_entry_grid(t):
            return re.sub(r'(<Information Name="snapshot" Value="run_000000080.h5" />\n)'
                          r'    <Grid .*?\n    </Grid>\n', r"\1", t, count=1, flags=re.S)
        self.assertFinds(dropped_entry_grid, "has 40 rows of particles and no grid",
                         run=self.fill)


if __name__ == "__main__":
    gr.parse_args()
    unittest.main(verbosity=2)
