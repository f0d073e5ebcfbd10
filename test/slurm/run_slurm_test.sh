#!/bin/bash
# A real sweep on a real (one-node) Slurm cluster: submit a job array of tiny runs, SIGKILL one
# array task midway (as a node failure or the OOM killer would), check that --status calls it
# interrupted, re-submit (only that point goes out again, and it resumes from its checkpoint),
# and check that aggregation sees every point exactly once.
#   run_slurm_test.sh LENGEN SOURCE_DIR WORK_DIR
# Exit 77 (ctest: skipped) only when Slurm cannot be run here (packages missing, not root).
set -Eeuo pipefail
lengen=$1
src=$2
work=$3

if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "SKIPPED: Slurm is not installed (scripts/setup.sh installs slurmctld slurmd slurm-client munge)"
  exit 77
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIPPED: starting munged and slurmd needs root"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
cd "$work"
cluster="$work/cluster"
export LENGEN_SLURM_PORT=${LENGEN_SLURM_PORT:-6917}  # apart from a developer's own cluster
trap '"$src/scripts/slurm-cluster.sh" stop "$cluster"' EXIT
eval "$("$src/scripts/slurm-cluster.sh" start "$cluster")"

fail() { echo "FAILED: $*" >&2; exit 1; }
wait_gone() {  # wait_gone JOB_SPEC SECONDS
  for _ in $(seq $(( $2 * 5 ))); do
    [[ -z $(squeue -h -j "$1" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  squeue >&2
  fail "job $1 still queued after $2 s"
}

cat >base.yaml <<'YAML'
name: base
seed: 0
threads: 1
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64}
position: [nope]
train: {steps: 2500, batch_size: 16, log_every: 250, checkpoint_every: 100}
eval: {samples: 20}
YAML
cat >sweep.yaml <<YAML
name: slurm-test
base: base.yaml
output_dir: $work/out
grid:
  position: [[nope], [{name: coupling, max_position: 16}]]
  seed: [0, 1, 2]
executor: {threads_per_run: 1}
slurm: {array_limit: 2, cpus_per_task: 1, time: "00:10:00", extra: ["#SBATCH --comment=lengen-test"]}
YAML

# The batch script: every point, concurrency limit, per-task logs, requeue, extra lines.
script=$("$lengen" sweep sweep.yaml --executor slurm --dry-run)
grep -q '^#SBATCH --array=0,1,2,3,4,5%2$' <<<"$script" || fail "array line: $script"
grep -q '^#SBATCH --requeue$' <<<"$script" || fail "no --requeue"
grep -q '^#SBATCH --comment=lengen-test$' <<<"$script" || fail "extra line missing"
grep -q '%A_%a.out' <<<"$script" || fail "no per-task stdout"
grep -q 'unset OPENBLAS_CORETYPE' <<<"$script" || fail "the submitter's BLAS kernel choice reaches the nodes"
[[ -z $(squeue -h) ]] || fail "--dry-run submitted something"

out=$("$lengen" sweep sweep.yaml --executor slurm)
job=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' <<<"$out")
[[ -n $job ]] || fail "no job ID printed: $out"
echo "submitted $job"

# Kill task 0 hard once it has written a checkpoint.
run0="$work/out/slurm-test/runs/position=nope/0"
for _ in $(seq 600); do
  compgen -G "$run0/checkpoints/*.safetensors" >/dev/null && break
  sleep 0.1
done
compgen -G "$run0/checkpoints/*.safetensors" >/dev/null || fail "task 0 wrote no checkpoint"
[[ ! -e $run0/eval/summary.json ]] || fail "task 0 finished before it could be killed; make it longer"
scancel --signal=KILL --full "${job}_0"
wait_gone "${job}_0" 60
wait_gone "$job" 300

status=$("$lengen" sweep sweep.yaml --status)
echo "$status"
grep -q '5 done, 0 running, 0 failed, 1 interrupted, 0 missing' <<<"$status" || fail "status after the kill"

# Re-submitting sends only the interrupted point, which resumes from its checkpoint.
script=$("$lengen" sweep sweep.yaml --executor slurm --dry-run)
grep -q '^#SBATCH --array=0%2$' <<<"$script" || fail "re-submission array line: $script"
out=$("$lengen" sweep sweep.yaml --executor slurm)
job2=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' <<<"$out")
wait_gone "$job2" 300
grep -q 'resumed from' "$run0/sweep.log" || fail "point 0 did not resume: $(tail -n 5 "$run0/sweep.log")"
status=$("$lengen" sweep sweep.yaml --status)
grep -q '6 done, 0 running, 0 failed, 0 interrupted, 0 missing' <<<"$status" || fail "final status: $status"
[[ $(wc -l <"$work/out/slurm-test/slurm/jobs.txt") -eq 2 ]] || fail "jobs.txt should list both submissions"
ls "$work/out/slurm-test/slurm/${job}_1.out" >/dev/null || fail "no per-task stdout file"

# Aggregation sees every point exactly once: 6 points x 4 cells.
"$lengen" aggregate "$work/out/slurm-test" --no-plot
rows=$(tail -n +2 "$work/out/slurm-test/aggregate/results.csv")
[[ $(wc -l <<<"$rows") -eq 24 ]] || fail "results.csv has $(wc -l <<<"$rows") rows, expected 24"
[[ $(cut -d, -f1-2 <<<"$rows" | sort -u | wc -l) -eq 6 ]] || fail "not 6 distinct points"
seeds=$(awk -F, 'NR > 1 {print $(NF-7)}' "$work/out/slurm-test/aggregate/summary.csv" | sort -u)
[[ $seeds == 3 ]] || fail "every configuration should have 3 seeds per cell, got: $seeds"
"$lengen" sweep sweep.yaml --cancel
echo "slurm sweep test passed"
