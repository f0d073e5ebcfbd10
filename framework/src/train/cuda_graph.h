#pragma once

#include <functional>
#include <memory>

namespace lengen {

/// One CUDA graph: work recorded once and replayed with a single launch. A thin wrapper over
/// LibTorch's at::cuda::CUDAGraph, kept behind this header so that nothing else includes CUDA
/// headers; a build against a LibTorch without CUDA (or with LENGEN_CUDA_GRAPHS=OFF) compiles
/// a stub whose supported() is false and whose capture() fails.
///
/// Each graph has its own memory pool. (One static pool shared by every graph of the process,
/// as first written, is the likely cause of the failed capture seen on the H100 when a second
/// Trainer captured in one process after the first one's graphs were gone: not confirmed.)
class CudaGraph {
 public:
  /// Whether this build can capture CUDA graphs.
  static bool supported();

  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Records `body` on a side stream (nothing runs; tensors it allocates live in the graph's
  /// pool and are rewritten by every replay). Global capture mode: no other thread may use the
  /// device meanwhile (Trainer::run makes no batch while it captures), and anything that waits
  /// for the device fails the capture. Throws lengen::Error with the reason when the
  /// body cannot be captured (a host read, a copy from pageable memory, an unsupported
  /// operator), leaving the device usable for eager work.
  void capture(const std::function<void()>& body);
  /// Launches the recorded work on the current stream.
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lengen
