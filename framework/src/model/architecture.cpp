// The architecture registry with the built-in architectures, and what every architecture
// shares: logits, the loss, a decode's first inputs and the layout check.
#include "lengen/model/architecture.h"

#include "architecture/builtin.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/registry/reference.h"

#include <map>
#include <mutex>

namespace lengen {

Architecture::~Architecture() = default;

ArchitectureRegistry& architecture_registry() {
  static ArchitectureRegistry r("architecture", "architectures", "model.arch");
  static const bool registered = [] {
    register_decoder(r);
    register_encoder(r);
    register_encoder_decoder(r);
    return true;
  }();
  (void)registered;
  return r;
}

std::shared_ptr<const Architecture> architecture(const std::string& name) {
  // Built once per reference: configurations and models ask for it often. (A plugin's
  // library stays loaded once its components are registered, so the shared ones stay valid.)
  return shared_referenced(architecture_registry(), name, "model.arch");
}

torch::Tensor Architecture::logits(Transformer& model,
                                   const Batch& batch,
                                   std::vector<torch::Tensor>* attention) const {
  return model->forward(batch.model_inputs(), nullptr, attention);  // [B, T, V]
}

torch::Tensor Architecture::scored_logits(Transformer& model, const Batch& batch) const {
  return model->forward(batch.model_inputs(/*scored_rows_only=*/true));  // [B, T - first, V]
}

torch::Tensor Architecture::loss(const torch::Tensor& logits,
                                 const Batch& batch,
                                 double label_smoothing) const {
  const int64_t V = logits.size(-1), T = batch.targets.size(1), rows = logits.size(1);
  LENGEN_CHECK(rows <= T, "internal: logits of {} positions for targets of {}", rows, T);
  const auto targets = batch.targets.narrow(1, T - rows, rows);  // [B, rows]
  const auto scored = batch.mask.narrow(1, T - rows, rows);      // [B, rows]
  // Reduced-precision logits (bfloat16 autocast) are scored in float32; float32 and float64
  // models keep their own precision.
  const auto dtype = logits.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  auto per_token =
      torch::nn::functional::cross_entropy(logits.reshape({-1, V}).to(dtype),
                                           targets.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions()
                                               .reduction(torch::kNone)
                                               .label_smoothing(label_smoothing));  // [B*rows]
  auto mask = scored.reshape({-1}).to(dtype);                                       // [B*rows]
  return (per_token * mask).sum() / mask.sum().clamp_min(1.0);
}

ModelInputs Architecture::prompt_inputs(const Task& task,
                                        const std::vector<std::vector<int64_t>>& prompts) const {
  LENGEN_CHECK(!one_pass(),
               "internal: the '{}' architecture decodes all output slots at once (predict)",
               name());
  const auto B = static_cast<int64_t>(prompts.size());
  const auto T = static_cast<int64_t>(prompts.front().size());
  const int64_t L = task.position_levels();
  auto tokens = torch::empty({B, T}, torch::kInt64);
  auto ids = torch::empty({L, B, T}, torch::kInt64);
  for (int64_t b = 0; b < B; ++b) {
    const auto& prompt = prompts[static_cast<size_t>(b)];
    const PositionIds pid = task.causal_position_ids(prompt, T);
    for (int64_t t = 0; t < T; ++t) {
      tokens[b][t] = prompt[static_cast<size_t>(t)];
      for (int64_t l = 0; l < L; ++l) {
        ids[l][b][t] = pid[static_cast<size_t>(l)][static_cast<size_t>(t)];
      }
    }
  }
  ModelInputs in;
  in.tokens = tokens;
  in.ids = ids;
  return in;
}

std::vector<std::vector<int64_t>> Architecture::predict(Transformer&,
                                                        const Task&,
                                                        const std::vector<Example>&,
                                                        const torch::Device&,
                                                        std::vector<PositionIds>*) const {
  throw Error(fmt::format(
      "internal: the '{}' architecture decodes token by token (eval/decode.h), not in one pass",
      name()));
}

void Architecture::check_layout(const Task& task,
                                const std::string& task_name,
                                const std::vector<Example>& probe) const {
  try {
    make_batch(task, probe);
  } catch (const Error& e) {
    throw Error(fmt::format("task '{}' cannot be laid out for the '{}' architecture ({}): {}",
                            task_name,
                            name(),
                            objective(),
                            e.what()));
  }
}

}  // namespace lengen
