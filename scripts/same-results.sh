#!/usr/bin/env bash
# Does a refactor change what lengen computes? Runs a fixed set of short experiments with one
# lengen binary, then compares two such sets file by file: checkpoints, evaluation grids and
# resolved configurations (their provenance block aside) must be byte-identical.
#
#   scripts/same-results.sh run LENGEN DIR     # e.g. a frozen install of the old commit
#   scripts/same-results.sh compare DIR_A DIR_B
#
# Freeze the old build first (cmake --install build/dev --prefix /tmp/lengen-old), since a
# rebuild replaces build/dev's binaries. Every run uses one thread, so the figures are
# deterministic whatever else runs on the machine. About 8 minutes at one thread.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)

run_set() {
  local lengen=$1 out=$2
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  local common=(--set threads=1 --set "output_dir=$out/runs")
  # name | file | extra overrides
  local runs=(
    "quickstart|experiments/quickstart.yaml|--set train.steps=40 --set train.schedule.warmup_steps=10 --set eval.samples=10"
    "qs-linear|experiments/quickstart.yaml|--set train.steps=40 --set eval.samples=10 --set train.schedule.decay=linear --set train.schedule.warmup_steps=10 --set train.schedule.min_lr_ratio=0.1"
    "qs-constant-l2|experiments/quickstart.yaml|--set train.steps=40 --set eval.samples=10 --set train.schedule.decay=constant --set train.schedule.warmup_steps=0 --set train.optimizer.weight_decay=0.01"
    "qs-warmup-fraction|experiments/quickstart.yaml|--set train.steps=40 --set eval.samples=10 --set train.schedule.warmup_steps=~ --set train.schedule.warmup_fraction=0.25"
    "encoder|experiments/priming/addition-cpu.yaml|--set train.steps=40 --set train.schedule.warmup_steps=10 --set eval.samples=10"
    "encoder-decoder|experiments/architectures/encoder_decoder.yaml|--set train.steps=40 --set train.schedule.warmup_steps=10 --set eval.samples=10"
    "abc|experiments/abc/pipeline-cpu.yaml|--set task.operation=successor --set train.steps=300 --set train.schedule.warmup_steps=10 --set eval.samples=20"
    "theorem-4.1|experiments/multi_operand/theorem-4.1.yaml|--set eval.samples=10"
  )
  for r in "${runs[@]}"; do
    IFS='|' read -r name file extra <<<"$r"
    echo "== $name ($file $extra)"
    # shellcheck disable=SC2086
    (cd "$here" && "$lengen" run "$file" "${common[@]}" --set "name=$name" $extra --fresh) \
      >"$out/$name.log" 2>&1 || { echo "   failed: see $out/$name.log"; tail -3 "$out/$name.log"; }
  done
  echo "== taotp"
  (cd "$here" && "$lengen" taotp run experiments/taotp/hello_world.taotp \
     --vocab experiments/taotp/hello_world.vocab --input "<bos>" --steps 3 --trace) \
    >"$out/taotp.txt" 2>&1 || true
}

compare_sets() {
  local a=$1 b=$2 bad=0 n=0
  while IFS= read -r rel; do
    n=$((n + 1))
    local fa="$a/$rel" fb="$b/$rel"
    if [[ ! -f $fb ]]; then
      echo "only in $a: $rel"; bad=1; continue
    fi
    if [[ $rel == */config.yaml ]]; then
      # provenance names the source file, commit and machine: everything above it must match
      if ! cmp -s <(sed '/^provenance:/,$d' "$fa" | sed "s#$a#DIR#g") \
                  <(sed '/^provenance:/,$d' "$fb" | sed "s#$b#DIR#g"); then
        echo "differs: $rel"; bad=1
      fi
    elif ! cmp -s "$fa" "$fb"; then
      echo "differs: $rel"; bad=1
    fi
  done < <(cd "$a" && find . -path '*/checkpoints/*.safetensors' -o -path '*/eval/grid.csv' \
             -o -name config.yaml -path '*/runs/*' -o -name taotp.txt | sed 's#^\./##' | sort)
  while IFS= read -r rel; do
    [[ -f $a/$rel ]] || { echo "only in $b: $rel"; bad=1; }
  done < <(cd "$b" && find . -path '*/checkpoints/*.safetensors' -o -path '*/eval/grid.csv' \
             | sed 's#^\./##' | sort)
  if ((bad)); then
    echo "NOT the same ($n files compared)"
    return 1
  fi
  echo "same: $n files byte-identical (configs up to provenance)"
}

case "${1:-}" in
  run) run_set "$2" "$3" ;;
  compare) compare_sets "$2" "$3" ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
