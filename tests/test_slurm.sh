#!/bin/bash
# tools/slurm/granflow.sbatch as SLURM runs it (issue 35): SIGUSR1 to the batch shell (what
# `#SBATCH --signal=B:USR1@600` sends) stops a 2-rank run with a checkpoint and exit 75, and the
# script requeues the job (scontrol, here a stand-in that records its arguments); run again, as
# the requeued job, the script continues from the checkpoint to the end and requeues nothing. The
# checkpoint's path comes from the configuration (Output.checkpoint given as an override, not in
# CHECKPOINT), and a requeued job whose checkpoint is gone refuses to start again from step 0.
#   test_slurm.sh MPIEXEC GRANFLOW SOURCE_DIR WORKDIR
set -u
MPIEXEC=$1 GRANFLOW=$2 SRC=$3 WORK=$4
rm -rf "$WORK" && mkdir -p "$WORK/bin" || exit 1
fail() { echo "FAIL: $*"; for f in "$WORK"/*.log; do echo "== $f"; tail -25 "$f"; done; exit 1; }
printf '#!/bin/sh\necho "$@" >> "%s/requeued"\n' "$WORK" > "$WORK/bin/scontrol"
chmod +x "$WORK/bin/scontrol"
export PATH="$WORK/bin:$PATH" SLURM_NTASKS=2 SLURM_JOB_ID=4242 GRANFLOW
export MPIRUN="$MPIEXEC --oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
unset CHECKPOINT SLURM_RESTART_COUNT
CHECKPOINT="$WORK/out/c.h5" # the script finds it in the configuration
args=("$SRC/configs/channel-demo.cfg" -Output.progress_every=50
      -Output.snapshot_every=0 -Output.checkpoint_every=0 -Output.directory="$WORK/out"
      -Output.checkpoint="$CHECKPOINT")

# The first job: stopped by the signal once it steps.
"$SRC/tools/slurm/granflow.sbatch" "${args[@]}" -Time.steps=100000000 > "$WORK/job1.log" 2>&1 &
job=$!
for _ in $(seq 600); do
    grep -q "^step " "$WORK/job1.log" 2>/dev/null && break
    kill -0 $job 2>/dev/null || fail "the first job ended before its first progress line"
    sleep 0.1
done
kill -USR1 $job
rc=0
wait $job || rc=$?
[ $rc -eq 75 ] || fail "the first job exited $rc, not 75"
[ -f "$CHECKPOINT" ] || fail "no checkpoint after the signal"
[ "$(cat "$WORK/requeued" 2>/dev/null)" = "requeue 4242" ] || fail "the job was not requeued"

# The requeued job: from the checkpoint 100 steps on (Time.steps may change at a restart).
at=$(sed -n 's/^signal received at step \([0-9]*\) .*/\1/p' "$WORK/job1.log" | tail -1)
[ -n "$at" ] || fail "the first job names no checkpoint step"
end=$((at + 100))
rc=0
SLURM_RESTART_COUNT=1 "$SRC/tools/slurm/granflow.sbatch" "${args[@]}" -Time.steps=$end \
    > "$WORK/job2.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "the requeued job exited $rc"
grep -q "continuing from $CHECKPOINT on 2 rank(s)" "$WORK/job2.log" || fail "no restart"
grep -q "run summary: 100 steps ($at to $end, restarted)" "$WORK/job2.log" ||
    fail "it did not continue from step $at to $end"
[ "$(wc -l < "$WORK/requeued")" -eq 1 ] || fail "the finished job requeued itself"

# Requeued again, its checkpoint gone: an error, and no run.
rm -f "$CHECKPOINT"
rc=0
SLURM_RESTART_COUNT=2 "$SRC/tools/slurm/granflow.sbatch" "${args[@]}" -Time.steps=$end \
    > "$WORK/job3.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a requeued job without its checkpoint exited 0"
grep -q "without its checkpoint $CHECKPOINT: not starting the run again" "$WORK/job3.log" ||
    fail "the refusal does not name the checkpoint"
grep -q "run summary" "$WORK/job3.log" && fail "a requeued job without its checkpoint ran"
echo "granflow.sbatch: stopped by SIGUSR1 with a checkpoint, requeued, continued to the end;" \
    "a requeued job without its checkpoint refused"
