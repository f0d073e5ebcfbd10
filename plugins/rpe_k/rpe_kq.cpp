// RPE_{k,q}, Huang et al. 2020 method 4 (arXiv:2009.13658), as used by Jelassi et al. 2023: one
// table of relative vectors enters through both the query and the key,
// score_ij = (q_i . k_j + q_i . r_{c(i,j)} + k_j . r_{c(i,j)}) / sqrt(D). The implementation,
// shared with rpe_k, is relative_key.h.
#include "relative_key.h"

using RpeKQ = lengen_rpe::RelativeKey<true>;

template <>
lengen::ComponentSpec RpeKQ::spec() {
  return {"position",
          "rpe_kq",
          "RPE_{k,q}: relative vectors in both the query and the key term (Huang et al. 2020)",
          options()};
}

namespace {
void register_rpe_kq(lengen::Registrar& r) {
  r.add_position<RpeKQ>();
}
}  // namespace

LENGEN_PLUGIN("rpe_kq", "0.1.0", register_rpe_kq)
