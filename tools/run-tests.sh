#!/usr/bin/env bash
# Installs what is missing (Debian, as root), builds granflow and runs every test:
# the whole ctest suite in a Release build, then every test again under
# AddressSanitizer and UndefinedBehaviorSanitizer (MPI tests included), each pass whatever the
# other gave. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/common.sh

gf_install_deps $GF_PACKAGES $GF_TEST_PACKAGES
gf_install_optional $GF_PARAVIEW_PACKAGES
gf_mpi_env
jobs=$(gf_jobs)

# Each pass runs whatever the other did: a failure in the Release suite still leaves the
# sanitizer pass to run (and to be reported), and the script fails at the end if either did.
failed=()
if cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGF_TEST_TIMEOUT=900 &&
    cmake --build build -j"$jobs" &&
    (cd build && ctest --output-on-failure -j"$jobs"); then
    :
else
    failed+=("the Release build and suite (build/)")
fi

# The sanitizer pass: Open MPI's own allocations are not ours to report, so leak checking is
# off; memory errors and undefined behaviour in granflow still abort.
if cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGF_SANITIZE=ON -DGF_BUILD_BENCHMARKS=OFF \
    -DGF_TEST_TIMEOUT=1800 -DGF_FUZZ=OFF &&
    cmake --build build-asan -j"$jobs" &&
    (cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j"$jobs"); then
    :
else
    failed+=("the sanitizer build and suite (build-asan/)")
fi

if [ ${#failed[@]} -gt 0 ]; then
    printf 'run-tests.sh: FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "run-tests.sh: both passes (Release, sanitizers) passed"
