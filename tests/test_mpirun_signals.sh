#!/bin/bash
# Signals to mpirun, as a batch system sends them (issue 36). Usage:
#   test_mpirun_signals.sh MPIEXEC GRANFLOW CONFIG WORKDIR
#
# SIGUSR1 to mpirun reaches every rank (Open MPI forwards it): the run writes a checkpoint at the
# end of the step, exits 75 on every rank, and mpirun exits 75; the checkpoint restarts. SIGTERM
# to mpirun aborts the job instead (docs/user-guide.md, "Exit status"): not tested here, since
# whether the ranks checkpoint before Open MPI kills them depends on its timing (a run with
# odls_base_sigkill_timeout 10 did on a quiet machine and did not in a loaded CI run).
set -u
MPIEXEC=$1 GRANFLOW=$2 CONFIG=$3 WORK=$4
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
fail() { echo "FAIL: $*"; for f in "$WORK"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

# Starts a 2-rank run in the background ($1: log name, the rest: extra mpirun arguments), and
# waits until it has made steps (a progress line) so that the signal finds it stepping.
start() {
    local log=$1
    shift
    "$MPIEXEC" -n 2 --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 "$@" \
        "$GRANFLOW" "$CONFIG" -Output.directory="$WORK/$log" -Time.steps=100000000 \
        -Output.progress_every=50 -Output.snapshot_every=0 >"$WORK/$log.log" 2>&1 &
    PID=$!
    for _ in $(seq 600); do
        grep -q "^step " "$WORK/$log.log" 2>/dev/null && return 0
        kill -0 $PID 2>/dev/null || fail "$log: the run ended before its first progress line"
        sleep 0.1
    done
    fail "$log: no progress line in 60 s"
}

# SIGUSR1: checkpoint, 75 from mpirun, and the checkpoint restarts.
start usr1
kill -USR1 $PID
wait $PID
status=$?
[ $status -eq 75 ] || fail "SIGUSR1: mpirun exited $status, not 75"
grep -q "signal received at step" "$WORK/usr1.log" || fail "SIGUSR1: no checkpoint written"
ckpt=$(ls "$WORK"/usr1/*.ckpt.h5 2>/dev/null | head -1)
[ -n "$ckpt" ] || fail "SIGUSR1: no checkpoint file"
step=$(grep -o "signal received at step [0-9]*" "$WORK/usr1.log" | head -1 | awk '{print $5}')
"$MPIEXEC" -n 2 --oversubscribe "$GRANFLOW" "$CONFIG" --restart "$ckpt" \
    -Output.directory="$WORK/usr1" -Time.steps=$((step + 20)) -Output.snapshot_every=0 \
    >"$WORK/restart.log" 2>&1 || fail "the checkpoint written on SIGUSR1 does not restart"
grep -q "restarted from" "$WORK/restart.log" || fail "the restart does not say so"
echo "PASS"
