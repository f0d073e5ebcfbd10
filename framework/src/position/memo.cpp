// same_positions, the test behind PositionMemo.
#include "lengen/position/memo.h"

namespace lengen {

bool same_positions(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.defined() || !b.defined()) {
    return a.defined() == b.defined();
  }
  // Holding the remembered IDs keeps their storage alive, so the same view of the same memory
  // holds the same IDs as long as nobody writes IDs in place (nothing in lengen does; a training
  // step replayed as a CUDA graph rewrites its input buffers, which is why its eager steps
  // never run on them). That test reads nothing; LibTorch 2.x's torch::equal makes it too.
  if (a.is_same(b)) {
    return true;
  }
  if (a.sizes() != b.sizes() || a.device() != b.device() || a.scalar_type() != b.scalar_type()) {
    return false;
  }
  if (a.is_alias_of(b) && a.storage_offset() == b.storage_offset() && a.strides() == b.strides()) {
    return true;
  }
  // Equal content in other memory: compared on the CPU only. On a GPU the comparison is a read
  // back that stalls the step (and cannot be recorded in a CUDA graph); recomputing is cheaper.
  return a.device().is_cpu() && torch::equal(a, b);
}

}  // namespace lengen
