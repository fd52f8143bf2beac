"""Driving a simulation from Python: granflow's C driver (granflow/run.h) through ctypes.

    import granflow
    sim = granflow.Simulation("configs/demo.cfg", overrides=["-Time.steps=400"])
    sim.advance(200)                      # 200 steps, with the configuration's output
    p = sim.particles()                   # this rank's particles as numpy arrays
    p["velocity"][:, 2] += 0.5            # m/s
    sim.set_velocities(p["id"], p["velocity"])
    sim.advance(200)
    sim.write_snapshot("kicked.h5")
    sim.finish()                          # final checkpoint, reports, summary

Runs under `mpirun -n 4 python3 script.py` as under `python3 script.py`: each process drives its
rank, and every call is collective (all ranks call it, in the same order). The library starts MPI
when nothing has (mpi4py, if imported first, starts it instead) and ends it at exit.

The library is libgranflow.so, found in this order: the path in the environment variable
GRANFLOW_LIBRARY; beside the installed package (<prefix>/lib); a build tree's build/.
"""
import atexit
import ctypes
import os
import weakref

import numpy as np

_API = 4  # GF_RUN_API of granflow/run.h that this binding speaks
_lib = None
_live = weakref.WeakSet()  # open simulations: closed before MPI ends at exit


class GranflowError(RuntimeError):
    """A failure the library reported (its message names the cause); every rank raises it."""


class _Options(ctypes.Structure):
    _fields_ = [("config_path", ctypes.c_char_p), ("overrides", ctypes.POINTER(ctypes.c_char_p)),
                ("noverrides", ctypes.c_int), ("restart", ctypes.c_char_p),
                ("restart_force", ctypes.c_int), ("quiet", ctypes.c_int), ("check", ctypes.c_int)]


def _candidates():
    env = os.environ.get("GRANFLOW_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    # Installed: <prefix>/share/granflow/python/granflow/driver.py and <prefix>/lib.
    yield os.path.join(here, "..", "..", "..", "..", "lib", "libgranflow.so")
    # A build tree: <source>/tools/python/granflow and <source>/build.
    yield os.path.join(here, "..", "..", "..", "build", "libgranflow.so")


def _library():
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        path = os.path.normpath(path)
        tried.append(path)
        if os.path.exists(path):
            # RTLD_GLOBAL: Open MPI loads its components as plugins that need libmpi's symbols.
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            break
    else:
        raise GranflowError("libgranflow.so not found (set GRANFLOW_LIBRARY); tried: "
                            + ", ".join(tried))
    if lib.gf_run_api() != _API:
        raise GranflowError(f"{path} speaks driver interface {lib.gf_run_api()}, this binding {_API}")
    vp, i64, dp = ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_double)
    i64p = ctypes.POINTER(ctypes.c_int64)
    sig = {
        "gf_run_create": (ctypes.c_int, [ctypes.POINTER(_Options), ctypes.POINTER(vp)]),
        "gf_run_advance": (ctypes.c_int, [vp, ctypes.c_long, ctypes.POINTER(ctypes.c_int)]),
        "gf_run_finish": (ctypes.c_int, [vp]),
        "gf_run_destroy": (None, [vp]),
        "gf_run_end_job": (None, []),
        "gf_run_step": (ctypes.c_long, [vp]),
        "gf_run_last_step": (ctypes.c_long, [vp]),
        "gf_run_time": (ctypes.c_double, [vp]),
        "gf_run_rank": (ctypes.c_int, [vp]),
        "gf_run_size": (ctypes.c_int, [vp]),
        "gf_run_local_count": (ctypes.c_size_t, [vp]),
        "gf_run_global_count": (ctypes.c_int, [vp, i64p]),
        "gf_run_local_particles": (ctypes.c_int, [vp, i64p, dp, dp, dp]),
        "gf_run_set_velocities": (ctypes.c_int, [vp, ctypes.c_size_t, i64p, dp, i64p]),
        "gf_run_set_gravity": (ctypes.c_int, [vp, dp]),
        "gf_run_set_material": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_double]),
        "gf_run_add_bodies": (ctypes.c_int, [vp, ctypes.c_char_p, i64p, i64p]),
        "gf_run_write_snapshot": (ctypes.c_int, [vp, ctypes.c_char_p]),
        "gf_run_write_checkpoint": (ctypes.c_int, [vp, ctypes.c_char_p]),
        "gf_error_message": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    atexit.register(_end)
    _lib = lib
    return lib


def _end():
    """At exit: every simulation still open is closed (its communicators freed), then MPI ends."""
    for sim in list(_live):
        sim.close()
    _lib.gf_run_end_job()


def _check(status):
    if status != 0:
        raise GranflowError(_lib.gf_error_message().decode(errors="replace"))


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def _value(v):
    """A Python value as a configuration writes it: numbers exactly, sequences as vectors,
    strings quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if np.ndim(v) == 1:
        return "< %s >" % ", ".join(repr(float(x)) for x in v)
    return str(int(v)) if isinstance(v, (int, np.integer)) else repr(float(v))


def body_block(shape, position, **keys):
    """The text of a Body block with these keys (see Simulation.add_body)."""
    items = [("shape", shape), ("position", position)] + list(keys.items())
    return "Body { %s }" % " ".join("%s %s;" % (k, _value(v)) for k, v in items)


class Simulation:
    """A granflow run made from a configuration file as the `granflow` program makes it."""

    def __init__(self, config, overrides=(), restart=None, restart_force=False, quiet=False):
        lib = _library()
        items = [os.fsencode(o) for o in overrides]
        arr = (ctypes.c_char_p * max(len(items), 1))(*items)
        self._keep = (items, arr)
        o = _Options(os.fsencode(config), arr, len(items),
                     os.fsencode(restart) if restart else None, int(restart_force), int(quiet), 0)
        handle = ctypes.c_void_p()
        self._h = None
        _check(lib.gf_run_create(ctypes.byref(o), ctypes.byref(handle)))
        self._h = handle
        _live.add(self)

    def _handle(self):
        if not self._h:
            raise GranflowError("the simulation was closed")
        return self._h

    def advance(self, steps):
        """Runs `steps` more steps; True if a signal or Output.wall_limit stopped them early."""
        stopped = ctypes.c_int(0)
        _check(_lib.gf_run_advance(self._handle(), int(steps), ctypes.byref(stopped)))
        return bool(stopped.value)

    @property
    def step(self):
        return _lib.gf_run_step(self._handle())

    @property
    def last_step(self):
        """Time.steps, or the step the latest advance reached if beyond it."""
        return _lib.gf_run_last_step(self._handle())

    @property
    def time(self):
        return _lib.gf_run_time(self._handle())

    @property
    def rank(self):
        return _lib.gf_run_rank(self._handle())

    @property
    def size(self):
        return _lib.gf_run_size(self._handle())

    def count(self):
        """The particles of all ranks (collective)."""
        n = ctypes.c_int64(0)
        _check(_lib.gf_run_global_count(self._handle(), ctypes.byref(n)))
        return n.value

    def particles(self):
        """This rank's particles: id (n), position, velocity, angular_velocity (n x 3; m, m/s,
        rad/s), as copies."""
        n = _lib.gf_run_local_count(self._handle())
        out = {"id": np.empty(n, dtype=np.int64)}
        for k in ("position", "velocity", "angular_velocity"):
            out[k] = np.empty((n, 3), dtype=np.float64)
        _check(_lib.gf_run_local_particles(
            self._handle(), _ptr(out["id"], ctypes.c_int64), _ptr(out["position"], ctypes.c_double),
            _ptr(out["velocity"], ctypes.c_double), _ptr(out["angular_velocity"], ctypes.c_double)))
        return out

    def set_velocities(self, ids, velocities):
        """Sets the velocity (m/s) of each particle of `ids` this rank owns (collective: every
        rank calls it, with its own or the same lists); returns how many exist in the job."""
        ids = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        v = np.ascontiguousarray(velocities, dtype=np.float64).reshape(-1, 3)
        if len(v) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(v)} velocities")
        found = ctypes.c_int64(0)
        _check(_lib.gf_run_set_velocities(self._handle(), len(ids), _ptr(ids, ctypes.c_int64),
                                          _ptr(v, ctypes.c_double), ctypes.byref(found)))
        return found.value

    def set_gravity(self, g):
        """Gravity (m/s^2, 3 numbers) from the next step on; snapshots and checkpoints record it
        (Physics.gravity)."""
        g = np.ascontiguousarray(g, dtype=np.float64).reshape(3)
        _check(_lib.gf_run_set_gravity(self._handle(), _ptr(g, ctypes.c_double)))

    def set_material(self, key, value):
        """A contact law's coefficient from the next step on: key of the Materials block for every
        pair ("friction", "restitution", "cohesion", "rolling_friction", "twisting_friction",
        "restitution_velocity") or of one Pair block ("Pair[2].friction"); recorded like
        gravity. Other keys and values out of range raise GranflowError, nothing changed."""
        _check(_lib.gf_run_set_material(self._handle(), key.encode(), float(value)))

    def add_bodies(self, text):
        """Adds the Body blocks of `text` (configuration syntax) between steps, every rank the
        same; returns their ids (a range). A body that overlaps another, lies outside the box or
        has an unknown key raises GranflowError, nothing added."""
        first, count = ctypes.c_int64(-1), ctypes.c_int64(0)
        _check(_lib.gf_run_add_bodies(self._handle(), text.encode(), ctypes.byref(first),
                                      ctypes.byref(count)))
        return range(first.value, first.value + count.value)

    def add_body(self, shape, position, **keys):
        """Adds one body, its keys as in a Body block: add_body("sphere", (0, 0, 0.1),
        radius=0.01, velocity=(1, 0, 0), material="glass"); vectors as sequences, orientation
        as a quaternion (w, x, y, z). Returns its id."""
        ids = self.add_bodies(body_block(shape, position, **keys))
        return ids[0]

    def write_snapshot(self, path):
        _check(_lib.gf_run_write_snapshot(self._handle(), os.fsencode(path)))

    def write_checkpoint(self, path):
        _check(_lib.gf_run_write_checkpoint(self._handle(), os.fsencode(path)))

    def finish(self):
        """The final checkpoint, the reports' and the run's summaries."""
        _check(_lib.gf_run_finish(self._handle()))

    def close(self):
        if self._h:
            _lib.gf_run_destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            self.close()
