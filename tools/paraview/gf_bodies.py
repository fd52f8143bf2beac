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
`radius` with Scale Factor 2 (the sphere source has radius 0.5). The walls (clipped to the box),
boxes and cylinders are the `geometry` block, cells with their `kind`, `body` and `velocity`;
with Output.contacts the `contacts` block holds a line per contact (force chains) with its
`normal_impulse`, `tangential_impulse`, `normal` and `gap` (colour by `normal_impulse`).
"""
import argparse
import sys

from paraview.simple import (ExtractBlock, GetActiveSource, GetActiveViewOrCreate, Glyph,
                             RenameSource, SaveState, Show, TensorGlyph, Threshold,
                             Xdmf3ReaderT)

# shape code: (name, glyph type of Tensor Glyph)
KINDS = {0: ("spheres", "Sphere"), 1: ("boxes", "Box"), 2: ("capsules", "Cylinder"),
         3: ("cylinders", "Cylinder")}


def collections(xmf):
    """The names of the .xmf file's top-level grids, in order (particles, clump_members when
    there are clumps, geometry when there are walls or obstacles)."""
    import xml.etree.ElementTree as ET
    domain = ET.parse(xmf).getroot().find("Domain")
    return [g.get("Name") for g in domain.findall("Grid")]


def block(reader, names, name):
    """The block of the grid `name`: the XDMF 3 readers leave the grids unnamed (Block<k>, in
    file order), the legacy reader names them."""
    sel = ["/Root/" + name]
    if name in names:
        sel.append("/Root/Block%d" % names.index(name))
    return ExtractBlock(Input=reader, Selectors=sel)


def build(reader, view=None, xmf=None):
    """Adds the glyph pipelines below `reader`; returns them by name."""
    out = {}
    if xmf is None:  # the reader's file: FileName (XDMF 3 readers) or FileNames (legacy)
        files = reader.FileName if "FileName" in reader.ListProperties() else reader.FileNames
        xmf = files[0]
    names = collections(xmf)
    bodies = block(reader, names, "particles")
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
    members = block(reader, names, "clump_members")
    spheres = Glyph(Input=members, GlyphType="Sphere", ScaleArray=["POINTS", "radius"],
                    OrientationArray=["POINTS", "No orientation array"], ScaleFactor=2.0,
                    GlyphMode="All Points")
    RenameSource("clumps", spheres)
    out["clumps"] = spheres
    # Walls (clipped to the box), boxes and cylinders as surfaces.
    geometry = block(reader, names, "geometry")
    RenameSource("geometry", geometry)
    out["geometry"] = geometry
    # With Output.contacts: the force chains, a line per contact with its impulses.
    if "contacts" in names:
        chains = block(reader, names, "contacts")
        RenameSource("force chains", chains)
        out["contacts"] = chains
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
