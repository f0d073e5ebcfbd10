#include "cuda_graph.h"

#include "lengen/core/error.h"

#if LENGEN_CUDA_GRAPHS
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/version.h>
#endif

#include <fmt/format.h>

namespace lengen {

#if LENGEN_CUDA_GRAPHS

struct CudaGraph::Impl {
  // Made at capture: LibTorch's constructor asks for the current CUDA stream, which fails in a
  // CUDA build on a machine (or under CUDA_VISIBLE_DEVICES=) with no device.
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  bool captured = false;
};

bool CudaGraph::supported() {
  return true;
}

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) {}

CudaGraph::~CudaGraph() = default;

void CudaGraph::capture(const std::function<void()>& body) {
  LENGEN_CHECK(!impl_->captured, "internal: a CUDA graph is captured once");
  torch::cuda::synchronize();  // eager work (and its frees) done before the capture starts
  impl_->graph = std::make_unique<at::cuda::CUDAGraph>();
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  // Autocast's cache of cast weights would hand tensors from outside the capture to it (and
  // keep ones from inside); PyTorch's graphed callables turn it off the same way.
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  try {
    c10::cuda::CUDAStreamGuard guard(side);
    // Global mode: any call that would wait for the device while recording (a read back, a
    // synchronisation) fails the capture loudly. Relaxed mode, as first written, let such a
    // read be recorded without running; that is the likely cause of the quickstart's lost
    // length generalisation on the H100: a position memo compared IDs with torch::equal (a
    // read back, since CPU-only) and may have kept the first step's relative-position index
    // for the whole run.
    impl_->graph->capture_begin();
    try {
      body();
    } catch (...) {
      try {
        impl_->graph->capture_end();  // ends the (invalidated) capture; fails, as expected
      } catch (...) {
      }
      throw;
    }
    impl_->graph->capture_end();
  } catch (const std::exception& e) {
    at::autocast::set_autocast_cache_enabled(cache);
    impl_->graph.reset();  // destroys the graph and what it held
    torch::cuda::synchronize();
    throw Error(fmt::format("CUDA graph capture failed: {}", e.what()));
  }
  at::autocast::set_autocast_cache_enabled(cache);
  torch::cuda::synchronize();
  impl_->captured = true;
}

void CudaGraph::replay() {
  LENGEN_CHECK(impl_->captured, "internal: replay of a CUDA graph that was not captured");
  impl_->graph->replay();
}

bool CudaGraph::captured() const {
  return impl_->captured;
}

#else  // no CUDA graphs in this build

struct CudaGraph::Impl {};

bool CudaGraph::supported() {
  return false;
}

CudaGraph::CudaGraph() = default;
CudaGraph::~CudaGraph() = default;

void CudaGraph::capture(const std::function<void()>&) {
  throw Error(
      "CUDA graphs are not in this build: it needs a CUDA build of LibTorch "
      "(configure with LENGEN_CUDA_GRAPHS=ON, the default where one is found)");
}

void CudaGraph::replay() {
  throw Error("internal: replay of a CUDA graph in a build without them");
}

bool CudaGraph::captured() const {
  return false;
}

#endif

}  // namespace lengen
