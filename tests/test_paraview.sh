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
# A virtual X server of our own, on a display it chooses and reports itself (-displayfd): a
# display number picked here can meet a stale socket or lock of an earlier server. Servers
# started at the same moment by other jobs have still, rarely, left pvpython with "bad X server
# connection": then a new server, up to three times, and at last reading without rendering.
render() {
    Xvfb -displayfd 3 -nolisten tcp -screen 0 800x600x24 3> "$dir/display" 2> "$dir/xvfb.log" &
    xvfb=$!
    for _ in $(seq 100); do
        [ -s "$dir/display" ] && break
        kill -0 $xvfb 2> /dev/null || break
        sleep 0.1
    done
    display=$(tr -d '[:space:]' < "$dir/display")
    rc=99
    if [ -n "$display" ] && kill -0 $xvfb 2> /dev/null; then
        rc=0
        DISPLAY=":$display" "$pvpython" "$src/tests/paraview_check.py" "$dir/fill" "$dir/mixed" \
            > "$dir/pv.log" 2>&1 || rc=$?
        cat "$dir/pv.log"
    fi
    kill $xvfb 2> /dev/null
    wait $xvfb 2> /dev/null
    return $rc
}
if command -v Xvfb > /dev/null 2>&1; then
    for attempt in 1 2 3; do
        rc=0
        render || rc=$?
        [ $rc -eq 0 ] && exit 0
        grep -q "bad X server connection" "$dir/pv.log" 2> /dev/null || [ $rc -eq 99 ] || exit $rc
        echo "test_paraview: attempt $attempt found no X server (rc $rc)"
    done
fi
echo "test_paraview: no virtual X server (Debian: xvfb): reading without rendering"
"$pvpython" "$src/tests/paraview_check.py" "$dir/fill" "$dir/mixed" --no-render
