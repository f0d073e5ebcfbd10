// The cosine decay after the warm-up.
#include "builtin.h"

#include <cmath>

namespace lengen {
namespace {

class CosineDecay final : public Decay {
 public:
  static ComponentSpec spec() {
    return {
        "decay",
        "cosine",
        "half a cosine period: (1 + cos(pi t)) / 2 (Loshchilov & Hutter 2017, without restarts)",
        {}};
  }

  CosineDecay(const Options&, const DecayContext&) {}

  double shape(double t) const override { return 0.5 * (1.0 + std::cos(M_PI * t)); }
};

}  // namespace

void register_cosine_decay(DecayRegistry& r) {
  add_builtin<CosineDecay>(r);
}

}  // namespace lengen
