#!/usr/bin/env bash
# One device window, one call: build lengen against the machine's PyTorch LibTorch, take the
# GPU figures (scripts/gpu-bench.sh), train the quickstart on the GPU, and run the test suite
# (on the CPU, as CI does, but against this LibTorch), all inside a fixed deadline, then pack
# every log into a few files under $OUT (the device tool brings back at most 8).
#
# Here, first: bash ../shared/tools/gpu/prepare.sh (the .debs the build needs, into .gpu-deps/).
# There:       bash scripts/gpu-session.sh            # carry: [".gpu-deps"]
# Dry run here (CPU, the dev build, a few steps; checks the script, not the GPU):
#              LENGEN_GPU_SESSION_DRY=1 bash scripts/gpu-session.sh /tmp/gpu-session-dry
#
# Environment: DEADLINE (seconds from the start by which everything has stopped, default 560);
# BENCH=0, QUICKSTART=0, TESTS=0, CUDA_TESTS=0 leave a part out; EXTRA="cmd" runs a command of your own after
# the quickstart, on the GPU while the tests finish
# (LENGEN_BIN points at the build), its output in extra.log; the quickstart trains twice, with
# CUDA graphs (train.cuda_graphs) and eagerly, QS_GRAPHS=0 eagerly only; TEST_THREADS (default 2): threads
# for each of the four integration shards, which run directly, not through CTest, so that the
# longest (360 s on one core) fits a window.
# The order puts the figures first: build, the launch-bound and the big-batch training steps,
# the evaluation grid, the quickstart on the GPU; the test suite's longest case starts right
# after the build, alone on one core, and the rest of the suite after the benchmarks.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-session}}
dry=${LENGEN_GPU_SESSION_DRY:-0}
deadline=${DEADLINE:-560}
mkdir -p "$out"
work=/tmp/lengen-gpu-session
rm -rf "$work" && mkdir -p "$work"
log="$out/session.log"
: > "$log"
say() { echo "[$(date -u +%T) +${SECONDS}s] $*" | tee -a "$log"; }
# Seconds left before the deadline, less a margin, never under 5 (timeout 0 would mean none).
left() { local n=$((deadline - SECONDS - ${1:-0})); echo $((n < 5 ? 5 : n)); }
pack() {
  # Everything but the session log into one archive (the tool brings back 8 files at most).
  tar -C "$work" -czf "$out/session.tgz" . 2> /dev/null
  say "packed: $(tar -tzf "$out/session.tgz" | wc -l) entries"
}
trap pack EXIT

{
  date -u
  git rev-parse HEAD 2> /dev/null
  git status --short 2> /dev/null | head -20
  command -v nvidia-smi > /dev/null && nvidia-smi
  nproc
  python3 -c 'import torch; print("pytorch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  g++ --version | head -1
  cmake --version | head -1
} > "$work/machine.txt" 2>&1
# (machine.txt travels in session.tgz; the card and the commit go into the log, so that the
# files brought back stay within the device tool's eight.)
say "machine: $(command -v nvidia-smi > /dev/null && nvidia-smi -L | head -1); tree $(git rev-parse --short HEAD 2> /dev/null)"

# 1. Build ---------------------------------------------------------------------------------------
if [[ $dry == 1 ]]; then
  bin=build/dev/bin/lengen
  build=build/dev
else
  bin=build/gpu/bin/lengen
  build=build/gpu
  mkdir -p /tmp/pfx
  for f in .gpu-deps/debs/*.deb; do dpkg -x "$f" /tmp/pfx; done
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  torch_lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu:$torch_lib:${LD_LIBRARY_PATH:-}
  export LENGEN_TORCH_PREFIX="$torch_prefix"
  # Which C++ standard this LibTorch accepts: its headers #error below the one they need.
  std=17
  inc=$(python3 -c 'import torch.utils.cpp_extension as c; print(" ".join("-I"+p for p in c.include_paths()))')
  echo '#include <torch/torch.h>
int main() { return 0; }' > "$work/probe.cpp"
  if ! g++ -std=c++17 $inc -fsyntax-only "$work/probe.cpp" > "$work/probe17.log" 2>&1; then
    std=20
  fi
  say "build: C++$std against $torch_prefix"
  timeout "$(left)" cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLENGEN_CXX_STANDARD=$std \
    "-DCMAKE_PREFIX_PATH=$torch_prefix;/tmp/pfx/usr" > "$work/configure.log" 2>&1
  say "configure: rc $?"
  grep -E 'lengen: CUDA graphs' "$work/configure.log" | tee -a "$log"
  # Why the CUDA graph probe failed, if it did.
  cp build/gpu/CMakeFiles/CMakeConfigureLog.yaml build/gpu/CMakeFiles/CMakeError.log "$work/" 2> /dev/null
  # -k 0: every translation unit that can compile does, so one call shows every error.
  timeout "$(left)" cmake --build build/gpu -j"$(nproc)" -- -k 0 > "$work/build.log" 2>&1
  rc=$?
  say "build: rc $rc"
  grep -E 'error|FAILED' "$work/build.log" | head -60 > "$out/build-errors.txt"
  [[ -s $out/build-errors.txt ]] || rm -f "$out/build-errors.txt"
  if [[ $rc != 0 ]] && grep -q 'cuda_graph' "$work/build.log"; then
    # The one translation unit with CUDA includes failed: build without CUDA graphs, so that
    # the rest of the window still measures and tests everything else.
    cmake -S . -B build/gpu -DLENGEN_CUDA_GRAPHS=OFF >> "$work/configure.log" 2>&1
    timeout "$(left)" cmake --build build/gpu -j"$(nproc)" -- -k 0 > "$work/build-nographs.log" 2>&1
    say "build without CUDA graphs: rc $?"
  fi
fi
if [[ ! -x $bin ]]; then
  say "no $bin: stopping"
  exit 1
fi

# 2. The test suite on the CPU (CUDA hidden), as CI runs it but against this LibTorch: the four
#    integration shards directly with TEST_THREADS threads each (CTest would give them one),
#    the rest through CTest beside them.
test_env=(env CUDA_VISIBLE_DEVICES=)
pids=()
if [[ $dry != 1 && ${TESTS:-1} == 1 ]]; then
  for shard in 'learns:[learns]' 'schemes:[position]' 'cli:[cli]~[position]~[learns]' 'rest:~[cli]~[position]~[learns]'; do
    "${test_env[@]}" OMP_NUM_THREADS=${TEST_THREADS:-2} timeout "$(left 10)" \
      "$build/bin/lengen_integration_tests" "${shard#*:}" > "$work/test-${shard%%:*}.log" 2>&1 &
    pids+=($!)
  done
  # The extension test (install, then build a plugin against the install: minutes with every
  # core busy) on its own, from the start: in the H200 session it was the one entry the deadline
  # cut off inside the shared CTest queue.
  "${test_env[@]}" timeout "$(left 10)" ctest --test-dir "$build" --output-on-failure --timeout 900 \
    -R '^extension\.' > "$work/ctest-extension.log" 2>&1 &
  pids+=($!)
  "${test_env[@]}" timeout "$(left 10)" ctest --test-dir "$build" --output-on-failure --timeout 900 -j 4 \
    -LE 'slurm|integration' -E '^extension\.' > "$work/ctest.log" 2>&1 &
  pids+=($!)
  say "tests started: ${pids[*]}"
fi

# 2b. The GPU-only unit tests ([cuda]: skipped where no device is seen), first and whole: their
#     messages name what differs, so they go back in full.
if [[ ${CUDA_TESTS:-1} == 1 ]]; then
  timeout "$(left 10)" "$build/bin/lengen_unit_tests" "[cuda]" > "$out/cuda-tests.txt" 2>&1
  say "[cuda] tests: rc $? ($(grep -E 'test cases|All tests passed' "$out/cuda-tests.txt" | tail -1))"
fi

# 3. GPU figures --------------------------------------------------------------------------------
export LENGEN_BIN=$bin
bench_dir="$work/bench"
if [[ ${BENCH:-1} == 1 ]]; then
  if [[ $dry == 1 ]]; then
    LENGEN_GPU_BENCH_DRY=1 GPU_BENCH_TESTS=0 bash scripts/gpu-bench.sh "$bench_dir" > "$work/bench.log" 2>&1
  else
    STEP_TIMEOUT=90 GPU_BENCH_TESTS=0 GPU_BENCH_COMPILE=0 \
      timeout "$(left 200)" bash scripts/gpu-bench.sh "$bench_dir" > "$work/bench.log" 2>&1
  fi
  say "gpu-bench: rc $?"
  cp "$bench_dir/summary.txt" "$out/bench-summary.txt" 2> /dev/null
fi

# 4. The quickstart on the GPU, with the training step as CUDA graphs and eagerly (QS_GRAPHS=0:
#    eagerly only), so that their verdicts can be compared on one card ----------------------------
if [[ ${QUICKSTART:-1} == 1 ]]; then
  variants=(eager)
  [[ ${QS_GRAPHS:-1} == 1 ]] && variants=(graphs eager)
  for v in "${variants[@]}"; do
    qs=(--set "name=quickstart-$v" --set device=cuda)
    [[ $v == graphs ]] && qs+=(--set train.cuda_graphs=true)
    [[ $dry == 1 ]] && qs=(--set "name=quickstart-$v" --set device=cpu --set train.steps=20
                           --set train.schedule.warmup_steps=2 --set eval.samples=10 --set 'task.eval_digits=[1,12]')
    timeout "$(left 15)" "$bin" run experiments/quickstart.yaml "${qs[@]}" \
      --set "output_dir=$work/runs" > "$work/quickstart-$v.log" 2>&1
    say "quickstart ($v): rc $?"
    { echo "== quickstart, $v"; cat "$work/runs/quickstart-$v/0/eval/grid.csv"; } >> "$out/quickstart-grids.txt" 2> /dev/null
    grep -iE 'ms/step|CUDA graph' "$work/quickstart-$v.log" | tail -3 | tee -a "$log"
  done
  # The eager model evaluated again under bfloat16 autocast (eval.autocast): are the verdicts
  # the float32 evaluation's? (The T_A grid's time on the card depends on it.)
  qs_run="$work/runs/quickstart-eager/0"
  if [[ -f $qs_run/eval/grid.csv ]]; then
    timeout "$(left 15)" "$bin" eval "$qs_run" --set eval.autocast=true --out autocast \
      > "$work/quickstart-autocast.log" 2>&1
    say "quickstart eval under autocast: rc $?"
    { echo "== quickstart, eager, evaluated under bfloat16 autocast"; cat "$qs_run/evals/autocast/eval/grid.csv"; } \
      >> "$out/quickstart-grids.txt" 2> /dev/null
  fi
fi

# 5. The caller's own command (on the GPU while the tests finish on the CPU), then the tests' verdicts
if [[ -n ${EXTRA:-} ]]; then
  say "extra: $EXTRA"
  # EXTRA_LIMIT: the seconds the command has, less a margin to report what it got done.
  EXTRA_LIMIT=$(left 20) timeout "$(left 5)" bash -c "$EXTRA" > "$out/extra.log" 2>&1
  say "extra: rc $?"
fi
if ((${#pids[@]})); then
  for p in "${pids[@]}"; do wait "$p"; say "test job $p: rc $?"; done
  for f in "$work"/test-*.log "$work"/ctest.log "$work"/ctest-extension.log; do
    echo "== $(basename "$f"): $(grep -hE 'test cases|All tests passed|tests passed|tests failed' "$f" | tail -2 | tr '\n' ' ')" | tee -a "$log"
  done
  grep -hE -B3 -A12 'FAILED:|\*\*\*Failed|Not Run|Timeout' "$work"/test-*.log "$work"/ctest*.log | head -120 > "$out/test-failures.txt"
  [[ -s $out/test-failures.txt ]] || rm -f "$out/test-failures.txt"
fi
say "done"
