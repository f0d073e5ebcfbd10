#!/usr/bin/env bash
# A fuzzing campaign on one reader: builds the `asan` preset (AddressSanitizer, UBSan and
# libFuzzer's coverage on every lengen target) and runs build/asan/bin/fuzz_TARGET for MINUTES,
# from the seed corpus test/fuzz/corpus/TARGET; new inputs go to build/asan/fuzz/TARGET/corpus,
# crashes to build/asan/fuzz/TARGET/ (crash-*, leak-*, timeout-*, oom-*), and the final stats
# (executions, coverage) to build/asan/fuzz/TARGET/stats.txt. Every crash found becomes a
# regression test (docs/testing.md, "Sanitizers and fuzzing").
# The examples.jsonl reader is Python: its target, test/fuzz/fuzz_examples.py, runs Hypothesis in
# rounds of fresh randomness instead (no build; Debian's python3 and python3-hypothesis).
#   scripts/fuzz.sh TARGET MINUTES     # TARGET: safetensors experiment sweep query taotp labels examples
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET MINUTES (safetensors, experiment, sweep, query, taotp, labels, examples)}
minutes=${2:?usage: scripts/fuzz.sh TARGET MINUTES}
if [[ -f test/fuzz/fuzz_${target}.py ]]; then
  out=build/asan/fuzz/${target}
  mkdir -p "${out}"
  /usr/bin/python3 "test/fuzz/fuzz_${target}.py" --minutes "${minutes}" --out "${out}" 2>&1 | tee "${out}/log.txt"
  exit "${PIPESTATUS[0]}"
fi
[[ -f test/fuzz/fuzz_${target}.cpp ]] || { echo "fuzz.sh: no target '${target}' (test/fuzz/fuzz_*.cpp or .py)" >&2; exit 2; }
# Two campaigns started together must not configure or build the same tree at once.
mkdir -p build
(
  flock 9
  [[ -f build/asan/CMakeCache.txt ]] || cmake --preset asan > /dev/null
  cmake --build --preset asan --target "fuzz_${target}"
) 9> build/.fuzz-build.lock
out=build/asan/fuzz/${target}
mkdir -p "${out}/corpus"
export ASAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1
# -timeout: an input that takes 10 s is a finding (the readers' bound); -rss_limit_mb: an input
# that makes the reader allocate 3 GB is one too (a header that claims memory it does not hold).
"build/asan/bin/fuzz_${target}" -max_total_time=$((minutes * 60)) -timeout=10 -rss_limit_mb=3072 \
  -print_final_stats=1 -artifact_prefix="${out}/" "${out}/corpus" "test/fuzz/corpus/${target}" 2>&1 |
  tee "${out}/log.txt" | grep -E "^#[0-9]+.*(pulse|DONE)|ERROR|SUMMARY|stat::" | tee "${out}/stats.txt"
