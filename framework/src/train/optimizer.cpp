// The optimizer registry with the built-in optimizers, and what every optimizer shares: named
// per-parameter state, the step count, checkpointing.
#include "lengen/train/optimizer.h"

#include "optimizer/builtin.h"

#include "lengen/core/error.h"
#include "lengen/core/shape.h"

#include <map>

namespace lengen {

OptimizerRegistry& optimizer_registry() {
  static OptimizerRegistry r("optimizer", "optimizers", "train.optimizer");
  static const bool registered = [] {
    register_adam(r);
    register_sgd(r);
    return true;
  }();
  (void)registered;
  return r;
}

ComponentSpec with_learning_rate(ComponentSpec spec) {
  spec.options.insert(
      spec.options.begin(),
      OptionSpec::number("lr", "peak learning rate (> 0); train.schedule scales it each step")
          .with_default(1e-3)
          .at_least(0));
  return spec;
}

void add_optimizer_entry(ComponentSpec spec, PluginOrigin origin, OptimizerRegistry::Factory make) {
  optimizer_registry().add(with_learning_rate(std::move(spec)), std::move(origin), std::move(make));
}

std::string optimizer_name(const ConfigNode& node) {
  if (!node.defined())
    return "adam";
  if (node.is_scalar())
    return node.as_string();
  ConfigNode n = node.child("name");
  return n.defined() ? n.as_string() : "adam";
}

Options optimizer_options(const ConfigNode& node) {
  const ConfigNode name = node.is_map() ? node.child("name") : node;
  const auto& entry =
      optimizer_registry().lookup(optimizer_name(node), name.defined() ? name : node);
  return Options::validate(entry.spec, node.defined() && node.is_map() ? node : ConfigNode());
}

std::shared_ptr<Optimizer> make_optimizer(
    const std::string& name,
    const Options& options,
    std::vector<std::pair<std::string, torch::Tensor>> params) {
  const auto* entry = optimizer_registry().find(name);
  LENGEN_CHECK(
      entry, "optimizer '{}' is not registered (validate it with optimizer_options)", name);
  return entry->make(options, OptimizerContext{std::move(params)});
}

std::shared_ptr<Optimizer> make_optimizer(
    const ConfigNode& node, std::vector<std::pair<std::string, torch::Tensor>> params) {
  return make_optimizer(optimizer_name(node), optimizer_options(node), std::move(params));
}

Optimizer::Optimizer(const OptimizerContext& ctx) : params_(ctx.params) {}

Optimizer::~Optimizer() = default;

void Optimizer::add_state(const std::string& name) {
  state_names_.push_back(name);
  std::vector<torch::Tensor> tensors;
  for (const auto& [param, p] : params_)
    tensors.push_back(torch::zeros_like(p));
  state_.push_back(std::move(tensors));
}

void Optimizer::zero_grad() {
  // Unset, not zeroed (PyTorch's default since 2.0): the first backward then takes its
  // gradient as it is instead of adding it to zeros, two kernels per parameter fewer. A
  // parameter that gets no gradient in a step is left out of that step's update.
  for (auto& [name, p] : params_) {
    p.mutable_grad().reset();
  }
}

Optimizer::Lists Optimizer::with_gradients() const {
  Lists out;
  out.state.resize(state_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i].second;
    if (p.grad().defined()) {
      out.params.push_back(p);
      out.grads.push_back(p.grad());
      for (size_t k = 0; k < state_.size(); ++k)
        out.state[k].push_back(state_[k][i]);
    }
  }
  return out;
}

void Optimizer::step(double lr) {
  torch::NoGradGuard no_grad;
  ++t_;
  Lists lists = with_gradients();
  if (!lists.params.empty())
    update(lists, lr);
}

void Optimizer::step(const torch::Tensor& lr, const torch::Tensor& count) {
  torch::NoGradGuard no_grad;
  Lists lists = with_gradients();
  if (!lists.params.empty())
    update(lists, lr, count);
}

void Optimizer::update(Lists&, const torch::Tensor&, const torch::Tensor&) {
  LENGEN_FAIL(
      "this optimizer has no device-scalar step, so train.cuda_graphs cannot record it; use "
      "adam or adamw, or set train.cuda_graphs: false");
}

std::vector<std::pair<std::string, torch::Tensor>> Optimizer::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t k = 0; k < state_.size(); ++k) {
      out.emplace_back("optimizer." + state_names_[k] + "." + params_[i].first, state_[k][i]);
    }
  }
  return out;
}

void Optimizer::load_state(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                           int64_t step) {
  std::map<std::string, torch::Tensor> by_name(tensors.begin(), tensors.end());
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t k = 0; k < state_.size(); ++k) {
      const std::string name = "optimizer." + state_names_[k] + "." + params_[i].first;
      torch::Tensor& dst = state_[k][i];
      auto it = by_name.find(name);
      LENGEN_CHECK(it != by_name.end(), "checkpoint has no optimizer state '{}'", name);
      LENGEN_CHECK(it->second.sizes() == dst.sizes(),
                   "checkpoint optimizer state '{}' has shape {} but the model needs {}",
                   it->first,
                   shape_text(it->second),
                   shape_text(dst));
      dst.copy_(it->second);
    }
  }
  t_ = step;
}

}  // namespace lengen
