#!/usr/bin/env bash
# Builds lengen and runs its whole test suite against Debian 13's LibTorch 2.x (CPU), in a
# Debian 13 root file system made with debootstrap from Debian's archive: the 2.x
# code paths (fused attention, the autocast API) without a GPU. Needs root (debootstrap,
# chroot, mount). The root file system is kept between runs (about 2.2 GB, 4 minutes to make):
#   LENGEN_TRIXIE_ROOT   where it lives (default /var/cache/lengen/trixie-root)
#   LENGEN_DEBIAN_MIRROR the archive (default http://deb.debian.org/debian)
#   LENGEN_TRIXIE_BUILD  the build folder inside it (default /build; kept, so reruns are incremental)
#   scripts/test-libtorch2.sh            # configure, build, ctest
#   scripts/test-libtorch2.sh -L unit    # extra arguments go to ctest
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${LENGEN_TRIXIE_ROOT:-/var/cache/lengen/trixie-root}
mirror=${LENGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
build=${LENGEN_TRIXIE_BUILD:-/build}
source "$repo/scripts/debian-root.sh"
# setup.sh's packages (Slurm left out: its test reports itself skipped).
packages=("${build_packages[@]}" libtorch-dev python3-matplotlib python3-numpy)

if [[ $(id -u) -ne 0 ]]; then
  echo "test-libtorch2: needs root (debootstrap, chroot, mount); run it with sudo" >&2
  exit 2
fi
if [[ ! -f $root/.lengen-ready ]]; then
  if ! command -v debootstrap > /dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  fi
  clear_root "$root"
  mkdir -p "$(dirname "$root")"
  echo "test-libtorch2: making the Debian 13 root file system in $root (a few minutes)"
  debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" trixie "$root" "$mirror"
  touch "$root/.lengen-ready"
fi
mkdir -p "$root$build"
enter_root "$repo"
# A root made before a package joined the list gets it now (e.g. clang); the rest is kept.
mapfile -t missing < <(in_root /bin/bash -c '
  for p in "$@"; do
    dpkg-query -W -f="\${Status}" "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done' _ "${packages[@]}")
if ((${#missing[@]} > 0)); then
  echo "test-libtorch2: installing ${missing[*]} into $root"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
  in_root /bin/bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends "$@"' _ "${missing[@]}"
fi
in_root /bin/bash -c "
  set -euo pipefail
  echo \"test-libtorch2: \$(dpkg-query -W -f='libtorch-dev \${Version}' libtorch-dev), \$(clang++ --version | head -1)\"
  cmake -G Ninja -S /src -B $build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ > /dev/null
  cmake --build $build
  ctest --test-dir $build --output-on-failure -j2 $*"
