#pragma once

// Programs of "The Art of Transformer Programming" on lengen's own decoder (learned position
// table, the book's LayerNorm, ReLU MLP, no attention biases), so the core is checked against
// weights whose every output is known, and a trained decoder written back as a program.
// docs/taotp.md has the mapping.

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/taotp/program.h"

#include <torch/types.h>

#include <functional>
#include <vector>

namespace lengen {

struct Experiment;

namespace taotp {

/// The lengen model that computes the program: decoder, one learned table over sequence
/// indices (block_size rows, parameter position.0.level0), taotp_layernorm (eps 1e-10 on the
/// std), pre-norm, ReLU, no attention biases; layers with fewer heads or a narrower MLP are
/// padded with zeros (exact).
struct Built {
  ModelConfig config;
  Transformer model{nullptr};
};

LENGEN_API Built build_model(const Program& program, torch::Dtype dtype = torch::kFloat64);

/// Writes a trained lengen decoder as a program. Fails, naming the setting, unless the model
/// is one the format expresses: one position scheme whose only effect is one learned table
/// over sequence indices (found through PositionScheme::learned_tables, e.g. `ape`), pre-norm
/// LayerNorm, ReLU (or no) MLP, no attention biases. A `layernorm` model exports with the book's
/// epsilon placement (a relative difference of about eps / variance in every norm).
LENGEN_API Program export_program(const Experiment& experiment, Transformer& model);

/// Greedy decoding as the book's Figure 1.2 does it: the whole sequence is run again for each
/// new token, the last position's arg-max (ties to the lowest token index) is appended. Stops
/// after `steps` tokens or after emitting `eos` (>= 0). Fails before running when the
/// sequence would exceed block_size. `trace` (optional) sees each step's logits [V].
LENGEN_API std::vector<int64_t> greedy_decode(
    Transformer& model,
    int64_t block_size,
    std::vector<int64_t> tokens,
    int64_t steps,
    int64_t eos,
    const std::function<void(int64_t step, const torch::Tensor& logits)>& trace = nullptr);

/// Index of the largest entry of a 1-D tensor, the lowest index among exact ties (NumPy).
LENGEN_API int64_t argmax_lowest(const torch::Tensor& logits);

}  // namespace taotp
}  // namespace lengen
