#!/usr/bin/env bash
# The channel demo (configs/channel-demo.cfg) timed at 1 and 2 ranks: wall seconds per simulated
# second, contacts and sweeps per step, the deepest penetration, the share of time communicating.
#   benchmarks/run-channel.sh [BUILD_DIR] [OUT_DIR] [STEPS] [BASELINE_BUILD_DIR]
# BUILD_DIR: default build; OUT_DIR: default output/channel-bench (a run directory per build and
# rank count, their logs, channel.csv); STEPS: default the configuration's (6000, 0.06 s).
# BASELINE_BUILD_DIR (e.g. a build of an older commit): its runs alternate with BUILD_DIR's in
# this one invocation, and the ratios of their times are printed: compare ratios measured in one
# run, the machine's load changes between runs.
# Snapshots, checkpoints and statistics rows are off (-Output.snapshot_every=0
# -Output.checkpoint_every=0 -Statistics.every=0), so no I/O is timed; the final checkpoint is
# written after the timed steps. mpirun's options come from gf_mpirun_options (tools/common.sh)
# and are printed with each run. The wall time is the run summary's total (the time-stepping loop,
# the largest over ranks), without MPI start-up, setup and the final checkpoint.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/common.sh"
build=${1:-build}
out=${2:-output/channel-bench}
steps=${3:-}
baseline=${4:-}
cfg="$here/configs/channel-demo.cfg"
gf_mpi_env
mkdir -p "$out"

for b in "$build" ${baseline:+"$baseline"}; do
    [ -x "$b/granflow" ] || { echo "run-channel.sh: no $b/granflow (build it first)" >&2; exit 1; }
done
# The overrides below must name keys the program reads; an older build without --help-config
# is trusted (an unknown key on the command line stops granflow with a message anyway).
for key in snapshot_every checkpoint_every; do
    if help=$("$build/granflow" --help-config Output 2>/dev/null) && ! grep -q "^  $key:" <<< "$help"; then
        echo "run-channel.sh: $build/granflow has no key Output.$key" >&2
        exit 1
    fi
done
# A baseline older than load balancing (without the key in its --help-config, or without
# --help-config) reads the configuration without Domain.balance_every: equal subdomains.
base_cfg=$cfg
if [ -n "$baseline" ] &&
    ! { help=$("$baseline/granflow" --help-config Domain 2>/dev/null) &&
        grep -q "^  balance_every:" <<< "$help"; }; then
    base_cfg="$out/channel-demo-baseline.cfg"
    grep -v "^[[:space:]]*balance_every" "$cfg" > "$base_cfg"
fi
overrides=(-Output.snapshot_every=0 -Output.checkpoint_every=0 -Statistics.every=0)
[ -n "$steps" ] && overrides+=("-Time.steps=$steps")

load() { uptime | sed 's/.*load average: //'; }
load_before=$(load)
cores=$(gf_cores)
echo "Channel demo on $cores cores; load average before: $load_before"

# One run: label, build directory, ranks. Appends a CSV row to $rows.
rows="$out/rows.csv"
: > "$rows"
run() {
    local label=$1 dir=$2 ranks=$3 opts run_cfg=$cfg
    [ "$label" = baseline ] && run_cfg=$base_cfg
    opts=$(gf_mpirun_options "$ranks")
    local rundir="$out/$label-$ranks" log="$out/$label-$ranks.log"
    mkdir -p "$rundir"
    echo "  $label, $ranks rank(s): mpirun -n $ranks ${opts:+$opts }$dir/granflow" \
        "$run_cfg ${overrides[*]} -Output.directory=$rundir"
    # shellcheck disable=SC2086 # the options are words
    if ! mpirun -n "$ranks" $opts "$dir/granflow" "$run_cfg" "${overrides[@]}" \
        "-Output.directory=$rundir" > "$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "run-channel.sh: the run failed; its log: $log" >&2
        exit 1
    fi
    # The run summary (src/sim/sim.c, gf_sim_print_summary) and the line giving dt; fields a build
    # does not print stay empty.
    awk -v label="$label" -v ranks="$ranks" -v opts="${opts:-default}" -v cfg="$cfg" '
        function num(s) { gsub(/[^0-9.eE+-]/, "", s); return s }
        /solver .*, dt .* s, steps/ { for (i = 1; i < NF; ++i) if ($i == "dt") dt = $(i + 1) }
        /^run summary:/ { insum = 1; steps = $3 }
        insum && ($1 == "communicate" || ($1 == "local" && $2 == "copies")) { comm = num($NF) / 100 }
        # builds up to 12ef585: "mean contacts per step: C, mean solver sweeps per step: S"
        insum && /mean contacts per step:/ { solved = num($5); sweeps = num($NF); next }
        insum && $1 == "total" { wall = $NF }
        insum && /contacts per step:/ {
            for (i = 1; i <= NF; ++i) {
                if ($i == "solved,") solved = $(i - 1)
                if ($i == "touching") touching = $(i - 1)
                if ($i == "loaded") loaded = $(i - 1) } }
        insum && /solver sweeps per step:/ { sweeps = num($5) }
        insum && /residual reached/ { for (i = 1; i < NF; ++i) if ($i == "mean") resid = num($(i + 1)) }
        insum && /max. penetration over every step/ {
            for (i = 1; i <= NF; ++i) {
                if ($i == "m,") pen = $(i - 1)
                if ($i ~ /%$/) pct = num($i) } }
        END {
            if (steps == "" || wall == "") { print "no run summary" > "/dev/stderr"; exit 1 }
            if (dt == "")   # an older build: from the configuration file
                while ((getline line < cfg) > 0)
                    if (line ~ /^[ \t]*dt[ \t]/) { split(line, w, /[ \t;]+/); dt = w[3] }
            sim = steps * dt
            printf "%s,%d,%s,%d,%.6g,%.4f,%.1f,%s,%s,%s,%s,%s,%s,%s,%.4f\n", label, ranks, opts,
                steps, sim, wall, wall / sim, solved, touching, loaded, sweeps, resid, pen, pct, comm
        }' "$log" >> "$rows" || { echo "run-channel.sh: cannot read the summary of $log" >&2; exit 1; }
}

# Alternating the builds at each rank count puts them under the same load.
for ranks in 1 2; do
    run new "$build" "$ranks"
    [ -n "$baseline" ] && run baseline "$baseline" "$ranks"
done
load_after=$(load)

csv="$out/channel.csv"
{
    echo "# granflow channel demo ($cfg), $cores cores, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# new: $build${baseline:+; baseline: $baseline}; load average before $load_before, after $load_after"
    echo "# wall_s: the run summary's total (time stepping, largest over ranks); per simulated second: wall_s / simulated_s"
    echo "build,ranks,mpirun_options,steps,simulated_s,wall_s,wall_s_per_simulated_s,contacts_solved,contacts_touching,contacts_loaded,sweeps_per_step,residual_mean,max_penetration_m,max_penetration_pct_radius,communicate_share"
    cat "$rows"
} > "$csv"
rm -f "$rows"

echo
# The table on the terminal: the CSV's columns under short names, mpirun's options as keys.
awk -F, '
    /^#/ || $1 == "build" { next }
    !($3 in key) { key[$3] = "[" ++nkeys "]"; legend[nkeys] = $3 }
    { rows[++n] = $1 "," $2 "," key[$3] "," $5 "," $6 "," $7 "," $8 "," $9 "," $10 "," $11 "," \
                  $12 "," $13 "," $14 "," sprintf("%.1f", 100 * $15) }
    END {
        print "build,ranks,mpirun,sim_s,wall_s,wall_s/sim_s,solved,touching,loaded,sweeps,residual,max_pen_m,max_pen_%r,comm_%"
        for (i = 1; i <= n; ++i) print rows[i]
        for (k = 1; k <= nkeys; ++k) print "[" k "]: " legend[k] > "/dev/stderr"
    }' "$csv" 2> "$out/legend.txt" | column -s, -t | sed 's/^/  /'
sed 's/^/  mpirun options /' "$out/legend.txt"
rm -f "$out/legend.txt"
echo "  (contacts and sweeps per step; max_pen_%r: % of the pair's thinner body's smallest half extent or radius (of the smaller radius before a9ce729); comm_%:"
echo "  share of the time in the communicate phase, averaged over ranks)"
echo
# Ratios of wall times from this one invocation.
awk -F, '
    !/^#/ && $1 != "build" { w[$1 "," $2] = $6; p[$1 "," $2] = $14 }
    END {
        if (w["new,1"] && w["new,2"])
            printf "  new: 2 ranks are %.2fx as fast as 1 rank\n", w["new,1"] / w["new,2"]
        if (w["baseline,1"] && w["baseline,2"])
            printf "  baseline: 2 ranks are %.2fx as fast as 1 rank\n", w["baseline,1"] / w["baseline,2"]
        for (r = 1; r <= 2; ++r)
            if (w["baseline," r] && w["new," r])
                printf "  %d rank(s): new is %.2fx as fast as baseline (max. penetration %s%% against %s%% of a radius)\n",
                    r, w["baseline," r] / w["new," r], p["new," r], p["baseline," r]
    }' "$csv"
echo "  load average before $load_before, after $load_after ($cores cores)"
echo "CSV: $csv; logs: $out/*.log"
