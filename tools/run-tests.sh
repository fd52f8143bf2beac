#!/usr/bin/env bash
# Installs what is missing (Debian, as root), builds granflow and runs every test:
# the whole ctest suite in a Release build, then every test again under
# AddressSanitizer and UndefinedBehaviorSanitizer (MPI tests included). Exits non-zero on any
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/common.sh

gf_install_deps $GF_PACKAGES $GF_TEST_PACKAGES
gf_mpi_env
jobs=$(gf_jobs)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGF_TEST_TIMEOUT=900
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

# The sanitizer pass: Open MPI's own allocations are not ours to report, so leak checking is
# off; memory errors and undefined behaviour in granflow still abort.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGF_SANITIZE=ON -DGF_BUILD_BENCHMARKS=OFF \
    -DGF_TEST_TIMEOUT=1800 -DGF_FUZZ=OFF
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j"$jobs")
