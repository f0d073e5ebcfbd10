#!/usr/bin/env bash
# Installs lengen's build and run dependencies from Debian's archive. Idempotent:
# packages already present are skipped, so a second run is a no-op.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache
  libtorch-dev libopenblas0-openmp
  libyaml-cpp-dev libfmt-dev libspdlog-dev catch2 libcli11-dev nlohmann-json3-dev
  python3-matplotlib python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
