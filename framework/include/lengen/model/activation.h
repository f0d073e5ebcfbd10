#pragma once
// The feed-forward activation as a registered component (`model.activation: NAME`): relu,
// gelu, geglu, swiglu, or one added in tree (one file under framework/src/model/activation/
// and one line in framework/src/model/activation.cpp). `lengen plugins` lists them; the model
// contract runs every one.

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <torch/types.h>

#include <memory>
#include <string>

namespace lengen {

/// Activations take no context: they hold no parameters.
struct ActivationContext {};

/// One registered activation of the feed-forward `down(act(up(x)))`. A gated one reads two
/// inputs per hidden unit: up(x) is [..., inputs() * d_ff] and it returns [..., d_ff].
class LENGEN_API Activation {
 public:
  virtual ~Activation();

  /// Inputs per hidden unit: 1, or 2 for a gated activation (gate rows first in up.weight).
  virtual int64_t inputs() const { return 1; }

  /// [..., inputs() * F] -> [..., F].
  virtual torch::Tensor forward(const torch::Tensor& up) const = 0;
};

/// Builds the registered activation `name`; an unknown name fails listing the registered ones.
LENGEN_API std::shared_ptr<Activation> make_activation(const std::string& name);

/// The feed-forward activations (`model.activation`), and the one an Activation class
/// registers in (Registrar::add_activation); the built-in ones are registered on first use.
using ActivationRegistry = Registry<Activation, ActivationContext>;
LENGEN_API ActivationRegistry& activation_registry();

inline ActivationRegistry& registry_of(const Activation*) {
  return activation_registry();
}

}  // namespace lengen
