// `lengen decode`: greedy-decode one query with a trained model.
#include "lengen/eval/decode.h"

#include "../cli.h"

#include "lengen/model/architecture.h"

namespace lengen::cli {
namespace {

std::string ids_text(const PositionIds& ids, size_t t) {
  std::string s;
  for (size_t l = 0; l < ids.size(); ++l) {
    s += fmt::format("{}{}", l ? "," : "", t < ids[l].size() ? std::to_string(ids[l][t]) : "-");
  }
  return s;
}

class Decode : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("decode", "greedy-decode a query with a trained model");
    c->add_option("run", run_, "run directory")->required();
    c->add_option("query", query_, "query text, e.g. 57+48")->required();
    c->add_flag("--ids", ids_, "print every token with its position IDs");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    LoadedRun r = load_run(run_, common.sets);
    const Task& task = *r.exp.task;
    Example ex = task.parse_query(query_);
    std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
    std::vector<PositionIds> ids;
    auto response = decode(r.model, task, {ex}, r.device, &ids)[0];
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), response.begin(), response.end());
    const bool ok = task.exact_match(ex, response);
    fmt::print("{}\n", task.render(all));
    fmt::print("reference: {}  ({})\n", task.render(ex.tokens), ok ? "correct" : "WRONG");
    if (ids_) {
      fmt::print("{:>4} {:>6} {:>10}\n", "t", "token", "ids");
      for (size_t t = 0; t < all.size(); ++t) {
        fmt::print("{:>4} {:>6} {:>10}{}\n",
                   t,
                   task.vocabulary().token(all[t]),
                   ids_text(ids[0], t),
                   t + 1 == all.size() ? "  (not fed back)" : "");
      }
    }
    return 0;
  }

 private:
  std::string run_, query_;
  bool ids_ = false;
};

}  // namespace

std::unique_ptr<Command> make_decode() {
  return std::make_unique<Decode>();
}
}  // namespace lengen::cli
