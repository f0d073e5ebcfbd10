#pragma once
// Normalisation over the last dimension as a registered component (`model.norm: NAME`):
// layernorm, rmsnorm, taotp_layernorm, none, or one added in tree (one file under
// framework/src/model/norm/ and one line in framework/src/model/norm.cpp). `lengen plugins`
// lists them; the model contract runs every one.

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <string>

namespace lengen {

/// What a norm is built with: the width it normalises, model.norm_eps, and the module that
/// holds it, on which it registers its parameters (so a checkpoint names them
/// `<holder>.weight`, `<holder>.bias`).
struct NormContext {
  int64_t dim = 0;
  double eps = 1e-5;
  torch::nn::Module* holder = nullptr;
};

/// One registered normalisation: x [..., C] -> [..., C].
class LENGEN_API NormFunction {
 public:
  virtual ~NormFunction();
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

/// The module a block or stack holds for one norm: it builds the registered norm `kind`,
/// whose parameters it holds. An unknown kind fails listing the registered ones.
class LENGEN_API NormImpl : public torch::nn::Module {
 public:
  NormImpl(const std::string& kind, int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // [..., C] -> [..., C]

 private:
  std::shared_ptr<NormFunction> norm_;
};

TORCH_MODULE(Norm);

/// The norms (`model.norm`), and the one a NormFunction class registers in
/// (Registrar::add_norm); the built-in ones are registered on first use.
using NormRegistry = Registry<NormFunction, NormContext>;
LENGEN_API NormRegistry& norm_registry();

inline NormRegistry& registry_of(const NormFunction*) {
  return norm_registry();
}

}  // namespace lengen
