// The linear decay after the warm-up.
#include "builtin.h"

namespace lengen {
namespace {

class LinearDecay final : public Decay {
 public:
  static ComponentSpec spec() { return {"decay", "linear", "linear: 1 - t", {}}; }

  LinearDecay(const Options&, const DecayContext&) {}

  double shape(double t) const override { return 1.0 - t; }
};

}  // namespace

void register_linear_decay(DecayRegistry& r) {
  add_builtin<LinearDecay>(r);
}

}  // namespace lengen
