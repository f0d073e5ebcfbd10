#!/usr/bin/env bash
# CUDA compile check without a GPU: builds lengen (the core library and the CLI) against
# Debian 13's CUDA build of LibTorch 2.6 (libtorch-cuda-dev, contrib) with the CUDA 12.4 headers
# and nvcc (nvidia-cuda-toolkit, non-free), in a Debian 13 root file system, with CUDA graph
# capture compiled in (LENGEN_CUDA_GRAPHS=ON). So the code behind CUDA-only paths
# (src/train/cuda_graph.cpp, the CUDA branches of lengen/core/torch_compat.h) is compiled and
# linked on every submission. It runs nothing: there is no GPU here (docs/testing.md).
#
# CUDA 12.4's math_functions.h gets glibc 2.41's noexcept on four declarations (below). Two
# packages cannot be installed here and get a local stand-in package that provides them:
# nvidia-cudnn (a downloader that fetches cuDNN from NVIDIA at install time) and libcuda1 (the
# driver's library, which belongs to a GPU machine). libtorch_cuda.so needs libcudnn.so.9 to
# link an executable: a stub library with the 83 cuDNN functions it names (empty bodies, the
# same symbol version) stands in for it at link time only (-Wl,-rpath-link), so every other
# symbol is resolved as strictly as on a GPU machine.
#
# The compiler is Clang 17 (Debian 13 also carries it beside its default Clang 19). Caffe2's CMake
# enables the CUDA language with the C++ compiler as nvcc's host compiler, and CUDA 12.4's nvcc
# accepts Clang < 18 or GCC <= 13: with Clang 19 forced (-allow-unsupported-compiler) nvcc's
# front end fails on libstdc++'s headers, and GCC 13 cannot link against Debian 13's spdlog
# (built by GCC 14, it needs CXXABI_1.3.15). nvcc compiles only CMake's test file; lengen has
# no .cu files.
#
# Needs root (debootstrap or cp, chroot, mount). The root file system is kept between runs
# (about 9 GB; 3-5 minutes to make from scripts/test-libtorch2.sh's root, which it copies when
# that one exists, else debootstrap):
#   LENGEN_TRIXIE_CUDA_ROOT  where it lives (default /var/cache/lengen/trixie-cuda-root)
#   LENGEN_TRIXIE_ROOT       the CPU root to copy (default /var/cache/lengen/trixie-root)
#   LENGEN_DEBIAN_MIRROR     the archive (default http://deb.debian.org/debian)
#   scripts/check-cuda-build.sh          # configure and build; exit 0 when it compiles and links
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${LENGEN_TRIXIE_CUDA_ROOT:-/var/cache/lengen/trixie-cuda-root}
cpu_root=${LENGEN_TRIXIE_ROOT:-/var/cache/lengen/trixie-root}
mirror=${LENGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
build=/build-cuda
source "$repo/scripts/debian-root.sh"
# The build packages without libtorch-dev (libtorch-cuda-dev replaces it) or the tests' Python.
base=("${build_packages[@]}")
cuda=(libtorch-cuda-dev nvidia-cuda-toolkit clang-17)

if [[ $(id -u) -ne 0 ]]; then
  echo "check-cuda-build: needs root (debootstrap, chroot, mount); run it with sudo" >&2
  exit 2
fi
if [[ ! -f $root/.lengen-ready ]]; then
  clear_root "$root"
  mkdir -p "$(dirname "$root")"
  if [[ -f $cpu_root/.lengen-ready ]]; then
    echo "check-cuda-build: copying $cpu_root to $root"
    unmount_root "$cpu_root"
    cp -a "$cpu_root" "$root"
    rm -rf "$root/build" "$root/.lengen-ready"
  else
    if ! command -v debootstrap > /dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
    fi
    echo "check-cuda-build: making the Debian 13 root file system in $root (a few minutes)"
    debootstrap --variant=minbase --include="$(IFS=,; echo "${base[*]}")" trixie "$root" "$mirror"
  fi
  echo "deb $mirror trixie main contrib non-free non-free-firmware" > "$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
  # The stand-in package (see above), made with dpkg-deb inside the root.
  mkdir -p "$root/tmp/standin/DEBIAN"
  cat > "$root/tmp/standin/DEBIAN/control" << 'EOF'
Package: lengen-cuda-standins
Version: 1.0
Architecture: all
Maintainer: lengen <lengen@localhost>
Provides: nvidia-cudnn (= 9.0.0.312~cuda12), libcuda1 (= 550.163.01-2), libcuda.so.1 (= 550.163.01)
Description: stand-ins for what a CUDA compile check cannot install
 nvidia-cudnn downloads cuDNN from NVIDIA when installed, and libcuda1 is the GPU driver's
 library; compiling and linking lengen needs neither.
EOF
  echo "check-cuda-build: installing ${cuda[*]} into $root (about 3 GB from the archive)"
  in_root /bin/bash -c 'set -e; export DEBIAN_FRONTEND=noninteractive
    dpkg-deb --build /tmp/standin /tmp/lengen-cuda-standins.deb > /dev/null
    dpkg -i /tmp/lengen-cuda-standins.deb > /dev/null
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$@" > /tmp/apt.log || { tail -40 /tmp/apt.log; exit 1; }
    apt-get clean
    # glibc 2.41 declares sinpi, cospi, sinpif and cospif noexcept; CUDA 12.4 does not, and nvcc
    # stops on the mismatch (NVIDIA added the noexcept in CUDA 12.9): the same fix here.
    sed -i -E "s/^(extern .* (sinpi|cospi)f?\\((float|double) x\\));/\\1 noexcept (true);/" \
      /usr/include/crt/math_functions.h
    test "$(grep -c "pif\\?(.* x) noexcept (true);" /usr/include/crt/math_functions.h)" = 4
    mkdir -p /opt/cudnn-stub && cd /opt/cudnn-stub
    nm -D --undefined-only /usr/lib/x86_64-linux-gnu/libtorch_cuda.so |
      sed -n "s/^ *U \\(cudnn[A-Za-z0-9_]*\\)@libcudnn.so.9$/\\1/p" | sort -u > symbols
    test -s symbols
    sed "s/.*/void &(void) {}/" symbols > stub.c
    echo "libcudnn.so.9 { global: *; };" > version.map
    cc -shared -fPIC -o libcudnn.so.9 -Wl,-soname,libcudnn.so.9 -Wl,--version-script=version.map stub.c
    echo "check-cuda-build: a link-time stub for libcudnn.so.9 ($(wc -l < symbols) functions)"' _ "${base[@]}" "${cuda[@]}"
  touch "$root/.lengen-ready"
fi
mkdir -p "$root$build"
enter_root "$repo"
in_root /bin/bash -c "
  set -euo pipefail
  echo \"check-cuda-build: \$(dpkg-query -W -f='libtorch-cuda-dev \${Version}' libtorch-cuda-dev),\" \
       \"\$(nvcc --version | tail -2 | head -1), \$(clang++-17 --version | head -1)\"
  cmake -G Ninja -S /src -B $build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-17 -DLENGEN_CUDA_GRAPHS=ON \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,/opt/cudnn-stub > $build/configure.log 2>&1 ||
    { tail -40 $build/configure.log; exit 1; }
  grep -q 'lengen: CUDA graphs 1' $build/configure.log
  cmake --build $build --target lengen
  nm -D -C --undefined-only $build/lib/liblengen.so > $build/undefined.txt
  grep -q 'at::cuda::CUDAGraph::capture_begin' $build/undefined.txt ||
    { echo 'check-cuda-build: liblengen.so has no CUDA graph code' >&2; exit 1; }
  echo 'check-cuda-build: lengen compiles and links against CUDA LibTorch, CUDA graphs compiled in'"
