#!/usr/bin/env bash
# One experiment file on the GPU for as long as a device window allows, its evaluations during
# training kept (train.eval_every writes eval_curve.jsonl), so that a run cut off by the window
# still reports what it learned. Meant as gpu-session.sh's EXTRA for the paper-scale files of
# issues 33 and 34, shortened with --set, e.g.
#   EXTRA='bash scripts/gpu-window-run.sh experiments/priming/addition.yaml --set train.steps=20000 \
#          --set train.eval_every=5000' bash scripts/gpu-session.sh
# Prints the progress lines, then every eval_curve.jsonl and grid.csv the run wrote.
# Environment: LENGEN_BIN (default build/gpu/bin/lengen), LIMIT (seconds; default gpu-session's
# EXTRA_LIMIT, else 250), DEVICE (default cuda), TAG (the run's folder under /tmp/lengen-window,
# default the file's name: give two runs of one file side by side different tags). Dry run on the CPU:
#   LENGEN_BIN=build/dev/bin/lengen DEVICE=cpu bash scripts/gpu-window-run.sh FILE --set train.steps=4 ...
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 || ! -f $1 ]]; then
  echo "usage: $0 EXPERIMENT.yaml [--set key=value ...] (got '${1:-}': not a file)" >&2
  exit 2
fi
file=$1
shift
bin=${LENGEN_BIN:-build/gpu/bin/lengen}
run=/tmp/lengen-window/${TAG:-$(basename "$file" .yaml)}
rm -rf "$run" && mkdir -p "$run"
limit=${LIMIT:-${EXTRA_LIMIT:-250}}
# Ten seconds kept back to print what the run wrote.
budget=$((limit > 20 ? limit - 10 : 10))
echo "$file ($(basename "$run")): up to $budget s on ${DEVICE:-cuda}, $*"
timeout "$budget" "$bin" run "$file" --set device="${DEVICE:-cuda}" --set output_dir="$run" "$@" > "$run.log" 2>&1
echo "$file ($(basename "$run")): rc $? (124: stopped by the window)"
grep -E 'step +[0-9]+/|rror|arn|accuracy|wrote' "$run.log" | tail -40
find "$run" \( -name eval_curve.jsonl -o -name grid.csv -o -name metrics.jsonl \) -print | sort | while read -r f; do
  echo "== $f"
  tail -n 60 "$f"
done
