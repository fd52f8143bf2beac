"""The SVG figures the tools write beside their PNGs (issue 14), read back with Python's XML parser.

    python3 tests/test_figures.py --tools build/tools --granflow build/granflow

Only the standard library is needed. Each figure must be well-formed XML with real text at 9-11
pt at its nominal size, axis labels with units, and data that map back to the input through the
figure's own axes: the x and y ticks (their labels' values against their positions) give the
axis transforms, the colour bar's ticks give the colour of a value. gf-plot draws y = x^2 and a
log-log plot; gf-velfield the field of a short granflow run with a box and a cylinder in the
channel, in the x-y and x-z planes, with the obstacles' outlines; gf-rdf its g(r).
"""
import argparse
import csv
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
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
# In cm, as the maps are drawn: the box's section and the cylinder's.
BOX_XY = (0.8, 1.1, 0.4, 0.9)
BOX_XZ = (0.8, 1.1, 0.0, 0.3)
CYL_CENTRE, CYL_R = (2.0, 0.6), 0.2
CYL_XZ = (1.8, 2.2, 0.0, 0.4)


def run(*cmd, cwd=None):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                                      p.stdout))
    return p.stdout


def tool(name):
    return os.path.join(ARGS.tools, name)


def parse_colour(c):
    assert re.fullmatch(r"#[0-9a-f]{6}", c), c
    return tuple(int(c[k:k + 2], 16) for k in (1, 3, 5))


def points(el):
    return [tuple(map(float, p.split(","))) for p in el.get("points").split()]


class Svg:
    """A figure: its elements by class, text sizes in points, axes from its ticks."""

    def __init__(self, path):
        self.path = path
        self.root = ET.parse(path).getroot()  # raises on anything but well-formed XML
        assert self.root.tag == NS + "svg", self.root.tag
        vb = [float(v) for v in self.root.get("viewBox").split()]
        width = self.root.get("width")
        assert width.endswith("mm"), width
        self.pt_per_unit = float(width[:-2]) / 25.4 * 72 / vb[2]
        self.width_cm = float(width[:-2]) / 10

    def all(self, tag, cls=None):
        return [e for e in self.root.iter(NS + tag) if cls is None or e.get("class") == cls]

    def texts(self, cls):
        return [e.text for e in self.all("text", cls)]

    def axis(self, cls, log=False):
        """pixel -> value along an axis from its labelled ticks: the marks' positions and the
        labels' values (a linear fit, checked to hold for every tick)."""
        horizontal = cls == "x"
        marks = [points(e)[0] for e in self.all("polyline", cls + "tick")]
        labels = self.all("text", cls + "ticklabel")
        assert len(marks) == len(labels) >= 2, (cls, len(marks), len(labels))
        pos = sorted(m[0] if horizontal else m[1] for m in marks)
        lab = sorted(labels, key=lambda e: float(e.get("x" if horizontal else "y")))
        vals = [float(e.text) for e in lab]
        if horizontal:  # each label centred under its mark
            for e, p in zip(lab, pos):
                assert abs(float(e.get("x")) - p) < 1e-6
                assert e.get("text-anchor") == "middle"
        ts = [math.log10(v) for v in vals] if log else vals
        n = len(ts)
        mt, mp = sum(ts) / n, sum(pos) / n
        slope = sum((t - mt) * (p - mp) for t, p in zip(ts, pos)) / sum((t - mt) ** 2 for t in ts)
        for t, p in zip(ts, pos):
            assert abs(mp + slope * (t - mt) - p) < 0.01, (cls, t, p)

        def value(pixel):
            t = mt + (pixel - mp) / slope
            return 10 ** t if log else t

        value.labels = [e.text for e in sorted(lab, key=lambda e: float(e.text))]
        value.slope = slope
        return value

    def check_text(self, test):
        """Every text real, in sans-serif, 9 to 11 pt at the nominal size; at least 8 cm wide."""
        test.assertGreaterEqual(self.width_cm, 8)
        texts = self.all("text")
        test.assertTrue(texts)
        for e in texts:
            test.assertEqual(e.get("font-family"), "sans-serif")
            size = float(e.get("font-size")) * self.pt_per_unit
            test.assertTrue(9 <= size <= 11, "%s: '%s' at %.1f pt" % (self.path, e.text, size))


def cells_of(svg, cls):
    """The grid of a cells group: colour per (row, column), and its placement."""
    (g,) = svg.all("g", cls)
    m = re.fullmatch(r"translate\(([-\d.]+) ([-\d.]+)\) scale\(([-\d.]+) ([-\d.]+)\)",
                     g.get("transform"))
    tx, ty, sx, sy = map(float, m.groups())
    grid = {}
    for r in g.iter(NS + "rect"):
        x, y, w = int(r.get("x")), int(r.get("y")), int(r.get("width"))
        assert r.get("height") == "1"
        for i in range(x, x + w):
            assert (y, i) not in grid, "cell drawn twice"
            grid[(y, i)] = parse_colour(r.get("fill"))
    return grid, (tx, ty, sx, sy)


class Figures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gf_test_figures_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_line_plot(self):
        """y = x^2 (and e^x): labels as given (markup characters escaped), ticks that read,
        polyline points on the curve."""
        xs = [-1 + 0.05 * i for i in range(41)]
        with open(self.path("sq.csv"), "w") as f:
            f.write("x,y,z\n")
            for x in xs:
                f.write("%.17g,%.17g,%.17g\n" % (x, x * x, math.exp(x)))
        run(tool("gf-plot"), self.path("sq.csv"), self.path("sq.png"), "--x", "x", "--y", "y,z",
            "--title", "a < b & \"c\" > d", "--xlabel", "x (m)", "--ylabel", "area (m^2)", "--hline", "0.5")
        self.assertTrue(os.path.exists(self.path("sq.png")))
        svg = Svg(self.path("sq.svg"))
        svg.check_text(self)
        self.assertEqual(svg.texts("xlabel"), ["x (m)"])
        self.assertEqual(svg.texts("ylabel"), ["area (m^2)"])
        self.assertTrue(svg.all("text", "ylabel")[0].get("transform").startswith("rotate(-90"))
        self.assertEqual(svg.texts("title"), ['a < b & "c" > d'])  # escaped in the file
        self.assertEqual(sorted(svg.texts("legend")), ["y", "z"])
        ax, ay = svg.axis("x"), svg.axis("y")
        self.assertEqual(ax.labels, ["-1.0", "-0.5", "0.0", "0.5", "1.0"])
        self.assertGreaterEqual(len(ay.labels), 4)
        series = svg.all("polyline", "series")
        self.assertEqual(len(series), 2)
        for el, f in zip(series, (lambda x: x * x, math.exp)):
            pts = points(el)
            self.assertEqual(len(pts), len(xs))
            for (px, py), x in zip(pts, xs):
                self.assertAlmostEqual(ax(px), x, delta=2e-4)
                self.assertAlmostEqual(ay(py), f(x), delta=2e-4 * 3)
        (hline,) = svg.all("polyline", "hline")
        self.assertTrue(hline.get("stroke-dasharray"))
        for px, py in points(hline):
            self.assertAlmostEqual(ay(py), 0.5, delta=1e-4)

    def test_gap(self):
        """A field that is not a number leaves a gap in its line (it was read as 0)."""
        with open(self.path("gap.csv"), "w") as f:
            f.write("t,v\n")
            for k in range(10):
                f.write("%d,%s\n" % (k, "n/a" if k == 5 else str(10 + k)))
        run(tool("gf-plot"), self.path("gap.csv"), self.path("gap.png"), "--x", "t", "--y", "v")
        svg = Svg(self.path("gap.svg"))
        ay = svg.axis("y")
        lines = [points(e) for e in svg.all("polyline", "series")]
        self.assertEqual([len(p) for p in lines], [5, 4])
        for p in lines:
            for _, py in p:
                self.assertGreater(ay(py), 9.99)

    def test_log_plot(self):
        """1 .. 50 on log axes: labels at 1, 2, 5, 10, 20 and 50, unlabelled ticks between,
        the ticks evenly spaced in log10, y = x read back."""
        with open(self.path("log.csv"), "w") as f:
            f.write("n,t\n")
            for n in range(1, 51):
                f.write("%d,%d\n" % (n, n))
        run(tool("gf-plot"), self.path("log.csv"), self.path("log.png"), "--x", "n", "--y", "t",
            "--logx", "--logy", "--xlabel", "ranks", "--ylabel", "time (s)")
        svg = Svg(self.path("log.svg"))
        svg.check_text(self)
        ax, ay = svg.axis("x", log=True), svg.axis("y", log=True)
        for a in (ax, ay):
            self.assertEqual(a.labels, ["1", "2", "5", "10", "20", "50"])
        # the y axis runs upwards: larger values higher (smaller pixel y)
        self.assertLess(ay.slope, 0)
        for cls, axis in (("xminor", ax), ("yminor", ay)):
            minor = sorted(axis(points(e)[0][0 if cls == "xminor" else 1])
                           for e in svg.all("polyline", cls))
            # 3, 4, 6, 7, 8, 9 times a power of ten, every one in the data's range 1 .. 50
            # (the y axis has a margin above and below)
            multiples = []
            for v in minor:
                e = math.floor(math.log10(v) + 1e-9)
                m = v / 10 ** e
                self.assertAlmostEqual(m, round(m), delta=1e-4 * m)
                self.assertIn(round(m), (3, 4, 6, 7, 8, 9))
                multiples.append(round(m) * 10 ** e)
            inside = [v for v in multiples if 1 <= v <= 50]
            self.assertEqual(inside, [3, 4, 6, 7, 8, 9, 30, 40])
            if cls == "xminor":
                self.assertEqual(len(multiples), 8)
        (line,) = svg.all("polyline", "series")
        for k, (px, py) in enumerate(points(line)):
            self.assertAlmostEqual(ax(px), k + 1, delta=1e-3 * (k + 1))
            self.assertAlmostEqual(ay(py), k + 1, delta=1e-3 * (k + 1))

    def velfield(self, plane):
        snap = self.snapshot()
        prefix = self.path("vf_" + plane)
        run(tool("gf-velfield"), "-o", prefix, "--plane", plane, snap)
        return prefix

    def snapshot(self):
        snap = self.path("out/fig_000000000.h5")
        if not os.path.exists(snap):
            with open(self.path("fig.cfg"), "w") as f:
                f.write(CONFIG)
            run(ARGS.granflow, "fig.cfg", cwd=self.dir)
        return snap

    def check_map(self, prefix, xlabel, ylabel):
        """The velocity map: labels, and each cell's colour that of its CSV value on the colour
        bar (grey where empty), at the place its CSV coordinates give. Returns the SVG."""
        path = prefix + "_velocity.svg"
        self.assertLess(os.path.getsize(path), 1 << 20)
        svg = Svg(path)
        svg.check_text(self)
        self.assertEqual(svg.texts("xlabel"), [xlabel])
        self.assertEqual(svg.texts("ylabel"), [ylabel])
        self.assertEqual(svg.texts("barlabel"), ["|v| (m/s)"])
        ax, ay, av = svg.axis("x"), svg.axis("y"), svg.axis("bar")
        grid, (tx, ty, sx, sy) = cells_of(svg, "cells")
        bar, (bx, by, bsx, bsy) = cells_of(svg, "bar")
        self.assertEqual(len(bar), 256)
        with open(prefix + ".csv") as f:
            rows = list(csv.reader(line for line in f if not line.startswith("#")))
        header, rows = rows[0], rows[1:]
        self.assertEqual(header[2:4], [xlabel[0], ylabel[0]])
        nx = 1 + max(int(r[0]) for r in rows)
        ny = 1 + max(int(r[1]) for r in rows)
        self.assertEqual(len(grid), nx * ny)
        empty = coloured = 0
        for r in rows:
            i, j, x, y, v = int(r[0]), int(r[1]), float(r[2]), float(r[3]), float(r[7])
            # the cell's centre through the map's axes, in cm
            self.assertAlmostEqual(ax(tx + (i + 0.5) * sx), 100 * x, delta=1e-3)
            self.assertAlmostEqual(ay(ty + (ny - 1 - j + 0.5) * sy), 100 * y, delta=1e-3)
            col = grid[(ny - 1 - j, i)]
            if math.isnan(v):
                self.assertEqual(col, (200, 200, 200))
                empty += 1
                continue
            # the bar's strip at the value's height, or a neighbour (a strip spans 1/256)
            k = int((av_inverse(av, v) - by) / bsy)
            near = [bar[(q, 0)] for q in range(max(0, k - 1), min(256, k + 2))]
            self.assertTrue(any(max(abs(a - b) for a, b in zip(col, c)) <= 2 for c in near),
                            "cell (%d, %d), |v| %g: colour %s, bar %s" % (i, j, v, col, near))
            coloured += 1
        self.assertGreater(empty, 0)
        self.assertGreater(coloured, 100)
        # outlines: red, none of the bar's colours nor the empty grey, clipped to the map
        for e in svg.all("polygon", "outline") + svg.all("polyline", "outline"):
            red = parse_colour(e.get("stroke"))
            for c in list(bar.values()) + [(200, 200, 200)]:
                self.assertGreater(sum(abs(a - b) for a, b in zip(red, c)), 150)
            clip = re.fullmatch(r"url\(#(\w+)\)", e.get("clip-path")).group(1)
            (rect,) = [c.find(NS + "rect") for c in svg.all("clipPath") if c.get("id") == clip]
            self.assertAlmostEqual(float(rect.get("x")), tx)
            self.assertAlmostEqual(float(rect.get("width")), nx * sx, places=2)
        return svg, ax, ay

    def outlines(self, svg, ax, ay):
        return [[(ax(px), ay(py)) for px, py in points(e)] for e in svg.all("polygon", "outline")]

    def assertOnRectangle(self, pts, rect):
        x0, x1, y0, y1 = rect
        for x, y in pts:
            self.assertTrue(x0 - 1e-3 <= x <= x1 + 1e-3 and y0 - 1e-3 <= y <= y1 + 1e-3, (x, y))
            self.assertTrue(min(abs(x - x0), abs(x - x1), abs(y - y0), abs(y - y1)) < 1e-3,
                            (x, y))
        self.assertAlmostEqual(min(p[0] for p in pts), x0, delta=1e-3)
        self.assertAlmostEqual(max(p[0] for p in pts), x1, delta=1e-3)
        self.assertAlmostEqual(min(p[1] for p in pts), y0, delta=1e-3)
        self.assertAlmostEqual(max(p[1] for p in pts), y1, delta=1e-3)

    def test_velfield_xy(self):
        """The x-y plane: cells as the CSV says; the box's outline on its edges, the cylinder's
        a 32-gon on its circle."""
        svg, ax, ay = self.check_map(self.velfield("xy"), "x (cm)", "y (cm)")
        shapes = sorted(self.outlines(svg, ax, ay), key=len)
        self.assertEqual([len(s) for s in shapes], [4, 32])
        self.assertOnRectangle(shapes[0], BOX_XY)
        for x, y in shapes[1]:
            self.assertAlmostEqual(math.hypot(x - CYL_CENTRE[0], y - CYL_CENTRE[1]), CYL_R,
                                   delta=1e-3)
        svg_angular = Svg(self.path("vf_xy_angular.svg"))
        self.assertEqual(svg_angular.texts("barlabel"), ["|omega| (rad/s)"])
        self.assertEqual(len(svg_angular.all("polygon", "outline")), 2)

    def test_velfield_xz(self):
        """The x-z plane: the obstacles' projections along y, rectangles."""
        svg, ax, ay = self.check_map(self.velfield("xz"), "x (cm)", "z (cm)")
        shapes = sorted(self.outlines(svg, ax, ay), key=lambda s: min(p[0] for p in s))
        self.assertEqual(len(shapes), 2)
        self.assertOnRectangle(shapes[0], BOX_XZ)
        self.assertOnRectangle(shapes[1], CYL_XZ)

    def test_rdf(self):
        """gf-rdf's plot: well-formed, r / d and g(r), the g = 1 line."""
        snap = self.snapshot()
        prefix = self.path("rdf")
        run(tool("gf-rdf"), "-o", prefix, "--rmax", "3", "--bins", "30", snap)
        svg = Svg(prefix + ".svg")
        svg.check_text(self)
        self.assertEqual(svg.texts("xlabel"), ["r / d"])
        self.assertEqual(svg.texts("ylabel"), ["g(r)"])
        ay = svg.axis("y")
        (hline,) = svg.all("polyline", "hline")
        self.assertAlmostEqual(ay(points(hline)[0][1]), 1.0, delta=1e-4)


def av_inverse(av, v):
    """The pixel height of value v on the colour bar (av maps pixels to values)."""
    p0, p1 = 0.0, 1000.0
    return p0 + (v - av(p0)) / (av(p1) - av(p0)) * (p1 - p0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", required=True, help="directory of gf-plot, gf-velfield, gf-rdf")
    parser.add_argument("--granflow", required=True, help="the granflow program")
    ARGS, rest = parser.parse_known_args()
    ARGS.tools, ARGS.granflow = os.path.abspath(ARGS.tools), os.path.abspath(ARGS.granflow)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
