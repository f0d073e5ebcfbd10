// RPE_k, Shaw et al. relative position representations (arXiv:1803.02155), as used by
// Jelassi et al. 2023: score_ij = (q_i . k_j + q_i . w^K_{c(i,j)}) / sqrt(D). The
// implementation, shared with rpe_kq, is relative_key.h.
#include "relative_key.h"

using RpeK = lengen_rpe::RelativeKey<false>;

template <>
lengen::ComponentSpec RpeK::spec() {
  return {
      "position",
      "rpe_k",
      "RPE_k: learned relative key (and value) vectors clipped at distance k (Shaw et al. 2018)",
      options()};
}

namespace {
void register_rpe_k(lengen::Registrar& r) {
  r.add_position<RpeK>();
}
}  // namespace

LENGEN_PLUGIN("rpe_k", "0.1.0", register_rpe_k)
