// `lengen example`: the exact token / position-ID / loss layout of a task's examples (of each
// mixture source, when the task has a mixture).
#include "../cli.h"

#include "lengen/core/rng.h"
#include "lengen/stage/stage.h"
#include "lengen/train/data.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace lengen::cli {
namespace {

class ExampleCmd : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("example", "show the exact token/ID/loss layout of a task");
    c->add_option("experiment", file_, "experiment YAML file")->required();
    c->add_option("--query", query_, "render this query (e.g. 57+48)");
    c->add_option("--eval", cell_, "render evaluation samples of a cell, e.g. digits=12");
    c->add_option("--source", source_, "only this source of task.mixture");
    c->add_option("--stage",
                  stage_,
                  "the task as this stage of `stages:` sees it (its mixture; a from_stage "
                  "source shows that stage's labels from the run directory)");
    c->add_option("-n,--count", count_, "number of samples (per mixture source)");
    c->add_flag("--json", json_, "machine-readable output");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    Experiment exp = Experiment::load(file_, common.sets);
    if (!stage_.empty()) {
      std::vector<std::string> names;
      const StageSpec* found = nullptr;
      for (const auto& st : exp.stages) {
        names.push_back(st.name);
        if (st.name == stage_)
          found = &st;
      }
      LENGEN_CHECK(found != nullptr,
                   "--stage {}: no such stage in {}{}{}",
                   stage_,
                   file_,
                   did_you_mean(stage_, names),
                   names.empty() ? " (it has no stages:)" : "; stages: " + join(names));
      exp = Experiment(*found->experiment);
    }
    const Task& task = *exp.task;
    // (label, examples) groups: one per mixture source for training samples.
    std::vector<std::pair<std::string, std::vector<Example>>> groups;
    if (!query_.empty()) {
      groups.push_back({"", {task.parse_query(query_)}});
    } else if (!cell_.empty()) {
      Rng rng(mix_seed(exp.seed, {0xE4A}));
      GridCell cell = parse_cell(cell_, "--eval");
      std::vector<Example> exs;
      for (int64_t i = 0; i < count_; ++i)
        exs.push_back(task.sample_eval(cell, rng));
      groups.push_back({"", exs});
    } else if (exp.sources.empty()) {
      LENGEN_CHECK(source_.empty(), "--source {}: the task has no mixture", source_);
      Rng rng(mix_seed(exp.seed, {0xE4A}));
      std::vector<Example> exs;
      for (int64_t i = 0; i < count_; ++i)
        exs.push_back(task.sample_train(rng));
      groups.push_back({"", exs});
    } else {
      std::vector<std::string> names;
      for (const auto& s : exp.sources)
        names.push_back(s.name);
      LENGEN_CHECK(source_.empty() || std::find(names.begin(), names.end(), source_) != names.end(),
                   "--source {}: no such mixture source{}; sources: {}",
                   source_,
                   did_you_mean(source_, names),
                   join(names));
      for (size_t k = 0; k < exp.sources.size(); ++k) {
        const auto& s = exp.sources[k];
        if (!source_.empty() && s.name != source_)
          continue;
        Rng rng(mix_seed(exp.seed, {0xE4A, k}));
        std::vector<Example> exs;
        if (!s.from_stages.empty()) {
          // Self_label stages' labels, as the run wrote them (the first count_ of them).
          auto all = exp.stage_labels(s);
          groups.push_back({fmt::format("source '{}', {} labels of stage{} '{}'",
                                        s.name,
                                        all.size(),
                                        s.from_stages.size() > 1 ? "s" : "",
                                        join(s.from_stages, "', '")),
                            {all.begin(),
                             all.begin() + std::min<std::ptrdiff_t>(
                                               count_, static_cast<std::ptrdiff_t>(all.size()))}});
          continue;
        }
        for (int64_t i = 0; i < count_; ++i)
          exs.push_back(s.task->sample_train(rng));
        std::string label = fmt::format("source '{}'", s.name);
        if (s.weight > 0)
          label += fmt::format(", weight {}", s.weight);
        label += s.dataset_size > 0 ? fmt::format(", fixed set of {}", s.dataset_size) : ", online";
        groups.push_back({label, exs});
      }
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [label, examples] : groups) {
      if (!label.empty() && !json_)
        fmt::print("== {} ==\n", label);
      for (const auto& e : examples) {
        if (json_) {
          std::vector<std::string> toks;
          for (int64_t t : e.tokens)
            toks.push_back(task.vocabulary().token(t));
          nlohmann::json j{{"text", task.render(e.tokens)},
                           {"tokens", toks},
                           {"token_ids", e.tokens},
                           {"position_ids", e.position_ids},
                           {"loss_mask", e.loss_mask},
                           {"prompt_length", e.prompt_length},
                           {"meta", e.meta}};
          if (!label.empty())
            j["source"] = label;
          out.push_back(j);
          continue;
        }
        print(task, e);
      }
    }
    if (json_)
      fmt::print("{}\n", out.dump(2));
    return 0;
  }

 private:
  static void print(const Task& task, const Example& e) {
    fmt::print("{}\n", task.render(e.tokens));
    std::string row = fmt::format("{:<8}", "token");
    for (int64_t t : e.tokens)
      row += fmt::format("{:>4}", task.vocabulary().token(t));
    fmt::print("{}\n", row);
    for (size_t l = 0; l < e.position_ids.size(); ++l) {
      row = fmt::format("{:<8}", fmt::format("ids[{}]", l));
      for (int64_t v : e.position_ids[l])
        row += fmt::format("{:>4}", v);
      fmt::print("{}\n", row);
    }
    row = fmt::format("{:<8}", "loss");
    for (uint8_t m : e.loss_mask)
      row += fmt::format("{:>4}", m ? "x" : ".");
    fmt::print("{}\n(prompt: first {} tokens)\n\n", row, e.prompt_length);
  }

  std::string file_, query_, cell_, source_, stage_;
  int64_t count_ = 1;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_example() {
  return std::make_unique<ExampleCmd>();
}
}  // namespace lengen::cli
