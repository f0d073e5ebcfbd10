// Model weights by name: strict loading from a checkpoint, and `init_from`'s rules.
#include "lengen/train/weights.h"

#include "lengen/core/error.h"
#include "lengen/core/shape.h"
#include "lengen/train/checkpoint.h"

#include <set>

namespace lengen {

std::vector<std::pair<std::string, torch::Tensor>> named_weights(Transformer& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model->named_parameters()) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

void load_weights(Transformer& model, const TensorFile& file, const std::string& path) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : named_weights(model)) {
    const torch::Tensor* t = file.find(name);
    LENGEN_CHECK(
        t != nullptr, "{}: no tensor '{}' (is this a checkpoint of the same model?)", path, name);
    LENGEN_CHECK(t->sizes() == p.sizes(),
                 "{}: tensor '{}' has shape {} but the model needs {}",
                 path,
                 name,
                 shape_text(*t),
                 shape_text(p));
    LENGEN_CHECK(t->is_floating_point(),
                 "{}: tensor '{}' holds {} values, but the model's parameter is {}",
                 path,
                 name,
                 c10::toString(t->scalar_type()),
                 c10::toString(p.scalar_type()));
    p.copy_(*t);
  }
}

void load_weights(Transformer& model, const std::string& path) {
  load_weights(model, load_safetensors(path), path);
}

std::vector<std::string> load_weights_by_name(Transformer& model,
                                              const std::string& path,
                                              const InitRules& rules) {
  TensorFile file = load_safetensors(path);
  torch::NoGradGuard no_grad;
  std::vector<std::string> problems, fresh;
  std::set<std::string> used;
  for (auto& [name, p] : named_weights(model)) {
    const torch::Tensor* t = file.find(name);
    if (t == nullptr) {
      if (rules.init_new) {
        fresh.push_back(name);
      } else {
        problems.push_back(
            fmt::format("parameter '{}' {} is new (not in the checkpoint); set "
                        "new_parameters: init to initialise it fresh",
                        name,
                        shape_text(p)));
      }
      continue;
    }
    used.insert(name);
    if (t->sizes() != p.sizes()) {
      problems.push_back(fmt::format("parameter '{}': the model needs {} but the checkpoint has {}",
                                     name,
                                     shape_text(p),
                                     shape_text(*t)));
      continue;
    }
    if (!t->is_floating_point()) {
      problems.push_back(fmt::format("parameter '{}': the checkpoint holds {} values, the model {}",
                                     name,
                                     c10::toString(t->scalar_type()),
                                     c10::toString(p.scalar_type())));
      continue;
    }
    p.copy_(*t);
  }
  for (const auto& [name, t] : file.tensors) {
    if (name.rfind("optimizer.", 0) == 0 || used.count(name))
      continue;
    if (!rules.drop_unused) {
      problems.push_back(
          fmt::format("checkpoint parameter '{}' {} is not in this model; set "
                      "dropped_parameters: ignore to leave it out",
                      name,
                      shape_text(t)));
    }
  }
  LENGEN_CHECK(problems.empty(), "init_from {}:\n  {}", path, join(problems, "\n  "));
  return fresh;
}

}  // namespace lengen
