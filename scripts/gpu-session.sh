#!/usr/bin/env bash
# One device window, one prepared call: build lengen against the GPU machine's PyTorch LibTorch
# and take the GPU figures in order of priority, each part with its own deadline, nothing timed
# while something else runs, every figure in one returned archive, the whole inside 540 s so
# that a second call still fits a 15-minute window (docs/performance.md, "GPU"; docs/testing.md).
#
# Here, first (downloads the Debian packages the build needs into .gpu-deps/, git-ignored, and
# prints the device call):
#   bash scripts/gpu-session.sh prepare
# There, through the device tool: command "bash scripts/gpu-session.sh", carry [".gpu-deps"],
#   timeout_s 570. $OUT gets two files: session.log (what ran, each part's verdict and figures)
#   and session.tgz (every command's output, JSON and log).
# Dry run here, on the CPU with tiny sizes (checks the script, not the GPU; CTest runs it as
# unit.gpu_session_dry):
#   LENGEN_GPU_SESSION_DRY=1 LENGEN_BIN=build/dev/bin/lengen bash scripts/gpu-session.sh /tmp/out
#
# The parts, in order, with the seconds each is sure of (it also gets what earlier parts leave):
#   build       200  configure and build into build/gpu (-k 0: every error in one call)
#   cuda         25  the [cuda] unit tests (graphs against eager steps on the card)
#   bench       125  Cho et al. 2025's baseline training step: unpacked, packed (train.pack),
#                    and plain PyTorch's same model on the same card (scripts/bench_pytorch.py)
#   verdicts     80  the T_A grid under bfloat16 autocast against float32, sample for sample,
#                    on a sample of cells, with that file's model trained briefly on the card
#   quickstart   70  the quickstart trained on the card (CUDA graphs), evaluated in float32 and
#                    under autocast, compared sample for sample
#   grid         30  the whole T_A grid timed under autocast at GRID_SAMPLES a cell (100 here;
#                    the paper's 1000 costs 10x the tokens: a second call, PARTS=grid
#                    GRID_SAMPLES=1000)
#   tests         0  the rest of the test suite on the CPU (CUDA hidden) with what time is left
# Environment: PARTS (default all, in this order; a second call on the same warm machine keeps
# build/gpu, so PARTS="build grid tests" costs no rebuild), DEADLINE (default 540), PEAK_TFLOPS
# (default 989, an H100 SXM's or H200's dense bf16), GRID_SAMPLES (default 100), PYTHON (default
# python3, the one with PyTorch), LENGEN_BIN (the dry run's binary).
set -uo pipefail
cd "$(dirname "$0")/.."

debs=(libyaml-cpp-dev libyaml-cpp0.7 libfmt-dev libfmt9 libspdlog-dev libspdlog1.10 catch2
      libcli11-dev nlohmann-json3-dev)
if [[ ${1:-} == prepare ]]; then
  set -e
  mkdir -p .gpu-deps/debs
  (cd .gpu-deps/debs && apt-get download "${debs[@]}" 2>&1 | grep -v 'Download is performed unsandboxed' || true)
  n=$(find .gpu-deps/debs -name '*.deb' | wc -l)
  if ((n < ${#debs[@]})); then
    echo "gpu-session prepare: only $n of ${#debs[@]} packages in .gpu-deps/debs (apt-get download failed?)" >&2
    exit 1
  fi
  echo "gpu-session prepare: $n packages in .gpu-deps/debs. The device call:"
  echo '  run(command="bash scripts/gpu-session.sh", carry=[".gpu-deps"], timeout_s=570)'
  exit 0
fi

out=${1:-${OUT:-gpu-session}}
dry=${LENGEN_GPU_SESSION_DRY:-0}
deadline=${DEADLINE:-540}
parts=(${PARTS:-build cuda bench verdicts quickstart grid tests})
declare -A budget=([build]=200 [cuda]=25 [bench]=125 [verdicts]=80 [quickstart]=70 [grid]=30 [tests]=0)
python=${PYTHON:-python3}
peak=${PEAK_TFLOPS:-989}
grid_samples=${GRID_SAMPLES:-100}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/lengen-gpu-session.XXXXXX)
log="$out/session.log"
: > "$log"
say() { echo "[$(date -u +%T) +${SECONDS}s] $*" | tee -a "$log"; }
pack() {
  # Not the weights (a 63M-parameter checkpoint is 250 MB) nor TensorBoard's copies of the logs.
  tar -C "$work" --exclude='*.safetensors' --exclude=tensorboard -czf "$out/session.tgz" . 2> /dev/null
  say "packed: $(tar -tzf "$out/session.tgz" | wc -l) entries in session.tgz"
  rm -rf "$work"
}
trap pack EXIT

sure=0
for p in "${parts[@]}"; do
  [[ -n ${budget[$p]+x} ]] || { say "unknown part '$p' in PARTS; known: ${!budget[*]}"; exit 2; }
  sure=$((sure + budget[$p]))
done
if ((sure + 10 > deadline)); then
  say "the parts are sure of $sure s and packing takes 10: more than DEADLINE=$deadline"
  exit 2
fi

# The seconds the current part may use: up to the deadline, less what the parts after it are
# sure of and a margin to pack the archive.
part_end=0
start_part() {
  local reserved=0 after=0 p
  for p in "${parts[@]}"; do
    ((after)) && reserved=$((reserved + budget[$p]))
    [[ $p == "$1" ]] && after=1
  done
  part_end=$((deadline - 10 - reserved))
}
# Seconds left in the part, shared fairly among `n` commands still to run in it; portion NUM DEN:
# that fraction of them, for a command that needs more than its fair share.
share() { portion 1 "${1:-1}"; }
portion() { local n=$(((part_end - SECONDS) * $1 / $2)); echo $((n < 1 ? 1 : n)); }

# step NAME SHARE CMD...: stdout to NAME.out, stderr to NAME.log in the archive, one line in the
# session log with its rc and time, then the figures a reader looks for first.
step() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  if ((part_end - SECONDS < 3)); then
    say "$name: skipped, no time left in this part"
    return 124
  fi
  timeout "$limit" "$@" > "$work/$name.out" 2> "$work/$name.log"
  rc=$?
  say "$name: rc $rc in $((SECONDS - t0)) s$([[ $rc == 124 ]] && echo " (timed out at $limit s)")"
  ((rc)) && tail -n 4 "$work/$name.log" | sed 's/^/    /' | tee -a "$log"
  local figures
  figures=$(grep -E '"(median_ms_per_step|tokens_per_s|tflops_per_s|fraction_of_peak|kernels_per_step|host_reads_per_step|seconds|slowest_cell_seconds|samples|cells|autocast|parameters)"' \
    "$work/$name.out" 2> /dev/null | tr -d ' ,' | tr '\n' ' ')
  [[ -n $figures ]] && echo "    $figures" | tee -a "$log"
  return $rc
}

{
  date -u
  git rev-parse HEAD 2> /dev/null
  git status --short 2> /dev/null | head -20
  command -v nvidia-smi > /dev/null && nvidia-smi
  nproc
  $python -c 'import torch; print("pytorch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  g++ --version | head -1
  cmake --version | head -1
} > "$work/machine.txt" 2>&1
say "machine: $(command -v nvidia-smi > /dev/null && nvidia-smi -L | head -1 || echo 'no GPU'); tree $(git rev-parse --short HEAD 2> /dev/null); parts: ${parts[*]}; deadline ${deadline} s"

if [[ $dry == 1 ]]; then
  bin=${LENGEN_BIN:-build/dev/bin/lengen}
  build=$(dirname "$(dirname "$bin")")
  device=(--set device=cpu --set dtype=float32 --set threads=1)
  # Cho et al. 2025's file shrunk to seconds on the CPU; the PyTorch side at a small batch.
  small=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.d_head=16
         --set model.d_ff=64 --set train.batch_size=4 --set train.dataset_size=0)
  torch_side=(--device cpu --batch 2 --seq 32 --steps 2 --warmup 1 --threads 1)
  steps=(--steps 2 --warmup 1)
  cells=(--set 'eval.grid={digits: [2, 4], operands: [2, 3]}')
  train_short=(--set train.steps=4 --set train.schedule.warmup_fraction=0)
  qs_train=(--set train.steps=20 --set train.schedule.warmup_steps=2 --set 'task.eval_digits=[1,12]')
  grid=(--set 'eval.grid={digits: [1, 3], operands: [2, 4]}')
else
  bin=build/gpu/bin/lengen
  build=build/gpu
  device=(--set device=cuda)
  small=(--set train.dataset_size=0)
  torch_side=(--device cuda --bf16 --sdpa)
  steps=(--steps 30 --warmup 5)
  # A sample of the T_A grid: short, middle and long operands, few and many operands.
  cells=(--set 'eval.grid={digits: [1, 10, 20, 30], operands: [2, 10, 20, 30]}')
  train_short=(--set train.steps=200 --set train.optimizer.lr=3e-4)
  qs_train=(--set train.cuda_graphs=true)
  grid=()
fi
seed001=experiments/multi_operand/addition-scratchpad-coupling.yaml
runs="$work/runs"

part_build() {
  [[ $dry == 1 ]] && { say "build: dry run, using $bin"; return 0; }
  if ! compgen -G '.gpu-deps/debs/*.deb' > /dev/null; then
    say "build: no .gpu-deps/debs here; run 'bash scripts/gpu-session.sh prepare' on the CPU machine and carry .gpu-deps (trying with what this machine has)"
  fi
  mkdir -p /tmp/pfx
  for f in .gpu-deps/debs/*.deb; do [[ -f $f ]] && dpkg -x "$f" /tmp/pfx; done
  local torch_prefix torch_lib inc std=17 rc
  torch_prefix=$($python -c 'import torch; print(torch.utils.cmake_prefix_path)')
  torch_lib=$($python -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu:$torch_lib:${LD_LIBRARY_PATH:-}
  export LENGEN_TORCH_PREFIX="$torch_prefix"
  # Which C++ standard this LibTorch accepts: its headers #error below the one they need.
  inc=$($python -c 'import torch.utils.cpp_extension as c; print(" ".join("-I"+p for p in c.include_paths()))')
  printf '#include <torch/torch.h>\nint main() { return 0; }\n' > "$work/probe.cpp"
  g++ -std=c++17 $inc -fsyntax-only "$work/probe.cpp" > "$work/probe17.log" 2>&1 || std=20
  say "build: C++$std against $torch_prefix"
  step configure "$(share 1)" cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLENGEN_CXX_STANDARD=$std "-DCMAKE_PREFIX_PATH=$torch_prefix;/tmp/pfx/usr" || return
  grep -E 'lengen: CUDA graphs' "$work/configure.out" | tee -a "$log"
  cp build/gpu/CMakeFiles/CMakeConfigureLog.yaml build/gpu/CMakeFiles/CMakeError.log "$work/" 2> /dev/null
  step build "$(share 1)" cmake --build build/gpu -j"$(nproc)" -- -k 0
  rc=$?
  grep -E 'error|FAILED' "$work/build.out" | head -30 | sed 's/^/    /' | tee -a "$log"
  if ((rc)) && grep -q 'cuda_graph' "$work/build.out"; then
    # The one translation unit with CUDA includes failed: the rest without CUDA graphs.
    cmake -S . -B build/gpu -DLENGEN_CUDA_GRAPHS=OFF >> "$work/configure.out" 2>&1
    step build-nographs "$(share 1)" cmake --build build/gpu -j"$(nproc)" -- -k 0
  fi
  [[ -x $bin ]]
}

part_cuda() {
  step cuda-tests "$(share 1)" "$build/bin/lengen_unit_tests" "[cuda]"
  local rc=$?
  grep -E 'test cases|All tests passed|No test cases' "$work/cuda-tests.out" | tail -2 | sed 's/^/    /' | tee -a "$log"
  return $rc
}

part_bench() {
  local rc=0
  step bench-seed001-unpacked "$(share 3)" "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
    --set train.buckets=1 "${device[@]}" "${small[@]}" || rc=1
  step bench-seed001-packed "$(share 2)" "$bin" bench "$seed001" "${steps[@]}" --peak-tflops "$peak" \
    --set train.pack=true "${device[@]}" "${small[@]}" || rc=1
  if [[ $dry == 1 ]] && ! "$python" -c 'import torch' 2> /dev/null; then
    say "bench-seed001-pytorch: skipped, $python has no torch (dry run)"
  else
    step bench-seed001-pytorch "$(share 1)" "$python" scripts/bench_pytorch.py --config seed001 \
      "${torch_side[@]}" --peak-tflops "$peak" || rc=1
  fi
  return $rc
}

# Evaluates RUN on its cells in float32 and under autocast, every sample kept, and compares them.
compare_autocast() {
  local name=$1 run=$2
  shift 2
  step "$name-float32" "$(share 2)" "$bin" eval "$run" --out float32 --set eval.examples=100000 "$@" || return
  step "$name-autocast" "$(share 1)" "$bin" eval "$run" --out autocast --set eval.autocast=true \
    --set eval.examples=100000 "$@" || return
  local rc
  "$python" scripts/compare-examples.py "$run/evals/float32/eval/examples.jsonl" \
    "$run/evals/autocast/eval/examples.jsonl" > "$work/$name-compare.txt" 2>&1
  rc=$?
  sed 's/^/    /' "$work/$name-compare.txt" | head -20 | tee -a "$log"
  return $((rc == 2 ? 2 : 0))  # differing verdicts are a finding, not a failure
}

part_verdicts() {
  step verdicts-train "$(portion 5 10)" "$bin" run "$seed001" --no-eval --set name=verdicts \
    --set "output_dir=$runs" --set train.checkpoint_every=0 --set train.log_every=50 \
    "${train_short[@]}" "${device[@]}" "${small[@]}" || return
  compare_autocast verdicts "$runs/verdicts/0" --set eval.samples=100 "${cells[@]}"
}

part_quickstart() {
  step quickstart-train "$(portion 6 10)" "$bin" run experiments/quickstart.yaml --no-eval \
    --set name=quickstart --set "output_dir=$runs" "${qs_train[@]}" "${device[@]}" || return
  grep -iE 'ms/step|CUDA graph' "$work/quickstart-train.log" | tail -2 | sed 's/^/    /' | tee -a "$log"
  compare_autocast quickstart "$runs/quickstart/0"
  local f
  for f in float32 autocast; do
    { echo "== quickstart, $f"; cat "$runs/quickstart/0/evals/$f/eval/grid.csv"; } >> "$work/quickstart-grids.txt" 2> /dev/null
  done
}

part_grid() {
  step grid-autocast "$(share 1)" "$bin" bench "$seed001" --eval --set eval.autocast=true \
    --set "eval.samples=$grid_samples" "${device[@]}" "${small[@]}" "${grid[@]}"
}

part_tests() {
  [[ $dry == 1 ]] && { say "tests: dry run, not run"; return 0; }
  # On the CPU with CUDA hidden, as CI runs them, against this LibTorch; the [cuda] part ran above.
  step ctest "$(share 1)" env CUDA_VISIBLE_DEVICES= ctest --test-dir "$build" --output-on-failure \
    -j "$(nproc)" -LE slurm
  local rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run' "$work/ctest.out" | head -20 | sed 's/^/    /' | tee -a "$log"
  return $rc
}

status=0
for p in "${parts[@]}"; do
  start_part "$p"
  if ((part_end - SECONDS < 5)); then
    say "== $p: skipped, no time left (the parts after it are sure of their share)"
    continue
  fi
  t0=$SECONDS
  say "== $p: up to $((part_end - SECONDS)) s"
  "part_$p"
  rc=$?
  say "== $p: rc $rc in $((SECONDS - t0)) s"
  ((rc)) && status=1
  if [[ $p == build && ! -x $bin ]]; then
    say "no $bin: stopping"
    exit 1
  fi
done
say "done in $SECONDS s"
exit $status
