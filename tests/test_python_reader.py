"""The Python reader (tools/python/granflow) on short runs at 1 and 2 ranks (issue 14).

The plumbing is checked against what h5py reads directly; the content against physics and
independent references: the lattice size from the configuration text and the count the run
printed, mass = density x the closed-form volume of each shape (clumps: their union of spheres,
integrated on a grid), bounding radii, free fall between two snapshots, the floor carrying the
weight of a resting pile, the same ids (and positions) at 1 and 2 ranks, and the units of the
the layout table of docs/output.md. Files of both forms (configuration as characters or as a string,
tangential impulse as a magnitude or a vector, with or without a material table) are made from
the run's own files with h5py.

    python3 tests/test_python_reader.py --granflow build/granflow [--mpiexec mpiexec]
"""
import os
import pickle
import re
import shutil
import unittest

import h5py
import numpy as np

import granflow_runs as gr

granflow = None  # imported after gr.parse_args() has put tools/python on the path

G = 9.81  # the configurations' gravity (m/s^2), along -z
PILE_G = np.array([2.0, 0.0, -9.81])  # the pile's, tilted along x

# The units of the snapshot table of docs/output.md.
UNITS = {
    "particles/id": "1", "particles/position": "m", "particles/velocity": "m/s",
    "particles/angular_velocity": "rad/s", "particles/orientation": "1", "particles/radius": "m",
    "particles/mass": "kg", "particles/material": "1", "particles/owner_rank": "1",
    "particles/shape": "1", "particles/clump": "1", "particles/dimensions": "m",
    "particles/axes": "m", "particles/vertex": "1", "particles/rank_offsets": "1",
    "clump_members/position": "m", "clump_members/radius": "m", "clump_members/id": "1",
    "clump_members/vertex": "1", "contacts/pair": "1", "contacts/normal_impulse": "N s",
    "contacts/tangential_impulse": "N s", "contacts/gap": "m", "contacts/normal": "1",
}


def config_text(path):
    """The configuration stored in a snapshot, read with h5py in whichever form it has."""
    with h5py.File(path, "r") as f:
        v = f["configuration"][()]
    if isinstance(v, np.ndarray) and v.dtype.kind in "iu":
        v = v.astype(np.uint8).tobytes()
    if isinstance(v, np.ndarray):
        v = v.reshape(-1)[0]
    if isinstance(v, bytes):
        v = v.decode()
    return v.rstrip("\0")


def text_attr(v):
    """An HDF5 string attribute (fixed or variable length) as str."""
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


def numbers(s):
    return [float(x) for x in s.replace("<", " ").replace(">", " ").replace(",", " ").split()]


def densities(text):
    """[(name, density)] by material index: 0 is granflow's default material (1000 kg/m^3),
    then the Material blocks in order."""
    mats = re.findall(r"Material\s*\{\s*name\s+(\w+);\s*density\s+([^;]+);", text)
    return [("default", 1000.0)] + [(n, float(d)) for n, d in mats]


def clump_template(text):
    """[(centre, radius)] of the spheres of the configuration's (single) Clump block."""
    block = re.search(r"Clump\s*\{(.*?)\n\}", text, re.S).group(1)
    return [(np.array(numbers(c)), float(r)) for c, r in re.findall(
        r"Sphere\s*\{\s*centre\s+(<[^>]*>);\s*radius\s+([^;]+);", block)]


def union_volume(spheres, n=192):
    """Volume of a union of spheres by counting the centres of an n^3 grid over their bounds."""
    lo = np.min([c - r for c, r in spheres], axis=0)
    hi = np.max([c + r for c, r in spheres], axis=0)
    h = (hi - lo) / n
    ax = [lo[k] + h[k] * (np.arange(n) + 0.5) for k in range(3)]
    x, y = np.meshgrid(ax[0], ax[1], indexing="ij")
    count = 0
    for z in ax[2]:
        inside = np.zeros_like(x, dtype=bool)
        for c, r in spheres:
            inside |= (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2 <= r * r
        count += int(inside.sum())
    return count * float(np.prod(h))


def volume(shape, d):
    """Closed-form volume of one body of shape code `shape` and dimensions d (spheres, boxes,
    capsules, cylinders)."""
    return {0: lambda: 4.0 / 3.0 * np.pi * d[0] ** 3,
            1: lambda: 8.0 * d[0] * d[1] * d[2],
            2: lambda: np.pi * d[0] ** 2 * (2.0 * d[1] + 4.0 / 3.0 * d[0]),
            3: lambda: 2.0 * np.pi * d[0] ** 2 * d[1]}[shape]()


def bounding_radius(shape, d):
    return {0: lambda: d[0], 1: lambda: np.linalg.norm(d), 2: lambda: d[0] + d[1],
            3: lambda: np.hypot(d[0], d[1])}[shape]()


def copy_with(src, dst, edit):
    """A copy of snapshot src at dst, changed by edit(h5py.File)."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        edit(f)
    return dst


class ReaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global granflow
        import granflow as gf
        granflow = gf
        r = cls.runs = gr.Runs()
        cls.addClassCleanup(cls.runs.close)  # also when a run fails
        short = ("-Time.steps=20", "-Output.snapshot_every=10")
        # Free flight of the demo's spheres (no contact in 20 steps) at 1 and 2 ranks.
        cls.demo1 = r.run("demo_np1", "demo.cfg", 1, *short)
        cls.demo2 = r.run("demo_np2", "demo.cfg", 2, *short)
        # Every shape, clumps among them, at 1 and 2 ranks; the ranks split x, so that the
        # file's rank groups interleave the ids (lattice ids run along x first).
        cls.mixed1 = r.run("mixed_np1", "mixed-pour.cfg", 1, *short)
        cls.mixed2 = r.run("mixed_np2", "mixed-pour.cfg", 2, *short, "-Domain.processes=<2,1,1>")
        # The demo's spheres touching in columns on the floor under a tilted gravity, with the
        # contacts of every step in the output.
        cls.pile = r.run("pile_np2", "demo.cfg", 2, "-Time.steps=4", "-Output.snapshot_every=1",
                         "-Output.contacts=true", "-Lattice.origin=<0.01,0.01,0.004>",
                         "-Lattice.spacing=0.008", "-Lattice.spread=<0,0,0>",
                         "-Physics.gravity=<%g,0,%g>" % (PILE_G[0], PILE_G[2]))
        cls.all = [cls.demo1, cls.demo2, cls.mixed1, cls.mixed2, cls.pile]

    def last(self, d):
        return gr.snapshots(d)[-1]

    # --- plumbing: the reader gives what is in the file ------------------------------------

    def test_values_equal_what_h5py_reads(self):
        for d in self.all:
            for path in gr.snapshots(d):
                s = granflow.load(path)
                f = h5py.File(path, "r")
                with f:
                    for k, v in f.attrs.items():
                        got = s.attrs[k]
                        want = text_attr(v) if isinstance(v, (bytes, str)) else v
                        if isinstance(want, np.ndarray):
                            np.testing.assert_array_equal(got, want)
                        else:
                            self.assertEqual(got, want, k)
                    self.assertEqual((s.time, s.step, s.dt, s.particle_count),
                                     (f.attrs["time"], f.attrs["step"], f.attrs["dt"],
                                      f.attrs["particle_count"]))
                    self.assertEqual(s.config, config_text(path))
                    ids = f["particles/id"][()]
                    row = {int(i): k for k, i in enumerate(ids)}  # file row of each id
                    self.assertEqual(len(row), len(ids), "ids are unique")
                    got_ids = np.asarray(s.particles.id)
                    self.assertTrue(np.all(np.diff(got_ids) > 0), "sorted by id")
                    rows = [row[int(i)] for i in got_ids]
                    if d == self.mixed2:
                        self.assertFalse(np.all(np.diff(ids) > 0), "the file is not sorted")
                    for g in [k for k in f if isinstance(f[k], h5py.Group)]:
                        for name, ds in f[g].items():
                            if not isinstance(ds, h5py.Dataset):
                                continue
                            # h5py's own reading of text: str
                            want = ds.asstr()[()] if h5py.check_string_dtype(ds.dtype) else ds[()]
                            got = s.group(g)[name]
                            if g == "particles" and name != "rank_offsets":
                                want = want[rows]
                            elif g == "clump_members":
                                # each clump's members, in file order, by clump id
                                mid = f["clump_members/id"][()]
                                want = np.concatenate([want[mid == i] for i in
                                                       np.unique(mid)]) if len(mid) else want
                            np.testing.assert_array_equal(np.asarray(got), want, g + "/" + name)
                            self.assertEqual(s.group(g).units[name],
                                             text_attr(ds.attrs["units"]) if "units" in ds.attrs
                                             else None, g + "/" + name)
                    # order="file" keeps the file's rows
                    sf = granflow.load(path, order="file")
                    for name, ds in f["particles"].items():
                        np.testing.assert_array_equal(np.asarray(sf.particles[name]), ds[()])

    def test_every_dataset_has_units_and_a_description(self):
        for d in (self.mixed2, self.pile):
            path = self.last(d)
            s = granflow.load(path)
            seen = []

            def visit(name, obj):
                if not isinstance(obj, h5py.Dataset):
                    return
                self.assertTrue(obj.attrs.get("description"), name + " has no description")
                # numbers have units; text has none (the configuration was a character array
                # in files before 0.3)
                if name != "configuration" and h5py.check_string_dtype(obj.dtype) is None:
                    self.assertIn("units", obj.attrs, name + " has no units")
                    g, _, ds = name.rpartition("/")
                    self.assertEqual(getattr(s.group(g), ds).units, text_attr(obj.attrs["units"]))
                    if name in UNITS:
                        self.assertEqual(text_attr(obj.attrs["units"]), UNITS[name], name)
                seen.append(name)

            with h5py.File(path, "r") as f:
                f.visititems(visit)
            self.assertIn("particles/position", seen)
        s = granflow.load(self.last(self.pile))
        self.assertEqual(s.particles.units["position"], "m")
        self.assertEqual(s.particles.position.units, "m")
        self.assertEqual(s.contacts.normal_impulse.units, "N s")

    # --- content: physics and independent references ---------------------------------------

    def test_particle_count_is_the_lattice_and_the_header(self):
        for name, d in (("demo_np1", self.demo1), ("demo_np2", self.demo2),
                        ("mixed_np1", self.mixed1), ("mixed_np2", self.mixed2)):
            for path in gr.snapshots(d):
                s = granflow.load(path)
                count = int(np.prod(numbers(re.search(r"count\s+(<[^>]*>)",
                                                      config_text(path)).group(1))))
                printed = self.runs.printed_count(name)
                # every site of these lattices is free: all are particles
                self.assertEqual(count, printed, name)
                self.assertEqual(len(s.particles.id), printed)
                self.assertEqual(s.particle_count, printed)
                self.assertEqual(len(s), printed)
                self.assertEqual(len(np.unique(s.particles.id)), printed)

    def test_mass_is_density_times_volume(self):
        for d in (self.demo2, self.mixed2):
            path = self.last(d)
            s = granflow.load(path)
            text = config_text(path)
            rho = np.array([x for _, x in densities(text)])
            p = s.particles
            shape, dim, mass = (np.asarray(p[k]) for k in ("shape", "dimensions", "mass"))
            density = rho[np.asarray(p.material)]
            for k in np.flatnonzero(shape != 4):
                self.assertAlmostEqual(mass[k] / (density[k] * volume(shape[k], dim[k])), 1.0,
                                       delta=1e-12)
                self.assertAlmostEqual(p.radius[k] / bounding_radius(shape[k], dim[k]), 1.0,
                                       delta=1e-12)
            clumps = np.flatnonzero(shape == 4)
            if d == self.mixed2:
                self.assertEqual(set(shape.tolist()), {0, 1, 2, 3, 4}, "every shape is there")
                v = union_volume(clump_template(text))
                for k in clumps:
                    # the grid's error is a few 1e-6; the overlap of the spheres 6e-3
                    self.assertAlmostEqual(mass[k] / (density[k] * v * dim[k, 0] ** 3), 1.0,
                                           delta=1e-4)
            # the reader's material table is the configuration's
            names = [n for n, _ in densities(text)]
            self.assertEqual(list(s.materials.name), names)
            np.testing.assert_array_equal(s.materials.density, rho)
            self.assertEqual(s.materials.density.units, "kg/m^3")

    def test_kinds_have_their_materials(self):
        s = granflow.load(self.last(self.mixed2))
        p, m = s.particles, s.materials
        kind = {0: "glass", 1: "wood", 2: "steel", 3: "wood", 4: "glass"}  # mixed-pour.cfg
        for code, name in kind.items():
            self.assertEqual(set(m.name[p.material[p.shape == code]]), {name}, name)

    def test_clump_members_are_the_template(self):
        s = granflow.load(self.last(self.mixed2))
        tmpl = clump_template(s.config)
        c0 = np.array([c for c, _ in tmpl])
        r0 = np.array([r for _, r in tmpl])
        p = s.particles
        clumps = p.id[p.shape == 4]
        self.assertGreater(len(clumps), 0)
        self.assertEqual(len(s.clump_members), len(tmpl) * len(clumps))
        for i in clumps:
            b = s.particle(i)
            scale = b.dimensions[0]
            np.testing.assert_allclose(b.members["radius"], r0 * scale, rtol=1e-12)
            # rigid: the distances between members are the template's, scaled
            x = b.members["position"]
            for a in range(len(tmpl)):
                for c in range(a):
                    self.assertAlmostEqual(np.linalg.norm(x[a] - x[c]) /
                                           (scale * np.linalg.norm(c0[a] - c0[c])), 1.0,
                                           delta=1e-9)
            # the bounding radius reaches the farthest member surface
            reach = np.max(np.linalg.norm(x - b.position, axis=1) + b.members["radius"])
            self.assertAlmostEqual(reach / b.radius, 1.0, delta=1e-9)

    def test_ids_and_flight_do_not_depend_on_the_rank_count(self):
        for one, two in ((self.demo1, self.demo2), (self.mixed1, self.mixed2)):
            a, b = granflow.Run(one), granflow.Run(two)
            self.assertEqual(len(a), len(b))
            np.testing.assert_array_equal(a.steps, b.steps)
            for s1, s2 in zip(a, b):
                self.assertEqual(s1.rank_count, 1)
                self.assertEqual(s2.rank_count, 2)
                self.assertEqual(set(np.asarray(s2.particles.owner_rank)), {0, 1})
                np.testing.assert_array_equal(s1.particles.id, s2.particles.id)
                # no contact in these 20 steps: every body flies alike on any rank count
                np.testing.assert_allclose(s1.particles.position, s2.particles.position,
                                           rtol=0, atol=1e-12)
                if s1.clump_members is not None:
                    np.testing.assert_array_equal(s1.clump_members.id, s2.clump_members.id)
                    np.testing.assert_allclose(s1.clump_members.position,
                                               s2.clump_members.position, rtol=0, atol=1e-12)

    def test_file_order_is_by_rank_then_id(self):
        path = self.last(self.mixed2)
        s = granflow.load(path, order="file")
        off = np.asarray(s.particles.rank_offsets)
        self.assertEqual(off[0], 0)
        self.assertEqual(off[-1], len(s))
        for r in range(len(off) - 1):
            ids = np.asarray(s.particles.id[off[r]:off[r + 1]])
            self.assertTrue(np.all(np.diff(ids) > 0))
            self.assertTrue(np.all(s.particles.owner_rank[off[r]:off[r + 1]] == r))
        np.testing.assert_array_equal(s.particles.vertex, np.arange(len(s)))

    def test_free_fall_between_snapshots(self):
        # Symplectic Euler (v' = v + g dt, then x' = x + v' dt) over n steps without contacts:
        # dv = g n dt, dx = n dt v0 + g dt^2 n (n + 1) / 2.
        r = granflow.Run(os.path.join(self.demo2, "run.xmf"))
        a, b = r[0], r[1]
        n = b.step - a.step
        dt = a.dt
        self.assertAlmostEqual(b.time - a.time, n * dt, delta=1e-15)
        gz = np.array([0, 0, -G])
        np.testing.assert_allclose(b.particles.velocity - a.particles.velocity,
                                   np.tile(gz * n * dt, (len(a), 1)), rtol=0, atol=1e-12)
        dx = n * dt * a.particles.velocity + gz * dt * dt * n * (n + 1) / 2
        np.testing.assert_allclose(b.particles.position - a.particles.position, dx,
                                   rtol=0, atol=1e-12)
        # the same through one particle's track
        pid = int(a.particles.id[len(a) // 2])
        v = r.track(pid, "velocity")
        self.assertEqual(v.units, "m/s")
        self.assertEqual(v.shape, (len(r), 3))
        self.assertAlmostEqual(v[1, 2] - v[0, 2], -G * n * dt, delta=1e-12)
        self.assertTrue(np.all(np.isnan(r.track(10 ** 9))), "an absent particle is NaN")

    def test_contact_impulses_balance_the_momentum(self):
        # Impulses between two particles cancel (each contact is listed once, with the impulse on
        # its first body): from one step to the next the bodies' momentum changes by M g dt plus
        # the impulses of the walls, normal and friction vector alike.
        r = granflow.Run(self.pile)
        self.assertGreaterEqual(len(r), 4)
        text = r[0].config
        mu = float(re.search(r"Materials\s*\{\s*friction\s+([^;]+);", text).group(1))
        names = [n for n, _ in densities(text)]
        pairs = {(names.index(a), names.index(b)): float(f) for a, b, f in re.findall(
            r"Pair\s*\{\s*a\s+(\w+);\s*b\s+(\w+);\s*friction\s+([^;]+);", text)}
        wall = names.index(re.search(r"wall_material\s+(\w+);", text).group(1))
        checked = 0
        for a, b in zip(r[:-1], r[1:]):
            self.assertEqual(b.step, a.step + 1)
            c, p = b.contacts, b.particles
            self.assertGreater(len(c), 0)
            np.testing.assert_array_equal(a.particles.id, p.id)
            momentum = [np.sum(s.particles.mass[:, None] * s.particles.velocity, axis=0)
                        for s in (a, b)]
            pair = np.asarray(c.pair)
            walls = pair[:, 1] < 0
            impulse = c.normal_impulse[:, None] * c.normal + c.tangential_impulse
            expect = np.sum(p.mass) * PILE_G * b.dt + np.sum(impulse[walls], axis=0)
            scale = np.sum(p.mass) * G * b.dt
            np.testing.assert_allclose(momentum[1] - momentum[0], expect, rtol=0,
                                       atol=1e-9 * scale)
            # the friction impulse lies in the tangent plane, within the pair's Coulomb cone
            t = np.asarray(c.tangential_impulse)
            self.assertEqual(t.shape, (len(c), 3))
            self.assertTrue(np.all(np.abs(np.sum(t * c.normal, axis=1)) <=
                                   1e-9 * np.linalg.norm(t, axis=1) + 1e-30))
            ids = np.asarray(p.id)
            mat = np.asarray(p.material)[np.searchsorted(ids, pair[:, 0])]
            other = np.where(walls, wall,
                             np.asarray(p.material)[np.searchsorted(ids, np.maximum(pair[:, 1],
                                                                                     0))])
            mus = np.array([pairs.get((i, j), pairs.get((j, i), mu)) for i, j in zip(mat, other)])
            self.assertTrue(np.all(np.linalg.norm(t, axis=1) <=
                                   mus * c.normal_impulse * (1 + 1e-9) + 1e-30))
            self.assertTrue(np.all(np.asarray(c.normal_impulse) >= 0))
            self.assertEqual(c.tangential_magnitude().shape, (len(c),))
            np.testing.assert_allclose(c.tangential_magnitude(), np.linalg.norm(t, axis=1))
            self.assertTrue(set(pair[:, 0]) <= set(ids.tolist()))
            self.assertTrue(all(i in set(ids.tolist()) or i < 0 for i in pair[:, 1]))
            np.testing.assert_allclose(np.linalg.norm(c.normal, axis=1), 1.0, rtol=1e-12)
            checked += 1
        self.assertGreaterEqual(checked, 3)

    # --- both forms of the files -----------------------------------------------------------

    def test_configuration_in_every_form(self):
        src = self.last(self.demo1)
        text = config_text(src)
        self.assertIn("Lattice", text)
        dst = os.path.join(self.runs.tmp, "form.h5")

        def put(data, dtype=None):
            def edit(f):
                del f["configuration"]
                ds = f.create_dataset("configuration", data=data, dtype=dtype)
                ds.attrs["description"] = b"the effective configuration"
            return edit

        forms = {
            "characters": put(np.frombuffer(text.encode(), dtype=np.int8)),
            "one fixed string": put(np.array([text.encode()])),
            "a fixed scalar": put(np.array(text.encode())),
            "a variable string": put(text, h5py.string_dtype()),
            "variable, one element": put([text], h5py.string_dtype()),
        }
        for name, edit in forms.items():
            s = granflow.load(copy_with(src, dst, edit))
            self.assertEqual(s.config, text, name)
            self.assertEqual(float(s.parameters["Time.dt"]), s.dt, name)
            self.assertEqual(numbers(s.parameters["Lattice.count"]), [8, 8, 16], name)
        def bare(f):
            del f["configuration"]
            if "materials" in f:
                del f["materials"]
        s = granflow.load(copy_with(src, dst, bare))
        self.assertIsNone(s.config)
        self.assertIsNone(s.materials)

    def test_tangential_impulse_as_magnitude_or_vector(self):
        src = self.last(self.pile)
        dst = os.path.join(self.runs.tmp, "tangential.h5")
        rng = np.random.default_rng(1)
        with h5py.File(src, "r") as f:
            n = f["contacts/pair"].shape[0]
        vec = rng.normal(size=(n, 3))
        for data in (vec, np.linalg.norm(vec, axis=1)):
            def edit(f):
                del f["contacts/tangential_impulse"]
                ds = f.create_dataset("contacts/tangential_impulse", data=data)
                ds.attrs["units"] = b"N s"
            s = granflow.load(copy_with(src, dst, edit))
            np.testing.assert_array_equal(s.contacts.tangential_impulse, data)
            np.testing.assert_allclose(s.contacts.tangential_magnitude(),
                                       np.linalg.norm(vec, axis=1), rtol=1e-15)
            self.assertEqual(s.contacts.tangential_magnitude().units, "N s")

    def test_a_material_table_in_the_file_is_used(self):
        src = self.last(self.demo1)
        dst = os.path.join(self.runs.tmp, "materials.h5")
        names = ["default", "glass", "steel"]
        dens = np.array([1000.0, 2650.0, 7850.0])
        fric = np.array([[0.4, 0.4, 0.4], [0.4, 0.4, 0.3], [0.4, 0.3, 0.4]])

        def edit(f):
            if "materials" in f:
                del f["materials"]
            g = f.create_group("materials")
            g.create_dataset("name", data=names, dtype=h5py.string_dtype())
            g.create_dataset("density", data=dens).attrs["units"] = b"kg/m^3"
            g.create_dataset("friction", data=fric).attrs["units"] = b"1"

        s = granflow.load(copy_with(src, dst, edit))
        m = s.materials
        self.assertIsInstance(m, granflow.Group)  # the file's, not the configuration's
        self.assertEqual(list(m.name), names)
        np.testing.assert_array_equal(m.density, dens)
        np.testing.assert_array_equal(m.friction, fric)
        # a table of one material: still a table (the friction of the one pair a single value)
        def one(f):
            del f["materials"]
            g = f.create_group("materials")
            g.create_dataset("name", data=np.array([b"glass"], dtype="S64"))
            g.create_dataset("density", data=[2650.0])
            g.create_dataset("friction", data=0.4)
        m = granflow.load(copy_with(src, dst, one)).materials
        self.assertEqual(m.name.tolist(), ["glass"])
        self.assertEqual(m.name[np.zeros(3, dtype=int)].tolist(), ["glass"] * 3)
        self.assertEqual(float(m.friction), 0.4)
        self.assertEqual(len(m), 1)
        # the configuration says the same (demo.cfg: friction 0.4, glass-steel 0.3)
        c = granflow.load(src).materials
        self.assertEqual(list(c.name), names)
        np.testing.assert_array_equal(c.density, dens)
        np.testing.assert_array_equal(c.friction, fric)
        # a snapshot that has its own table agrees with its configuration
        real = granflow.load(src)
        if "materials" in real.group_names:
            g = real.group("materials")
            for k in g.names:
                if k in c.names:
                    np.testing.assert_array_equal(np.asarray(g[k]), np.asarray(c[k]), k)

    # --- the run ---------------------------------------------------------------------------

    def test_run_lists_snapshots_in_step_order(self):
        d = self.mixed2
        files = gr.snapshots(d)
        for r in (granflow.Run(os.path.join(d, "run.xmf")), granflow.Run(d),
                  granflow.load(os.path.join(d, "run.xmf")), granflow.load(d)):
            self.assertEqual(len(r), len(files))
            self.assertEqual([os.path.realpath(f) for f in r.files],
                             [os.path.realpath(f) for f in files])
            self.assertEqual(r._snaps, [None] * len(r), "nothing is opened before use")
            for k, f in enumerate(files):
                with h5py.File(f, "r") as h:
                    self.assertEqual(r.times[k], h.attrs["time"])
                    self.assertEqual(r.steps[k], h.attrs["step"])
            self.assertEqual(r.times.units, "s")
            self.assertTrue(np.all(np.diff(r.steps) > 0))
            self.assertEqual(r[-1].path, r[len(r) - 1].path)
            self.assertIs(r.by_step(int(r.steps[0])), r[0])
            self.assertIs(r.at_time(float(r.times[-1]) + 1.0), r[-1])
            self.assertEqual([s.step for s in r], list(r.steps))
            self.assertEqual([s.step for s in r[0:2]], list(r.steps[:2]))
            with self.assertRaises(KeyError):
                r.by_step(3)
            with self.assertRaises(IndexError):
                r[len(r)]
        # a directory without an .xmf: its snapshot files
        bare = os.path.join(self.runs.tmp, "bare")
        shutil.copytree(d, bare)
        os.remove(os.path.join(bare, "run.xmf"))
        r = granflow.Run(bare)
        self.assertEqual([os.path.basename(f) for f in r.files],
                         [os.path.basename(f) for f in files])
        with h5py.File(files[-1], "r") as h:
            self.assertEqual(r.times[-1], h.attrs["time"])
        self.assertEqual(len(granflow.Run(bare, prefix="other")), 0)

    # --- the particle and the arrays -------------------------------------------------------

    def test_particle_record(self):
        path = self.last(self.mixed2)
        s = granflow.load(path)
        with h5py.File(path, "r") as f:
            ids = f["particles/id"][()]
            for pid in (int(ids[0]), int(ids[-1]), int(ids[len(ids) // 2])):
                b = s.particle(pid)
                k = int(np.flatnonzero(ids == pid)[0])
                for name in ("position", "velocity", "orientation", "mass", "shape", "radius"):
                    np.testing.assert_array_equal(getattr(b, name), f["particles"][name][k])
                self.assertEqual(b.units["velocity"], "m/s")
                self.assertEqual(b.id, pid)
        with self.assertRaises(KeyError):
            s.particle(int(ids.max()) + 1)
        self.assertEqual(granflow.load(path, order="file").particle(int(ids[5])).id, ids[5])

    def test_arrays_keep_units_through_indexing_not_arithmetic(self):
        s = granflow.load(self.last(self.demo1))
        x = s.particles.position
        self.assertIsInstance(x, np.ndarray)
        self.assertEqual(x[:, 2].units, "m")
        self.assertEqual(x[3:5].units, "m")
        self.assertEqual(x.copy().units, "m")
        self.assertEqual(pickle.loads(pickle.dumps(x)).units, "m")
        self.assertNotIsInstance(x * s.particles.velocity, granflow.Array)  # not "m"
        self.assertNotIsInstance(x + x, granflow.Array)
        self.assertNotIsInstance(np.sqrt(x), granflow.Array)
        self.assertAlmostEqual(float(x.sum()), float(np.asarray(x).sum()))
        with self.assertRaises(ValueError):
            x[0, 0] = 1.0  # the kept array is read-only: change a copy
        y = x.copy()
        y[0, 0] = 1.0
        self.assertNotEqual(x[0, 0], 1.0)

    def test_foreign_and_missing_files_are_refused(self):
        foreign = os.path.join(self.runs.tmp, "foreign.h5")
        with h5py.File(foreign, "w") as f:
            f.create_dataset("x", data=[1, 2])
        with self.assertRaisesRegex(ValueError, "foreign.h5 is not a granflow file"):
            granflow.load(foreign)
        with self.assertRaisesRegex(OSError, "nothing.h5"):
            granflow.load(os.path.join(self.runs.tmp, "nothing.h5"))

    def test_checkpoints_load_too(self):
        s = granflow.load(os.path.join(self.mixed2, "ckpt.h5"))
        last = granflow.load(self.last(self.mixed2))
        self.assertEqual(s.kind, "checkpoint")
        self.assertEqual(s.step, last.step)
        np.testing.assert_array_equal(s.particles.id, last.particles.id)
        np.testing.assert_array_equal(s.particles.position, last.particles.position)
        self.assertEqual(s.particles.inverse_mass.units, "1/kg")


if __name__ == "__main__":
    gr.parse_args()
    unittest.main(verbosity=2)
