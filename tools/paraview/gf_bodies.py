"""Shows a granflow run's bodies as what they are in ParaView: boxes as boxes, cylinders and
capsules as cylinders, spheres as spheres, each turned by its orientation, and clumps as their
member spheres.

    pvpython tools/paraview/gf_bodies.py output/run.xmf --state bodies.pvsm
        then in ParaView: File > Load State > bodies.pvsm
    or in ParaView's Python Shell: Run Script, with the .xmf file opened and selected.

Every snapshot holds per body the tensor `axes`: its body axes scaled to its full size along each,
so that ParaView's Tensor Glyph filter (Extract Eigenvalues off, Scale Factor 1) maps a unit box,
cylinder or sphere onto the body. The same by hand: open the .xmf (any XDMF reader), Threshold on
`shape` (0 sphere, 1 box, 2 capsule, 3 cylinder, 4 clump), Tensor Glyph with Tensors `axes`,
Glyph Type Box (Cylinder, Sphere), Extract Eigenvalues off, Scale Factor 1. Clumps: the second
block (`clump_members`: every member sphere with its `radius`), Glyph of type Sphere scaled by
`radius` with Scale Factor 2 (the sphere source has radius 0.5).
"""
import argparse
import sys

from paraview.simple import (ExtractBlock, GetActiveSource, GetActiveViewOrCreate, Glyph,
                             RenameSource, SaveState, Show, TensorGlyph, Threshold,
                             Xdmf3ReaderT)

# shape code: (name, glyph type of Tensor Glyph)
KINDS = {0: ("spheres", "Sphere"), 1: ("boxes", "Box"), 2: ("capsules", "Cylinder"),
         3: ("cylinders", "Cylinder")}


def build(reader, view=None):
    """Adds the glyph pipelines below `reader`; returns them by name."""
    out = {}
    # The XDMF 3 readers leave the grids unnamed, the legacy reader names them.
    bodies = ExtractBlock(Input=reader, Selectors=["/Root/Block0", "/Root/particles"])
    for code, (name, glyph) in KINDS.items():
        th = Threshold(Input=bodies, Scalars=["POINTS", "shape"],
                       LowerThreshold=code - 0.5, UpperThreshold=code + 0.5)
        tg = TensorGlyph(Input=th, Tensors=["POINTS", "axes"], GlyphType=glyph,
                         ExtractEigenvalues=0, ColorGlyphs=0)
        # After construction: the default is derived from the input's bounds, which an input
        # not yet read reports as empty.
        tg.ScaleFactor = 1.0
        RenameSource(name, tg)
        out[name] = tg
    members = ExtractBlock(Input=reader, Selectors=["/Root/Block1", "/Root/clump_members"])
    spheres = Glyph(Input=members, GlyphType="Sphere", ScaleArray=["POINTS", "radius"],
                    OrientationArray=["POINTS", "No orientation array"], ScaleFactor=2.0,
                    GlyphMode="All Points")
    RenameSource("clumps", spheres)
    out["clumps"] = spheres
    if view is not None:
        for src in out.values():
            Show(src, view)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xmf", nargs="?", help="the run's .xmf file (default: the active source)")
    ap.add_argument("--state", help="write a ParaView state file to load in the GUI")
    args = ap.parse_args()
    reader = Xdmf3ReaderT(FileName=[args.xmf]) if args.xmf else GetActiveSource()
    if reader is None:
        sys.exit("gf_bodies.py: give the .xmf file, or open it in ParaView first")
    build(reader, GetActiveViewOrCreate("RenderView"))
    if args.state:
        SaveState(args.state)


if __name__ == "__main__":
    main()
