#!/usr/bin/env bash
# Weak and strong scaling of granflow at 1, 2, 4 and 8 ranks: CSV and PNG/SVG plots.
#   benchmarks/run-scaling.sh [BUILD_DIR] [OUT_DIR] [PER_RANK] [TOTAL] [STEPS]
# On a machine with fewer cores than ranks the runs are oversubscribed: the CSV records the
# core count next to the rank count, and efficiencies beyond the core count measure the
# oversubscription, not granflow. mpirun's options come from gf_mpirun_options (tools/common.sh):
# on 2 cores or fewer, or with more ranks than cores, no binding and yielding when idle, without
# which Open MPI's busy polling makes the waiting ranks take the cores from the working ones.
# The options of each rank count are in the CSV's comment lines. comm_share is the share of the
# timed steps' wall time spent in the "communicate" phase (synchronisations, maxima, ghost
# exchange: beyond one rank mostly waiting), averaged over the ranks; comm_share_max the largest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/common.sh"
build=${1:-build}
out=${2:-output/scaling}
per_rank=${3:-4000}
total=${4:-16000}
steps=${5:-30}
gf_mpi_env
mkdir -p "$out"
raw="$out/raw.csv"
: > "$raw"
cores=$(gf_cores)
used=""
for ranks in 1 2 4 8; do
    used="$used# mpirun -n $ranks $(gf_mpirun_options "$ranks")"$'\n'
done
echo "Scaling on $cores cores (load: $(uptime | sed 's/.*load average: //'))"
printf '%s' "$used"
for mode in weak strong; do
    n=$per_rank
    [ "$mode" = strong ] && n=$total
    for ranks in 1 2 4 8; do
        # Word splitting of the options is intended.
        # shellcheck disable=SC2046
        mpirun -n "$ranks" $(gf_mpirun_options "$ranks") "$build/benchmarks/bench_scaling" \
            "$mode" "$n" "$steps" >> "$raw"
    done
done
csv="$out/scaling.csv"
# Efficiency against one rank, per particle and rank: t1 N / (N1 P t).
awk -F, -v cores="$cores" -v used="$used" -v load="$(uptime | sed 's/.*load average: //')" '
    BEGIN { print "# ranks beyond " cores " cores are oversubscribed; load average after the runs " load
            printf "%s", used
            print "mode,ranks,cores,particles,steps,seconds,updates_per_s,contact_iterations_per_s_per_rank,efficiency,comm_share,comm_share_max,cpu_seconds_per_rank" }
    { if ($2 == 1) { t1[$1] = $6; n1[$1] = $4 }
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%.4f,%s,%s,%s\n", $1, $2, $3, $4, $5, $6, $7, $8, t1[$1] * $4 / (n1[$1] * $2 * $6), $9, $10, $11 }' "$raw" > "$csv"
gf_figures plot "$csv" "$out/efficiency.png" --x ranks --y efficiency --group mode \
    --title "granflow parallel efficiency ($cores cores)" --ylabel "parallel efficiency" --hline 1
gf_figures plot "$csv" "$out/rate.png" --x ranks --y updates_per_s --group mode \
    --title "granflow particle updates per second" --ylabel "particle updates / s"
gf_figures plot "$csv" "$out/comm.png" --x ranks --y comm_share --group mode \
    --title "granflow share of time communicating ($cores cores)" \
    --ylabel "communicate / wall time"
grep -v '^#' "$csv" | column -s, -t | sed 's/^/  /'
echo "CSV: $csv; plots (PNG, SVG beside): $out/efficiency.png, $out/rate.png, $out/comm.png"
