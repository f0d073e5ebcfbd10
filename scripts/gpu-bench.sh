#!/usr/bin/env bash
# Issue 18's GPU figures in one call (docs/performance.md, "GPU"): lengen's training step and
# evaluation grid side by side with plain PyTorch on the same card, plus the test suite
# without the long integration cases. Every command's JSON and log go to one folder, with a
# summary line per command; a command that fails or runs out of time is recorded and the
# rest still run.
#
# On a GPU machine, from the project root, after building into build/gpu (README, "Building
# for a GPU"; ../shared/tools/gpu/build.sh does it where there is no package registry):
#   bash scripts/gpu-bench.sh [OUT_DIR]          # OUT_DIR defaults to $OUT, else gpu-bench/
# Environment: LENGEN_BIN (default build/gpu/bin/lengen), PEAK_TFLOPS (default 989, an H100
# SXM's dense bf16; 989 also for an H200), STEP_TIMEOUT (seconds per command, default 240),
# EVAL_SAMPLES (samples per cell of the T_A grid, default 100: the paper's 1000 takes 10x as
# long), EVAL_LARGE=1 (also time the grid with 524,288-token passes), GPU_BENCH_COMPILE=0 (skip
# torch.compile, which compiles for a minute or more), BUCKETS4=1 (also Cho et al. 2025's multi-operand baseline with 4 length
# buckets), EVAL_GRID=0 (only one cell of the T_A grid), GPU_BENCH_TESTS=0 (skip the tests;
# scripts/gpu-session.sh runs the whole suite itself). About 6-8 minutes in
# all on an H100 by estimate, build not included; a device session has 15 minutes.
# LENGEN_GPU_BENCH_DRY=1 runs the same commands on the CPU with a few steps and tiny evaluation
# grids, to check the script itself without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-bench}}
bin=${LENGEN_BIN:-build/gpu/bin/lengen}
peak=${PEAK_TFLOPS:-989}
limit=${STEP_TIMEOUT:-240}
dry=${LENGEN_GPU_BENCH_DRY:-0}
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"

if [[ ! -x $bin ]]; then
  echo "gpu-bench: $bin not found or not executable; build first (README, 'Building for a GPU')" >&2
  exit 2
fi

# Training steps: GPU sizes, or a few CPU steps of the same configs in a dry run.
steps=(--steps 30 --warmup 5)
train_extra=()
eval_extra=(--set "eval.samples=${EVAL_SAMPLES:-100}")
torch_device=(--device cuda --bf16 --sdpa)
if [[ $dry == 1 ]]; then
  steps=(--steps 2 --warmup 1)
  train_extra=(--set device=cpu --set dtype=float32 --set train.batch_size=4)
  eval_extra=(--set device=cpu --set dtype=float32 --set eval.samples=4 --set 'eval.grid.digits=[1,2]'
              --set 'eval.grid.operands=[2,3]')
  torch_device=(--device cpu)
fi

# run NAME CMD...: stdout to NAME.json (or .txt), stderr to NAME.log, one summary line.
run() {
  local name=$1
  shift
  local t0=$SECONDS rc
  echo "gpu-bench: $name: $*" | tee -a "$summary"
  timeout "$limit" "$@" > "$out/$name.out" 2> "$out/$name.log"
  rc=$?
  echo "gpu-bench: $name: rc $rc in $((SECONDS - t0)) s" | tee -a "$summary"
  if [[ $rc -ne 0 ]]; then
    tail -n 5 "$out/$name.log" | sed 's/^/    /' | tee -a "$summary"
  fi
  # The figures a reader looks for first, from lengen bench's JSON.
  grep -E '"(median_ms_per_step|tokens_per_s|tflops_per_s|fraction_of_peak|kernels_per_step|host_reads_per_step|seconds|host_data_seconds|autocast|device|torch)"' \
    "$out/$name.out" 2> /dev/null | tr -d ' ,' | tr '\n' ' ' | sed 's/^/    /' | tee -a "$summary"
  echo | tee -a "$summary"
}

{
  date -u
  git rev-parse HEAD 2> /dev/null
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("pytorch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} > "$out/machine.txt"

seed001=experiments/multi_operand/addition-scratchpad-coupling.yaml
parity=experiments/multi_operand/parity-scratchpad-coupling.yaml

# 1. Training: the launch-bound parity file eagerly and as CUDA graphs (train.cuda_graphs: one
#    captured step per padded shape, replayed), then Cho et al. 2025's multi-operand baseline the same two ways and
#    packed (train.pack), and with 4 buckets if asked (BUCKETS4=1; it lost to 1 bucket on the first H100 session).
graphs=(--set train.cuda_graphs=true)
run train-parity "$bin" bench "$parity" "${steps[@]}" --peak-tflops "$peak" "${train_extra[@]}"
run train-parity-graphs "$bin" bench "$parity" "${steps[@]}" --peak-tflops "$peak" "${graphs[@]}" \
  "${train_extra[@]}"
run train-seed001-buckets1 "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
  --set train.buckets=1 "${train_extra[@]}"
run train-seed001-graphs "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
  --set train.buckets=1 "${graphs[@]}" "${train_extra[@]}"
# Packed rows (train.pack): the same samples, about half the padded tokens; the issue's 40% of
# peak on real tokens is read from this one's fraction_of_peak.
run train-seed001-packed "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
  --set train.pack=true "${train_extra[@]}"
if [[ ${BUCKETS4:-0} == 1 ]]; then
  run train-seed001-buckets4 "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
    --set train.buckets=4 "${train_extra[@]}"
fi
# 2. The same model in plain PyTorch: eager with fused attention, then torch.compile.
run pytorch-seed001-eager python3 scripts/bench_pytorch.py --config seed001 "${torch_device[@]}" \
  --peak-tflops "$peak" $([[ $dry == 1 ]] && echo --steps 2 --warmup 1 --batch 4)
if [[ $dry != 1 && ${GPU_BENCH_COMPILE:-1} == 1 ]]; then
  run pytorch-seed001-compile python3 scripts/bench_pytorch.py --config seed001 "${torch_device[@]}" \
    --compile --seq 128 --peak-tflops "$peak"
fi
# 3. Evaluation: the T_A grid (goal: 1000 samples per cell in 5 min or less, so 100 in 30 s),
#    then, if asked, larger passes.
# One cell first (10 digits x 10 operands), so that a grid that runs out of time still leaves a
# per-cell figure.
run eval-seed001-cell "$bin" bench "$seed001" --eval "${eval_extra[@]}" --set 'eval.grid.digits=[10]' \
  --set 'eval.grid.operands=[10]'
# The same cell with the forward passes under bfloat16 autocast (eval.autocast; float32 above).
run eval-seed001-cell-autocast "$bin" bench "$seed001" --eval "${eval_extra[@]}" --set 'eval.grid.digits=[10]' \
  --set 'eval.grid.operands=[10]' --set eval.autocast=true
if [[ ${EVAL_GRID:-1} == 1 ]]; then
  run eval-seed001-autocast "$bin" bench "$seed001" --eval "${eval_extra[@]}" --set eval.autocast=true
  run eval-seed001 "$bin" bench "$seed001" --eval "${eval_extra[@]}"
fi
if [[ $dry != 1 && ${EVAL_LARGE:-0} == 1 ]]; then
  run eval-seed001-tokens524k "$bin" bench "$seed001" --eval "${eval_extra[@]}" \
    --set eval.batch_tokens=524288
fi
# 4. The tests that are quick on a GPU machine (the integration cases take minutes each on CPU
#    sizes and are run by CI on both LibTorch versions).
if [[ $dry != 1 && ${GPU_BENCH_TESTS:-1} == 1 ]]; then
  build=$(dirname "$(dirname "$bin")")
  run ctest ctest --test-dir "$build" -LE 'integration|slurm' --output-on-failure
fi
echo "gpu-bench: results in $out/ (summary.txt, one .out/.log per command)"
