"""Short granflow runs for the Python tests (test_python_reader.py, test_xdmf.py).

The tests take the program, mpiexec and the source tree from the command line (CMake passes
them) or from GF_GRANFLOW, GF_MPIEXEC and GF_SOURCE_DIR:
    python3 tests/test_xdmf.py --granflow build/granflow --mpiexec mpiexec --source .
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ARGS = None


def parse_args():
    """Takes this module's options off sys.argv (unittest gets the rest)."""
    global ARGS
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--granflow", default=os.environ.get("GF_GRANFLOW"))
    ap.add_argument("--mpiexec", default=os.environ.get("GF_MPIEXEC", "mpiexec"))
    ap.add_argument("--source", default=os.environ.get(
        "GF_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
    ARGS, rest = ap.parse_known_args()
    if not ARGS.granflow:
        sys.exit("give --granflow PATH (the built granflow program) or set GF_GRANFLOW")
    sys.argv[1:] = rest
    sys.path.insert(0, os.path.join(ARGS.source, "tools", "python"))
    return ARGS


class Runs:
    """Runs granflow into a temporary directory and removes it at close()."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="gf_pytest_")
        self.logs = {}

    def run(self, name, config, ranks, *overrides):
        """Runs configs/<config> on `ranks` ranks with the overrides into <tmp>/<name>; returns
        the directory. The log is kept in self.logs[name]."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        cmd = [ARGS.granflow, os.path.join(ARGS.source, "configs", config),
               "-Output.directory=" + d, "-Output.checkpoint=" + os.path.join(d, "ckpt.h5")]
        cmd += list(overrides)
        if ranks > 1:
            cmd = [ARGS.mpiexec, "-n", str(ranks), "--oversubscribe"] + cmd
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           universal_newlines=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stdout))
        self.logs[name] = p.stdout
        return d

    def printed_count(self, name):
        """The particle count the run printed at start ("1024 particles, 6 walls, ...")."""
        m = re.search(r"^(\d+) particles,", self.logs[name], re.M)
        if not m:
            raise AssertionError("no particle count in the log of %s" % name)
        return int(m.group(1))

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def snapshots(d, prefix="run"):
    """The <prefix>_<step>.h5 files of directory d, in step order."""
    out = []
    for f in os.listdir(d):
        m = re.fullmatch(re.escape(prefix) + r"_(\d+)\.h5", f)
        if m:
            out.append((int(m.group(1)), os.path.join(d, f)))
    return [f for _, f in sorted(out)]
