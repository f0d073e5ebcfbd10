#!/usr/bin/env bash
# The sanitizer leg of CI (docs/testing.md, "Sanitizers and fuzzing"): builds the `asan` preset
# (clang's AddressSanitizer and UndefinedBehaviorSanitizer on every lengen target, libFuzzer's
# coverage, the fuzz targets), then runs under it the unit and contract tests, every plugin's
# tests, one short integration run (a tiny experiment trained, checkpointed, resumed and
# evaluated through the CLI), and each fuzz target on 3000 inputs from its seed corpus (a fixed seed). LibTorch and
# the other Debian libraries are not instrumented; leak checking is off because LibTorch keeps
# static caches alive until exit (reported as leaks that are not lengen's).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=asan
cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OMP_NUM_THREADS=1
cd "build/$preset"
# fuzz.examples is Python (nothing instrumented): it runs in the main suite only.
ctest -j2 --output-on-failure -R '^(unit\.lengen_unit_tests|plugin\.|fuzz\.)' -E '^fuzz\.examples$'
# One short integration run through the CLI: train, stop (a later step count), resume, evaluate.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/tiny.yaml" <<'YAML'
name: sanitized
seed: 0
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 5]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: coupling, max_position: 12}, {name: rpe_k, ids: task, k: 4}]
train: {steps: 40, batch_size: 8, checkpoint_every: 20}
eval: {samples: 10}
YAML
bin/lengen run "$tmp/tiny.yaml" --set output_dir="$tmp/runs" --set train.steps=20 --no-eval
bin/lengen run "$tmp/tiny.yaml" --set output_dir="$tmp/runs" --resume
bin/lengen decode "$tmp/runs/sanitized/0" 12+34 > /dev/null
echo "test-sanitizers: unit, contract, plugin and fuzz tests and one integration run clean under ASan and UBSan"
