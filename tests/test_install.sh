#!/usr/bin/env bash
# The installed library serves other programs: install, then build a program that calls the
# public kernels, the contact geometry of cylinders (which pulls in libccd) and the driver API
# (MPI and parallel HDF5) against the installed tree three ways - by hand, with CMake's
# find_package(granflow), and with pkg-config - and run each; then the driver example of
# docs/developer.md. Only the public headers are installed. The Python reader is installed
# beside.
set -euo pipefail
build=$1
cc=$2
flags=${3:-}
# "shared" when the build makes libgranflow.so (not under the sanitizers): then it must be
# installed and the Python driver must find it.
libs=${4:-static}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
cat > "$tmp/use.c" <<'C'
#include <granflow/collide.h>
#include <granflow/contact_kernel.h>
#include <granflow/run.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    /* Two cylinders, one tilted, overlapping: the general convex path (libccd). */
    gf_shape cyl = gf_shape_cylinder(0.1, 0.2);
    gf_body_pose p = {&cyl, NULL, {0, 0, 0}, {1, 0, 0, 0}};
    gf_body_pose r = {&cyl, NULL, {0.15, 0.05, 0.01}, {0.9238795325, 0.3826834324, 0, 0}};
    double depth = 0;
    if (gf_collide_overlap(&p, &r, &depth) != GF_OK || !(depth > 0))
        return 3;
    /* A sliding sphere contact: the impulse is the sticking one clipped to the cone. */
    const double A[9] = {2, 0, 0, 0, 7, 0, 0, 0, 7}, b[3] = {1, 5, 0};
    double x[3], y[3];
    gf_contact_solve_maxdiss(A, b, 0.2, x);
    gf_contact_solve_coulomb(A, b, 0.2, y);
    printf("%.12f %.12f %.12f\n", x[0], x[1], x[2]);
    /* The driver links MPI and HDF5 into the program: a missing configuration is refused,
     * named. */
    if (argc > 1) {
        gf_run_options o = {.config_path = argv[1], .quiet = 1};
        gf_run *run = NULL;
        if (gf_run_create(&o, &run) == GF_OK || run || !strstr(gf_error_message(), argv[1]))
            return 2;
        gf_run_end_job();
    }
    return fabs(x[0] - 0.5) < 1e-12 && fabs(x[1] - 0.1) < 1e-12 && fabs(y[1] - 0.1) < 1e-12 ? 0 : 1;
}
C
check() {
    "$1" "$tmp/missing_$2.cfg" > "$tmp/$2.out" 2>&1 || { echo "$2:"; cat "$tmp/$2.out"; exit 1; }
}

# By hand: header and archive, the dependencies named.
mpicc -std=c11 $flags "$tmp/use.c" -I"$prefix/include" "$prefix/lib/libgranflow.a" \
    $(pkg-config --cflags --libs hdf5-openmpi ccd zlib) -lm -o "$tmp/use_hand"
check "$tmp/use_hand" hand

# CMake: find_package(granflow) and the imported target.
mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(use_granflow C)
find_package(granflow 0.1 REQUIRED)
add_executable(use use.c)
target_link_libraries(use PRIVATE granflow::granflow)
CM
cp "$tmp/use.c" "$tmp/cm/use.c"
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    > "$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; exit 1; }
cmake --build "$tmp/cm/build" > "$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; exit 1; }
check "$tmp/cm/build/use" cmake

# pkg-config: granflow.pc (relocatable: found through PKG_CONFIG_PATH wherever installed).
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
    "$cc" -std=c11 $flags "$tmp/use.c" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs granflow) \
    -o "$tmp/use_pc"
check "$tmp/use_pc" pkgconfig

# The driver example of docs/developer.md, built with find_package and run: two stages of the
# demo with a kick between them.
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$tmp/ex"
cp "$src/docs/examples/drive.c" "$tmp/ex/drive.c"
cat > "$tmp/ex/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(drive C)
find_package(granflow 0.1 REQUIRED)
add_executable(drive drive.c)
target_link_libraries(drive PRIVATE granflow::granflow)
CM
cmake -S "$tmp/ex" -B "$tmp/ex/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    > "$tmp/ex.log" 2>&1 || { cat "$tmp/ex.log"; exit 1; }
cmake --build "$tmp/ex/build" > "$tmp/ex.log" 2>&1 || { cat "$tmp/ex.log"; exit 1; }
(cd "$tmp/ex" && ./build/drive "$src/configs/demo.cfg" -Output.directory="$tmp/ex/out" \
    -Output.checkpoint="$tmp/ex/out/c.h5" -Output.progress_every=0 > "$tmp/ex/run.log" 2>&1) ||
    { cat "$tmp/ex/run.log"; exit 1; }
grep -q "kicked 1024 particles; step 400" "$tmp/ex/run.log" ||
    { echo "the driver example did not run its two stages:"; cat "$tmp/ex/run.log"; exit 1; }
test -f "$tmp/ex/settled.h5" && test -f "$tmp/ex/kicked.h5" && test -f "$tmp/ex/out/c.h5"

# Only the public API is installed: the modules' own headers stay in the source tree.
for h in "$prefix"/include/granflow/*.h; do
    case $(basename "$h") in
        collide.h | contact_kernel.h | error.h | manifold_kernel.h | run.h | shape.h | trimesh.h | \
            version.h) ;;
        *) echo "an internal header was installed: $h"; exit 1 ;;
    esac
    # Each stands alone: it includes what it needs from the installed tree only.
    printf '#include <granflow/%s>\nint main(void) { return 0; }\n' "$(basename "$h")" > "$tmp/alone.c"
    mpicc -std=c11 -fsyntax-only -I"$prefix/include" "$tmp/alone.c" ||
        { echo "$(basename "$h") does not compile alone"; exit 1; }
done

# The installed Python driver finds the installed libgranflow.so by itself (where a python3 with
# numpy and h5py is, as the reader needs).
for py in /usr/bin/python3 python3; do
    if [ "$libs" = shared ] && "$py" -c "import numpy, h5py" 2> /dev/null; then
        test -f "$prefix/lib/libgranflow.so" || { echo "libgranflow.so was not installed"; exit 1; }
        (cd "$tmp" && PYTHONPATH="$prefix/share/granflow/python" "$py" -c "
import granflow
with granflow.Simulation('$src/configs/demo.cfg', quiet=True, overrides=[
        '-Output.directory=$tmp/py', '-Output.checkpoint=$tmp/py/c.h5']) as s:
    s.advance(5)
    assert s.step == 5 and s.count() == 1024
print('installed python driver works')" > "$tmp/py.log" 2>&1) ||
            { echo "the installed Python driver failed:"; cat "$tmp/py.log"; exit 1; }
        break
    fi
done

test -x "$prefix/bin/granflow"
test -f "$prefix/share/granflow/python/granflow/__init__.py"
# The ParaView scripts, and the installed one's surfaces (numpy alone) where numpy is
test -f "$prefix/share/granflow/paraview/gf_bodies.py"
for py in /usr/bin/python3 python3; do
    if "$py" -c "import numpy" > /dev/null 2>&1; then
        PYTHONPATH="$prefix/share/granflow/paraview" "$py" -c "
import numpy as np, granflow_bodies as gb
P, faces, owner = gb.surfaces([[0, 0, 0]], [2], [[0.5, 1, 0]], [[0, 1, 0, 0, 0, 3, 2, 0, 0]], [1.5])
assert abs(np.abs(P[:, 2]).max() - 1.5) < 1e-12 and len(faces) == len(owner)" ||
            { echo "the installed granflow_bodies.py failed"; exit 1; }
        break
    fi
done
echo "installed library and program work (by hand, find_package, pkg-config, the driver example)"
