// The `construct` stage: hand-set weights on the real model, no training. It writes the
// stage's checkpoint (checkpoints/step-00000000.safetensors, the format train stages write),
// so an `eval` stage with `init_from: <this stage>` (or `lengen eval RUN`) tests it like any
// trained model, with greedy decoding.
//
// construction: cho_addition_scratchpad
//   Cho et al. 2025 (arXiv:2410.15787), Theorem 4.1 and Appendix D: a 1-layer, 4-head decoder
//   without normalisation that solves m-operand addition in the scratchpad format with
//   bi-level Position Coupling, for every m and n its position tables can represent
//   (Cho et al. 2025, Appendix D; docs/theory.md has the layout and the derivation).
//   Residual dimensions: NUM, IS_BOS, FULL_ONES, PRE_SUM, PRE_CARRY, PRE_ARROW, PRE_EOS,
//   SUM_0..SUM_9, ARROW, EOS, then per level l the hypercube codes POS_l = v_{p_l} and
//   POS_l_NEXT = v_{p_l + 1} (P_l = ceil(log2(max_position_l + 1)) dimensions each, ID 0 the
//   zero vector). Heads: (1) the two digits of the next significance (PRE_SUM), (2) the two
//   of the current one (PRE_CARRY), (3) "no digit of the next significance" (PRE_ARROW),
//   (4) "in the last partial sum" (PRE_EOS). The feed-forward layer computes the one-hot
//   next digit (PRE_SUM + c) mod 10, c = [PRE_CARRY - NUM in {9, 10}] (seed D.5.2), exactly
//   at the integer points that occur, as ReLU spikes of u = 40 PRE_SUM + PRE_CARRY - NUM; and
//   ARROW = 2 relu(PRE_ARROW - 1/2), EOS = ARROW + 6 relu(PRE_EOS - 1/3) - 1. Read-out:
//   digits from SUM (weight 1), '>' from ARROW (10), '$' from EOS (100).
#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/version.h"
#include "lengen/plugin/plugin.h"
#include "lengen/stage/stage.h"
#include "lengen/task/task.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/weights.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace {

using lengen::OptionSpec;

// Residual dimensions of the construction (0-based; the seed numbers them from 1).
enum Dim : int64_t {
  kNum = 0,
  kIsBos,
  kOnes,
  kPreSum,
  kPreCarry,
  kPreArrow,
  kPreEos,
  kSum0,  // .. kSum0 + 9
  kArrow = kSum0 + 10,
  kEos,
  kFixed  // first position dimension
};

// The ceil(log2(n)) bits that give every ID 1..n a distinct hypercube vertex.
int64_t bits_for(int64_t n) {
  int64_t p = 1;
  while ((int64_t{1} << p) < n)
    ++p;
  return p;
}

// Writes v_k^D (k >= 1: the bits of k - 1 from the most significant, +1 for 0 and -1 for 1;
// k = 0: the zero vector) into row[at .. at + D).
void hypercube(torch::Tensor row, int64_t at, int64_t k, int64_t D) {
  if (k == 0)
    return;
  for (int64_t i = 0; i < D; ++i) {
    const int64_t bit = ((k - 1) >> (D - 1 - i)) & 1;
    row[at + i] = bit ? -1.0 : 1.0;
  }
}

// Where the construction puts the position codes, for position tables of rows0 and rows1
// rows: POS_1, POS_1_NEXT (P1 dimensions each), POS_2, POS_2_NEXT (P2 each) after the fixed ones.
struct Layout {
  int64_t P1, P2, P, pos1, pos1n, pos2, pos2n, need_c;
};

Layout layout_for(int64_t rows0, int64_t rows1) {
  Layout l{};
  l.P1 = bits_for(rows0);
  l.P2 = bits_for(rows1);
  l.P = l.P1 + l.P2;
  l.pos1 = kFixed;
  l.pos1n = l.pos1 + l.P1;
  l.pos2 = l.pos1n + l.P1;
  l.pos2n = l.pos2 + l.P2;
  l.need_c = l.pos2n + l.P2;
  return l;
}

// The next digit as ReLU spikes over u = 40 PRE_SUM + PRE_CARRY - NUM, at the points that
// occur in a scratchpad: PRE_SUM in 0..18, PRE_CARRY - NUM in {-1, 0} (no carry out) or
// {9, 10} (carry out). spike_k(u) = r(u - k + 1) - 2 r(u - k) + r(u - k - 1). Hidden unit
// r(u - t) -> its weights into SUM_j, for the units with a weight that is not zero.
std::map<int64_t, std::array<double, 10>> digit_spikes() {
  std::map<int64_t, std::array<double, 10>> spikes;
  for (int64_t s = 0; s <= 18; ++s) {
    for (int64_t d : {-1, 0, 9, 10}) {
      const int64_t k = 40 * s + d, digit = (s + (d >= 9 ? 1 : 0)) % 10;
      for (auto [t, w] : {std::pair<int64_t, double>{k - 1, 1.0}, {k, -2.0}, {k + 1, 1.0}}) {
        spikes[t][static_cast<size_t>(digit)] += w;  // value-initialised: zeros
      }
    }
  }
  for (auto it = spikes.begin(); it != spikes.end();) {
    const bool any =
        std::any_of(it->second.begin(), it->second.end(), [](double x) { return x != 0.0; });
    it = any ? std::next(it) : spikes.erase(it);
  }
  return spikes;
}

void set(torch::Tensor t, int64_t i, int64_t j, double v) {
  t[i][j] = v;
}

// Token embedding (NUM, IS_BOS, FULL_ONES) and the position tables: row p holds
// [v_p; v_{p+1}] in its level's dimensions (row 0: zero).
void write_embeddings(const torch::Tensor& tok,
                      const torch::Tensor& level0,
                      const torch::Tensor& level1,
                      const lengen::Vocabulary& vocab,
                      const Layout& l) {
  for (int64_t id = 0; id < vocab.size(); ++id)
    set(tok, id, kOnes, 1.0);
  for (int64_t j = 0; j <= 9; ++j)
    set(tok, vocab.id(std::to_string(j)), kNum, static_cast<double>(j));
  set(tok, vocab.id("$"), kIsBos, 1.0);
  for (int64_t p = 1; p < level0.size(0); ++p) {
    hypercube(level0[p], l.pos1, p, l.P1);
    hypercube(level0[p], l.pos1n, p + 1, l.P1);
  }
  for (int64_t p = 1; p < level1.size(0); ++p) {
    hypercube(level1[p], l.pos2, p, l.P2);
    hypercube(level1[p], l.pos2n, p + 1, l.P2);
  }
}

// The four heads, of width D, into `qkv` and `out`. Query rows carry a = alpha sqrt(D)
// (undoing the 1/sqrt(D) of the scores): a key whose code equals the query's scores alpha P,
// BOS too (through FULL_ONES . IS_BOS), any other at most alpha (P - 2).
void write_heads(const torch::Tensor& qkv,
                 const torch::Tensor& out,
                 const Layout& l,
                 int64_t H,
                 int64_t D,
                 double alpha) {
  const double a = alpha * std::sqrt(static_cast<double>(D));

  struct Part {
    int64_t query_dim, key_dim, width;
  };

  auto head =
      [&](int64_t h, std::vector<Part> parts, int64_t value_dim, double value, int64_t writes) {
        int64_t row = 0, norm = 0;
        for (const Part& part : parts) {
          for (int64_t i = 0; i < part.width; ++i, ++row) {
            set(qkv, h * D + row, part.query_dim + i, a);
            set(qkv, H * D + h * D + row, part.key_dim + i, 1.0);
          }
          norm += part.width;
        }
        set(qkv, h * D + row, kOnes, a * std::sqrt(static_cast<double>(norm)));
        set(qkv, H * D + h * D + row, kIsBos, std::sqrt(static_cast<double>(norm)));
        set(qkv, 2 * H * D + h * D, value_dim, value);
        set(out, writes, h * D, 1.0);
      };
  // a_i, b_{i-1} at the next significance
  head(0, {{l.pos1n, l.pos1, l.P1}, {l.pos2, l.pos2n, l.P2}}, kNum, 3.0, kPreSum);
  // the same at this significance
  head(1, {{l.pos1, l.pos1, l.P1}, {l.pos2, l.pos2n, l.P2}}, kNum, 3.0, kPreCarry);
  // 1 iff no next significance
  head(2, {{l.pos1n, l.pos1, l.P1}}, kIsBos, 1.0, kPreArrow);
  // 1/2 iff in the last number
  head(3, {{l.pos1, l.pos1, l.P1}, {l.pos2, l.pos2, l.P2}}, kIsBos, 1.0, kPreEos);
}

// The feed-forward layer: ARROW, EOS and the digit spikes into SUM.
void write_feed_forward(const torch::Tensor& up,
                        const torch::Tensor& up_b,
                        const torch::Tensor& down,
                        const torch::Tensor& down_b,
                        const std::map<int64_t, std::array<double, 10>>& spikes) {
  set(up, 0, kPreArrow, 1.0);
  up_b[0] = -0.5;
  set(down, kArrow, 0, 2.0);
  set(down, kEos, 0, 2.0);
  set(up, 1, kPreEos, 1.0);
  up_b[1] = -1.0 / 3.0;
  set(down, kEos, 1, 6.0);
  down_b[kEos] = -1.0;
  int64_t unit = 2;
  for (const auto& [t, w] : spikes) {
    set(up, unit, kPreSum, 40.0);
    set(up, unit, kPreCarry, 1.0);
    set(up, unit, kNum, -1.0);
    up_b[unit] = -static_cast<double>(t);
    for (int64_t j = 0; j < 10; ++j)
      set(down, kSum0 + j, unit, w[static_cast<size_t>(j)]);
    ++unit;
  }
}

// Read-out: digits from SUM (weight 1), '>' from ARROW (10), '$' from EOS (100).
void write_readout(const torch::Tensor& head_w, const lengen::Vocabulary& vocab) {
  for (int64_t j = 0; j <= 9; ++j)
    set(head_w, vocab.id(std::to_string(j)), kSum0 + j, 1.0);
  set(head_w, vocab.id(">"), kArrow, 10.0);
  set(head_w, vocab.id("$"), kEos, 100.0);
}

// construction.json: the layout, for docs/theory.md's reader.
nlohmann::json layout_json(const Layout& l, double alpha, int64_t units) {
  return {{"construction", "cho_addition_scratchpad"},
          {"alpha", alpha},
          {"P1", l.P1},
          {"P2", l.P2},
          {"d_model_needed", l.need_c},
          {"d_head_needed", l.P + 1},
          {"d_ff_needed", units},
          {"dims",
           {{"NUM", kNum},
            {"IS_BOS", kIsBos},
            {"FULL_ONES", kOnes},
            {"PRE_SUM", kPreSum},
            {"PRE_CARRY", kPreCarry},
            {"PRE_ARROW", kPreArrow},
            {"PRE_EOS", kPreEos},
            {"SUM_0", kSum0},
            {"ARROW", kArrow},
            {"EOS", kEos},
            {"POS_1", l.pos1},
            {"POS_1_NEXT", l.pos1n},
            {"POS_2", l.pos2},
            {"POS_2_NEXT", l.pos2n}}}};
}

class Construct final : public lengen::Stage {
 public:
  static lengen::ComponentSpec spec() {
    return {
        "stage",
        "construct",
        "hand-set weights on the real model, written as this stage's checkpoint (no training); "
        "evaluate it with an eval stage (init_from) like a trained model",
        {OptionSpec::string(
             "construction",
             "cho_addition_scratchpad: Cho et al. 2025, Theorem 4.1 / App. D, multi-operand "
             "addition with scratchpad and bi-level coupling (docs/theory.md)")
             .with_default("cho_addition_scratchpad")
             .one_of({"cho_addition_scratchpad"}),
         OptionSpec::number("alpha",
                            "attention sharpness: a matching key scores 2 alpha above any other "
                            "(the seed's alpha_h, after the model's 1/sqrt(d_head) scaling)")
             .with_default(20.0)
             .at_least(1.0)}};
  }

  Construct(const lengen::Options& o, const lengen::StageInfo& info)
      : name_(info.name), alpha_(o.get_float("alpha")) {}

  void run(lengen::StageContext& ctx) override {
    const lengen::ModelConfig& m = ctx.model_config();
    const std::string where = fmt::format("stage '{}' (construct: cho_addition_scratchpad)", name_);
    auto require = [&](bool ok, const std::string& key, const std::string& want) {
      LENGEN_CHECK(ok, "{}: {}: {} needs {}", ctx.file(), where, key, want);
    };
    require(m.arch == "decoder", "model.arch", "decoder");
    require(m.layers == 1 && m.loops == 1 && !m.shared_layers, "model.layers", "1 (and loops: 1)");
    require(m.heads == 4, "model.heads", "4");
    require(m.norm == "none", "model.norm", "none (the construction has no normalisation)");
    require(m.activation == "relu", "model.activation", "relu");
    require(m.ff_bias, "model.ff_bias", "true (the feed-forward thresholds are biases)");
    require(!m.tie_embeddings,
            "model.tie_embeddings",
            "false (the read-out is not the token embedding)");
    const lengen::Task& task = ctx.task();
    const lengen::Vocabulary& vocab = task.vocabulary();
    require(task.position_levels() == 2 && vocab.contains(">"),
            "task",
            "addition with scratchpad: true (bi-level IDs and the '>' separator)");

    lengen::Transformer model = ctx.build_model(torch::kCPU);
    // The position tables are found by what they index (learned tables over levels 0 and 1 of
    // the task's IDs, e.g. Position Coupling's), never by a scheme's name.
    const auto& schemes = model->schemes();
    const auto tables = schemes.size() == 1 ? schemes[0]->learned_tables()
                                            : std::vector<lengen::LearnedPositionTable>{};
    require(schemes.size() == 1 && schemes[0]->hooks() == lengen::kHookInputEmbedding &&
                tables.size() == 2 && !tables[0].sequence_index && tables[0].level == 0 &&
                !tables[1].sequence_index && tables[1].level == 1,
            "position",
            "one scheme that adds only learned tables over both levels of the task's IDs (e.g. "
            "coupling)");
    auto params = model->named_parameters();
    auto param = [&](const std::string& name) -> torch::Tensor {
      auto* p = params.find(name);
      LENGEN_CHECK(
          p != nullptr, "{}: {}: the model has no parameter '{}'", ctx.file(), where, name);
      return *p;
    };
    const torch::Tensor level0 = tables[0].weight, level1 = tables[1].weight;
    const Layout l = layout_for(level0.size(0), level1.size(0));
    const torch::Tensor qkv = param("blocks.0.attn.qkv.weight");
    const int64_t H = 4, D = qkv.size(0) / (3 * H);
    require(m.d_model >= l.need_c,
            "model.d_model",
            fmt::format("at least {} (19 + 2 x {} + 2 x {} for max_position {} / {})",
                        l.need_c,
                        l.P1,
                        l.P2,
                        level0.size(0) - 1,
                        level1.size(0) - 1));
    require(D >= l.P + 1, "model.d_head", fmt::format("at least {} (P1 + P2 + 1)", l.P + 1));
    const auto spikes = digit_spikes();
    const auto units = static_cast<int64_t>(2 + spikes.size());
    require(m.d_ff >= units, "model.d_ff", fmt::format("at least {}", units));

    torch::NoGradGuard no_grad;
    for (auto& p : params)
      p.value().zero_();
    write_embeddings(param("tok_emb.weight"), level0, level1, vocab, l);
    write_heads(qkv, param("blocks.0.attn.out.weight"), l, H, D, alpha_);
    write_feed_forward(param("blocks.0.ff.up.weight"),
                       param("blocks.0.ff.up.bias"),
                       param("blocks.0.ff.down.weight"),
                       param("blocks.0.ff.down.bias"),
                       spikes);
    write_readout(param("lm_head.weight"), vocab);

    const lengen::RunDir folder = ctx.folder();
    fs::create_directories(folder.checkpoints());
    const std::string path = folder.checkpoint(0).string();
    lengen::save_safetensors(path,
                             lengen::named_weights(model),
                             {{"format", "lengen-checkpoint-1"},
                              {"step", "0"},
                              {"seed", std::to_string(ctx.seed())},
                              {"torch", lengen::torch_version()},
                              {"construction", "cho_addition_scratchpad"}});
    lengen::write_file_atomic((fs::path(ctx.dir()) / "construction.json").string(),
                              layout_json(l, alpha_, units).dump(2) + "\n");
    lengen::logger("stage")->info(
        "{}: Theorem 4.1's weights (P1 {}, P2 {}, {} feed-forward units) written to {}",
        name_,
        l.P1,
        l.P2,
        units,
        path);
  }

 private:
  std::string name_;
  double alpha_;
};

void register_construct(lengen::Registrar& r) {
  r.add_stage<Construct>();
}

}  // namespace

LENGEN_PLUGIN("construct", "0.1.0", register_construct)
