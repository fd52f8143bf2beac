#!/usr/bin/env bash
# Installs what is missing (Debian, as root), builds granflow and its tools into build/, and runs
# the channel demo on 2 ranks with mpirun options chosen for the machine (gf_mpirun_options in
# tools/common.sh: on 2 cores or fewer, or with fewer cores than ranks, no binding and yielding
# when idle; set GF_MPIRUN_OPTIONS to choose others), then post-processes it.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/common.sh

gf_install_deps $GF_PACKAGES $GF_FIGURE_PACKAGES
gf_mpi_env
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
# The program and the tools the demo uses; tools/run-tests.sh builds the rest (tests, benchmarks).
cmake --build build -j"$(gf_jobs)" --target granflow_app gf-velfield gf-rdf gf-stats

ranks=2
opts=$(gf_mpirun_options $ranks)
out=output/channel-demo
cmd="mpirun -n $ranks${opts:+ $opts} build/granflow configs/channel-demo.cfg"
echo
echo "Running the channel-flow demo (configs/channel-demo.cfg) on $ranks MPI ranks, $(gf_cores) cores:"
echo "    $cmd"
if [ -n "$opts" ]; then
    echo "(no binding and yielding when idle: on a small or shared machine Open MPI's busy-polling"
    echo "ranks otherwise take the cores from each other and from the rest of the machine)"
fi
mkdir -p $out
$cmd | tee $out/log.txt

echo
echo "Post-processing the last 0.02 s of the demo..."
# Cells of 0.5 mm, about a sphere's diameter: 60 x 26 over the 3 cm x 1.3 cm channel.
build/tools/gf-velfield --cell 0.0005 -o $out/velfield $out/channel_00000{4,5,6}000.h5
build/tools/gf-rdf --region 0.012 0.03 0 0.013 0 0.004 -o $out/rdf $out/channel_000006000.h5
build/tools/gf-stats $out/stats.csv
gf_figures velfield $out/velfield
gf_figures rdf $out/rdf
echo
echo "Done. Output in $out/: snapshots channel_*.h5, channel.xmf (open it in ParaView),"
echo "statistics stats.csv, checkpoint channel.ckpt.h5, log log.txt; velocity maps"
echo "velfield_velocity.png and .svg, velfield_angular.png and .svg (data velfield.csv), and"
echo "g(r) rdf.png and .svg (data rdf.csv), drawn with matplotlib (python3 -m granflow.figures)."
opts4=$(gf_mpirun_options 4)
echo "Try: mpirun -n 4${opts4:+ $opts4} build/granflow configs/demo.cfg -Solver.model=coulomb"
