#pragma once
// The optimizer as a registered component (`train.optimizer: {name: NAME, lr: ..., ...}`, or
// `train.optimizer: NAME`): adam, adamw, sgd, one added in tree (a file under
// framework/src/train/optimizer/, a line in optimizer.cpp) or one a plugin registers
// (Registrar::add_optimizer). Every optimizer takes the peak learning rate `lr`, which the
// framework puts first in its options; the schedule (train.schedule) scales it step by step
// and hands each step's rate to step(). `lengen plugins` lists them; the optimizer contract
// runs every one.

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// What an optimizer is built with: the trained parameters by their documented names.
struct OptimizerContext {
  std::vector<std::pair<std::string, torch::Tensor>> params;
};

/// One registered optimizer. It keeps named per-parameter state (Adam's moments), which a
/// checkpoint stores as "optimizer.<state>.<parameter>" next to the weights, and the count
/// of steps taken.
class LENGEN_API Optimizer {
 public:
  explicit Optimizer(const OptimizerContext& ctx);
  virtual ~Optimizer();

  /// One update with learning rate `lr` from the parameters' .grad(); counts the step.
  /// Parameters without a gradient this step are left as they are.
  void step(double lr);
  /// The same update with the learning rate and the 1-based step count read from 0-dim
  /// float32 tensors on the parameters' device, so that the update can be recorded once in
  /// a CUDA graph and replayed with new values (nothing of the step is fixed on the host).
  /// Does not count the step; advance() does. Only where capturable().
  void step(const torch::Tensor& lr, const torch::Tensor& count);

  /// Whether step(Tensor, Tensor) exists (train.cuda_graphs needs it).
  virtual bool capturable() const { return false; }

  void advance() { ++t_; }

  /// Unsets every gradient (set to none, as PyTorch 2.x does by default).
  void zero_grad();
  /// State tensors as "optimizer.<state>.<param>", each parameter's states in the order the
  /// optimizer declared them.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  /// Restores state written by state() and the step count; fails naming a missing or
  /// mis-shaped entry.
  void load_state(const std::vector<std::pair<std::string, torch::Tensor>>& tensors, int64_t step);

  int64_t steps_taken() const { return t_; }

 protected:
  /// Declares a per-parameter state tensor, zeros shaped like each parameter, checkpointed as
  /// "optimizer.<name>.<param>" ("exp_avg"). Call from the constructor.
  void add_state(const std::string& name);

  /// The parameters that have a gradient this step, their gradients and, for each declared
  /// state (in declaration order), that state's tensors for the same parameters.
  struct Lists {
    std::vector<torch::Tensor> params, grads;
    std::vector<std::vector<torch::Tensor>> state;
  };

  Lists with_gradients() const;

  /// The update of step steps_taken() (already counted, 1-based) at learning rate `lr`, on
  /// `lists` (never empty); runs under NoGradGuard.
  virtual void update(Lists& lists, double lr) = 0;
  /// The device-scalar form (see step(Tensor, Tensor)); the default refuses.
  virtual void update(Lists& lists, const torch::Tensor& lr, const torch::Tensor& count);

 private:
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<std::string> state_names_;
  std::vector<std::vector<torch::Tensor>> state_;  // [state][param]
  int64_t t_ = 0;
};

/// The name `train.optimizer` selects: its `name:`, the bare value, or "adam".
LENGEN_API std::string optimizer_name(const ConfigNode& node);

/// `train.optimizer` checked against the optimizer it names (`node`: its map, or a bare name;
/// undefined for the default, adam): the name is registered (loading its plugin by
/// convention) and every option valid, defaults filled in. The one place the optimizer's
/// options are validated; TrainConfig keeps the result.
LENGEN_API Options optimizer_options(const ConfigNode& node);

/// Builds optimizer `name` from its validated options (optimizer_options) over `params`.
LENGEN_API std::shared_ptr<Optimizer> make_optimizer(
    const std::string& name,
    const Options& options,
    std::vector<std::pair<std::string, torch::Tensor>> params);

/// Validates `node` as optimizer_options does and builds the optimizer over `params`.
LENGEN_API std::shared_ptr<Optimizer> make_optimizer(
    const ConfigNode& node, std::vector<std::pair<std::string, torch::Tensor>> params);

/// The optimizers (`train.optimizer`), and the one an Optimizer class registers in
/// (Registrar::add_optimizer).
using OptimizerRegistry = Registry<Optimizer, OptimizerContext>;
LENGEN_API OptimizerRegistry& optimizer_registry();

inline OptimizerRegistry& registry_of(const Optimizer*) {
  return optimizer_registry();
}

/// Adds an optimizer to optimizer_registry() with the option the framework gives every
/// optimizer (`lr`, the peak learning rate the schedule scales) put first in its spec.
LENGEN_API void add_optimizer_entry(ComponentSpec spec,
                                    PluginOrigin origin,
                                    OptimizerRegistry::Factory make);

}  // namespace lengen
