# Sourced by scripts/test-libtorch2.sh and scripts/check-cuda-build.sh: running commands in a
# Debian root file system kept at $root (the caller sets root).

# What building lengen needs in a Debian 13 root besides LibTorch (setup.sh's build packages;
# each script adds its LibTorch and what its tests need).
build_packages=(build-essential clang cmake ninja-build ccache libopenblas0-openmp libyaml-cpp-dev libfmt-dev
                libspdlog-dev catch2 libcli11-dev nlohmann-json3-dev)

# in_root CMD...: runs CMD inside $root with a clean environment (CI passed through).
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root CI="${CI:-}" "$@"; }

# mounts_under DIR: every mount point below DIR (not DIR itself), deepest first (from mountinfo).
mounts_under() {
  local dir
  dir=$(realpath -m "$1")
  awk -v d="$dir" 'index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# unmount_root DIR: takes down every mount below DIR: proc and src from enter_root, and whatever
# a debootstrap or a run that was killed left mounted there.
unmount_root() {
  local m
  while read -r m; do
    if [[ -n $m ]]; then umount -l "$m"; fi
  done < <(mounts_under "$1")
}

# clear_root DIR: removes a root file system that is not ready (a debootstrap or an install that
# was cut off), after taking down its mounts; never crosses into another file system, so a
# repository still bound at DIR/src cannot be touched.
clear_root() {
  unmount_root "$1"
  rm -rf --one-file-system "$1"
  if [[ -e $1 ]]; then
    echo "debian-root: could not remove $1 (still mounted below it: $(mounts_under "$1" | tr '\n' ' '))" >&2
    return 1
  fi
}

# enter_root REPO: mounts REPO at $root/src and proc at $root/proc until the script exits.
enter_root() {
  mkdir -p "$root/src"
  unmount_root "$root"
  mount --bind "$1" "$root/src"
  mount -t proc proc "$root/proc"
  trap 'umount -l "$root/proc"; umount -l "$root/src"' EXIT
}
