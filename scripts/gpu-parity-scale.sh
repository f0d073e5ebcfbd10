#!/usr/bin/env bash
# Seed 001's paper-scale parity run (6 x 512, 50,000 steps of batch 20) on one GPU with the
# training step as CUDA graphs, then its greedy answer accuracy on 1-100 bits at EVAL_SAMPLES
# per length (default 100; the paper's 1000 takes ten times the evaluation). Prints the training
# progress lines and the grid; meant as gpu-session.sh's EXTRA:
#   EXTRA='bash scripts/gpu-parity-scale.sh' bash scripts/gpu-session.sh
# Environment: LENGEN_BIN (default build/gpu/bin/lengen), LIMIT (seconds; default gpu-session's
# EXTRA_LIMIT, else 250), DEVICE
# (default cuda), SET (more --set arguments, e.g. "--set train.steps=20" for a dry run).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${LENGEN_BIN:-build/gpu/bin/lengen}
run=/tmp/lengen-parity-scale
rm -rf "$run"
# shellcheck disable=SC2086
timeout "${LIMIT:-${EXTRA_LIMIT:-250}}" "$bin" run experiments/multi_operand/parity-scratchpad-coupling.yaml \
  --set device="${DEVICE:-cuda}" --set train.cuda_graphs=true --set train.checkpoint_every=0 \
  --set eval.samples="${EVAL_SAMPLES:-100}" --set output_dir="$run" ${SET:-} > "$run.log" 2>&1
echo "parity: rc $?"
grep -E 'CUDA graph|step +[0-9]+/|rror|accuracy|wrote' "$run.log" | tail -60
for f in $(find "$run" -name grid.csv -o -name metrics.jsonl | sort); do
  echo "== $f"
  head -120 "$f"
done
