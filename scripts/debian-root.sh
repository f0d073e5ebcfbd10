# Sourced by scripts/test-libtorch2.sh and scripts/check-cuda-build.sh: running commands in a
# Debian root file system kept at $root (the caller sets root).

# What building lengen needs in a Debian 13 root besides LibTorch (setup.sh's build packages;
# each script adds its LibTorch and what its tests need).
build_packages=(build-essential clang cmake ninja-build ccache libopenblas0-openmp libyaml-cpp-dev libfmt-dev
                libspdlog-dev catch2 libcli11-dev nlohmann-json3-dev)

# in_root CMD...: runs CMD inside $root with a clean environment (CI passed through).
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root CI="${CI:-}" "$@"; }

# unmount_root DIR: takes down DIR/proc and DIR/src where mounted (left by a run that was killed).
unmount_root() {
  local m
  for m in "$1/proc" "$1/src"; do
    if mountpoint -q "$m"; then umount -l "$m"; fi
  done
}

# enter_root REPO: mounts REPO at $root/src and proc at $root/proc until the script exits.
enter_root() {
  mkdir -p "$root/src"
  unmount_root "$root"
  mount --bind "$1" "$root/src"
  mount -t proc proc "$root/proc"
  trap 'umount -l "$root/proc"; umount -l "$root/src"' EXIT
}
