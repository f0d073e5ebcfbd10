// The self_improve entry: Lee et al. 2025's self-improvement rounds in one stage entry. It is
// never run itself; it stands for the stages of N rounds, which the experiment reads as if
// they were written out (and config.yaml lists them so). Round r of entry P:
//   P<r>_label  self_label: the round's model labels queries of lengths [lo, hi] + (r-1) step,
//               with the other lineages' models as voters when `voters:` is given
//   P<r>        train: from the previous round's model, on a mixture of the task's own
//               examples (weight 1 - self_weight) and every round's labels so far (self_weight)
//   P<r>_v<j>   train, one per voter: lineage j (from voters[j-1]) on the same mixture,
//               seed + j; not in the last round, where no later label stage would ask it
//   P<r>_eval   eval of P<r> (the entry's `eval:` over the file's)
// then P0_eval (the starting model, first) and P_rounds (compare_stages: accuracy per length
// after every round, one picture).
#include "builtin.h"

#include "lengen/core/error.h"
#include "lengen/stage/stage.h"

namespace lengen {

namespace {

class SelfImproveStage : public Stage {
 public:
  static ComponentSpec spec() {
    using O = OptionSpec;
    return {
        "stage",
        "self_improve",
        "self-improvement rounds (Lee et al. 2025) in one entry: it stands for `rounds` x "
        "(self_label, train, "
        "eval) stages named <name><r>_label, <name><r>, <name><r>_eval, and <name>_rounds, a "
        "picture of "
        "accuracy per length after every round; its task/model/position/train sections apply to "
        "every "
        "round's training, its eval section to every round's evaluation",
        {O::integer("rounds", "number of rounds").at_least(1),
         O::int_list("lengths",
                     "[lo, hi]: the first round's query lengths on the task's first grid axis")
             .at_least(1),
         O::integer("length_step",
                    "how far each round moves [lo, hi] (default: hi - lo + 1, the next "
                    "lengths)")
             .with_default(int64_t{0})
             .at_least(0),
         O::integer("samples", "queries each round labels").with_default(int64_t{1000}).at_least(1),
         O::string_list("filters", "as self_label's")
             .with_default(std::vector<std::string>{"length"})
             .one_of({"length"}),
         O::integer("batch_size", "queries decoded at once").with_default(int64_t{256}).at_least(1),
         O::string_list(
             "voters",
             "majority vote: the starting models of more lineages (earlier stages or run "
             "directories); every round but the last trains each on the same data (seed + j) and "
             "their answers vote on the labels")
             .with_default(std::vector<std::string>{}),
         O::integer("agree", "models that must give a kept label (default: a majority)")
             .with_default(int64_t{0})
             .at_least(0),
         O::number("self_weight",
                   "share of the labels (all rounds' so far) in each round's training batches")
             .with_default(0.5)
             .at_least(0.0)
             .at_most(1.0),
         O::boolean("eval_start",
                    "evaluate the starting model first (<name>0_eval), as round 0 of the "
                    "picture")
             .with_default(true)}};
  }

  SelfImproveStage(const Options&, const StageInfo&) {}

  void run(StageContext& ctx) override {
    throw Error(fmt::format(
        "stage '{}': a self_improve entry is expanded into its rounds when the experiment "
        "loads and never runs itself",
        ctx.spec().name));
  }
};

std::vector<YAML::Node> expand(const Options& o,
                               const ConfigNode& entry,
                               const StageExpansionContext& ctx) {
  const std::string name = entry.child("name").defined() ? entry.child("name").as_string() : "";
  if (name.empty())
    entry.fail("a self_improve entry needs a name: its stages are <name>1_label, <name>1, ...");
  const std::string start = o.given("init_from") ? o.get_string("init_from") : ctx.previous;
  if (start.empty()) {
    entry.fail(fmt::format(
        "self_improve '{}' has no model to start from: give init_from (an earlier stage or a "
        "run directory)",
        name));
  }
  const double w = o.get_float("self_weight");
  if (!(w > 0))
    entry.child("self_weight").fail("self_weight must be > 0: the rounds train on their labels");
  const ConfigNode task = entry.child("task");
  if (task.defined() && (!task.is_map() || task.child("mixture").defined())) {
    task.fail(
        "a self_improve entry's task: overrides the task's options; each round's mixture is its "
        "own (the "
        "task's examples and the labels)");
  }
  const auto [lo, hi] = o.get_int_range("lengths");
  const int64_t step = o.get_int("length_step") > 0 ? o.get_int("length_step") : hi - lo + 1;
  const auto voters = o.get_string_list("voters");
  const int64_t rounds = o.get_int("rounds");
  if (o.get_int("agree") > static_cast<int64_t>(voters.size()) + 1) {
    entry.child("agree").fail(fmt::format("{} models cannot agree among {} (1 + {} voters)",
                                          o.get_int("agree"),
                                          voters.size() + 1,
                                          voters.size()));
  }

  auto section = [&](YAML::Node& st, const char* key) {
    if (entry.child(key).defined())
      st[key] = YAML::Clone(entry.child(key).yaml());
  };
  auto model_of = [&](int64_t round, size_t lineage) {
    if (round == 0)
      return lineage == 0 ? start : voters[lineage - 1];
    return lineage == 0 ? fmt::format("{}{}", name, round)
                        : fmt::format("{}{}_v{}", name, round, lineage);
  };
  std::vector<YAML::Node> out;
  YAML::Node evals(YAML::NodeType::Sequence);
  auto add_eval = [&](const std::string& stage_name, const std::string& from) {
    YAML::Node ev;
    ev["name"] = stage_name;
    ev["kind"] = "eval";
    ev["init_from"] = from;
    section(ev, "eval");
    out.push_back(ev);
    evals.push_back(stage_name);
  };
  if (o.get_bool("eval_start"))
    add_eval(fmt::format("{}0_eval", name), start);
  YAML::Node labels(YAML::NodeType::Sequence);
  for (int64_t r = 1; r <= rounds; ++r) {
    YAML::Node label;
    const std::string label_name = fmt::format("{}{}_label", name, r);
    label["name"] = label_name;
    label["kind"] = "self_label";
    label["init_from"] = model_of(r - 1, 0);
    label["lengths"].push_back(lo + (r - 1) * step);
    label["lengths"].push_back(hi + (r - 1) * step);
    label["samples"] = o.get_int("samples");
    label["filters"] = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& f : o.get_string_list("filters"))
      label["filters"].push_back(f);
    label["batch_size"] = o.get_int("batch_size");
    if (!voters.empty()) {
      for (size_t j = 1; j <= voters.size(); ++j)
        label["voters"].push_back(model_of(r - 1, j));
      label["agree"] = o.get_int("agree");
    }
    out.push_back(label);
    labels.push_back(label_name);
    // A voter lineage's model of round r votes in round r + 1 only: the last round trains none.
    const size_t lineages = r < rounds ? voters.size() + 1 : 1;
    for (size_t j = 0; j < lineages; ++j) {
      YAML::Node tr;
      tr["name"] = model_of(r, j);
      tr["kind"] = "train";
      tr["init_from"] = model_of(r - 1, j);
      if (j > 0)
        tr["seed"] = ctx.seed + j;
      YAML::Node t = entry.child("task").defined() ? YAML::Clone(entry.child("task").yaml())
                                                   : YAML::Node(YAML::NodeType::Map);
      YAML::Node mixture(YAML::NodeType::Sequence);
      if (w < 1) {
        YAML::Node standard;
        standard["source"] = "task";
        standard["weight"] = 1 - w;
        mixture.push_back(standard);
      }
      YAML::Node self;
      self["source"] = "self";
      self["weight"] = w;
      self["from_stage"] = YAML::Clone(labels);
      mixture.push_back(self);
      t["mixture"] = mixture;
      tr["task"] = t;
      for (const char* key : {"model", "position", "train"})
        section(tr, key);
      out.push_back(tr);
    }
    add_eval(fmt::format("{}{}_eval", name, r), model_of(r, 0));
  }
  YAML::Node picture;
  picture["name"] = fmt::format("{}_rounds", name);
  picture["kind"] = "compare_stages";
  picture["stages"] = evals;
  out.push_back(picture);
  return out;
}

}  // namespace

void register_self_improve_stage(StageRegistry& r) {
  add_builtin<SelfImproveStage>(r);
  register_stage_expansion("self_improve", expand);
}

}  // namespace lengen
