// `lengen logits`: the next-token logits of a trained model for a prompt, as JSON.
#include "../cli.h"

#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"

#include <nlohmann/json.hpp>

namespace lengen::cli {
namespace {

class Logits : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("logits", "next-token logits of a model for a prompt, as JSON");
    c->add_option("run", run_, "run directory")->required();
    c->add_option("prompt", text_, "query (e.g. 57+48) or raw tokens with --raw")->required();
    c->add_flag("--raw", raw_, "prompt is a raw token string (BOS included)");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    LoadedRun r = load_run(run_, common.sets);
    const Task& task = *r.exp.task;
    std::vector<int64_t> prompt;
    if (raw_) {
      prompt = task.vocabulary().encode(text_);
    } else {
      Example ex = task.parse_query(text_);
      prompt.assign(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
    }
    PositionIds pid = task.causal_position_ids(prompt, static_cast<int64_t>(prompt.size()));
    const int64_t T = static_cast<int64_t>(prompt.size());
    auto tokens = torch::tensor(prompt, torch::kInt64).view({1, T});
    auto ids = torch::empty({static_cast<int64_t>(pid.size()), 1, T}, torch::kInt64);
    for (size_t l = 0; l < pid.size(); ++l)
      ids[static_cast<int64_t>(l)][0] = torch::tensor(pid[l], torch::kInt64);
    torch::NoGradGuard ng;
    r.model->eval();
    torch::Tensor logits;
    if (r.model->arch().one_sequence()) {  // the prompt itself, read causally
      logits = r.model->forward(tokens.to(r.device), ids.to(r.device))[0][T - 1];  // [V]
    } else {
      // The first output position that predicts the response: the decoder's first step
      // (encoder_decoder) or the first slot (encoder).
      LENGEN_CHECK(!raw_,
                   "--raw: the '{}' architecture needs a query the task can parse",
                   r.model->arch().name());
      const Architecture& objective = r.model->arch();
      Batch b = objective.make_batch(task, {task.parse_query(text_)}).to(r.device);
      const int64_t first = b.mask[0].nonzero()[0][0].item<int64_t>();
      logits = objective.logits(r.model, b)[0][first];  // [V]
    }
    logits = logits.to(torch::kCPU, torch::kFloat64);
    std::vector<double> values(logits.data_ptr<double>(),
                               logits.data_ptr<double>() + logits.numel());
    std::vector<std::string> toks;
    for (int64_t t : prompt)
      toks.push_back(task.vocabulary().token(t));
    nlohmann::json j{{"prompt_tokens", toks},
                     {"position_ids", pid},
                     {"vocabulary", task.vocabulary().tokens()},
                     {"logits", values},
                     {"argmax", task.vocabulary().token(logits.argmax().item<int64_t>())}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

 private:
  std::string run_, text_;
  bool raw_ = false;
};

}  // namespace

std::unique_ptr<Command> make_logits() {
  return std::make_unique<Logits>();
}
}  // namespace lengen::cli
