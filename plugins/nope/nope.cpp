// NoPE: no position information at all (Kazemnejad et al. 2023, arXiv:2305.19466).
// x_t = tok_emb[token_t]; in a causal decoder the mask alone lets the model infer order.
// Hooks: none. Limits: bidirectional or cross attention with NoPE alone is
// permutation-invariant, which is allowed but rarely what one wants.
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

namespace {

class NoPE final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {"position", "nope", "NoPE: no positional information (causal mask only)", {}};
  }

  NoPE(const lengen::Options&, const lengen::SchemeContext&) {}

  uint32_t hooks() const override { return lengen::kHookNone; }

  bool supports(lengen::AttentionKind) const override { return true; }
};

void register_nope(lengen::Registrar& r) {
  r.add_position<NoPE>();
}

}  // namespace

LENGEN_PLUGIN("nope", "0.1.0", register_nope)
