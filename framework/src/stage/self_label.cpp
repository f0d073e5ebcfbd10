// The self_label stage: one round of self-improvement (Lee et al. 2025, "Self-Improving
// Transformers Overcome Easy-to-Hard and Length Generalization Challenges"). The previous
// stage's model answers queries of the lengths asked for by greedy decoding; the answers that
// pass the filters become training examples (RUN/stages/<name>/labels.jsonl) that a later
// train stage reads as a mixture source (`from_stage: <name>`). The task's own answers are
// never used for the labels; they only measure how many kept labels are right (summary.json).
#include "builtin.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/rng.h"
#include "lengen/eval/decode.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/stage/stage.h"
#include "lengen/train/data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

namespace fs = std::filesystem;

namespace lengen {

namespace {

class SelfLabelStage : public Stage {
 public:
  static ComponentSpec spec() {
    using O = OptionSpec;
    return {
        "stage",
        "self_label",
        "self-improvement round (Lee et al. 2025): init_from's model (default: the previous "
        "stage's) labels "
        "new queries by greedy decoding; the labels that pass the filters go to labels.jsonl for a "
        "later "
        "stage's mixture source `from_stage: <this stage>`",
        {O::int_list("lengths",
                     "[lo, hi]: query lengths on the task's first grid axis (e.g. digits), each "
                     "query's uniform in the range")
             .at_least(1),
         O::integer("samples", "queries to label").with_default(int64_t{1000}).at_least(1),
         O::string_list("filters",
                        "length: keep a label only if its response has exactly the length the "
                        "query fixes (padded formats; EOS included). A label that does not end "
                        "in EOS is always dropped")
             .with_default(std::vector<std::string>{"length"})
             .one_of({"length"}),
         O::integer("batch_size", "queries decoded at once").with_default(int64_t{256}).at_least(1),
         O::string_list(
             "voters",
             "majority vote: more models (earlier stages or run directories) that answer "
             "the same queries; a query keeps the most common answer among those that pass "
             "the filters, if at least `agree` of the 1 + voters models gave it")
             .with_default(std::vector<std::string>{}),
         O::integer("agree",
                    "models that must give the kept answer (default: a majority of 1 + voters)")
             .with_default(int64_t{0})
             .at_least(0)}};
  }

  SelfLabelStage(const Options& o, const StageInfo& info)
      : lengths_(o.get_int_range("lengths")),
        samples_(o.get_int("samples")),
        batch_size_(o.get_int("batch_size")),
        voters_(o.get_string_list("voters")),
        agree_(o.get_int("agree")),
        name_(info.name) {
    for (const auto& f : o.get_string_list("filters")) {
      length_filter_ = length_filter_ || f == "length";
    }
    const int64_t models = 1 + static_cast<int64_t>(voters_.size());
    if (agree_ == 0)
      agree_ = models / 2 + 1;
    if (agree_ > models) {
      o.fail(
          "agree",
          fmt::format(
              "{} models cannot agree among {} (1 + {} voters)", agree_, models, voters_.size()));
    }
  }

  void run(StageContext& ctx) override {
    const Task& task = ctx.task();
    if (ctx.spec().init_from.empty()) {
      ctx.spec().node.fail(fmt::format(
          "self_label stage '{}' has no model to label with: give init_from (an earlier "
          "stage or a run directory)",
          name_));
    }
    const auto axes = task.grid_axes();
    LENGEN_CHECK(!axes.empty(), "self_label: the task has no grid axis to draw query lengths on");
    const std::string axis = axes.front().name;
    std::vector<Transformer> models{ctx.load_model()};
    for (const auto& v : voters_)
      models.push_back(ctx.load_model_from(v));
    for (auto& m : models)
      m->eval();
    const std::vector<Example> queries = draw_queries(ctx.experiment().seed, task, axis);

    std::map<int64_t, Count> per_length;
    Count all;
    std::vector<Example> kept;
    auto log = logger("stage");
    for (size_t from = 0; from < queries.size(); from += static_cast<size_t>(batch_size_)) {
      const size_t to = std::min(queries.size(), from + static_cast<size_t>(batch_size_));
      const std::vector<Example> batch(queries.begin() + static_cast<std::ptrdiff_t>(from),
                                       queries.begin() + static_cast<std::ptrdiff_t>(to));
      std::vector<std::vector<std::vector<int64_t>>> answers;  // [model][query] -> response
      for (auto& m : models)
        answers.push_back(decode(m, task, batch, ctx.device()));
      fault::reached("label.batch");
      for (size_t i = 0; i < batch.size(); ++i) {
        std::vector<std::vector<int64_t>> responses;  // [model]
        for (const auto& a : answers)
          responses.push_back(a[i]);
        Count& c = per_length[batch[i].meta.at(axis)];
        if (auto labelled = label(task, batch[i], responses, {&c, &all}))
          kept.push_back(std::move(*labelled));
      }
      log->info("{}: labelled {}/{} queries, kept {}", name_, to, queries.size(), all.kept);
    }

    const RunDir folder = ctx.folder();
    write_labelled_examples(folder.labels().string(), kept, task);
    write_summary(folder, axis, all, per_length);
    log->info(
        "{}: kept {} of {} labels ({} of the kept are right; the first model was right on {}) -> "
        "{}",
        name_,
        all.kept,
        all.generated,
        all.kept_correct,
        all.correct,
        folder.labels().string());
  }

 private:
  // What became of the queries, in all and per length (summary.json).
  struct Count {
    int64_t generated = 0, kept = 0, correct = 0, kept_correct = 0, no_eos = 0, wrong_length = 0,
            vote = 0;
  };

  // The queries: deterministic in (seed, stage name), each of a uniform length on `axis`.
  std::vector<Example> draw_queries(uint64_t seed,
                                    const Task& task,
                                    const std::string& axis) const {
    uint64_t name_hash = 1469598103934665603ull;
    for (char c : name_)
      name_hash = (name_hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    Rng rng(mix_seed(seed, {0x5E1F, name_hash}));
    std::vector<Example> queries;
    for (int64_t i = 0; i < samples_; ++i) {
      const int64_t n = rng.uniform_int(lengths_.first, lengths_.second);
      Example ex = task.sample_eval({{axis, n}}, rng);
      ex.meta[axis] = n;
      queries.push_back(std::move(ex));
    }
    return queries;
  }

  // 0 when `response` to the query whose prompt is `prompt` passes the filters; 1: it has no
  // EOS; 2: not the length the query fixes.
  int rejects(const Task& task,
              const std::vector<int64_t>& prompt,
              const std::vector<int64_t>& response) const {
    if (response.empty() || response.back() != task.vocabulary().eos())
      return 1;
    if (length_filter_ && static_cast<int64_t>(response.size()) != task.max_response_length(prompt))
      return 2;
    return 0;
  }

  // The label the models' `responses` to query `q` give, counted into `counts`: the most common
  // response that passes the filters (the first model's on a tie), if at least agree_ models
  // gave it; nothing otherwise.
  std::optional<Example> label(const Task& task,
                               const Example& q,
                               const std::vector<std::vector<int64_t>>& responses,
                               std::initializer_list<Count*> counts) const {
    const std::vector<int64_t> prompt(q.tokens.begin(), q.tokens.begin() + q.prompt_length);
    const std::vector<int64_t>* best = nullptr;
    int64_t best_votes = 0;
    for (const auto& r : responses) {
      if (rejects(task, prompt, r) != 0)
        continue;
      const auto votes = static_cast<int64_t>(std::count(responses.begin(), responses.end(), r));
      if (votes > best_votes) {
        best = &r;
        best_votes = votes;
      }
    }
    const bool first_correct = task.exact_match(q, responses[0]);
    for (Count* k : counts) {
      ++k->generated;
      k->correct += first_correct;
    }
    if (best == nullptr) {
      // Every answer failed: the first model's reason.
      const int why = rejects(task, prompt, responses[0]);
      for (Count* k : counts)
        (why == 1 ? k->no_eos : k->wrong_length) += 1;
      return std::nullopt;
    }
    if (best_votes < agree_) {
      for (Count* k : counts)
        ++k->vote;
      return std::nullopt;
    }
    const bool correct = task.exact_match(q, *best);
    for (Count* k : counts) {
      ++k->kept;
      k->kept_correct += correct;
    }
    Example labelled;
    labelled.tokens = prompt;
    labelled.tokens.insert(labelled.tokens.end(), best->begin(), best->end());
    labelled.prompt_length = q.prompt_length;
    return labelled;
  }

  void write_summary(const RunDir& folder,
                     const std::string& axis,
                     const Count& all,
                     const std::map<int64_t, Count>& per_length) const {
    auto counts = [](const Count& c) {
      return nlohmann::json{{"generated", c.generated},
                            {"correct", c.correct},
                            {"kept", c.kept},
                            {"kept_correct", c.kept_correct},
                            {"dropped_no_eos", c.no_eos},
                            {"dropped_length", c.wrong_length},
                            {"dropped_vote", c.vote}};
    };
    nlohmann::json summary = counts(all);
    summary["axis"] = axis;
    summary["lengths"] = {lengths_.first, lengths_.second};
    summary["filters"] =
        length_filter_ ? std::vector<std::string>{"length"} : std::vector<std::string>{};
    summary["models"] = 1 + voters_.size();
    summary["agree"] = agree_;
    nlohmann::json by = nlohmann::json::array();
    for (const auto& [n, c] : per_length) {
      nlohmann::json j = counts(c);
      j[axis] = n;
      by.push_back(j);
    }
    summary["per_length"] = by;
    write_file_atomic(folder.labels_summary().string(), summary.dump(2) + "\n");
  }

  std::pair<int64_t, int64_t> lengths_;
  int64_t samples_, batch_size_;
  bool length_filter_ = false;
  std::vector<std::string> voters_;
  int64_t agree_;
  std::string name_;
};

}  // namespace

void register_self_label_stage(StageRegistry& r) {
  add_builtin<SelfLabelStage>(r);
}

}  // namespace lengen
