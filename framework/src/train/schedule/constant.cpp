// The constant decay after the warm-up.
#include "builtin.h"

namespace lengen {
namespace {

class ConstantDecay final : public Decay {
 public:
  static ComponentSpec spec() {
    return {"decay", "constant", "none: the peak rate to the end (min_lr_ratio has no effect)", {}};
  }

  ConstantDecay(const Options&, const DecayContext&) {}

  double shape(double t) const override {
    (void)t;
    return 1.0;
  }
};

}  // namespace

void register_constant_decay(DecayRegistry& r) {
  add_builtin<ConstantDecay>(r);
}

}  // namespace lengen
