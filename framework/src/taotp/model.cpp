// TAOTP programs <-> lengen decoders: build the model that computes a program, export a trained
// decoder as one, and the book's greedy decoding.
#include "lengen/taotp/model.h"

#include "literal.h"

#include "lengen/core/error.h"
#include "lengen/core/shape.h"
#include "lengen/experiment/experiment.h"

#include <torch/torch.h>

namespace lengen::taotp {

namespace {

torch::Tensor per_channel(const torch::Tensor& t, int64_t C) {
  return t.dim() == 0 ? t.expand({C}).clone() : t;
}

bool any_nonzero(const torch::Tensor& t) {
  return t.numel() > 0 && t.ne(0).any().item<bool>();
}

// The format's pos_emb: one table over sequence indices, added to the token embedding.
class ProgramPositions final : public PositionScheme {
 public:
  explicit ProgramPositions(const torch::Tensor& table)
      : table_(register_parameter("level0", table.clone())) {}

  uint32_t hooks() const override { return kHookInputEmbedding; }

  torch::Tensor transform_ids(const torch::Tensor& ids,
                              int64_t offset,
                              bool /*training*/) override {
    return torch::arange(offset, offset + ids.size(2), ids.options())
        .view({1, 1, -1});  // [1, 1, T]
  }

  torch::Tensor embed(const torch::Tensor& ids) override {
    return torch::embedding(table_, ids[0]);
  }

  std::vector<LearnedPositionTable> learned_tables() const override { return {{table_, true, 0}}; }

 private:
  torch::Tensor table_;
};

}  // namespace

Built build_model(const Program& p, torch::Dtype dtype) {
  const int64_t C = p.d_model();
  ModelConfig cfg;
  cfg.arch = "decoder";
  cfg.layers = static_cast<int64_t>(p.layers.size());
  cfg.d_model = C;
  cfg.heads = 1;
  cfg.d_head = 1;
  cfg.d_ff = 0;
  bool ff_bias = false;
  for (const auto& L : p.layers) {
    cfg.heads = std::max(cfg.heads, L.Q.size(0));
    cfg.d_head = L.Q.size(2);
    cfg.d_ff = std::max(cfg.d_ff, L.M1.size(1));
    ff_bias = ff_bias || any_nonzero(L.b1) || any_nonzero(L.b2);
  }
  if (ff_bias && cfg.d_ff == 0) {
    cfg.d_ff = 1;  // a layer with only b2: one dead hidden unit carries the bias
  }
  cfg.norm = "taotp_layernorm";
  cfg.norm_eps = 1e-10;
  cfg.softmax_eps = 1e-10;  // Figure 1.1's softmax: norm(exp(x - max)) adds 1e-10 to the sum
  cfg.norm_position = "pre";
  cfg.activation = "relu";
  cfg.dropout = 0;
  cfg.attention_bias = false;
  cfg.ff_bias = ff_bias;
  cfg.tie_embeddings = p.tied();

  auto positions = std::make_shared<ProgramPositions>(p.pos_emb);  // set here, not by name
  Built b{
      cfg,
      Transformer(cfg, p.vocab_size(), std::vector<std::shared_ptr<PositionScheme>>{positions})};
  b.model->to(torch::kFloat64);
  b.model->eval();

  torch::NoGradGuard ng;
  auto params = b.model->named_parameters();
  auto set = [&](const std::string& name, const torch::Tensor& value) {
    auto* t = params.find(name);
    LENGEN_CHECK(t != nullptr, "internal: the TAOTP model has no parameter '{}'", name);
    LENGEN_CHECK(t->sizes() == value.sizes(),
                 "internal: parameter '{}' is {} but the program gives {}",
                 name,
                 shape_text(*t),
                 shape_text(value));
    t->copy_(value);
  };
  auto set_norm = [&](const std::string& name, const LayerNormParams& n) {
    set(name + ".weight", per_channel(n.gamma, C));
    set(name + ".bias", per_channel(n.beta, C));
  };
  set("tok_emb.weight", p.tok_emb);
  if (!p.tied())
    set("lm_head.weight", p.out_emb);
  set_norm("norm_final", p.lnf);
  const int64_t H = cfg.heads, D = cfg.head_dim(), F = cfg.d_ff;
  for (size_t l = 0; l < p.layers.size(); ++l) {
    const Layer& L = p.layers[l];
    const std::string pre = fmt::format("blocks.{}.", l);
    // Pad heads with zeros: a zero head adds nothing.
    auto pad_heads = [&](const torch::Tensor& t) {  // [h, C, D] -> [H, C, D]
      auto out = torch::zeros({H, C, D}, torch::kFloat64);
      out.slice(0, 0, t.size(0)).copy_(t);
      return out;
    };
    // q_h = x Q_h: row h*D + k of the q block is Q[h, :, k].
    auto rows = [&](const torch::Tensor& m) {
      return pad_heads(m).permute({0, 2, 1}).reshape({H * D, C});
    };
    set(pre + "attn.qkv.weight", torch::cat({rows(L.Q), rows(L.K), rows(L.V)}, 0));
    // y_d = sum_{h,k} z_{h,k} P[h, d, k]: out.weight[d, h*D + k] = P[h, d, k].
    set(pre + "attn.out.weight", pad_heads(L.P).permute({1, 0, 2}).reshape({C, H * D}));
    set_norm(pre + "norm_attn_pre", L.ln1);
    if (F > 0) {
      const int64_t f = L.M1.size(1);
      auto up = torch::zeros({F, C}, torch::kFloat64);
      up.slice(0, 0, f).copy_(L.M1.t());
      auto down = torch::zeros({C, F}, torch::kFloat64);
      down.slice(1, 0, f).copy_(L.M2.t());
      set(pre + "ff.up.weight", up);
      set(pre + "ff.down.weight", down);
      if (ff_bias) {
        auto b1 = torch::zeros({F}, torch::kFloat64);
        b1.slice(0, 0, f).copy_(L.b1);
        set(pre + "ff.up.bias", b1);
        set(pre + "ff.down.bias", L.b2);
      }
      set_norm(pre + "norm_ff_pre", L.ln2);
    }
  }
  b.model->to(dtype);
  return b;
}

Program export_program(const Experiment& exp, Transformer& model) {
  const ModelConfig& cfg = exp.model;
  auto refuse = [&](const std::string& what) {
    throw Error(fmt::format("{}: cannot export as a TAOTP program: {}", exp.file, what));
  };
  // The scheme is found by what it adds, not by its name: exactly one learned table over
  // sequence indices and nothing else positional.
  const auto& schemes = model->schemes();
  if (schemes.size() != 1) {
    refuse(
        fmt::format("the format has one learned position table; this model has {} position schemes",
                    schemes.size()));
  }
  const PositionScheme& scheme = *schemes[0];
  const auto tables = scheme.learned_tables();
  const bool one_index_table = tables.size() == 1 && tables[0].sequence_index;
  if (scheme.hooks() != kHookInputEmbedding || !one_index_table || scheme.cyclic() != 0) {
    const std::string name = exp.position_nodes[0].is_scalar()
                                 ? exp.position_nodes[0].as_string()
                                 : exp.position_nodes[0].child("name").as_string();
    const std::string what =
        scheme.hooks() != kHookInputEmbedding ? "acts inside attention"
        : tables.empty()                      ? "adds no learned table"
        : !one_index_table
            ? fmt::format("adds {} learned table(s) over the task's IDs", tables.size())
            : "indexes its table cyclically";
    refuse(
        fmt::format("position[0] is '{}', which {}; the format needs one learned table over "
                    "sequence indices and nothing else positional (e.g. `ape` with ids: index)",
                    name,
                    what));
  }
  if (cfg.norm == "rmsnorm")
    refuse("model.norm is rmsnorm; the format has LayerNorm only");
  if (cfg.norm_position != "pre")
    refuse(fmt::format("model.norm_position is {}; the format is pre-norm", cfg.norm_position));
  if (cfg.d_ff > 0 && cfg.activation != "relu") {
    refuse(fmt::format("model.activation is {}; the format's MLP is ReLU", cfg.activation));
  }
  if (cfg.attention_bias)
    refuse("model.attention_bias is true; the format's attention has no biases");

  torch::NoGradGuard ng;
  auto params = model->named_parameters();
  auto get = [&](const std::string& name) {
    auto* t = params.find(name);
    LENGEN_CHECK(t != nullptr, "internal: the model has no parameter '{}'", name);
    return t->detach().to(torch::kCPU, torch::kFloat64).clone();
  };
  auto norm = [&](const std::string& name) {
    return LayerNormParams{get(name + ".weight"), get(name + ".bias")};
  };
  const int64_t C = cfg.d_model, H = cfg.heads, D = cfg.head_dim(), F = cfg.d_ff;
  Program p;
  p.tok_emb = get("tok_emb.weight");
  p.pos_emb = tables[0].weight.detach().to(torch::kCPU, torch::kFloat64).clone();
  if (!cfg.tie_embeddings)
    p.out_emb = get("lm_head.weight");
  p.lnf = norm("norm_final");
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string pre = fmt::format("blocks.{}.", cfg.shared_layers ? 0 : l);
    Layer L;
    auto qkv = get(pre + "attn.qkv.weight");  // [3HD, C]
    auto heads = [&](int64_t part) {
      return qkv.slice(0, part * H * D, (part + 1) * H * D)
          .view({H, D, C})
          .permute({0, 2, 1})
          .contiguous();
    };
    L.Q = heads(0);
    L.K = heads(1);
    L.V = heads(2);
    L.P = get(pre + "attn.out.weight").view({C, H, D}).permute({1, 0, 2}).contiguous();
    L.ln1 = norm(pre + "norm_attn_pre");
    if (F > 0) {
      L.M1 = get(pre + "ff.up.weight").t().contiguous();
      L.M2 = get(pre + "ff.down.weight").t().contiguous();
      L.b1 = cfg.ff_bias ? get(pre + "ff.up.bias") : torch::zeros({F}, torch::kFloat64);
      L.b2 = cfg.ff_bias ? get(pre + "ff.down.bias") : torch::zeros({C}, torch::kFloat64);
      L.ln2 = norm(pre + "norm_ff_pre");
    } else {
      L.M1 = torch::zeros({C, 0}, torch::kFloat64);
      L.b1 = torch::zeros({0}, torch::kFloat64);
      L.M2 = torch::zeros({0, C}, torch::kFloat64);
      L.b2 = torch::zeros({C}, torch::kFloat64);
      L.ln2 = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
    }
    p.layers.push_back(std::move(L));
  }
  return p;
}

int64_t argmax_lowest(const torch::Tensor& logits) {
  auto l = logits.to(torch::kCPU).contiguous();
  const double best = l.max().item<double>();
  return l.eq(best).nonzero().min().item<int64_t>();
}

std::vector<int64_t> greedy_decode(
    Transformer& model,
    int64_t block_size,
    std::vector<int64_t> tokens,
    int64_t steps,
    int64_t eos,
    const std::function<void(int64_t, const torch::Tensor&)>& trace) {
  LENGEN_CHECK(!tokens.empty(), "the input has no tokens");
  const int64_t needed = static_cast<int64_t>(tokens.size()) + steps - 1;
  LENGEN_CHECK(
      needed <= block_size,
      "{} input tokens and {} steps need {} positions but the program's pos_emb has {} rows "
      "(block_size); give fewer --steps or a shorter input",
      tokens.size(),
      steps,
      needed,
      block_size);
  torch::NoGradGuard ng;
  model->eval();
  std::vector<int64_t> out;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    auto x = torch::tensor(tokens, torch::kInt64).view({1, T});
    auto ids = torch::arange(T, torch::kInt64).view({1, 1, T});
    auto logits = model->forward(x, ids)[0][T - 1];  // [V]
    if (trace)
      trace(step, logits);
    const int64_t next = argmax_lowest(logits);
    out.push_back(next);
    tokens.push_back(next);
    if (next == eos)
      break;
  }
  return out;
}

}  // namespace lengen::taotp
