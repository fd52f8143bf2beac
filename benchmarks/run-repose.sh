#!/usr/bin/env bash
# The angle of repose of a poured heap against a contact law's coefficient (issue 33): the funnel
# heap of configs/funnel-heap.cfg (2000 glass beads of 4 mm, friction 0.5, poured through a cone
# onto a rough base) for each value of KEY (default Materials.rolling_friction; also e.g.
# Materials.cohesion, in N per contact point: a bead's weight is 8.2e-4 N) and Insert.seed given,
# its flanks measured by gf-repose over the snapshots from 1.45 s on (the heap at rest). Prints
# one line per run and the mean per value; each run takes 1.5 to 3 minutes of CPU on one core.
#   benchmarks/run-repose.sh [BUILD_DIR] [OUT_DIR] ["VALUE ..."] ["SEED ..."] [KEY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-output/repose}
coefficients=${3:-"0 0.02 0.05 0.1 0.2 0.3"}
seeds=${4:-"13 7"}
key=${5:-Materials.rolling_friction}
mkdir -p "$out"
table="$out/angles.csv"
echo "$key,seed,angle_deg,fit_error_deg,cpu_s" > "$table"
for mr in $coefficients; do
    for seed in $seeds; do
        dir="$out/mr${mr}_seed$seed"
        rm -rf "$dir"
        start=$(date +%s.%N)
        /usr/bin/time -f "%U %S" -o "$out/time.txt" "$build/granflow" \
            "$here/configs/funnel-heap.cfg" "-$key=$mr" "-Insert.seed=$seed" \
            "-Output.directory=$dir" > "$dir.log" 2>&1
        cpu=$(awk '{print $1 + $2}' "$out/time.txt")
        "$build/tools/gf-repose" heap -o "$dir/heap" --floor 0.004 --centre 0 0 0 \
            --max-speed 0.05 --from 1.45 "$dir"/run_*.h5 > "$dir.repose" 2>&1
        # "mean over N snapshots: A +- E deg (...; the fits' mean standard error F deg)"
        line=$(grep '^mean over' "$dir.repose")
        angle=$(echo "$line" | sed 's/.*snapshots: \([0-9.]*\) .*/\1/')
        fit=$(echo "$line" | sed 's/.*standard error \([0-9.]*\) deg)$/\1/')
        echo "$mr,$seed,$angle,$fit,$cpu" >> "$table"
        printf '%s %-8s seed %-3s angle %6.2f deg (each fit +- %s)  %6.1f s CPU\n' \
            "$key" "$mr" "$seed" "$angle" "$fit" "$cpu"
    done
done
echo "mean per value of $key:"
awk -F, 'NR > 1 { s[$1] += $3; n[$1]++ } END { for (k in s) printf "  %-8s %6.2f deg over %d heaps\n", k, s[k] / n[k], n[k] }' "$table" | sort -g -k1
echo "table: $table"
