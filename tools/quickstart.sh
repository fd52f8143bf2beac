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
echo "Running the channel-flow demo (configs/channel-demo.cfg) on 2 MPI ranks..."
mkdir -p output/channel-demo
mpirun -n 2 --oversubscribe build/granflow configs/channel-demo.cfg | tee output/channel-demo/log.txt
echo
echo "Done. Output in output/channel-demo/: snapshots channel_*.h5, channel.xmf (open it in"
echo "ParaView), statistics stats.csv, checkpoint channel.ckpt.h5, log log.txt."
echo "Try: mpirun -n 4 --oversubscribe build/granflow configs/demo.cfg -Solver.model=coulomb"
