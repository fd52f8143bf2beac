"""The tools' figures drawn with matplotlib (granflow.figures, issue 34 deliverable 7) from the data
the C tools write, read back from the figures themselves: a heat map's cells are the CSV's field
(empty cells masked), its extent the region in cm, its colour range 0 .. the largest value (or
the range given), its outlines the walls and obstacles gf-velfield wrote (a box and a cylinder
in a channel, in the x-y and x-z planes); g(r)'s line is gf-rdf's CSV with g = 1 dashed; a line
plot's lines are the CSV's columns (per column, per group, on log axes); the heap's fit line is
the one gf-repose's CSV states. Every figure is written as a PNG that reads back with its size
and an SVG whose text is text (the axis labels with units found in it). The command line makes
the same files and refuses a missing column with a message.

    python3 tests/test_mpl_figures.py --tools build/tools --granflow build/granflow
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np

from granflow import figures

ARGS = None

CONFIG = """
Domain {
    min < 0, 0, 0 >;
    max < 0.03, 0.013, 0.004 >;
    wall_axes < 0, 1, 1 >;
    Box { min < 0.008, 0.004, 0 >; max < 0.011, 0.009, 0.003 >; }
    Cylinder { centre < 0.02, 0.006, 0.002 >; axis < 0, 0, 1 >; radius 0.002; length 0.004; }
}
Lattice {
    count < 30, 13, 4 >;
    origin < 0.0005, 0.0005, 0.0005 >;
    spacing 0.001;
    radius 0.000235;
    velocity < 1, 0, 0 >;
    spread < 0.5, 0.5, 0.5 >;
    seed 1;
}
Time { dt 1e-5; steps 1; }
Output { directory "out"; prefix "fig"; snapshot_every 1; }
"""


def run(*cmd, cwd=None, ok=True):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=env)
    if ok and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                                      p.stdout))
    return p


def svg_texts(path):
    """Every text of an SVG (matplotlib keeps them as text with svg.fonttype none)."""
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")]


class Figures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gf_test_mpl_figures_")
        with open(os.path.join(cls.dir, "fig.cfg"), "w") as f:
            f.write(CONFIG)
        run(ARGS.granflow, "fig.cfg", cwd=cls.dir)
        cls.snap = os.path.join(cls.dir, "out", "fig_000000001.h5")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def check_files(self, png, labels):
        """The PNG reads back as an image; the SVG holds the labels as text."""
        import matplotlib.image
        img = matplotlib.image.imread(png)
        self.assertGreater(img.shape[0], 200)
        self.assertGreater(img.shape[1], 200)
        texts = svg_texts(os.path.splitext(png)[0] + ".svg")
        for label in labels:
            self.assertIn(label, texts)

    def test_velfield_maps(self):
        for plane, stem in (("xy", "vxy"), ("xz", "vxz")):
            prefix = self.path(stem)
            run(os.path.join(ARGS.tools, "gf-velfield"), "-o", prefix, "--plane", plane,
                "--nx", "60", self.snap)
            cols, _ = figures.read_csv(prefix + ".csv")
            a, b = plane[0], plane[1]
            nx, ny = int(cols["i"].max()) + 1, int(cols["j"].max()) + 1
            field = np.full((ny, nx), np.nan)
            field[cols["j"].astype(int), cols["i"].astype(int)] = cols["v"]
            vel, ang = figures.velfield(prefix)
            ax = vel.axes[0]
            im = ax.images[0]
            got = im.get_array()
            self.assertTrue(np.array_equal(np.ma.getmaskarray(got), ~np.isfinite(field)))
            self.assertTrue(np.array_equal(got.filled(0), np.where(np.isfinite(field), field, 0)))
            self.assertTrue(np.ma.getmaskarray(got).any())  # the obstacles' cells are empty
            omega = np.full((ny, nx), np.nan)
            omega[cols["j"].astype(int), cols["i"].astype(int)] = cols["omega"]
            self.assertTrue(np.array_equal(ang.axes[0].images[0].get_array().filled(0),
                                           np.where(np.isfinite(omega), omega, 0)))
            hi = {"x": 3.0, "y": 1.3, "z": 0.4}
            self.assertTrue(np.allclose(im.get_extent(), [0, hi[a], 0, hi[b]]))
            self.assertEqual(im.get_clim(), (0.0, np.nanmax(field)))
            self.assertEqual(ax.get_xlabel(), f"{a} (cm)")
            self.assertEqual(ax.get_ylabel(), f"{b} (cm)")
            # the outlines: the box and the cylinder, in cm, closed
            ol, _ = figures.read_csv(prefix + "_outlines.csv")
            self.assertEqual(len(ax.lines), 2)
            for k, line in enumerate(ax.lines):
                sel = ol["outline"] == k
                want = np.column_stack([100 * ol[a][sel], 100 * ol[b][sel]])
                xy = line.get_xydata()
                self.assertTrue(np.allclose(xy[:-1], want) and np.allclose(xy[-1], want[0]))
            box = ax.lines[0].get_xydata()
            want_box = {"xy": (0.8, 1.1, 0.4, 0.9), "xz": (0.8, 1.1, 0.0, 0.3)}[plane]
            self.assertTrue(np.allclose([box[:, 0].min(), box[:, 0].max(), box[:, 1].min(),
                                         box[:, 1].max()], want_box))
            self.check_files(prefix + "_velocity.png", [f"{a} (cm)", "|v| (m/s)"])
            self.check_files(prefix + "_angular.png", [f"{b} (cm)", "|ω| (rad/s)"])
        # a shared colour range
        vel, _ = figures.velfield(self.path("vxy"), vmin=0.25, vmax=4.0)
        self.assertEqual(vel.axes[0].images[0].get_clim(), (0.25, 4.0))
        with self.assertRaises(ValueError):
            figures.velfield(self.path("vxy"), vmin=2.0, vmax=1.0)

    def test_rdf(self):
        prefix = self.path("rdf")
        run(os.path.join(ARGS.tools, "gf-rdf"), "-o", prefix, self.snap)
        cols, _ = figures.read_csv(prefix + ".csv")
        fig = figures.rdf(prefix)
        ax = fig.axes[0]
        xy = ax.lines[0].get_xydata()
        self.assertTrue(np.array_equal(xy[:, 0], cols["r_over_d"]))
        self.assertTrue(np.array_equal(xy[:, 1], cols["g"]))
        self.assertTrue(np.allclose(ax.lines[1].get_ydata(), 1.0))  # g = 1, dashed
        self.assertEqual(ax.lines[1].get_linestyle(), "--")
        self.check_files(prefix + ".png", ["r / d", "g(r)"])

    def test_line_plot(self):
        """y = x^2 and e^x; then per group, on log axes; and from the command line."""
        xs = np.linspace(0.1, 2, 20)
        with open(self.path("sq.csv"), "w") as f:
            f.write("# a comment\nx,y,z,kind\n")
            for k, x in enumerate(xs):
                f.write("%.17g,%.17g,%.17g,%s\n" % (x, x * x, math.exp(x), "ab"[k % 2]))
        fig = figures.line_plot(self.path("sq.csv"), self.path("sq.png"), "x", ["y", "z"],
                                title="a < b", xlabel="x (m)", ylabel="area (m^2)")
        ax = fig.axes[0]
        self.assertTrue(np.allclose(ax.lines[0].get_xydata(), np.column_stack([xs, xs * xs])))
        self.assertTrue(np.allclose(ax.lines[1].get_ydata(), np.exp(xs)))
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()], ["y", "z"])
        self.check_files(self.path("sq.png"), ["x (m)", "area (m^2)", "a < b"])
        fig = figures.line_plot(self.path("sq.csv"), self.path("g.png"), "x", ["y"],
                                group="kind", logx=True, logy=True)
        ax = fig.axes[0]
        self.assertEqual((ax.get_xscale(), ax.get_yscale()), ("log", "log"))
        self.assertTrue(np.allclose(ax.lines[0].get_xdata(), xs[0::2]))
        self.assertTrue(np.allclose(ax.lines[1].get_ydata(), xs[1::2] ** 2))
        env = dict(os.environ, PYTHONPATH=os.path.join(ARGS.source, "tools", "python"))
        p = subprocess.run([sys.executable, "-m", "granflow.figures", "plot", self.path("sq.csv"),
                            self.path("cli.png"), "--x", "x", "--y", "y", "--logy"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertTrue(os.path.exists(self.path("cli.png")) and
                        os.path.exists(self.path("cli.svg")))
        p = subprocess.run([sys.executable, "-m", "granflow.figures", "plot", self.path("sq.csv"),
                            self.path("bad.png"), "--x", "x", "--y", "w"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no column 'w'", p.stdout)

    def test_repose(self):
        """A heap's profile and fit as gf-repose writes them (two snapshots: the last drawn)."""
        with open(self.path("heap.csv"), "w") as f:
            f.write("# gf-repose\nfile,time,angle_deg,stderr_deg,bins,particles,height,centre_x,"
                    "centre_y,centre_z,fit_from,fit_to,fit_intercept,fit_slope\n")
            f.write("a.h5,0.5,30,1,10,100,0.1,0,0,0,0.01,0.05,0.1,-0.5\n")
            f.write("b.h5,1.0,31,1,10,100,0.1,0,0,0,0.02,0.06,0.12,-0.6\n")
        with open(self.path("heap_profile.csv"), "w") as f:
            f.write("# gf-repose\nsnapshot,distance,top,used\n")
            for s in (0, 1):
                for k in range(8):
                    d = 0.01 * (k + 0.5)
                    f.write("%d,%g,%g,%d\n" % (s, d, 0.12 - 0.6 * d, 1 if 2 <= k <= 5 else 0))
        fig = figures.repose(self.path("heap"))
        ax = fig.axes[0]
        self.assertEqual(len(ax.lines[0].get_xdata()), 8)
        self.assertEqual(len(ax.lines[1].get_xdata()), 4)  # the bins fitted
        self.assertTrue(np.allclose(ax.lines[2].get_xydata(),
                                    [[0.02, 0.12 - 0.6 * 0.02], [0.06, 0.12 - 0.6 * 0.06]]))
        self.assertIn("31.00", ax.get_title())
        self.check_files(self.path("heap.png"), ["height above the floor (m)"])


if __name__ == "__main__":
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("test_mpl_figures: SKIPPED: no matplotlib (Debian: python3-matplotlib)")
        sys.exit(77)
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--granflow", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), ".."))
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
