#pragma once

// Counts the operators a piece of work runs that compute something (kernels), as opposed to
// views and shape bookkeeping: on a GPU each is about one kernel launch, so the count tells
// how launch-bound a small-batch step is, and it can be measured on any device.

#include "lengen/core/export.h"

#include <cstdint>
#include <map>
#include <string>

namespace lengen {

/// While an OpCounter lives, every ATen operator that runs on any thread is observed. An
/// operator is counted when it has its own CPU or CUDA kernel (composites such as `linear`
/// count as the kernels they call), computes a tensor (not a view, an allocation or a scalar
/// query) and does not run inside another counted operator (a kernel's own helpers are part
/// of it). A multi-tensor (`_foreach_`) or fused (`_fused_`) operator counts once, as its CUDA
/// launch does, also where the CPU runs it as a loop. One counter at a time.
class LENGEN_API OpCounter {
 public:
  OpCounter();
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  /// Kernels counted so far.
  int64_t kernels() const;
  /// Reads of a tensor's value or size by the host: `item()` (`_local_scalar_dense`) outside
  /// any counted kernel, and `nonzero` anywhere. On a GPU each makes the host wait for the
  /// device. A CPU run takes the same code path, so the count is the GPU's (copies with
  /// `.cpu()` are not seen; a kernel's own reads of host tensors, as in the CPU's fused Adam,
  /// are not reads of the device).
  /// With LENGEN_TRACE_READS=1 in the environment, each read prints its stack to stderr.
  int64_t host_reads() const;
  /// Kernels counted so far, by operator name ("aten::mm", ...).
  std::map<std::string, int64_t> by_name() const;

 private:
  uint64_t handle_;
};

}  // namespace lengen
