#!/usr/bin/env bash
# The installed library serves other programs: install, compile a program that calls the
# public kernels against the installed header and archive, run it.
set -euo pipefail
build=$1
cc=$2
flags=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
cat > "$tmp/use.c" <<'C'
#include <granflow/contact_kernel.h>
#include <math.h>
#include <stdio.h>
int main(void) {
    /* A sliding sphere contact: the impulse is the sticking one clipped to the cone. */
    const double A[9] = {2, 0, 0, 0, 7, 0, 0, 0, 7}, b[3] = {1, 5, 0};
    double x[3], y[3];
    gf_contact_solve_maxdiss(A, b, 0.2, x);
    gf_contact_solve_coulomb(A, b, 0.2, y);
    printf("%.12f %.12f %.12f\n", x[0], x[1], x[2]);
    return fabs(x[0] - 0.5) < 1e-12 && fabs(x[1] - 0.1) < 1e-12 && fabs(y[1] - 0.1) < 1e-12 ? 0 : 1;
}
C
"$cc" -std=c11 $flags "$tmp/use.c" -I"$tmp/prefix/include" "$tmp/prefix/lib/libgranflow.a" -lm -o "$tmp/use"
"$tmp/use"
test -x "$tmp/prefix/bin/granflow"
echo "installed library and program work"
