#pragma once
// A model's position schemes (src/experiment/, not installed): built from their entries, and
// built ahead when the file is read, from the model's own seed, for the load-time checks and
// the first model (BuiltSchemes). schemes.cpp.
#include "lengen/config/node.h"
#include "lengen/model/config.h"
#include "lengen/position/scheme.h"

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lengen {

/// What the schemes of a model of `m` are built with.
SchemeContext scheme_context(const ModelConfig& m, int64_t levels, const std::string& run_dir);

/// One scheme per entry of `position:`, in order (they draw from torch's generator).
std::vector<std::shared_ptr<PositionScheme>> build_schemes(const std::vector<ConfigNode>& nodes,
                                                           const SchemeContext& ctx);

/// The seed of torch's generator when a model's parameters are drawn.
uint64_t model_init_seed(uint64_t seed);

/// What a model's schemes are built from: the seed, the context and the entries.
std::string scheme_key(uint64_t seed, const SchemeContext& c, const std::vector<ConfigNode>& nodes);

/// torch's CPU generator, which parameter initialisation draws from: its state, set, seeded.
torch::Tensor cpu_generator_state();
void set_cpu_generator_state(const torch::Tensor& state);
void seed_cpu_generator(uint64_t seed);

/// Puts the CPU generator's state back at scope exit, so that reading a file leaves the
/// caller's randomness alone.
struct CpuGeneratorRestore {
  torch::Tensor saved = cpu_generator_state();

  ~CpuGeneratorRestore() { set_cpu_generator_state(saved); }
};

/// A model's position schemes built ahead of it, when the file was read, with the generator
/// state that followed their construction: building the model from them draws what building
/// them afresh would have drawn.
struct BuiltSchemes {
  std::mutex mutex;
  bool taken = false;
  std::string key;  ///< scheme_key() they were built from
  std::vector<std::shared_ptr<PositionScheme>> schemes;
  torch::Tensor generator_after;  ///< the CPU generator's state after they were built

  /// The schemes if nothing took them and `key` is theirs (the generator then set to its state
  /// after building them), else nothing.
  std::optional<std::vector<std::shared_ptr<PositionScheme>>> take(const std::string& want);
};

/// The schemes of `nodes` built from the model's seed, as the first model would build them.
std::shared_ptr<BuiltSchemes> build_ahead(uint64_t seed,
                                          const SchemeContext& ctx,
                                          const std::vector<ConfigNode>& nodes);

}  // namespace lengen
