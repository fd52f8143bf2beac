#!/bin/sh
# A mixed-shape run's snapshots opened in ParaView and glyphed the documented way
# (tools/paraview/gf_bodies.py): tests/paraview_bodies.py checks every glyph against the bodies
# of the HDF5 snapshot. Registered only where pvpython (Debian: paraview, python3-paraview) and
# h5py are found.  test_paraview.sh BUILD_DIR SOURCE_DIR PVPYTHON
set -eu
build=$1 src=$2 pvpython=$3
dir=$(mktemp -d /tmp/gf_test_paraview_XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$build/granflow" "$src/configs/mixed-pour.cfg" -Time.steps=20 -Output.snapshot_every=20 \
    -Output.directory="$dir" -Output.checkpoint="$dir/c.h5" > "$dir/log" 2>&1 || {
    cat "$dir/log"; exit 1; }
rc=0
"$pvpython" "$src/tests/paraview_bodies.py" "$dir/run.xmf" "$dir/run_000000020.h5" \
    > "$dir/out" 2>&1 || rc=$?
grep -v "No data to glyph" "$dir/out" || true
exit $rc
