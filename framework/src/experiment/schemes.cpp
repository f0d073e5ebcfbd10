// A model's position schemes: built from their entries, and built ahead when the file is read.
#include "schemes.h"

#include "lengen/core/rng.h"
#include "lengen/registry/registry.h"

#include <ATen/CPUGeneratorImpl.h>

#include <yaml-cpp/yaml.h>

namespace lengen {

SchemeContext scheme_context(const ModelConfig& m, int64_t levels, const std::string& run_dir) {
  SchemeContext c;
  c.run_dir = run_dir;
  c.d_model = m.d_model;
  c.heads = m.heads;
  c.head_dim = m.head_dim();
  c.layers = m.attention_layers();  // one table per distinct block, not per loop
  c.position_levels = levels;
  return c;
}

std::vector<std::shared_ptr<PositionScheme>> build_schemes(const std::vector<ConfigNode>& nodes,
                                                           const SchemeContext& ctx) {
  std::vector<std::shared_ptr<PositionScheme>> out;
  for (const auto& n : nodes) {
    out.push_back(position_registry().create(n, ctx));
  }
  return out;
}

uint64_t model_init_seed(uint64_t seed) {
  return mix_seed(seed, {0x1A17});
}

std::string scheme_key(uint64_t seed,
                       const SchemeContext& c,
                       const std::vector<ConfigNode>& nodes) {
  std::string key = fmt::format("{} {} {} {} {} {} {}",
                                model_init_seed(seed),
                                c.d_model,
                                c.heads,
                                c.head_dim,
                                c.layers,
                                c.position_levels,
                                c.run_dir);
  for (const auto& n : nodes) {
    key += "\n" + YAML::Dump(n.yaml());
  }
  return key;
}

torch::Tensor cpu_generator_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_generator_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

void seed_cpu_generator(uint64_t seed) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

std::optional<std::vector<std::shared_ptr<PositionScheme>>> BuiltSchemes::take(
    const std::string& want) {
  std::lock_guard<std::mutex> lock(mutex);
  if (taken || want != key)
    return std::nullopt;
  taken = true;
  set_cpu_generator_state(generator_after);
  return std::move(schemes);
}

std::shared_ptr<BuiltSchemes> build_ahead(uint64_t seed,
                                          const SchemeContext& ctx,
                                          const std::vector<ConfigNode>& nodes) {
  auto built = std::make_shared<BuiltSchemes>();
  built->key = scheme_key(seed, ctx, nodes);
  seed_cpu_generator(model_init_seed(seed));
  built->schemes = build_schemes(nodes, ctx);
  built->generator_after = cpu_generator_state();
  return built;
}

}  // namespace lengen
