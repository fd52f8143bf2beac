"""One granflow HDF5 file (a snapshot or a checkpoint) as numpy arrays with units."""
import os

import h5py
import numpy as np

from .config import parse_parameters

# Datasets of /particles that are not one row per particle: kept as stored, never reordered.
_NOT_ROWS = frozenset(("rank_offsets",))

SHAPES = {0: "sphere", 1: "box", 2: "capsule", 3: "cylinder", 4: "clump"}


class Array(np.ndarray):
    """A numpy array that knows its unit (`units`, e.g. "m/s") and what it is (`description`).

    Both survive indexing, slicing, views and copies (`position[:, 2].units == "m"`); any
    arithmetic returns a plain numpy array, because a unit carried through arithmetic without
    algebra (position * velocity still saying "m") would be wrong, and no unit is better than a
    wrong one."""

    def __new__(cls, data, units=None, description=None):
        a = np.asarray(data).view(cls)
        a.units = units
        a.description = description
        return a

    def __array_finalize__(self, obj):
        self.units = getattr(obj, "units", None)
        self.description = getattr(obj, "description", None)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        inputs = tuple(x.view(np.ndarray) if isinstance(x, Array) else x for x in inputs)
        if out is not None:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, Array) else x for x in out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __reduce__(self):
        # pickle (multiprocessing) keeps the unit too
        rebuild, args, state = super().__reduce__()
        return rebuild, args, (state, self.units, self.description)

    def __setstate__(self, state):
        base, self.units, self.description = state
        super().__setstate__(base)

    def __repr__(self):
        return "%r %s" % (self.view(np.ndarray), "[%s]" % self.units if self.units else "")


def _text(value):
    """An HDF5 string (fixed or variable length, bytes or str, scalar or one element) as str."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iu":  # a character array (files before 0.3)
            value = value.astype(np.uint8).tobytes()
        elif value.size == 1:
            value = value.reshape(()).item()
        else:
            return [_text(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return value.rstrip("\0") if isinstance(value, str) else value


def _attr(value):
    """An HDF5 attribute as a plain Python value: str, int, float or a small numpy array."""
    if isinstance(value, (bytes, np.bytes_)) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "SUO"):
        return _text(value)
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read(dset):
    """A dataset's content: numbers as a numpy array, strings as str (one) or an array of str."""
    if h5py.check_string_dtype(dset.dtype) is not None:
        v = dset[()]
        if isinstance(v, np.ndarray):  # even of one element: a table of one name stays a table
            return np.array([_text(x) for x in v.ravel()], dtype=str).reshape(v.shape)
        return _text(v)
    return dset[()]


def _blocks(par, name):
    """The prefixes of the blocks `name` ("Materials.Material") in `par`, in file order."""
    found = {k[:k.rindex(".")] for k in par if k.startswith(name) and
             k[len(name):len(name) + 1] in (".", "[") and k.count(".") == name.count(".") + 1}
    return sorted(found, key=lambda b: int(b[b.rindex("[") + 1:-1]) if b.endswith("]") else 0)


class Table:
    """Named columns as attributes (`table.density`) and items (`table["density"]`), with
    `units` and `descriptions` beside them and `names` listing them."""

    def __init__(self, columns=None, units=None, descriptions=None, where="table"):
        self._where = where
        self._cache = {}
        self.names, self.units, self.descriptions, self.shapes, self.attrs = [], {}, {}, {}, {}
        for k, v in (columns or {}).items():
            u = (units or {}).get(k)
            d = (descriptions or {}).get(k)
            if isinstance(v, np.ndarray) and v.dtype.kind not in "US":
                v = Array(v, u, d)
                v.flags.writeable = False
            self._cache[k] = v
            self.names.append(k)
            self.units[k], self.descriptions[k] = u, d
            self.shapes[k] = np.shape(v)
        self._rows = None

    def _load(self, name):
        raise KeyError(name)

    def __getitem__(self, name):
        if name not in self._cache:
            if name not in self.names:
                raise KeyError("%s has no dataset '%s' (it has: %s)" % (
                    self._where, name, ", ".join(self.names)))
            self._cache[name] = self._load(name)
        return self._cache[name]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __contains__(self, name):
        return name in self.names

    def __iter__(self):
        return iter(self.names)

    def keys(self):
        return list(self.names)

    def __len__(self):
        """The number of rows (particles, contacts, materials), 0 for a table without columns."""
        if self._rows is not None:
            return self._rows
        return self.shapes[self.names[0]][0] if self.names and self.shapes[self.names[0]] else 0

    def __dir__(self):
        return list(super().__dir__()) + self.names

    def __repr__(self):
        return "<granflow %s: %d rows; %s>" % (
            self._where, len(self),
            ", ".join("%s [%s]" % (k, self.units[k]) if self.units[k] else k
                      for k in self.names))


class Group(Table):
    """The datasets of one HDF5 group, each read on first use and kept.

    With `order` (a permutation of the rows), every dataset whose first dimension is the
    group's row count is returned in that order, except those named in `not_rows`."""

    def __init__(self, path, group, order=None, rows=None, not_rows=()):
        super().__init__(where="group /%s of %s" % (group, os.path.basename(path)))
        self._path, self._group = path, group
        self._order, self._rows, self._not_rows = order, rows, frozenset(not_rows)
        with h5py.File(path, "r") as f:
            g = f[group]
            self.names = sorted(k for k in g if isinstance(g[k], h5py.Dataset))
            self.units = {k: _attr(g[k].attrs["units"]) if "units" in g[k].attrs else None
                          for k in self.names}
            self.descriptions = {
                k: _attr(g[k].attrs["description"]) if "description" in g[k].attrs else None
                for k in self.names}
            self.shapes = {k: g[k].shape for k in self.names}
            self.attrs = {k: _attr(v) for k, v in g.attrs.items()}

    def _load(self, name):
        with h5py.File(self._path, "r") as f:
            v = _read(f[self._group][name])
        if isinstance(v, np.ndarray) and v.dtype.kind not in "US":
            if (self._order is not None and name not in self._not_rows and v.ndim > 0
                    and v.shape[0] == self._rows):
                v = v[self._order]
            v = Array(v, self.units[name], self.descriptions[name])
            v.flags.writeable = False  # kept for the next use: change a copy
        elif isinstance(v, np.ndarray) and self._order is not None and len(v) == self._rows:
            v = v[self._order]
        return v


class Contacts(Group):
    """/contacts: one row per contact, in the file's order (grouped by the rank that solved it)."""

    def tangential_magnitude(self):
        """|friction impulse| per contact (N s), from the C x 3 vector of newer files or the
        magnitude that files before 0.3 store."""
        t = self["tangential_impulse"].view(np.ndarray)
        return Array(np.linalg.norm(t, axis=1) if t.ndim == 2 else t, self.units.get(
            "tangential_impulse"), "magnitude of the friction impulse of the last step")


class Record:
    """One particle: every per-particle dataset's value as an attribute, `units` beside them;
    for a clump, `members` holds its member spheres (position, radius)."""

    def __init__(self, values, units, members=None):
        self.__dict__.update(values)
        self.units = units
        self.members = members

    def __repr__(self):
        lines = ["<granflow particle %s" % self.__dict__.get("id")]
        for k, u in self.units.items():
            v = self.__dict__[k]
            v = np.asarray(v).tolist() if isinstance(v, np.ndarray) else v
            lines.append("  %s = %s%s" % (k, v, " " + u if u and u != "1" else ""))
        return "\n".join(lines) + ">"


class Snapshot:
    """A granflow snapshot (or checkpoint) file.

    Header values are attributes (`time` in s, `step`, `dt` in s, `box_min`, `box_max` in m,
    `periodic`, `particle_count`, `rank_count`, `format`, and every other root attribute in
    `attrs`); `config` is the run's effective configuration as text and `parameters` the same as
    a dict ("Time.dt" -> "1e-4"). Groups: `particles`, and where the file has them
    `clump_members`, `contacts`, `materials` (None otherwise); any group by name with
    `group(name)`. Datasets are read on first use.

    Rows of `particles` are sorted by id (order="id", the default): row k is then the same body
    in every snapshot of a run without inflow or outflow, whatever the rank count that wrote it.
    The file itself is sorted by id only within each rank's rows; order="file" keeps its order
    (the rows of the XDMF connectivity `vertex`). `clump_members` follows its clump's id, members
    in their template order; `contacts` and other groups are kept in file order."""

    def __init__(self, path, order="id"):
        if order not in ("id", "file"):
            raise ValueError("order must be 'id' or 'file', not %r" % (order,))
        self.path = os.fspath(path)
        self.order = order
        try:
            f = h5py.File(self.path, "r")
        except OSError as e:
            raise OSError("%s: not a readable HDF5 file (%s)" % (self.path, e)) from None
        with f:
            self.attrs = {k: _attr(v) for k, v in f.attrs.items()}
            fmt = self.attrs.get("format")
            if not isinstance(fmt, str) or not fmt.startswith("granflow "):
                raise ValueError("%s is not a granflow file (its 'format' attribute is %r)"
                                 % (self.path, fmt))
            self.group_names = sorted(k for k in f if isinstance(f[k], h5py.Group))
            # one string (scalar or of one element), or characters (files before 0.3)
            self._config = _text(f["configuration"][()]) if "configuration" in f else None
        self.format = fmt
        self.kind = fmt.split()[1] if len(fmt.split()) > 1 else fmt
        self.time = self.attrs.get("time")
        self.step = self.attrs.get("step")
        self.dt = self.attrs.get("dt")
        self.box_min = self.attrs.get("box_min")
        self.box_max = self.attrs.get("box_max")
        self.periodic = self.attrs.get("periodic")
        self.particle_count = self.attrs.get("particle_count")
        self.rank_count = self.attrs.get("rank_count")
        self._groups = {}
        self._parameters = None
        self._config_table = None

    # --- groups ---------------------------------------------------------------------------

    def group(self, name):
        """The HDF5 group `name` ("particles", "warmstart") as a Group, None if the file has
        none of that name."""
        if name not in self._groups:
            with h5py.File(self.path, "r") as f:
                if not isinstance(f.get(name), h5py.Group):
                    return None
            self._groups[name] = self._make_group(name)
        return self._groups[name]

    def _make_group(self, name):
        if name == "particles":
            with h5py.File(self.path, "r") as f:
                ids = f["particles/id"][()]
            order = np.argsort(ids, kind="stable") if self.order == "id" else None
            return Group(self.path, name, order, len(ids), _NOT_ROWS)
        if name == "clump_members":
            with h5py.File(self.path, "r") as f:
                ids = f["clump_members/id"][()]
            order = np.argsort(ids, kind="stable") if self.order == "id" else None
            return Group(self.path, name, order, len(ids))
        if name == "contacts":
            return Contacts(self.path, name)
        return Group(self.path, name)

    @property
    def particles(self):
        return self.group("particles")

    @property
    def clump_members(self):
        return self.group("clump_members")

    @property
    def contacts(self):
        return self.group("contacts")

    @property
    def materials(self):
        """The material table, indexed by /particles/material: the file's /materials group where
        it has one, else (older files) `name`, `density` (kg/m^3) and `friction` (M x M) as the
        configuration defines them: index 0 is granflow's "default" material (1000 kg/m^3), then
        the Material blocks in order; friction is Materials.friction for every pair unless a
        Pair block sets it. None when neither is in the file."""
        if "materials" in self.group_names:
            return self.group("materials")
        if not self._config:
            return None
        if self._config_table is None:
            self._config_table = self._config_materials()
        return self._config_table

    def _config_materials(self):
        par = self.parameters
        names, density = ["default"], [1000.0]
        for b in _blocks(par, "Materials.Material"):
            names.append(par[b + ".name"])
            density.append(float(par[b + ".density"]))
        mu = float(par.get("Materials.friction", 0.0))
        friction = np.full((len(names), len(names)), mu)
        index = {n: i for i, n in enumerate(names)}
        for b in _blocks(par, "Materials.Pair"):  # in file order: the last setting counts
            i, j = index[par[b + ".a"]], index[par[b + ".b"]]
            friction[i, j] = friction[j, i] = float(par[b + ".friction"])
        return Table({"name": np.array(names), "density": np.array(density),
                      "friction": friction},
                     {"density": "kg/m^3", "friction": "1"},
                     {"name": "material name", "density": "density",
                      "friction": "friction coefficient of each pair of materials"},
                     where="material table of %s (from its configuration)"
                     % os.path.basename(self.path))

    # --- configuration --------------------------------------------------------------------

    @property
    def config(self):
        """The effective configuration of the run (text), None if the file holds none."""
        return self._config

    @property
    def parameters(self):
        """The configuration as a flat dict of strings: "Time.dt" -> "1e-4", vectors as written
        ("< 8, 8, 16 >"); a block that occurs more than once in its parent is numbered:
        "Materials.Material[1].density"."""
        if self._parameters is None:
            self._parameters = parse_parameters(self._config or "")
        return self._parameters

    # --- particles ------------------------------------------------------------------------

    def __len__(self):
        return len(self.particles) if "particles" in self.group_names else 0

    def particle(self, pid):
        """The particle of global id `pid` as a Record (KeyError if the file has none)."""
        p = self.particles
        ids = p["id"].view(np.ndarray)
        if self.order == "id":
            k = int(np.searchsorted(ids, pid))
            found = k < len(ids) and ids[k] == pid
        else:
            hits = np.flatnonzero(ids == pid)
            found, k = len(hits) > 0, int(hits[0]) if len(hits) else 0
        if not found:
            raise KeyError("%s has no particle of id %s" % (self.path, pid))
        names = [n for n in p.names if n not in _NOT_ROWS and p.shapes[n][:1] == (len(ids),)]
        values = {n: p[n][k] for n in names}
        members = None
        m = self.clump_members
        if m is not None and "clump" in values and values["clump"] >= 0:
            sel = m["id"].view(np.ndarray) == pid
            members = {n: m[n][sel] for n in m.names if n not in ("id", "vertex")}
        return Record(values, {n: p.units[n] for n in names}, members)

    def __repr__(self):
        t = "%.6g s" % self.time if isinstance(self.time, float) else "?"
        return "<granflow %s %s: step %s, t = %s, %s particles>" % (
            self.kind, os.path.basename(self.path), self.step, t, self.particle_count)
