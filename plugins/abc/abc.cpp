// ABC's bias (Duan & Shi 2023, section 5): static per-head biases, computed by the `calibrate`
// stage from the attention of a model that interpolates, added to the logits of decoder self-
// and cross-attention: A_ij = q_i . k_j / sqrt(D) + B_h(i, j) (B_{l,h} with a bias per layer).
// The file holds, per head and line direction (and per decoder layer where calibrated so), the
// kept lines {l: d_l - d_max} (lines.h); each batch's bias is materialised for its own rows and
// keys with each direction's anchor, merged by maximum, a head with no kept line transparent (0).
// Rows are absolute (the KV cache's query_offset), so decoding with a cache gives the full
// forward's logits. Encoder self-attention is unbiased.
#include "lines.h"

#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

namespace fs = std::filesystem;

namespace {

using lengen::AttentionKind;
using lengen::OptionSpec;

class Abc final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {
        "position",
        "abc",
        "Attention Bias Calibration (Duan & Shi 2023): per-head biases from a `calibrate` stage's "
        "file, in decoder self- and cross-attention",
        {OptionSpec::string(
             "bias",
             "the calibrate stage's abc.safetensors: absolute, or relative to the run "
             "directory")
             .with_default("stages/calibrate/abc.safetensors"),
         OptionSpec::boolean("self", "bias decoder self-attention").with_default(true),
         OptionSpec::boolean("cross", "bias cross-attention").with_default(true),
         OptionSpec::int_list(
             "layers",
             "decoder layers that receive the bias (0-based); [] = all (the released "
             "code passes the same mask to every layer)")
             .with_default(std::vector<int64_t>{})
             .at_least(0)}};
  }

  Abc(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : heads_(ctx.heads),
        self_(o.get_bool("self")),
        cross_(o.get_bool("cross")),
        layers_(o.get_int_list("layers")) {
    fs::path p(o.get_string("bias"));
    path_ = (p.is_absolute() || ctx.run_dir.empty() ? p : fs::path(ctx.run_dir) / p).string();
    // The file is written by a stage of the same run, which may not have run yet when the
    // experiment is read, and the instance built then is the first model's: a file already
    // there is checked now (a wrong one fails before training) and read again at first use,
    // since that stage may rewrite it in between.
    if (fs::exists(path_)) {
      load_bias();
      loaded_ = false;
    }
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(AttentionKind) const override { return true; }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    const bool cross = ctx.kind == AttentionKind::kCross;
    if (ctx.kind == AttentionKind::kBidirectionalSelf || !(cross ? cross_ : self_))
      return {};
    if (!layers_.empty() && std::find(layers_.begin(), layers_.end(), ctx.layer) == layers_.end())
      return {};
    if (!loaded_)
      load_bias();
    if (!per_layer_.empty() && ctx.layer >= static_cast<int64_t>(per_layer_.size())) {
      throw lengen::Error(fmt::format(
          "abc: {} holds a bias per decoder layer for {} layers; the model's layer {} has "
          "none (calibrate the model of the same depth)",
          path_,
          per_layer_.size(),
          ctx.layer));
    }
    const int64_t layer = per_layer_.empty() ? -1 : ctx.layer;
    const auto& kinds = per_layer_.empty() ? shared_ : per_layer_[static_cast<size_t>(layer)];
    const auto& lines = cross ? kinds.cross : kinds.self;
    if (lines.empty())
      return {};
    // Each sample's real key count: right-anchored lines align with its last real key.
    const int64_t B = ctx.key_padding.defined() ? ctx.key_padding.size(0) : 1, S = ctx.key_length;
    std::vector<int64_t> real(static_cast<size_t>(B), S);
    if (ctx.key_padding.defined()) {
      auto n = ctx.key_padding.logical_not().sum(-1).to(torch::kCPU);  // [B]
      for (int64_t b = 0; b < B; ++b)
        real[static_cast<size_t>(b)] = n[b].item<int64_t>();
    }
    const bool uniform = std::all_of(real.begin(), real.end(), [&](int64_t n) { return n == S; });
    if (uniform)
      return bias(
          lines, cross, layer, ctx.query_offset, ctx.query_length, S, ctx.query_ids.device());
    std::vector<torch::Tensor> rows;  // per sample [H, T, S], -inf on padding keys
    for (int64_t n : real) {
      auto b =
          torch::full({lines.heads.size() > 0 ? static_cast<int64_t>(lines.heads.size()) : 1,
                       ctx.query_length,
                       S},
                      -std::numeric_limits<float>::infinity(),
                      torch::TensorOptions().dtype(torch::kFloat32).device(ctx.query_ids.device()));
      if (n > 0) {
        b.narrow(2, 0, n).copy_(
            bias(lines, cross, layer, ctx.query_offset, ctx.query_length, n, b.device())[0]);
      }
      rows.push_back(b);
    }
    return torch::stack(rows);  // [B, H, T, S]
  }

 private:
  // [1, H, T, N] for rows [row0, row0 + T) and N keys, remembered by layer (-1: shared) and shape.
  torch::Tensor bias(const lengen::abc::KindLines& lines,
                     bool cross,
                     int64_t layer,
                     int64_t row0,
                     int64_t T,
                     int64_t N,
                     const torch::Device& device) {
    const auto key = std::make_tuple(cross, layer, row0, T, N);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.device() == device)
      return it->second;
    if (cache_.size() > 512)
      cache_.clear();
    std::vector<torch::Tensor> heads;
    for (const auto& head : lines.heads)
      heads.push_back(lengen::abc::extend(head, row0, T, N, !cross));
    auto b = torch::stack(heads).to(device, torch::kFloat32).unsqueeze(0);  // [1, H, T, N]
    cache_[key] = b;
    return b;
  }

  void load_bias() {
    if (!fs::exists(path_)) {
      throw lengen::Error(
          fmt::format("abc: bias file {} not found; run the `calibrate` stage first or point "
                      "position[].bias at its abc.safetensors",
                      path_));
    }
    const auto file = lengen::load_safetensors(path_);
    // One bias for every layer ("self", "cross"), or one per layer ("layer<l>.self", ...).
    shared_ = {lengen::abc::from_tensors("self", file.tensors),
               lengen::abc::from_tensors("cross", file.tensors)};
    per_layer_.clear();
    for (size_t l = 0;; ++l) {
      const std::string at = fmt::format("layer{}.", l);
      Kinds k{lengen::abc::from_tensors(at + "self", file.tensors),
              lengen::abc::from_tensors(at + "cross", file.tensors)};
      if (k.self.empty() && k.cross.empty())
        break;
      per_layer_.push_back(std::move(k));
    }
    if (!per_layer_.empty() && !(shared_.self.empty() && shared_.cross.empty())) {
      throw lengen::Error(
          fmt::format("abc: {} holds both a shared bias and per-layer biases", path_));
    }
    std::vector<const Kinds*> all{&shared_};
    for (const auto& k : per_layer_)
      all.push_back(&k);
    for (const Kinds* kinds : all) {
      for (const auto* k : {&kinds->self, &kinds->cross}) {
        if (!k->empty() && static_cast<int64_t>(k->heads.size()) != heads_) {
          throw lengen::Error(fmt::format("abc: {} holds biases for {} heads; the model has {}",
                                          path_,
                                          k->heads.size(),
                                          heads_));
        }
      }
      for (const auto& head : kinds->self.heads) {
        for (const auto& l : head) {
          if (l.anchor != lengen::abc::Anchor::kLeft) {
            throw lengen::Error(
                fmt::format("abc: {}: self-attention lines must be anchored left (the keys grow "
                            "while decoding)",
                            path_));
          }
        }
      }
    }
    if (per_layer_.empty() && shared_.self.empty() && shared_.cross.empty()) {
      throw lengen::Error(
          fmt::format("abc: {} holds no bias lines (not a calibrate stage's output)", path_));
    }
    loaded_ = true;
  }

  int64_t heads_;
  bool self_, cross_;
  std::vector<int64_t> layers_;
  std::string path_;
  bool loaded_ = false;

  struct Kinds {
    lengen::abc::KindLines self, cross;
  };

  Kinds shared_;                  ///< the bias of every layer
  std::vector<Kinds> per_layer_;  ///< or one per decoder layer (calibrate's per_layer)
  std::map<std::tuple<bool, int64_t, int64_t, int64_t, int64_t>, torch::Tensor> cache_;
};

void register_abc(lengen::Registrar& r) {
  r.add_position<Abc>();
}

}  // namespace

LENGEN_PLUGIN("abc", "0.1.0", register_abc)
