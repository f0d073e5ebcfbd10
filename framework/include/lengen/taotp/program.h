#pragma once

// Hand-set Transformer programs in the format of "The Art of Transformer Programming"
// (TAOTP, chapter 8): a Python literal (or JSON) dict with tok_emb, pos_emb, optional out_emb
// (tied to tok_emb when absent), layers of Q, K, V, P [H, d_model, d_head], M1 [d_model, d_ff],
// b1, M2 [d_ff, d_model], b2, ln1, ln2 ({gamma, beta}), and lnf. lengen runs a program on its
// own decoder (learned APE, the book's LayerNorm, ReLU MLP, no attention biases), so the core
// is checked against weights whose every output is known. docs/taotp.md has the details.

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"

#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

namespace lengen {

struct Experiment;

namespace taotp {

/// A LayerNorm's gamma and beta: scalars ([]) or per-channel ([C]).
struct LayerNormParams {
  torch::Tensor gamma;
  torch::Tensor beta;
};

/// One layer, in the book's index order.
struct Layer {
  torch::Tensor Q, K, V, P;  ///< [H, C, D] each
  torch::Tensor M1;          ///< [C, F] (F = 0: no MLP)
  torch::Tensor b1;          ///< [F]
  torch::Tensor M2;          ///< [F, C]
  torch::Tensor b2;          ///< [C]
  LayerNormParams ln1, ln2;
};

/// A parsed and shape-checked program; every tensor is float64.
struct LENGEN_API Program {
  torch::Tensor tok_emb;  ///< [V, C]
  torch::Tensor pos_emb;  ///< [block_size, C]
  torch::Tensor out_emb;  ///< [V, C]; undefined when tied to tok_emb
  std::vector<Layer> layers;
  LayerNormParams lnf;

  int64_t vocab_size() const { return tok_emb.size(0); }
  int64_t block_size() const { return pos_emb.size(0); }
  int64_t d_model() const { return tok_emb.size(1); }
  bool tied() const { return !out_emb.defined(); }
};

/// Parses program text: JSON or the book's Python-literal spelling (single or double quotes,
/// trailing commas, `1.`, `-0.`, `# comments`, tuples). Missing ln1/ln2/lnf are {1, 0},
/// missing layers is [], missing out_emb is tied; empty M1/b1/M2 mean a layer without MLP.
/// Errors name `source`, the line and column, the array, the layer and the expected shape.
LENGEN_API Program parse_program(const std::string& text, const std::string& source);
/// Reads and parses a program file.
LENGEN_API Program load_program(const std::string& path);
/// The program as JSON text that parse_program reads back exactly (17 significant digits).
LENGEN_API std::string program_to_json(const Program& program);

/// Parameter counts as the book's Figure 1.4 defines them: tok_emb, pos_emb, out_emb only if
/// it is not tied (or differs from tok_emb), and every Q, K, V, P, M1, b1, M2, b2; LayerNorm
/// scalars are not counted.
struct ParameterCount {
  int64_t total = 0;
  int64_t nonzero = 0;
};
LENGEN_API ParameterCount count_parameters(const Program& program);

/// The lengen model that computes the program: decoder, learned APE (max_position =
/// block_size - 1), taotp_layernorm (eps 1e-10 on the std), pre-norm, ReLU, no attention
/// biases; layers with fewer heads or a narrower MLP are padded with zeros (exact).
struct Built {
  ModelConfig config;
  Transformer model{nullptr};
};
LENGEN_API Built build_model(const Program& program, torch::Dtype dtype = torch::kFloat64);

/// Writes a trained lengen decoder as a program. Fails, naming the setting, unless the model
/// is one the format expresses: one `ape` scheme over sequence indices, pre-norm LayerNorm,
/// ReLU (or no) MLP, no attention biases. A `layernorm` model exports with the book's
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

/// A program's vocabulary, token i on line i: a text file with one token per line, taken
/// exactly as written (a line holding one space is the space token; a final newline is not a
/// token), or a Python/JSON list of strings (a file whose first character outside blank and
/// `#` comment lines is '[').
LENGEN_API std::vector<std::string> parse_vocabulary(const std::string& text, const std::string& source);
LENGEN_API std::vector<std::string> load_vocabulary(const std::string& path);

/// Index of the largest entry of a 1-D tensor, the lowest index among exact ties (NumPy).
LENGEN_API int64_t argmax_lowest(const torch::Tensor& logits);

}  // namespace taotp
}  // namespace lengen
