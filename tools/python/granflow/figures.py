"""The tools' figures, drawn with matplotlib from the data the C tools write: each figure as a PNG
(raster) and an SVG (vector, its text kept as text) beside it.

    python3 -m granflow.figures velfield flow [--vmin V --vmax V --wmin W --wmax W]
        flow.csv and flow_outlines.csv (gf-velfield -o flow) -> flow_velocity.png/.svg and
        flow_angular.png/.svg: the mean speed and angular speed in the plane, in cm, empty cells
        grey, walls and obstacles outlined in red
    python3 -m granflow.figures rdf rdf            rdf.csv (gf-rdf) -> rdf.png/.svg: g(r)
    python3 -m granflow.figures repose heap [--drum]  heap.csv, heap_profile.csv (gf-repose)
        -> heap.png/.svg: the last snapshot's surface profile, the bins fitted and the fit
    python3 -m granflow.figures plot data.csv out.png --x COL --y COL[,COL...] [--group COL]
        [--title T] [--xlabel L] [--ylabel L] [--logx] [--logy] [--hline V]
        line plots of CSV columns (one series per y column, or per value of the group column)

Each function returns the matplotlib Figure it saved, for further editing (fig.savefig(...)).
matplotlib is needed for these (Debian: python3-matplotlib); the reader is not.
"""
import argparse
import csv
import math
import os
import sys

import numpy as np

_MPL = None


def _pyplot():
    """matplotlib's pyplot without a display (Agg), SVG text kept as text."""
    global _MPL
    if _MPL is None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        matplotlib.rcParams["svg.fonttype"] = "none"
        _MPL = plt
    return _MPL


def read_csv(path):
    """A CSV file as the tools write it: (columns by name as numpy arrays, or lists of strings
    for columns that are not numbers; the comment lines without '#')."""
    comments, rows, header = [], [], None
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("#"):
                comments.append(line[1:].strip())
                continue
            if header is None:
                header = next(csv.reader([line]))
                continue
            if line.strip():
                rows.append(next(csv.reader([line])))
    if header is None:
        raise ValueError(f"{path}: no header line")
    cols = {}
    for k, name in enumerate(header):
        values = [r[k] if k < len(r) else "" for r in rows]
        try:
            cols[name] = np.array([float(v) if v.strip() else math.nan for v in values])
        except ValueError:
            cols[name] = values
    return cols, comments


def save(fig, png):
    """Writes the figure as `png` and as the SVG beside it; returns both paths."""
    svg = os.path.splitext(png)[0] + ".svg"
    fig.savefig(png, dpi=150, bbox_inches="tight")
    fig.savefig(svg, bbox_inches="tight")
    return png, svg


def line_plot(data, out, x, ys, group=None, title=None, xlabel=None, ylabel=None, logx=False,
              logy=False, hline=None):
    """Lines (with markers) of CSV columns: `data` a path or read_csv's columns; ys the y columns,
    or one y column split by the values of `group`."""
    plt = _pyplot()
    cols = read_csv(data)[0] if isinstance(data, str) else data
    for name in [x, *ys] + ([group] if group else []):
        if name not in cols:
            raise ValueError(f"no column '{name}' (columns: {', '.join(cols)})")
    fig, ax = plt.subplots(figsize=(8, 5))
    if group:
        keys = cols[group]
        for g in sorted(set(keys), key=str):
            sel = np.array([k == g for k in keys])
            ax.plot(cols[x][sel], cols[ys[0]][sel], marker="o", ms=3, label=str(g))
    else:
        for y in ys:
            ax.plot(cols[x], cols[y], marker="o", ms=3, label=y)
    if hline is not None:
        ax.axhline(hline, ls="--", color="grey", lw=1)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or (ys[0] if len(ys) == 1 else ""))
    if title:
        ax.set_title(title)
    if group or len(ys) > 1:
        ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save(fig, out)
    return fig


def _outlines(path, a, b):
    """Polylines of gf-velfield's outlines file, in m: [(x array, y array, closed)]."""
    if not os.path.exists(path):
        return []
    cols = read_csv(path)[0]
    if "outline" not in cols or len(cols["outline"]) == 0:
        return []
    out = []
    for k in np.unique(cols["outline"]):
        sel = cols["outline"] == k
        out.append((cols[a][sel], cols[b][sel], bool(cols["closed"][sel][0])))
    return out


def velfield(prefix, vmin=None, vmax=None, wmin=None, wmax=None):
    """gf-velfield's heat maps from PREFIX.csv and PREFIX_outlines.csv: the mean speed and the
    mean angular speed over the plane in cm, empty cells grey, outlines red; colour ranges from
    0 (or the minimum given) to the largest value (or the maximum given). Returns the figures
    (velocity, angular)."""
    plt = _pyplot()
    cols, comments = read_csv(prefix + ".csv")
    names = list(cols)
    a, b = names[2], names[3]  # i, j, then the plane's two axes
    i, j = cols["i"].astype(int), cols["j"].astype(int)
    nx, ny = i.max() + 1, j.max() + 1
    dx = (cols[a].max() - cols[a].min()) / max(nx - 1, 1) if nx > 1 else None
    dy = (cols[b].max() - cols[b].min()) / max(ny - 1, 1) if ny > 1 else None
    # the region from the comment line when a side has one cell
    region = None
    for c in comments:
        if " over " in c:
            try:
                part = c.split(" over ")[1]
                lo_a = float(part.split("[")[1].split(",")[0])
                hi_a = float(part.split("[")[1].split("]")[0].split(",")[1])
                lo_b = float(part.split("[")[2].split(",")[0])
                hi_b = float(part.split("[")[2].split("]")[0].split(",")[1])
                region = (lo_a, hi_a, lo_b, hi_b)
            except (IndexError, ValueError):
                region = None
    if region is None:
        dx = dx or 1.0
        dy = dy or 1.0
        region = (cols[a].min() - dx / 2, cols[a].max() + dx / 2, cols[b].min() - dy / 2,
                  cols[b].max() + dy / 2)
    outlines = _outlines(prefix + "_outlines.csv", a, b)
    figs = []
    for key, label, title, lo, hi, stem in (
            ("v", "|v| (m/s)", "mean velocity magnitude", vmin, vmax, "velocity"),
            ("omega", "|ω| (rad/s)", "mean angular velocity magnitude", wmin, wmax, "angular")):
        grid = np.full((ny, nx), np.nan)
        grid[j, i] = cols[key]
        finite = grid[np.isfinite(grid)]
        lo = 0.0 if lo is None else lo
        hi = (finite.max() if finite.size and finite.max() > lo else lo + 1.0) if hi is None else hi
        if not hi > lo:
            raise ValueError("a colour range needs its maximum above its minimum")
        w_cm, h_cm = 100 * (region[1] - region[0]), 100 * (region[3] - region[2])
        aspect = h_cm / w_cm
        fig, ax = plt.subplots(figsize=(9, max(2.5, min(9 * aspect + 1.2, 12))))
        cmap = plt.get_cmap("viridis").copy()
        cmap.set_bad((0.78, 0.78, 0.78))
        im = ax.imshow(np.ma.masked_invalid(grid), origin="lower", cmap=cmap, vmin=lo, vmax=hi,
                       extent=[100 * region[0], 100 * region[1], 100 * region[2],
                               100 * region[3]], interpolation="nearest", aspect="equal")
        for xs, ys, closed in outlines:
            if closed:
                xs, ys = np.append(xs, xs[0]), np.append(ys, ys[0])
            ax.plot(100 * xs, 100 * ys, color="red", lw=1.5)
        ax.set_xlim(100 * region[0], 100 * region[1])
        ax.set_ylim(100 * region[2], 100 * region[3])
        ax.set_xlabel(f"{a} (cm)")
        ax.set_ylabel(f"{b} (cm)")
        ax.set_title(f"{title}, {a}-{b} plane")
        fig.colorbar(im, ax=ax, label=label, fraction=0.046 * max(aspect, 0.3), pad=0.02)
        fig.tight_layout()
        save(fig, f"{prefix}_{stem}.png")
        figs.append(fig)
    return tuple(figs)


def rdf(prefix):
    """gf-rdf's g(r) from PREFIX.csv, with g = 1 dashed."""
    return line_plot(prefix + ".csv", prefix + ".png", "r_over_d", ["g"],
                     title="radial distribution function", xlabel="r / d", ylabel="g(r)",
                     hline=1.0)


def repose(prefix, drum=False):
    """gf-repose's figure from PREFIX.csv and PREFIX_profile.csv: the last snapshot's highest
    particle top per bin, the bins fitted and the fitted line (and the drum's wall)."""
    plt = _pyplot()
    runs = read_csv(prefix + ".csv")[0]
    prof = read_csv(prefix + "_profile.csv")[0]
    last = int(np.max(prof["snapshot"]))
    sel = prof["snapshot"] == last
    across = "across" if "across" in prof else "distance"
    x, top, used = prof[across][sel], prof["top"][sel], prof["used"][sel] > 0
    k = len(runs["time"]) - 1
    fig, ax = plt.subplots(figsize=(7, 7) if drum else (8, 5))
    ax.plot(x, top, "o", ms=3, label="highest top per bin")
    ax.plot(x[used], top[used], "o", ms=4, label="bins fitted")
    f0, f1 = runs["fit_from"][k], runs["fit_to"][k]
    c, s = runs["fit_intercept"][k], runs["fit_slope"][k]
    ax.plot([f0, f1], [c + s * f0, c + s * f1], "-", label="fit")
    if drum and "radius" in runs:
        a = np.linspace(0, 2 * np.pi, 200)
        ax.plot(runs["radius"][k] * np.cos(a), runs["radius"][k] * np.sin(a), "-", color="grey",
                label="drum wall")
        ax.set_aspect("equal")
    ax.set_xlabel("across the drum (m)" if drum else "distance from the heap's axis (m)")
    ax.set_ylabel("height above the axis (m)" if drum else "height above the floor (m)")
    ax.set_title("%s at t = %.4g s: %.2f ± %.2f°" % ("drum" if drum else "heap",
                                                      runs["time"][k], runs["angle_deg"][k],
                                                      runs["stderr_deg"][k]))
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save(fig, prefix + ".png")
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m granflow.figures",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    v = sub.add_parser("velfield", help="gf-velfield's heat maps")
    v.add_argument("prefix")
    for name in ("vmin", "vmax", "wmin", "wmax"):
        v.add_argument("--" + name, type=float)
    r = sub.add_parser("rdf", help="gf-rdf's g(r)")
    r.add_argument("prefix")
    h = sub.add_parser("repose", help="gf-repose's profile and fit")
    h.add_argument("prefix")
    h.add_argument("--drum", action="store_true", help="a drum (default: a heap)")
    p = sub.add_parser("plot", help="line plots of CSV columns")
    p.add_argument("csv")
    p.add_argument("out")
    p.add_argument("--x", required=True)
    p.add_argument("--y", required=True, help="columns, comma-separated")
    p.add_argument("--group")
    p.add_argument("--title")
    p.add_argument("--xlabel")
    p.add_argument("--ylabel")
    p.add_argument("--logx", action="store_true")
    p.add_argument("--logy", action="store_true")
    p.add_argument("--hline", type=float)
    args = ap.parse_args(argv)
    try:
        if args.what == "velfield":
            velfield(args.prefix, args.vmin, args.vmax, args.wmin, args.wmax)
            print(f"{args.prefix}_velocity.png/.svg, {args.prefix}_angular.png/.svg")
        elif args.what == "rdf":
            rdf(args.prefix)
            print(f"{args.prefix}.png/.svg")
        elif args.what == "repose":
            repose(args.prefix, args.drum)
            print(f"{args.prefix}.png/.svg")
        else:
            line_plot(args.csv, args.out, args.x, args.y.split(","), args.group, args.title,
                      args.xlabel, args.ylabel, args.logx, args.logy, args.hline)
            print(f"{args.out} and its SVG")
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"granflow.figures: {e}")


if __name__ == "__main__":
    main()
