// No normalisation: the identity, without parameters (hand-set constructions).
#include "builtin.h"

namespace lengen {
namespace {

class NoNorm final : public NormFunction {
 public:
  static ComponentSpec spec() {
    return {"norm",
            "none",
            "no normalisation: the identity, no parameters (hand-set constructions)",
            {}};
  }

  NoNorm(const Options&, const NormContext&) {}

  torch::Tensor forward(const torch::Tensor& x) override { return x; }
};

}  // namespace

void register_no_norm(NormRegistry& r) {
  add_builtin<NoNorm>(r);
}

}  // namespace lengen
