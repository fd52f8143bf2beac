#!/usr/bin/env bash
# Weak and strong scaling of granflow at 1, 2, 4 and 8 ranks: CSV and PNG plots.
#   benchmarks/run-scaling.sh [BUILD_DIR] [OUT_DIR] [PER_RANK] [TOTAL] [STEPS]
# On a machine with fewer cores than ranks the runs are oversubscribed: the CSV records the
# core count next to the rank count, and efficiencies beyond the core count measure the
# oversubscription, not granflow.
set -euo pipefail
build=${1:-build}
out=${2:-output/scaling}
per_rank=${3:-4000}
total=${4:-16000}
steps=${5:-30}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$out"
raw="$out/raw.csv"
: > "$raw"
for mode in weak strong; do
    n=$per_rank
    [ "$mode" = strong ] && n=$total
    for ranks in 1 2 4 8; do
        mpirun -n "$ranks" --oversubscribe "$build/benchmarks/bench_scaling" "$mode" "$n" "$steps" >> "$raw"
    done
done
csv="$out/scaling.csv"
cores=$(nproc)
# Efficiency against one rank, per particle and rank: t1 N / (N1 P t).
awk -F, -v cores="$cores" '
    BEGIN { print "# ranks beyond " cores " cores are oversubscribed"
            print "mode,ranks,cores,particles,steps,seconds,updates_per_s,contact_iterations_per_s_per_rank,efficiency" }
    { if ($2 == 1) { t1[$1] = $6; n1[$1] = $4 }
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%.4f\n", $1, $2, $3, $4, $5, $6, $7, $8, t1[$1] * $4 / (n1[$1] * $2 * $6) }' "$raw" > "$csv"
"$build/tools/gf-plot" "$csv" "$out/efficiency.png" --x ranks --y efficiency --group mode \
    --title "granflow parallel efficiency ($cores cores)" --ylabel "parallel efficiency" --hline 1
"$build/tools/gf-plot" "$csv" "$out/rate.png" --x ranks --y updates_per_s --group mode \
    --title "granflow particle updates per second" --ylabel "particle updates / s"
column -s, -t < "$csv" | sed 's/^/  /'
echo "CSV: $csv; plots: $out/efficiency.png, $out/rate.png"
