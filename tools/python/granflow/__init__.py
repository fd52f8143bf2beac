"""Reads granflow output into numpy arrays with units (needs only h5py and numpy).

    import granflow
    s = granflow.load("output/run_000001000.h5")    # one snapshot (or checkpoint)
    s.time, s.step, s.dt                              # s, 1, s
    x = s.particles.position                          # N x 3, sorted by particle id
    x.units, s.particles.units["velocity"]           # "m", "m/s"
    s.particle(42).velocity                           # one particle as a record
    s.config, s.parameters["Time.dt"]                 # the run's configuration

    run = granflow.load("output/run.xmf")             # or granflow.Run("output")
    len(run), run.times, run.steps
    run[-1].particles.velocity                        # snapshots open when first used
    run.by_step(1000), run.at_time(0.1), run.track(42, "position")

Drives a simulation in this process (granflow.driver; needs libgranflow.so):

    sim = granflow.Simulation("configs/demo.cfg")
    sim.advance(500); p = sim.particles(); sim.set_velocities(p["id"], p["velocity"] * 2)
"""
import os

from .config import parse_parameters
from .driver import GranflowError, Simulation
from .run import Run, xdmf_snapshots
from .snapshot import SHAPES, Array, Contacts, Group, Record, Snapshot

__version__ = "0.1.0"
__all__ = ["load", "Simulation", "GranflowError", "Snapshot", "Run", "Array", "Group", "Contacts", "Record", "SHAPES",
           "parse_parameters", "xdmf_snapshots"]


def load(path, **kwargs):
    """A Snapshot for an HDF5 file; a Run for an .xmf file or an output directory."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(".xmf"):
        return Run(path, **kwargs)
    return Snapshot(path, **kwargs)
