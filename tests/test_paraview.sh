#!/bin/sh
# Real ParaView on a run's output (tests/paraview_check.py): a run that fills and drains, opened in
# each of ParaView's three XDMF readers at every frame, and a mixed-shape run's bodies drawn by
# tools/paraview/gf_bodies.py and checked against the HDF5 snapshots. Without pvpython (empty
# PVPYTHON) it says so and exits 77, which ctest reports as skipped; renders on a virtual X server
# where there is one (Debian: xvfb), reads without rendering otherwise, and says so.
#   test_paraview.sh BUILD_DIR SOURCE_DIR PVPYTHON
set -eu
build=$1 src=$2 pvpython=$3
if [ -z "$pvpython" ]; then
    echo "test_paraview: SKIPPED: no pvpython with h5py (Debian: paraview python3-h5py)"
    exit 77
fi
dir=$(mktemp -d /tmp/gf_test_paraview_XXXXXX)
trap 'rm -rf "$dir"' EXIT
run() {
    out=$1
    shift
    "$build/granflow" "$@" -Output.directory="$dir/$out" -Output.checkpoint="$dir/$out/c.h5" \
        > "$dir/$out.log" 2>&1 || { cat "$dir/$out.log"; exit 1; }
}
run fill "$src/tests/data/fill-drain.cfg"
run mixed "$src/configs/mixed-pour.cfg" -Time.steps=20 -Output.snapshot_every=20 \
    -Output.contacts=true
# A virtual X server of our own (xvfb-run's first free display raced with nothing we could see,
# but lost its connection on a loaded machine): a display number of this process, used once its
# socket is there.
if command -v Xvfb > /dev/null 2>&1; then
    display=$((100 + $$ % 800))
    Xvfb ":$display" -nolisten tcp -screen 0 800x600x24 > "$dir/xvfb.log" 2>&1 &
    xvfb=$!
    trap 'kill $xvfb 2> /dev/null; rm -rf "$dir"' EXIT
    for _ in $(seq 100); do
        [ -S "/tmp/.X11-unix/X$display" ] && break
        sleep 0.1
    done
    if [ -S "/tmp/.X11-unix/X$display" ]; then
        DISPLAY=":$display" "$pvpython" "$src/tests/paraview_check.py" "$dir/fill" "$dir/mixed"
        exit $?
    fi
    echo "test_paraview: Xvfb did not start:"
    cat "$dir/xvfb.log"
fi
echo "test_paraview: no virtual X server (Debian: xvfb): reading without rendering"
"$pvpython" "$src/tests/paraview_check.py" "$dir/fill" "$dir/mixed" --no-render
