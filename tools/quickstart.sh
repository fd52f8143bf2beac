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
echo "Post-processing the last 0.02 s of the demo..."
out=output/channel-demo
build/tools/gf-velfield --nx 60 --ny 26 -o $out/velfield $out/channel_00000{4,5,6}000.h5
build/tools/gf-rdf --region 0.012 0.03 0 0.013 0 0.004 -o $out/rdf $out/channel_000006000.h5
build/tools/gf-stats $out/stats.csv
echo
echo "Done. Output in output/channel-demo/: snapshots channel_*.h5, channel.xmf (open it in"
echo "ParaView), statistics stats.csv, checkpoint channel.ckpt.h5, log log.txt; velocity maps"
echo "velfield_velocity.png, velfield_angular.png (data velfield.csv) and g(r) rdf.png (rdf.csv)."
echo "Try: mpirun -n 4 --oversubscribe build/granflow configs/demo.cfg -Solver.model=coulomb"
