"""A granflow run: its snapshots in step order, each loaded when first used."""
import glob
import os
import re
import xml.etree.ElementTree as ET

import h5py
import numpy as np

from .snapshot import Array, Snapshot

_STEP = re.compile(r"_(\d+)\.h5$")


def xdmf_snapshots(xmf):
    """[(file, time)] of the snapshots a granflow .xmf file lists, in its order; file is the path
    as the .xmf gives it, relative to the .xmf's directory. Reads both layouts: each snapshot a
    spatial collection naming its file in an Information element (empty ones included), or
    (files of earlier versions) a grid over /particles/position."""
    root = ET.parse(xmf).getroot()
    out = []
    for coll in root.iter("Grid"):
        if coll.get("GridType") != "Collection" or coll.get("CollectionType") != "Temporal":
            continue
        for grid in coll.findall("Grid"):
            t = grid.find("Time")
            info = [i for i in grid.findall("Information") if i.get("Name") == "snapshot"]
            geo = grid.find("Geometry/DataItem")
            if t is None:
                continue
            if info:
                out.append((info[0].get("Value"), float(t.get("Value"))))
            elif geo is not None:
                file, _, dset = (geo.text or "").strip().partition(":")
                if dset.strip("/") == "particles/position":
                    out.append((file, float(t.get("Value"))))
        break  # the particles' collection (the first) lists every snapshot
    return out


class Run:
    """The snapshots of one run, in step order.

    Run("output/run.xmf") lists the snapshots the XDMF file lists; Run("output") the
    `<prefix>_<step>.h5` files of the directory (prefix "run" unless given), through its
    `<prefix>.xmf` when there is one. `len(run)`, `run.times` (s), `run.steps`, `run.files`;
    `run[k]` (negative k and slices too) and iteration give Snapshot objects, each opened on
    first use and kept; `run.by_step(step)`, `run.at_time(t)` (the nearest), and
    `run.track(id, name)` one particle's values through the run. Keyword arguments go to
    Snapshot (order="file")."""

    def __init__(self, path, prefix="run", **snapshot_args):
        path = os.fspath(path)
        self._args = snapshot_args
        if os.path.isdir(path):
            xmf = os.path.join(path, prefix + ".xmf")
            self.directory = path
            self.xmf = xmf if os.path.exists(xmf) else None
        else:
            self.directory = os.path.dirname(path) or "."
            self.xmf = path
        if self.xmf:
            listed = xdmf_snapshots(self.xmf)
            self.files = [os.path.normpath(os.path.join(self.directory, f)) for f, _ in listed]
            times = [t for _, t in listed]
            steps = [self._step(f) for f in self.files]
        else:
            self.files, times, steps = [], [], []
            for f in glob.glob(os.path.join(glob.escape(path), glob.escape(prefix) + "_*.h5")):
                m = _STEP.search(f)
                if m and os.path.basename(f) == "%s_%s.h5" % (prefix, m.group(1)):
                    self.files.append(f)
            self.files.sort(key=self._step)
            for f in self.files:
                with h5py.File(f, "r") as h:
                    times.append(float(h.attrs["time"]))
            steps = [self._step(f) for f in self.files]
        self.times = np.array(times, dtype=float).view(Array)
        self.times.units, self.times.description = "s", "time of each snapshot"
        self.steps = np.array(steps, dtype=np.int64)
        self._snaps = [None] * len(self.files)

    @staticmethod
    def _step(file):
        m = _STEP.search(file)
        if m:
            return int(m.group(1))
        with h5py.File(file, "r") as h:
            return int(h.attrs["step"])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        k = range(len(self))[k]  # negative indices, and IndexError past the end
        if self._snaps[k] is None:
            self._snaps[k] = Snapshot(self.files[k], **self._args)
        return self._snaps[k]

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def by_step(self, step):
        """The snapshot of step `step` (KeyError if the run has none)."""
        hits = np.flatnonzero(self.steps == step)
        if not len(hits):
            raise KeyError("the run has no snapshot at step %s (steps %s)" % (
                step, ", ".join(map(str, self.steps))))
        return self[int(hits[0])]

    def at_time(self, t):
        """The snapshot nearest to time t (s)."""
        if not len(self):
            raise IndexError("the run has no snapshots")
        return self[int(np.argmin(np.abs(self.times.view(np.ndarray) - t)))]

    def track(self, pid, name="position"):
        """Particle `pid`'s `name` in every snapshot: an array with one row per snapshot, NaN
        where the particle is absent (not yet in, or gone)."""
        rows, units = [], None
        for s in self:
            try:
                rows.append(np.asarray(getattr(s.particle(pid), name), dtype=float))
            except KeyError:
                rows.append(None)
            units = units or s.particles.units.get(name)
        shape = next((r.shape for r in rows if r is not None), ())
        out = np.full((len(rows),) + shape, np.nan)
        for i, r in enumerate(rows):
            if r is not None:
                out[i] = r
        return Array(out, units, "%s of particle %s through the run" % (name, pid))

    def __repr__(self):
        span = ("steps %d to %d, t = %.6g to %.6g s" % (
            self.steps[0], self.steps[-1], self.times[0], self.times[-1]) if len(self) else
            "empty")
        return "<granflow run %s: %d snapshots, %s>" % (
            self.xmf or self.directory, len(self), span)
