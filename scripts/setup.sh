#!/usr/bin/env bash
# Installs lengen's build and run dependencies from Debian's archive. Idempotent:
# packages already present are skipped, so a second run is a no-op.
set -euo pipefail

# clang builds lengen about 3.5x faster than g++ (the presets use it): it instantiates the
# templates of Torch's headers once, in the precompiled header, where g++ does it again in
# every file (docs/performance.md, "Build time").
packages=(
  build-essential clang clang-format cmake ninja-build ccache
  libtorch-dev libopenblas0-openmp
  libyaml-cpp-dev libfmt-dev libspdlog-dev catch2 libcli11-dev nlohmann-json3-dev
  python3-matplotlib python3-numpy
  # the reproduction page's browser test (scripts/check-reproductions-html.py): headless Chromium
  chromium chromium-driver python3-selenium
  # the examples.jsonl reader's fuzz target (test/fuzz/fuzz_examples.py)
  python3-hypothesis
  # the Python package (python/, docs/python.md): bindings on the same LibTorch, its DataFrames
  # and its tests
  pybind11-dev python3-dev python3-torch python3-pandas python3-pytest
)
# Slurm, for `lengen sweep --executor slurm` and its test (a one-node cluster started by
# scripts/slurm-cluster.sh). Optional: without it that one test reports itself skipped.
optional=(slurmctld slurmd slurm-client munge)

missing_of() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_optional < <(missing_of "${optional[@]}")

if ((${#missing[@]} + ${#missing_optional[@]} == 0)); then
  echo "setup: all $((${#packages[@]} + ${#optional[@]})) packages already installed"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ((${#missing_optional[@]} > 0)); then
  echo "setup: installing ${missing_optional[*]} (optional)"
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" ||
    echo "setup: WARNING: could not install ${missing_optional[*]}; the Slurm test will be skipped"
fi
