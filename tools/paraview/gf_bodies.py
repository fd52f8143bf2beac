"""Shows a granflow run in ParaView as what it is: every body as its surface (boxes, capsules,
cylinders, spheres, clumps as their member spheres) with its data on the cells for colouring
(velocity, speed, angular_velocity, angular_speed, id, material, shape, ...), the walls, obstacles
and meshes, and the force chains of the loaded contacts.

    pvpython tools/paraview/gf_bodies.py output/run.xmf --state bodies.pvsm
        then in ParaView: File > Load State > bodies.pvsm (Search files under specified directory)
    or in ParaView's Python Shell: Run Script, with the run's .xmf file opened and selected.
    (installed: share/granflow/paraview/gf_bodies.py)

A run's output is one .xmf file per part, each readable on its own by any of ParaView's XDMF
readers: `<prefix>.xmf` the bodies as points with their data (what Open, Apply shows),
`<prefix>_clumps.xmf` the clumps' member spheres, `<prefix>_geometry.xmf` the walls (clipped to
the box), obstacles and meshes, `<prefix>_contacts.xmf` (with Output.contacts) a line per contact.
"""
import argparse
import os
import sys

from paraview.simple import (GetActiveSource, GetActiveViewOrCreate, ProgrammableFilter,
                             RenameSource, SaveState, Show, Threshold, Xdmf3ReaderT,
                             XDMFReader)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import granflow_bodies  # noqa: E402


def part(xmf, name):
    """The file of a part of the run whose particles are `xmf` (None where the run has none)."""
    stem, ext = os.path.splitext(xmf)
    path = "%s_%s%s" % (stem, name, ext)
    return path if os.path.exists(path) else None


def reader_file(reader):
    """The file an XDMF reader reads: FileName (XDMF 3 readers) or FileNames (legacy)."""
    files = reader.FileName if "FileName" in reader.ListProperties() else reader.FileNames
    return files[0]


def build(reader, view=None, xmf=None, make_reader=None, segments=24, loaded_only=True):
    """Adds below `reader` (the particles) the bodies, and beside it the geometry and the force
    chains; returns the pipelines by name ('bodies', 'geometry', 'contacts' where present).
    make_reader(path) opens the other parts (default: the Xdmf3 reader of `reader`'s kind)."""
    xmf = xmf or reader_file(reader)
    if make_reader is None:
        legacy = "FileNames" in reader.ListProperties()
        make_reader = ((lambda p: XDMFReader(FileNames=[p])) if legacy else
                       (lambda p: Xdmf3ReaderT(FileName=[p])))
    out = {}
    inputs = [reader]
    clumps = part(xmf, "clumps")
    if clumps:
        members = make_reader(clumps)
        RenameSource("clump members", members)
        inputs.append(members)
    bodies = ProgrammableFilter(Input=inputs, OutputDataSetType="vtkPolyData")
    bodies.Script = granflow_bodies.PROGRAMMABLE_SCRIPT.format(
        dir=HERE, segments=int(segments), bands=max(3, int(segments) // 4))
    RenameSource("bodies", bodies)
    out["bodies"] = bodies
    geometry = part(xmf, "geometry")
    if geometry:
        out["geometry"] = make_reader(geometry)
        RenameSource("geometry", out["geometry"])
    contacts = part(xmf, "contacts")
    if contacts:
        chains = make_reader(contacts)
        RenameSource("contacts", chains)
        if loaded_only:  # the force chains: contacts that carry an impulse
            chains = Threshold(Input=chains, Scalars=["CELLS", "normal_impulse"],
                               LowerThreshold=1e-300, UpperThreshold=1e300)
            RenameSource("force chains", chains)
        out["contacts"] = chains
    if view is not None:
        for name, src in out.items():
            d = Show(src, view)
            if name == "bodies":  # the colour range follows the data on the first render
                d.ColorArrayName = ["CELLS", "speed"]
            if name == "geometry":
                d.Opacity = 0.3
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xmf", nargs="?", help="the run's .xmf file (default: the active source)")
    ap.add_argument("--state", help="write a ParaView state file to load in the GUI")
    ap.add_argument("--segments", type=int, default=24,
                    help="points around round bodies' circles (default 24)")
    ap.add_argument("--all-contacts", action="store_true",
                    help="draw every contact, not only those that carry an impulse")
    args = ap.parse_args()
    reader = Xdmf3ReaderT(FileName=[args.xmf]) if args.xmf else GetActiveSource()
    if reader is None:
        sys.exit("gf_bodies.py: give the .xmf file, or open it in ParaView first")
    build(reader, GetActiveViewOrCreate("RenderView"), segments=args.segments,
          loaded_only=not args.all_contacts)
    if args.state:
        SaveState(args.state)


if __name__ == "__main__":
    main()
