#!/usr/bin/env bash
# unit.debian_root_clear: scripts/debian-root.sh's clear_root on a root file system that a
# killed run left behind: proc mounted in it and a repository still bound at its src. The root
# must go, the mounts with it, and the repository's files must stay (a plain rm -rf stopped on
# proc's files, and would have emptied the repository through the bind). Needs root and mount:
# without them the test says so and is reported skipped (77).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "debian_root_clear: skipped (needs root to mount)"
  exit 77
fi
work=$(mktemp -d)
root=$work/root
source "$here/../../scripts/debian-root.sh"
cleanup() {
  unmount_root "$work"
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
fail() { echo "debian_root_clear: $*"; exit 1; }

mkdir -p "$root/proc" "$root/src" "$root/var/cache/deep/proc" "$work/repo"
echo kept > "$work/repo/file"
if ! mount -t proc proc "$root/proc" 2> /dev/null; then
  echo "debian_root_clear: skipped (mount is not permitted here)"
  exit 77
fi
mount --bind "$work/repo" "$root/src" || fail "mount --bind failed"
mount -t proc proc "$root/var/cache/deep/proc" || fail "the second proc mount failed"
[[ $(mounts_under "$root" | wc -l) == 3 ]] || fail "expected 3 mounts below the root, got: $(mounts_under "$root")"
# Deepest first: the nested proc before anything above it.
[[ $(mounts_under "$root" | head -1) == "$(realpath "$root")/var/cache/deep/proc" ]] ||
  fail "mounts_under does not list the deepest first: $(mounts_under "$root")"

clear_root "$root" || fail "clear_root failed"
[[ ! -e $root ]] || fail "the root is still there"
[[ -z $(mounts_under "$work") ]] || fail "mounts left: $(mounts_under "$work")"
[[ $(cat "$work/repo/file" 2> /dev/null) == kept ]] || fail "the repository's file was removed"
# A root that is not there is no error (a first run).
clear_root "$root" || fail "clear_root on a missing root failed"
echo "debian_root_clear: the root and its 3 mounts removed, the bound repository kept"
