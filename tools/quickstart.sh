#!/usr/bin/env bash
# Installs what is missing (Debian, as root), builds granflow into build/, and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/common.sh

gf_install_deps
gf_mpi_env
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(gf_jobs)"

echo
echo "Running the demo (configs/demo.cfg) on 2 MPI ranks..."
mkdir -p output/demo
mpirun -n 2 --oversubscribe build/granflow configs/demo.cfg | tee output/demo/log.txt
echo
echo "Done. The run log is in output/demo/log.txt; the program is build/granflow."
echo "Try: mpirun -n 4 --oversubscribe build/granflow configs/demo.cfg -Solver.model=coulomb"
