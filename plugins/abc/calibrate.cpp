// The `calibrate` stage of Attention Bias Calibration (Duan & Shi 2023, section 5, steps 1-2
// and Algorithm 1): from init_from's model (trained to interpolation) it decodes a random
// subset of the training distribution, keeps the samples answered exactly right, averages the
// last decoder layer's attention per head over them (decoder self- and cross-attention), takes
// the line averages of each searched direction, thresholds them at mu + k sigma and writes
//   abc.safetensors  the kept lines per kind/head/direction (what the `abc` scheme reads), the
//                    averaged maps "<kind>.average" [H, m, n] and the extended biases
//                    "<kind>.extended" [H, M, N] at the training sample's full size;
//   abc.json         the same for plotting, and abc.png (scripts/plot_abc.py): per head the
//                    averaged attention and the extended bias, like the paper's Figures 3-4.
// Options follow the paper's text; the released code's choices are documented in docs/abc.md.
#include "calibrate_kind.h"
#include "lines.h"

#include "lengen/analysis/attention.h"
#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/rng.h"
#include "lengen/plugin/plugin.h"
#include "lengen/report/plot.h"
#include "lengen/stage/stage.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace {

using lengen::OptionSpec;
namespace abc = lengen::abc;

// The model's decoder: its causal stack (null when it has none).
const lengen::StackSpec* decoder_stack(const lengen::Transformer& model) {
  for (const auto& s : model->stacks()) {
    if (s.attention == lengen::AttentionKind::kCausalSelf) {
      return &s;
    }
  }
  return nullptr;
}

class Calibrate final : public lengen::Stage {
 public:
  static lengen::ComponentSpec spec() {
    const std::vector<std::string> all{"diagonal", "anti_diagonal", "vertical"};
    return {
        "stage",
        "calibrate",
        "Attention Bias Calibration (Duan & Shi 2023): average init_from's last decoder layer's "
        "attention over "
        "correctly decoded training samples and extract per-head bias lines for the `abc` scheme",
        {OptionSpec::integer(
             "samples", "|S_gen|: training samples drawn and decoded (the correct ones are kept)")
             .with_default(int64_t{1000})
             .at_least(1),
         OptionSpec::integer(
             "rows",
             "decoder rows (output steps) the statistics use; 0 = the trained length "
             "(the task's training range of its first grid axis)")
             .with_default(int64_t{0})
             .at_least(0),
         OptionSpec::string("scores",
                            "weights (post-softmax, the text's 'attention weights') or logits "
                            "(pre-softmax q.k, the formula of section 5)")
             .with_default("weights")
             .one_of({"weights", "logits"}),
         OptionSpec::string(
             "statistic",
             "a line's value d_l: mean of its cells (the paper's eq. (1)) or sum "
             "(the released code: a short line in a corner cannot outscore a long one)")
             .with_default("mean")
             .one_of({"mean", "sum"}),
         OptionSpec::number(
             "coverage",
             "share of the calibration rows a line must cross to be kept: 0 = any "
             "line (the paper); 0.5 refuses the two-cell lines in a corner of the map "
             "that the extension would continue through every longer row")
             .with_default(0.0)
             .at_least(0.0)
             .at_most(1.0),
         OptionSpec::string(
             "select",
             "threshold: every line above mu + k sigma (the paper) | explain_away: the "
             "strongest line of a head first, its cells then zeroed and the lines "
             "recomputed, so lines that only cross a kept line's cells fall away")
             .with_default("threshold")
             .one_of({"threshold", "explain_away"}),
         OptionSpec::string("constant_keys",
                            "keep | drop: drop refuses a line whose every cell lies on a key "
                            "holding the same token in all calibration samples (zero padding, a "
                            "marker): it reads nothing of the input, and extended to longer "
                            "inputs it lands on digits (the paper: keep)")
             .with_default("keep")
             .one_of({"keep", "drop"}),
         OptionSpec::string("empty_heads",
                            "transparent | strongest: a head where no line passes is left "
                            "transparent, attending by content alone (the paper), or keeps its "
                            "one line furthest above the mean in sigmas (among those coverage "
                            "and constant_keys allow), so that every head has a position")
             .with_default("transparent")
             .one_of({"transparent", "strongest"}),
         OptionSpec::number("sigmas",
                            "k of the drop-off threshold mu + k sigma (the paper: 4; the code: 4.5 "
                            "cross, 0.87 self)")
             .with_default(4.0)
             .at_least(0.0),
         OptionSpec::number("self_sigmas",
                            "k for decoder self-attention; -1 = sigmas (the code: 0.87; its 7 x 7 "
                            "maps have too few lines for any to pass 4 sigma)")
             .with_default(-1.0)
             .at_least(-1.0),
         OptionSpec::string_list("cross_directions",
                                 "line directions searched in cross-attention (the paper: "
                                 "all three; the code: anti_diagonal)")
             .with_default(all),
         OptionSpec::string_list("self_directions",
                                 "line directions searched in decoder self-attention (the "
                                 "paper: all three; the code: diagonal)")
             .with_default(all),
         OptionSpec::string("diagonal_anchor",
                            "left | right: the corner (1,1) lines keep when extended")
             .with_default("left")
             .one_of({"left", "right"}),
         OptionSpec::string("anti_diagonal_anchor", "left | right (the paper's footnote: right)")
             .with_default("right")
             .one_of({"left", "right"}),
         OptionSpec::string("vertical_anchor",
                            "left | right (the code: right, so a pattern on the last input "
                            "token extrapolates)")
             .with_default("right")
             .one_of({"left", "right"}),
         OptionSpec::integer("layer",
                             "decoder layer whose attention is read; -1 = the last (the paper)")
             .with_default(int64_t{-1})
             .at_least(-1),
         OptionSpec::boolean("per_layer",
                             "calibrate every decoder layer from its own attention, and the `abc` "
                             "scheme gives each layer its own bias (the paper: the last layer's "
                             "bias in every layer); excludes `layer`")
             .with_default(false),
         OptionSpec::integer("batch_size", "samples per forward pass")
             .with_default(int64_t{256})
             .at_least(1)}};
  }

  Calibrate(const lengen::Options& o, const lengen::StageInfo&)
      : samples_(o.get_int("samples")),
        rows_(o.get_int("rows")),
        logits_(o.get_string("scores") == "logits"),
        statistic_(o.get_string("statistic") == "sum" ? abc::Statistic::kSum
                                                      : abc::Statistic::kMean),
        coverage_(o.get_float("coverage")),
        explain_away_(o.get_string("select") == "explain_away"),
        drop_constant_(o.get_string("constant_keys") == "drop"),
        strongest_(o.get_string("empty_heads") == "strongest"),
        sigmas_(o.get_float("sigmas")),
        self_sigmas_(o.get_float("self_sigmas") < 0 ? o.get_float("sigmas")
                                                    : o.get_float("self_sigmas")),
        layer_(o.get_int("layer")),
        per_layer_(o.get_bool("per_layer")),
        batch_(o.get_int("batch_size")) {
    if (per_layer_ && layer_ >= 0)
      o.fail("per_layer", "per_layer calibrates every decoder layer; leave `layer` at -1");
    for (const auto& d : o.get_string_list("cross_directions")) {
      try {
        cross_dirs_.push_back(abc::parse_direction(d));
      } catch (const lengen::Error& e) {
        o.fail("cross_directions", e.what());
      }
    }
    for (const auto& d : o.get_string_list("self_directions")) {
      try {
        self_dirs_.push_back(abc::parse_direction(d));
      } catch (const lengen::Error& e) {
        o.fail("self_directions", e.what());
      }
    }
    auto anchor = [&](const char* k) {
      return o.get_string(k) == "right" ? abc::Anchor::kRight : abc::Anchor::kLeft;
    };
    anchors_[abc::Direction::kDiagonal] = anchor("diagonal_anchor");
    anchors_[abc::Direction::kAntiDiagonal] = anchor("anti_diagonal_anchor");
    anchors_[abc::Direction::kVertical] = anchor("vertical_anchor");
  }

  void run(lengen::StageContext& ctx) override {
    if (ctx.init_from().empty()) {
      ctx.fail(
          fmt::format("calibrate stage '{}' needs the model that interpolates: give init_from "
                      "(its training stage)",
                      ctx.name()));
    }
    lengen::Transformer model = ctx.load_model();
    if (decoder_stack(model) == nullptr) {
      ctx.fail(
          "calibrate: the model has no decoder, a causal stack (ABC biases decoder self- and "
          "cross-attention)");
    }
    int64_t layer = 0;
    const auto index = attention_index(ctx, model, layer);
    const auto maps = average_attention(ctx, model, index);
    int64_t rows = rows_;
    if (rows == 0) {
      const auto axes = ctx.task().grid_axes();
      rows = axes.empty() || axes[0].train_hi <= 0 ? 0 : axes[0].train_hi;
    }
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    nlohmann::json doc = {{"samples", maps.samples},
                          {"drawn", maps.drawn},
                          {"scores", logits_ ? "logits" : "weights"},
                          {"statistic", statistic_ == abc::Statistic::kSum ? "sum" : "mean"},
                          {"coverage", coverage_},
                          {"select", explain_away_ ? "explain_away" : "threshold"},
                          {"constant_keys", drop_constant_ ? "drop" : "keep"},
                          {"empty_heads", strongest_ ? "strongest" : "transparent"},
                          {"sigmas", sigmas_},
                          {"self_sigmas", self_sigmas_},
                          {"layer", layer},
                          {"per_layer", per_layer_}};
    // Per layer: tensors under "<kind>" (one layer) or "layer<l>.<kind>" (per_layer); abc.json
    // keeps the last layer at the top (the plot's) and, per_layer, every layer under "layers".
    const abc::Selection selection{statistic_,
                                   coverage_,
                                   explain_away_,
                                   drop_constant_,
                                   strongest_,
                                   sigmas_,
                                   self_sigmas_,
                                   cross_dirs_,
                                   self_dirs_,
                                   anchors_};
    if (per_layer_)
      doc["layers"] = nlohmann::json::array();
    for (const auto& [l, at] : index) {
      const std::string prefix = per_layer_ ? fmt::format("layer{}.", l) : "";
      nlohmann::json part = nlohmann::json::object();
      for (const bool cross : {false, true}) {
        const std::string kind = cross ? "cross" : "self";
        const int64_t map_index = cross ? at.second : at.first;
        if (map_index < 0)
          continue;
        std::vector<const lengen::AttentionMap*> heads;
        for (const auto& m : maps.maps) {
          if (m.layer == map_index)
            heads.push_back(&m);
        }
        nlohmann::json j = abc::calibrate_kind(heads, cross, rows, prefix, selection, tensors);
        if (!j.is_null())
          part[kind] = std::move(j);
      }
      if (per_layer_)
        doc["layers"].push_back({{"layer", l},
                                 {"self", part.value("self", nlohmann::json())},
                                 {"cross", part.value("cross", nlohmann::json())}});
      if (l == layer)
        doc.update(part);
    }
    ctx.write_tensors("abc.safetensors", tensors);
    const std::string json = (fs::path(ctx.dir()) / "abc.json").string();
    lengen::write_file_atomic(json, doc.dump() + "\n");
    lengen::run_plot("plot_abc.py",
                     fmt::format("'{}'", json),
                     fmt::format("bias heatmaps written to {}/abc.png", ctx.dir()),
                     json);
  }

 private:
  // The attention maps to read: layer -> (self, cross) index among the model's attention
  // names (cross -1 where there is none), the chosen decoder layer's or, per_layer, every
  // layer's up to it; `layer` receives the chosen one.
  std::map<int64_t, std::pair<int64_t, int64_t>> attention_index(lengen::StageContext& ctx,
                                                                 lengen::Transformer& model,
                                                                 int64_t& layer) const {
    const auto names = model->attention_names();
    const int64_t depth = decoder_stack(model)->depth;
    layer = layer_ < 0 ? depth - 1 : layer_;
    if (layer >= depth) {
      ctx.fail(
          fmt::format("calibrate: layer {} does not exist (the decoder has {})", layer, depth));
    }
    std::vector<int64_t> layers;
    for (int64_t l = per_layer_ ? 0 : layer; l <= layer; ++l)
      layers.push_back(l);
    const std::string suffix = model->loops() > 1 ? fmt::format("@{}", model->loops() - 1) : "";
    std::map<int64_t, std::pair<int64_t, int64_t>> index;  // layer -> (self, cross) attention index
    for (int64_t l : layers) {
      int64_t self_index = -1, cross_index = -1;
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == fmt::format("blocks.{}{}", l, suffix))
          self_index = static_cast<int64_t>(i);
        if (names[i] == fmt::format("blocks.{}.cross{}", l, suffix))
          cross_index = static_cast<int64_t>(i);
      }
      LENGEN_CHECK(self_index >= 0, "calibrate: no attention named blocks.{}{}", l, suffix);
      index[l] = {self_index, cross_index};
    }

    return index;
  }

  // S_gen: a random subset of the training distribution, one shape (the most frequent); the
  // mean attention of `index`'s maps over the samples the model answers exactly right.
  lengen::AttentionMaps average_attention(
      lengen::StageContext& ctx,
      lengen::Transformer& model,
      const std::map<int64_t, std::pair<int64_t, int64_t>>& index) const {
    const lengen::Task& task = ctx.task();
    lengen::Rng rng(lengen::mix_seed(ctx.seed(), {0xABC}));
    std::map<int64_t, std::vector<lengen::Example>> by_length;
    for (int64_t i = 0; i < samples_; ++i) {
      auto ex = task.sample_train(rng);
      by_length[ex.length()].push_back(std::move(ex));
    }
    auto most =
        std::max_element(by_length.begin(), by_length.end(), [](const auto& a, const auto& b) {
          return a.second.size() < b.second.size();
        });
    const auto& examples = most->second;
    lengen::AttentionRequest req;
    for (const auto& [l, at] : index) {
      req.layers.push_back(at.first);
      if (at.second >= 0)
        req.layers.push_back(at.second);
    }
    req.pre_softmax = logits_;
    req.correct_only = true;
    req.batch_size = batch_;
    const auto maps = lengen::mean_attention(model, task, examples, ctx.device(), req);
    if (maps.samples == 0) {
      ctx.fail(fmt::format(
          "calibrate stage '{}': the model it starts from (init_from) answers none of the {} "
          "training samples of "
          "the most frequent shape exactly, and calibration reads the attention of correct answers "
          "only; train "
          "that model until it interpolates (lower loss, more steps) before calibrating",
          ctx.name(),
          maps.drawn));
    }
    lengen::logger("calibrate")
        ->info(
            "{}: {} of {} training samples decoded exactly right (of {} drawn; {} share the most "
            "frequent shape)",
            ctx.name(),
            maps.samples,
            maps.drawn,
            samples_,
            examples.size());

    return maps;
  }

  int64_t samples_, rows_;
  bool logits_;
  abc::Statistic statistic_;
  double coverage_;
  bool explain_away_;
  bool drop_constant_;
  bool strongest_;
  double sigmas_, self_sigmas_;
  int64_t layer_;
  bool per_layer_;
  int64_t batch_;
  std::vector<abc::Direction> cross_dirs_, self_dirs_;
  std::map<abc::Direction, abc::Anchor> anchors_;
};

void register_calibrate(lengen::Registrar& r) {
  r.add_stage<Calibrate>();
}

}  // namespace

LENGEN_PLUGIN("calibrate", "0.1.0", register_calibrate)
