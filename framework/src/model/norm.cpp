// The norm registry with the built-in norms, and the module that holds one norm.
#include "lengen/model/norm.h"

#include "norm/builtin.h"

#include "lengen/registry/reference.h"

namespace lengen {

NormFunction::~NormFunction() = default;

NormRegistry& norm_registry() {
  static NormRegistry r("norm", "norms", "model.norm");
  static const bool registered = [] {
    register_layernorm(r);
    register_rmsnorm(r);
    register_taotp_layernorm(r);
    register_no_norm(r);
    return true;
  }();
  (void)registered;
  return r;
}

NormImpl::NormImpl(const std::string& kind, int64_t dim, double eps)
    : norm_(create_referenced(norm_registry(), kind, "model.norm", NormContext{dim, eps, this})) {}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  return norm_->forward(x);
}

}  // namespace lengen
