// The evaluator: Wilson intervals, evaluation batches, decoding past the tables, the answer
// metrics and the first errors summary.json lists.
#include "helpers.h"

#include "lengen/eval/decode.h"
#include "lengen/eval/evaluator.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"
#include "lengen/train/flops.h"
#include "lengen/train/op_count.h"
#include "lengen/train/tensorboard.h"
#include "lengen/train/trainer.h"

#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#ifdef __linux__
#include <sched.h>
#endif

namespace fs = std::filesystem;

using namespace lengen;
using Catch::Contains;

// The experiment of an inline YAML file, its outputs under `dir`.
static Experiment load_experiment(const test::TempDir& dir, const std::string& yaml) {
  test::write_text(dir.file("e.yaml"), yaml);
  return Experiment::load(dir.file("e.yaml"), {"output_dir=" + dir.str()});
}

TEST_CASE("eval: Wilson score interval", "[eval]") {
  auto [lo, hi] = wilson_interval(50, 100);
  CHECK(lo == Approx(0.4038).epsilon(1e-3));
  CHECK(hi == Approx(0.5962).epsilon(1e-3));
  auto [lo1, hi1] = wilson_interval(100, 100);
  CHECK(hi1 == Approx(1.0));
  CHECK(lo1 == Approx(0.9630).epsilon(1e-3));
  auto [lo0, hi0] = wilson_interval(0, 10);
  CHECK(lo0 == 0.0);
  CHECK(hi0 == Approx(0.2775).epsilon(1e-3));
}

TEST_CASE("eval: batches hold at most batch_size sequences and batch_tokens padded tokens",
          "[eval]") {
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  const std::vector<int64_t> lengths{3, 3, 4, 5, 5, 5, 9, 20};
  // Sequences alone: runs of at most 3.
  CHECK(eval_batches(lengths, 3, 0) == Ranges{{0, 3}, {3, 6}, {6, 8}});
  // Tokens: 3 x 4 = 12 fits a cap of 16, a fourth sequence (of 5) would make 20; 3 x 5 = 15,
  // then 4 x 9 = 36; 2 x 20 = 40, and the 20-token sequence is a batch of its own.
  CHECK(eval_batches(lengths, 100, 16) == Ranges{{0, 3}, {3, 6}, {6, 7}, {7, 8}});
  CHECK(eval_batches(lengths, 100, 0) == Ranges{{0, 8}});
  CHECK(eval_batches({}, 4, 10).empty());
  // Property: in order, no gaps, every batch within both caps (or a single sequence).
  Rng rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int64_t> ls(static_cast<size_t>(rng.uniform_int(1, 40)));
    for (auto& l : ls) {
      l = rng.uniform_int(1, 30);
    }
    std::sort(ls.begin(), ls.end());
    const int64_t cap_n = rng.uniform_int(1, 12), cap_t = rng.uniform_int(0, 120);
    size_t next = 0;
    for (const auto& [b, e] : eval_batches(ls, cap_n, cap_t)) {
      REQUIRE(b == next);
      REQUIRE(e > b);
      CHECK(static_cast<int64_t>(e - b) <= cap_n);
      CHECK((cap_t == 0 || e - b == 1 || static_cast<int64_t>(e - b) * ls[e - 1] <= cap_t));
      next = e;
    }
    CHECK(next == ls.size());
  }
  CHECK_THROWS_WITH(eval_batches({2, 1}, 4, 0), Contains("ascending"));
  // eval.batch_tokens: 0 is by device and model, anything else is taken as given. On the CPU
  // the widest float32 activation per token stays within 16 MiB: 4 heads -> 1024 floats of
  // scores per token (the multi-operand -cpu model, d_model 256, d_ff 512): 4096 tokens;
  // the quickstart's (2 heads, d_model 64, d_ff 256): 512 -> 8192; a GEGLU paper-scale model
  // (16 heads, d_model 1024, d_ff 4096 per gate input): 8192 -> 512.
  ModelConfig m;
  m.heads = 4, m.d_model = 256, m.d_ff = 512;
  CHECK(eval_batch_tokens(0, torch::kCPU, m) == 4096);
  m.heads = 2, m.d_model = 64, m.d_ff = 256;
  CHECK(eval_batch_tokens(0, torch::kCPU, m) == 8192);
  m.heads = 16, m.d_model = 1024, m.d_ff = 4096, m.activation = "geglu";
  CHECK(eval_batch_tokens(0, torch::kCPU, m) == 512);
  CHECK(eval_batch_tokens(0, torch::Device(torch::kCUDA, 0), m) == kGpuEvalBatchTokens);
  CHECK(eval_batch_tokens(100, torch::Device(torch::kCUDA, 0), m) == 100);
}

TEST_CASE("eval: a decode that runs past the position tables is a wrong answer, not an error",
          "[eval]") {
  // A model that writes '7' forever: every scratchpad number grows until its coupled ID passes
  // max_position (here exactly what the references need).
  test::TempDir dir;
  Experiment exp = load_experiment(
      dir,
      "name: overflow\nseed: 0\ndtype: float64\n"
      "task: {name: addition, scratchpad: true, pad_to: answer, operands: 2, train_digits: [1, "
      "2],\n"
      "       eval_digits: [1, 2]}\n"
      "model: {layers: 1, heads: 1, d_model: 4, d_ff: 4, norm: none, activation: relu}\n"
      "position: [{name: coupling, max_position: [4, 3]}]\n");
  Transformer model = exp.build_model(torch::kCPU);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters())
      p.value().zero_();
    model->named_parameters()["tok_emb.weight"].select(1, 0).fill_(1.0);  // a constant feature
    model->named_parameters()["lm_head.weight"][exp.task->vocabulary().id("7")][0] = 1.0;
  }
  Rng rng(3);
  std::vector<Example> examples;
  for (int i = 0; i < 4; ++i)
    examples.push_back(exp.task->sample_eval({{"digits", 2}}, rng));
  std::vector<std::vector<int64_t>> out;
  REQUIRE_NOTHROW(out = decode(model, *exp.task, examples, torch::kCPU));
  for (size_t i = 0; i < examples.size(); ++i) {
    CHECK(out[i].size() == 4);  // '7' at IDs 2, 3, 4, then the fourth digit (ID 5) stops it
    CHECK_FALSE(exp.task->exact_match(examples[i], out[i]));
  }
  // The whole evaluation reports the cell as wrong instead of failing.
  EvalConfig cfg = exp.eval;
  cfg.samples = 4;
  cfg.metric = "answer";
  cfg.grid = {{"digits", {2}}};
  auto results = evaluate_grid(model, *exp.task, cfg, torch::kCPU);
  REQUIRE(results.size() == 1);
  CHECK(results[0].accuracy == 0.0);
}

TEST_CASE("eval: the answer-only metric looks at the final answer alone", "[eval]") {
  auto task = test::make_task("{name: parity, scratchpad: true, position_ids: coupled}");
  Example ex = task->parse_query("0111");  // $0111=0101$
  REQUIRE(task->render(ex.tokens) == "$0111=0101$");
  const auto& v = task->vocabulary();
  SECTION("teacher-forced: the loss mask narrows to [answer_begin, EOS)") {
    Example a = answer_only(ex);
    for (int64_t t = 0; t < a.length(); ++t)
      CHECK(a.loss_mask[t] == (t == ex.length() - 2 ? 1 : 0));
    Example bad = ex;
    bad.answer_begin = bad.length();
    CHECK_THROWS_WITH(answer_only(bad), Contains("outside the response"));
  }
  SECTION("decoded: the tokens just before the first EOS") {
    const int64_t z = v.id("0"), o = v.id("1"), e = v.eos();
    CHECK(answer_match(ex, {z, o, z, o, e}, e));
    CHECK(answer_match(ex, {o, o, o, o, e}, e));        // wrong scratchpad, right answer
    CHECK(answer_match(ex, {o, e, z, z, e}, e));        // the first EOS ends the response
    CHECK_FALSE(answer_match(ex, {z, o, z, z, e}, e));  // wrong answer
    CHECK_FALSE(answer_match(ex, {z, o, z, o}, e));     // no EOS
    CHECK_FALSE(answer_match(ex, {e}, e));              // nothing before EOS
  }
  SECTION("decoded, after a separator: exactly the tokens between the last '>' and EOS") {
    auto add = test::make_task("{name: addition, operands: 2, scratchpad: true, zero_pad: false}");
    Example a = add->parse_query("57+48");  // $57+48=0>75>501$
    REQUIRE(add->render(a.tokens) == "$57+48=0>75>501$");
    const auto& av = add->vocabulary();
    auto toks = [&](const std::string& text) {
      std::vector<int64_t> out;
      for (char c : text)
        out.push_back(av.id(std::string(1, c)));
      return out;
    };
    const int64_t sep = av.id(">"), e = av.eos();
    CHECK(answer_match(a, toks("0>75>501$"), e, sep));
    CHECK(answer_match(a, toks("0>76>501$"), e, sep));         // wrong scratchpad, right answer
    CHECK_FALSE(answer_match(a, toks("0>75>1501$"), e, sep));  // a longer number ending in 501
    CHECK(answer_match(a, toks("0>75>1501$"), e));             // (what the last-n rule would say)
    CHECK_FALSE(answer_match(a, toks("501$"), e, sep));        // no separator before it
  }
  SECTION("eval.metric is checked and described") {
    auto axes = task->grid_axes();
    EvalConfig c = EvalConfig::from_config(load_config_string("{metric: answer}", "<t>"), axes);
    CHECK(c.metric == "answer");
    CHECK_THAT(metric_description(c), Contains("final answer"));
    CHECK(c.to_yaml()["metric"].as<std::string>() == "answer");
    CHECK_THROWS_WITH(
        EvalConfig::from_config(load_config_string("{metric: tokens}", "<t>"), axes),
        Contains("response") && Contains("answer_given_scratchpad") && Contains("tokens"));
    CHECK_THAT(metric_description(c), Contains("greedy decoding"));
    EvalConfig g = EvalConfig::from_config(
        load_config_string("{metric: answer_given_scratchpad}", "<t>"), axes);
    CHECK_THAT(metric_description(g), Contains("teacher-forced"));
    CHECK_THROWS_WITH(
        EvalConfig::from_config(
            load_config_string("{metric: answer_given_scratchpad, greedy_decode: true}", "<t>"),
            axes),
        Contains("teacher-forced by definition"));
  }
}

TEST_CASE("eval: answer-only accuracy is never below whole-response accuracy", "[eval]") {
  // An untrained model gets some answers right by chance; every sample whose whole response is
  // right has its answer right, cell by cell, and the answer metric sees the chance hits.
  test::TempDir dir;
  Experiment exp = load_experiment(
      dir,
      "task: {name: parity, scratchpad: true, position_ids: coupled, train_bits: [1, 3]}\n"
      "model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}\n"
      "position: [{name: coupling, max_position: 8}]\n"
      "eval: {samples: 200, grid: {bits: [1, 3]}}\n");
  Transformer model = exp.build_model(torch::kCPU);
  auto whole = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  exp.eval.metric = "answer_given_scratchpad";
  auto answer = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  REQUIRE(whole.size() == 3);
  int64_t more = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    CHECK(answer[i].correct >= whole[i].correct);
    // Every sample of the cell with n bits has 2n + 3 tokens ($ bits = scratchpad $).
    const int64_t n = whole[i].cell.at("bits");
    CHECK(whole[i].tokens == 200 * (2 * n + 3));
    CHECK(whole[i].seconds > 0);
    more += answer[i].correct - whole[i].correct;
    // Every wrong sample is counted once at its first wrong token, a real disagreement.
    int64_t wrong = 0;
    for (const auto& [tokens, n] : whole[i].first_errors) {
      CHECK(tokens.first != tokens.second);
      CHECK(exp.task->vocabulary().contains(tokens.first));
      CHECK(exp.task->vocabulary().contains(tokens.second));
      wrong += n;
    }
    CHECK(wrong == whole[i].samples - whole[i].correct);
  }
  CHECK(more > 0);
  // The answer metric decodes whether or not greedy_decode is set (same verdicts), is never
  // below whole-response accuracy, and records for every wrong answer where its response
  // first leaves the reference: one real disagreement per wrong sample.
  exp.eval.metric = "answer";
  auto greedy = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  exp.eval.greedy_decode = true;
  auto explicit_greedy = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  for (size_t i = 0; i < greedy.size(); ++i) {
    CHECK(greedy[i].correct == explicit_greedy[i].correct);
    CHECK(greedy[i].correct >= whole[i].correct);
    int64_t wrong = 0;
    for (const auto& [tokens, n] : greedy[i].first_errors) {
      CHECK(tokens.first != tokens.second);
      wrong += n;
    }
    CHECK(wrong == greedy[i].samples - greedy[i].correct);
  }
  // summary.json lists each cell's most frequent first errors, most frequent first.
  const RunDir run(dir.str());
  write_grid_results(run, whole, {"bits"});
  std::ifstream in(run.summary());
  auto summary = nlohmann::json::parse(in);
  for (const auto& cell : summary["cells"]) {
    const auto& errs = cell["first_errors"];
    CHECK(errs.size() <= 5);
    int64_t listed = 0;
    for (size_t k = 0; k < errs.size(); ++k) {
      listed += errs[k]["samples"].get<int64_t>();
      if (k > 0) {
        CHECK(errs[k]["samples"].get<int64_t>() <= errs[k - 1]["samples"].get<int64_t>());
      }
    }
    CHECK(listed <= cell["samples"].get<int64_t>() - cell["correct"].get<int64_t>());
  }
}

TEST_CASE("eval: eval.autocast is read, written back, and leaves the CPU's verdicts alone",
          "[eval]") {
  // bfloat16 autocast is for CUDA (scripts/gpu-session.sh compares its verdicts on a card); on
  // the CPU the evaluation stays float32, sample for sample, also inside a training run's file.
  test::TempDir dir;
  Experiment exp = load_experiment(
      dir,
      "task: {name: parity, scratchpad: true, position_ids: coupled, train_bits: [1, 3]}\n"
      "model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}\n"
      "position: [{name: coupling, max_position: 8}]\n"
      "eval: {samples: 200, grid: {bits: [1, 3]}, autocast: true, metric: "
      "answer_given_scratchpad}\n");
  CHECK(exp.eval.autocast);
  CHECK(exp.eval.to_yaml()["autocast"].as<bool>());
  Transformer model = exp.build_model(torch::kCPU);
  auto with = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  exp.eval.autocast = false;
  CHECK_FALSE(exp.eval.to_yaml()["autocast"].as<bool>());
  auto without = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  REQUIRE(with.size() == without.size());
  int64_t right = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    CHECK(with[i].correct == without[i].correct);
    CHECK(with[i].first_errors == without[i].first_errors);
    right += with[i].correct;
  }
  CHECK(right > 0);  // an untrained model's chance answers: not all counts are zero
}

TEST_CASE(
    "eval: eval.examples keeps each cell's first wrong samples, then right ones, and writes them "
    "to examples.jsonl",
    "[eval]") {
  test::TempDir dir;
  Experiment exp = load_experiment(
      dir,
      "task: {name: parity, train_bits: [1, 3]}\n"
      "model: {layers: 1, heads: 2, d_model: 16, d_ff: 32, norm: none, activation: relu}\n"
      "position: [{name: nope}]\n"
      "eval: {samples: 60, grid: {bits: [1, 4]}, examples: 40}\n");
  REQUIRE(exp.eval.examples == 40);
  const size_t keep = 40;
  CHECK_THAT(metric_description(exp.eval), Contains("greedy decoding"));  // it decodes
  // A hand-set bigram model: attention and MLP zero, each token embedded one-hot, the head
  // maps '=' to '0' and a digit to '$'. It answers `$bits=0$`, right on the strings of even
  // parity (about half), so both groups fill.
  Transformer model = exp.build_model(torch::kCPU);
  const auto& v = exp.task->vocabulary();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters())
      p.value().zero_();
    auto emb = model->named_parameters()["tok_emb.weight"];
    for (int64_t t = 0; t < emb.size(0); ++t)
      emb[t][t] = 1.0;
    auto head = model->named_parameters()["lm_head.weight"];
    head[v.id("0")][v.id("=")] = 1.0;
    head[v.eos()][v.id("0")] = 1.0;
    head[v.eos()][v.id("1")] = 1.0;
  }
  // The final answer of a rendered response: the bit before its first '$' (none: "").
  auto final_bit = [](const std::string& text) {
    const size_t end = text.find('$');
    return end == std::string::npos || end == 0 ? std::string() : text.substr(end - 1, 1);
  };
  std::vector<CellResult> kept, counted;
  int64_t wrong_cells = 0, right_cells = 0;
  for (const std::string metric : {"response", "answer"}) {
    exp.eval.metric = metric;
    kept = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
    EvalConfig plain = exp.eval;
    plain.examples = 0;
    counted = evaluate_grid(model, *exp.task, plain, torch::kCPU);
    REQUIRE(kept.size() == 4);
    for (size_t i = 0; i < kept.size(); ++i) {
      const CellResult& r = kept[i];
      CHECK(r.correct == counted[i].correct);  // keeping samples changes no verdict
      CHECK(counted[i].examples.empty());
      REQUIRE(r.examples.size() == keep);
      // The wrong ones first: as many as the cell has, up to the count.
      const auto wrong = static_cast<size_t>(std::min<int64_t>(keep, r.samples - r.correct));
      wrong_cells += wrong > 0;
      right_cells += wrong < keep;
      for (size_t k = 0; k < r.examples.size(); ++k) {
        const SampleRecord& e = r.examples[k];
        CHECK(e.correct == (k >= wrong));
        // The verdict, read off the rendered texts.
        if (metric == "response") {
          CHECK(e.correct == (e.response == e.reference));
        } else {
          CHECK(e.correct == (!final_bit(e.response).empty() &&
                              final_bit(e.response) == final_bit(e.reference)));
        }
        // $bits=parity$: the query has the cell's bit count, the features the task's.
        const int64_t n = r.cell.at("bits");
        CHECK(e.response == "0$");
        CHECK(e.prompt.size() == static_cast<size_t>(n + 2));
        CHECK(e.prompt.front() == '$');
        CHECK(e.reference.size() == 2);
        CHECK(e.reference.back() == '$');
        REQUIRE(e.features.count("bits"));
        CHECK(e.features.at("bits") == n);
      }
    }
  }
  CHECK(wrong_cells > 0);  // the test sees both groups
  CHECK(right_cells > 0);
  // The same seed keeps the same samples.
  auto again = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  for (size_t i = 0; i < kept.size(); ++i) {
    for (size_t k = 0; k < kept[i].examples.size(); ++k) {
      CHECK(again[i].examples[k].prompt == kept[i].examples[k].prompt);
    }
  }
  // examples.jsonl: one sample a line, its cell first; an evaluation without examples (or
  // without a breakdown) leaves no file of an earlier one behind.
  const RunDir run(dir.str());
  write_grid_results(run, kept, {"bits"});
  std::ifstream in(run.examples());
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    const CellResult& r = kept[lines / keep];
    const SampleRecord& e = r.examples[lines % keep];
    CHECK(j.begin().key() == "cell");
    CHECK(j["cell"]["bits"] == r.cell.at("bits"));
    CHECK(j["correct"] == e.correct);
    CHECK(j["prompt"] == e.prompt);
    CHECK(j["reference"] == e.reference);
    CHECK(j["response"] == e.response);
    CHECK(j["features"]["bits"] == r.cell.at("bits"));
    ++lines;
  }
  CHECK(lines == 4 * keep);
  test::write_text(run.breakdown().string(), "an earlier evaluation's\n");
  write_grid_results(run, counted, {"bits"});
  CHECK_FALSE(fs::exists(run.examples()));
  CHECK_FALSE(fs::exists(run.breakdown()));
  CHECK(fs::exists(run.summary()));
  // The option is checked like every other.
  CHECK_THROWS_WITH(
      EvalConfig::from_config(load_config_string("{examples: -1}", "<t>"), exp.task->grid_axes()),
      Contains("examples"));
}
