// The `eval:` section: EvalConfig's schema, reading (the grid against the task's axes), writing
// and its cells.
#include "lengen/eval/config.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"

#include <algorithm>

namespace lengen {

namespace {

const Section<EvalConfig>& eval_section() {
  using O = OptionSpec;
  using E = EvalConfig;
  static const Section<EvalConfig> s =
      Section<EvalConfig>("eval", "the length-generalization grid and its metric")
          .option(O::map("grid",
                         "per axis of the task [lo, hi] (a range) or an explicit list, e.g. "
                         "{digits: [1, 40]}; "
                         "default: the task's evaluation ranges")
                      .any_keys())
          .field(&E::samples, O::integer("samples", "samples per cell").at_least(1))
          .field(
              &E::batch_size,
              O::integer("batch_size", "at most this many sequences per forward pass (or decode)")
                  .at_least(1))
          .field(&E::batch_tokens,
                 O::integer(
                     "batch_tokens",
                     "at most this many padded tokens (sequences x the longest) per forward pass, "
                     "samples sorted by length; 0: by device (GPU: 131072; CPU: what keeps the "
                     "widest activation "
                     "within 16 MiB, e.g. 4096 for d_model 256)")
                     .at_least(0))
          .field(&E::seed,
                 O::integer("seed", "evaluation data seed (independent of the training seed)")
                     .at_least(0))
          .field(&E::greedy_decode,
                 O::boolean("greedy_decode",
                            "decide exact match by KV-cached greedy decoding instead "
                            "of the equivalent teacher-forced check"))
          .field(&E::metric,
                 O::string("metric",
                           "response: exact match of the whole response (scratchpad and EOS "
                           "included); answer: "
                           "the final answer of a greedy decode; answer_given_scratchpad: the "
                           "answer teacher-forced after "
                           "the reference scratchpad (a diagnostic)")
                     .one_of({"response", "answer", "answer_given_scratchpad"}))
          .field(&E::loops,
                 O::integer("loops",
                            "applications of each looped stack at test time; 0: the model's "
                            "model.loops")
                     .at_least(0))
          .field(&E::adaptive_loops,
                 O::integer(
                     "adaptive_loops",
                     "adaptive looping (Fan et al. 2025; arch: encoder): each sample runs up to "
                     "its own loop count + this many extra loops and keeps the loop whose output "
                     "is most "
                     "confident (lowest cross-entropy against its own argmax over the labelled "
                     "positions); "
                     "0: off")
                     .at_least(0))
          .field(
              &E::breakdown,
              O::string_list("breakdown",
                             "example features to break each cell's accuracy down by "
                             "(e.g. addition's carries, carry_chain); also records the number and "
                             "positions of wrong tokens (decodes)"))
          .field(
              &E::examples,
              O::integer("examples",
                         "up to this many samples of each cell written to eval/examples.jsonl, the "
                         "wrong ones first: the query, the reference and the model's response, the "
                         "verdict "
                         "and the task's features (decodes); 0: none")
                  .at_least(0))
          .field(
              &E::autocast,
              O::boolean("autocast",
                         "on CUDA, run the evaluation's forward passes and decodes under bfloat16 "
                         "autocast, as training with dtype: bfloat16 does (logits scored in "
                         "float32): several "
                         "times faster on a GPU; a verdict can differ where two logits are within "
                         "bfloat16 "
                         "rounding of each other. No effect on the CPU"));
  return s;
}

}  // namespace

ComponentSpec EvalConfig::schema() {
  return eval_section().spec();
}

EvalConfig EvalConfig::from_config(const ConfigNode& node, const std::vector<GridAxis>& axes) {
  EvalConfig c;
  Options o = eval_section().read(node, c);
  if (c.metric == "answer_given_scratchpad" && c.greedy_decode) {
    node.child("greedy_decode")
        .fail(
            "eval.metric answer_given_scratchpad is teacher-forced by definition (the answer given "
            "the reference scratchpad); use metric: answer for the decoded answer");
  }
  std::vector<std::string> names;
  for (const auto& a : axes) {
    names.push_back(a.name);
    std::vector<int64_t> values;
    for (int64_t v = a.lo; v <= a.hi; ++v) {
      values.push_back(v);
    }
    c.grid[a.name] = values;
  }
  ConfigNode grid = o.node("grid");
  MapReader g(grid);
  for (const auto& a : axes) {
    ConfigNode n = g.child(a.name);
    if (!n.defined()) {
      continue;
    }
    // [lo, hi] is a range; a longer list or {values: [...]} lists the values explicitly.
    std::vector<int64_t> v = n.is_scalar() ? std::vector<int64_t>{n.as_int()} : n.as_int_list();
    if (v.size() == 2 && v[0] <= v[1]) {
      std::vector<int64_t> range;
      for (int64_t x = v[0]; x <= v[1]; ++x) {
        range.push_back(x);
      }
      v = range;
    }
    if (v.empty()) {
      n.fail(fmt::format("eval.grid.{} selects no values", a.name));
    }
    c.grid[a.name] = v;
  }
  g.finish();
  // Keep the task's axis order (std::map sorts by name; cells() uses axis_order).
  c.grid_order_ = names;
  return c;
}

YAML::Node EvalConfig::to_yaml() const {
  YAML::Node n = eval_section().write(*this);
  for (const auto& axis : grid_order_) {
    const auto& v = grid.at(axis);
    bool contiguous = true;
    for (size_t i = 1; i < v.size(); ++i) {
      contiguous = contiguous && v[i] == v[i - 1] + 1;
    }
    YAML::Node list(YAML::NodeType::Sequence);
    if (contiguous && v.size() > 1) {
      list.push_back(v.front());
      list.push_back(v.back());
    } else {
      for (int64_t x : v) {
        list.push_back(x);
      }
    }
    list.SetStyle(YAML::EmitterStyle::Flow);
    n["grid"][axis] = list;
  }
  return n;
}

std::vector<GridCell> EvalConfig::cells() const {
  std::vector<GridCell> out{GridCell{}};
  for (const auto& axis : grid_order_) {
    std::vector<GridCell> next;
    for (const auto& partial : out) {
      for (int64_t v : grid.at(axis)) {
        GridCell c = partial;
        c[axis] = v;
        next.push_back(c);
      }
    }
    out = next;
  }
  return out;
}

}  // namespace lengen
