#!/usr/bin/env bash
# unit.gpu_session_dry: scripts/gpu-session.sh's dry run on the CPU (tiny sizes, the given
# binary), then what a GPU window depends on: every part ran in order and passed, the default
# parts fit the 540 s deadline (the script refuses otherwise), the float32/autocast comparisons
# were made, and the one archive holds each figure's output and no weights.
# Usage: gpu_session_dry.sh LENGEN_BIN PYTHON_WITH_TORCH
set -uo pipefail
bin=$1
python=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "gpu_session_dry: $*"; exit 1; }

LENGEN_GPU_SESSION_DRY=1 LENGEN_BIN=$bin PYTHON=$python bash "$root/scripts/gpu-session.sh" "$out" > "$out/stdout" 2>&1
rc=$?
cat "$out/session.log"
[[ $rc == 0 ]] || fail "the dry session exited $rc"
[[ $(ls "$out" | grep -v stdout | sort | tr '\n' ' ') == "session.log session.tgz " ]] ||
  fail "expected session.log and session.tgz in \$OUT, got: $(ls "$out")"
order=$(grep -oE '== [a-z]+: rc [0-9]+' "$out/session.log" | tr '\n' ';')
[[ $order == "== build: rc 0;== cuda: rc 0;== bench: rc 0;== verdicts: rc 0;== quickstart: rc 0;== grid: rc 0;== tests: rc 0;" ]] ||
  fail "parts out of order or failing: $order"
[[ $(grep -c 'verdicts differ' "$out/session.log") == 2 ]] || fail "expected two float32/autocast comparisons"
listing=$(tar -tzf "$out/session.tgz")
expected=(machine.txt bench-seed001-unpacked.out bench-seed001-packed.out verdicts-compare.txt
          quickstart-compare.txt quickstart-grids.txt grid-autocast.out)
# The PyTorch side where this Python has torch (Debian 13's root, CI's LibTorch 2.6 leg, has not).
"$python" -c 'import torch' 2> /dev/null && expected+=(bench-seed001-pytorch.out)
for f in "${expected[@]}"; do
  grep -qx "./$f" <<< "$listing" || fail "session.tgz has no $f"
done
grep -q 'safetensors' <<< "$listing" && fail "session.tgz holds weights"
# A part list that cannot fit the deadline is refused before anything runs.
DEADLINE=300 LENGEN_GPU_SESSION_DRY=1 LENGEN_BIN=$bin bash "$root/scripts/gpu-session.sh" "$out/short" > "$out/short.txt" 2>&1
[[ $? == 2 ]] && grep -q 'more than DEADLINE=300' "$out/short.txt" || fail "DEADLINE=300 was not refused"
# The comparison itself, on two hand-made evaluations: one verdict and two responses differ.
printf '%s\n' '{"cell":{"digits":1},"prompt":"1+1=","reference":"2","response":"2","correct":true}' \
  '{"cell":{"digits":1},"prompt":"2+2=","reference":"4","response":"5","correct":false}' > "$out/a.jsonl"
printf '%s\n' '{"cell":{"digits":1},"prompt":"1+1=","reference":"2","response":"3","correct":false}' \
  '{"cell":{"digits":1},"prompt":"2+2=","reference":"4","response":"6","correct":false}' > "$out/b.jsonl"
python3 "$root/scripts/compare-examples.py" "$out/a.jsonl" "$out/b.jsonl" > "$out/cmp.txt"
[[ $? == 1 ]] && grep -q '2 samples in 1 cells: 1 verdicts differ, 2 responses differ' "$out/cmp.txt" &&
  grep -q '50.0% against 0.0%' "$out/cmp.txt" || fail "compare-examples.py: $(cat "$out/cmp.txt")"
head -1 "$out/a.jsonl" > "$out/c.jsonl"
python3 "$root/scripts/compare-examples.py" "$out/a.jsonl" "$out/c.jsonl" > /dev/null
[[ $? == 2 ]] || fail "compare-examples.py did not refuse files of different samples"
echo "gpu_session_dry: every part passed in order; one archive, no weights"
