#pragma once

// Hand-set Transformer programs in the format of "The Art of Transformer Programming"
// (TAOTP, chapter 8): a Python literal (or JSON) dict with tok_emb, pos_emb, optional out_emb
// (tied to tok_emb when absent), layers of Q, K, V, P [H, d_model, d_head], M1 [d_model, d_ff],
// b1, M2 [d_ff, d_model], b2, ln1, ln2 ({gamma, beta}), and lnf: reading, writing and counting
// programs. lengen/taotp/model.h runs one on lengen's own decoder. docs/taotp.md has the details.

#include "lengen/core/export.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace lengen::taotp {

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

/// A program's vocabulary, token i on line i: a text file with one token per line, taken
/// exactly as written (a line holding one space is the space token; a final newline is not a
/// token), or a Python/JSON list of strings (a file whose first character outside blank and
/// `#` comment lines is '[').
LENGEN_API std::vector<std::string> parse_vocabulary(const std::string& text,
                                                     const std::string& source);
LENGEN_API std::vector<std::string> load_vocabulary(const std::string& path);

}  // namespace lengen::taotp
