"""The Python driver (granflow.Simulation over libgranflow.so, issue 34's driver on issue 32's
C API) at 1 and 2 ranks: each process drives its rank. Spheres in free flight move by v dt per
step exactly after their velocities are set from Python; steps in parts end where one go ends; gravity changed between steps gives free fall and is
recorded in what is written next; friction switched on between steps slows a sliding sphere at
mu g, is recorded, and keys or values set_material does not take are refused;
bodies added between steps get the next ids and fly at their velocities, and overlapping or
mistyped ones are refused; a snapshot written from Python reads back with the reader; a bad configuration raises
GranflowError naming the file.

    mpiexec -n 2 python3 tests/test_python_driver.py   (GRANFLOW_LIBRARY, PYTHONPATH set)
"""
import os
import sys
import tempfile

import numpy as np

import granflow

CONFIG = """
Domain { min < 0, 0, 0 >; max < 0.06, 0.06, 0.03 >; }
Materials { Material { name glass; density 2500; } }
Lattice { count < 4, 4, 2 >; origin < 0.015, 0.015, 0.01 >; spacing 0.01;
  radius 0.002; material glass; }
Physics { gravity < 0, 0, 0 >; }
Time { dt 1e-4; steps 100; }
Output { progress_every 0; }
"""


SLIDE = """
Domain { min < -0.5, -0.5, 0 >; max < 0.5, 0.5, 0.2 >; box_walls true; }
Materials { friction 0; Material { name glass; density 2500; } }
Body { shape sphere; radius 0.01; position < 0, 0, 0.01 >; velocity < 1, 0, 0 >; }
Physics { gravity < 0, 0, -9.81 >; }
Time { dt 1e-4; steps 100; }
Output { progress_every 0; }
"""


def fail(msg):
    print(f"test_python_driver: {msg}", file=sys.stderr, flush=True)
    # Without MPI_Finalize (atexit): it would wait for the other ranks, which wait for this one;
    # mpiexec ends them all when one exits with an error.
    os._exit(1)


def main():
    # Every rank uses the same directory: the job's first argument, or a fixed name per job.
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
    cfg = os.path.join(work, "free.cfg")
    with open(cfg + f".{os.getpid()}", "w") as f:
        f.write(CONFIG)
    os.replace(cfg + f".{os.getpid()}", cfg)  # each rank writes the same text: any may win

    def make(tag, extra=()):
        return granflow.Simulation(cfg, overrides=[f"-Output.directory={work}/{tag}",
                                                   f"-Output.checkpoint={work}/{tag}/c.h5",
                                                   *extra], quiet=True)

    sim = make("free")
    rank, size = sim.rank, sim.size
    if sim.count() != 32 or sim.step != 0 or sim.last_step != 100:
        fail(f"count {sim.count()}, step {sim.step}, last step {sim.last_step}")
    sim.advance(10)
    p = sim.particles()
    # Every rank names the ids it owns; the k-th lowest id flies at (k, -k, k/2) mm/s, which
    # needs no communication: the lattice's ids are consecutive from its first.
    v = np.stack([1e-3 * p["id"], -1e-3 * p["id"], 0.5e-3 * p["id"]], axis=1)
    found = sim.set_velocities(p["id"], v)
    if found != 32:
        fail(f"found {found} of 32")
    start = dict(zip(p["id"].tolist(), p["position"]))
    sim.advance(50)
    q = sim.particles()
    for i, pid in enumerate(q["id"].tolist()):
        want = start.get(pid)
        if want is None:
            continue  # migrated in from another rank: checked there
        want = want + 50 * 1e-4 * np.array([1e-3 * pid, -1e-3 * pid, 0.5e-3 * pid])
        if np.max(np.abs(q["position"][i] - want)) > 1e-15:
            fail(f"particle {pid} at {q['position'][i]}, free flight says {want}")
    if sim.step != 60 or abs(sim.time - 60e-4) > 1e-15:
        fail(f"step {sim.step}, time {sim.time}")
    # Bodies added between steps (on either rank's side of the box): the next ids, in flight
    # at their velocity, counted; overlapping or mistyped bodies and other blocks are refused.
    ids = sim.add_bodies("Body { shape sphere; radius 0.002; position < 0.005, 0.005, 0.025 >;"
                         " velocity < 0.1, 0, 0 >; material glass; }")
    box = sim.add_body("box", (0.055, 0.055, 0.025), half_extents=(0.002, 0.001, 0.0015),
                       velocity=(0.0, -0.05, 0.0), material="glass")
    if list(ids) != [32] or box != 33 or sim.count() != 34:
        fail(f"added ids {list(ids)} and {box}, {sim.count()} particles")
    # lattice particle 0 stays at the lattice's origin (its velocity is 1e-3 x its id)
    for bad in ("Body { shape sphere; radius 0.002; position < 0.015, 0.015, 0.01 >; }",
                "Body { shape sphere; radiuss 0.002; position < 0.005, 0.05, 0.025 >; }",
                "Body { shape sphere; radius 0.002; position < 0.5, 0.05, 0.025 >; }",
                "Physics { gravity < 0, 0, 1 >; }", ""):
        try:
            sim.add_bodies(bad)
        except granflow.GranflowError:
            pass
        else:
            fail(f"add_bodies('{bad}') was accepted")
    if sim.count() != 34:
        fail(f"{sim.count()} particles after refused bodies")
    sim.advance(10)
    moved = {int(i): x for i, x in zip(sim.particles()["id"], sim.particles()["position"])}
    want = {32: (0.005 + 10 * 1e-4 * 0.1, 0.005, 0.025), 33: (0.055, 0.055 - 10 * 1e-4 * 0.05,
                                                                0.025)}
    for pid, w in want.items():
        if pid in moved and np.max(np.abs(moved[pid] - np.array(w))) > 1e-15:
            fail(f"added body {pid} at {moved[pid]}, free flight says {w}")
    # Gravity switched on between steps: every free particle's vz falls by g n dt.
    before = sim.particles()
    sim.set_gravity((0.0, 0.0, -9.81))
    sim.advance(10)
    after = sim.particles()
    vz0 = dict(zip(before["id"].tolist(), before["velocity"][:, 2]))
    for pid, vz in zip(after["id"].tolist(), after["velocity"][:, 2]):
        if pid in vz0 and abs(vz - (vz0[pid] - 9.81 * 10 * 1e-4)) > 1e-15:
            fail(f"particle {pid}: vz {vz}, free fall says {vz0[pid] - 9.81e-3}")
    snap = os.path.join(work, "free", "from_python.h5")
    sim.write_snapshot(snap)
    sim.finish()
    sim.close()
    if rank == 0:
        s = granflow.load(snap)
        if s.step != 80 or len(s.particles.id) != 34:
            fail(f"the snapshot holds step {s.step} and {len(s.particles.id)} particles")
        g = s.parameters["Physics.gravity"].strip("<> ").split(",")
        if [float(x) for x in g] != [0.0, 0.0, -9.81]:
            fail(f"the snapshot records gravity {s.parameters['Physics.gravity']}")

    # Parts equal one go, bit for bit (gravity on: contacts with the floor and each other).
    ends = []
    for parts in (1, 3):
        with make(f"parts{parts}", ["-Physics.gravity=<0,0,-9.81>"]) as sim:
            for _ in range(parts):
                sim.advance(300 // parts)
            p = sim.particles()
            order = np.argsort(p["id"])
            ends.append((p["id"][order], p["position"][order], p["velocity"][order]))
    if not all(np.array_equal(a, b) for a, b in zip(*ends)):
        fail("three parts of 100 steps did not end where 300 in one go end")

    # Friction switched on between steps: a sphere sliding on the floor without spin keeps its
    # speed without friction, then slows at mu g (the closed form while it slides).
    slide = os.path.join(work, "slide.cfg")
    with open(slide + f".{os.getpid()}", "w") as f:
        f.write(SLIDE)
    os.replace(slide + f".{os.getpid()}", slide)
    with granflow.Simulation(slide, overrides=[f"-Output.directory={work}/slide",
                                               f"-Output.checkpoint={work}/slide/c.h5"],
                             quiet=True) as sim:
        sim.advance(10)
        sim.set_material("friction", 0.4)
        for bad in (("Material[glass].density", 3000.0), ("restitution", 2.0),
                    ("Pair[1].friction", 0.1)):
            try:
                sim.set_material(*bad)
            except granflow.GranflowError:
                pass
            else:
                fail(f"set_material{bad} was accepted")
        sim.advance(20)
        p = sim.particles()
        if len(p["id"]) and abs(p["velocity"][0, 0] - (1.0 - 0.4 * 9.81 * 20 * 1e-4)) > 1e-9:
            fail(f"the sphere slides at {p['velocity'][0, 0]} m/s, Coulomb's law says "
                 f"{1.0 - 0.4 * 9.81 * 20e-4}")
        snap = os.path.join(work, "slide", "s.h5")
        sim.write_snapshot(snap)
    if rank == 0 and granflow.load(snap).parameters["Materials.friction"] != "0.4":
        fail(f"the snapshot records friction {granflow.load(snap).parameters['Materials.friction']}")

    try:
        granflow.Simulation(os.path.join(work, "missing.cfg"), quiet=True)
    except granflow.GranflowError as e:
        if rank == 0 and "missing.cfg" not in str(e):
            fail(f"the error does not name the file: {e}")
    else:
        fail("a missing configuration was accepted")
    if rank == 0:
        print(f"the Python driver works at {size} rank(s)")


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # an error on one rank must end the job, not leave the others waiting
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
