// Multi-stage experiments without training runs: data mixtures (proportions, determinism, the
// exact union of fixed sets), `stages:` parsing and resolution, init_from's weight and
// optimizer rules, the attention analysis library (pre- and post-softmax, refusals).
#include "helpers.h"

#include "lengen/analysis/attention.h"
#include "lengen/experiment/experiment.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/data.h"
#include "lengen/train/trainer.h"
#include "lengen/train/weights.h"

#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

namespace fs = std::filesystem;

using namespace lengen;
using Catch::Contains;

namespace {

const char* kBase = R"(name: st
seed: 3
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 6]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: coupling, max_position: 32}]
train: {steps: 20, batch_size: 8}
eval: {samples: 10}
)";

Experiment load_yaml(const test::TempDir& tmp,
                     const std::string& text,
                     const std::string& name = "e.yaml") {
  test::write_text(tmp.file(name), text);
  return Experiment::load(tmp.file(name));
}

std::shared_ptr<const Task> task_of(const std::string& yaml) {
  return test::make_task(yaml);
}

// `text` with its one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The resolved config without its provenance (which names the file it came from).
std::string without_provenance(const std::string& yaml) {
  return yaml.substr(0, yaml.find("provenance:"));
}

}  // namespace

TEST_CASE("mixture: proportions within a binomial interval, reproducible per seed",
          "[stages][mixture]") {
  std::vector<DataSource> src{{"short", task_of("{name: addition, train_digits: [1, 3]}"), 0.7, 0},
                              {"long", task_of("{name: addition, train_digits: [9, 9]}"), 0.3, 0}};
  TrainingData a(src, 11), b(src, 11), c(src, 12);
  int64_t long_count = 0, n = 0;
  for (int64_t step = 0; step < 100; ++step) {
    std::vector<int> sa, sb;
    auto ea = a.batch(step, 100, &sa);
    auto eb = b.batch(step, 100, &sb);
    REQUIRE(sa == sb);
    for (size_t i = 0; i < ea.size(); ++i) {
      REQUIRE(ea[i].tokens == eb[i].tokens);
      // Each example follows its own source's length distribution (9-digit operands are
      // at least 20 tokens; 1-3 digits at most 12).
      CHECK((sa[i] == 1) == (ea[i].length() >= 20));
      long_count += sa[i];
      ++n;
    }
  }
  REQUIRE(n == 10000);
  // 0.3 +- 4.5 sigma, sigma = sqrt(0.3 * 0.7 / 10000) = 0.0046.
  CHECK(std::abs(static_cast<double>(long_count) / n - 0.3) < 0.021);
  // Another seed draws other examples.
  CHECK(c.batch(0, 100)[0].tokens != a.batch(0, 100)[0].tokens);
}

TEST_CASE("mixture: an unweighted mixture is the exact union of its fixed sets",
          "[stages][mixture]") {
  // Seed 004's priming: (1 - eps) N standard examples and eps N primers, eps = 0.1, N = 100.
  std::vector<DataSource> src{
      {"standard", task_of("{name: addition, train_digits: [1, 3]}"), 0, 90},
      {"primers", task_of("{name: addition, train_digits: [9, 9]}"), 0, 10}};
  TrainingData d(src, 5);
  CHECK_FALSE(d.weighted());
  std::vector<int> s;
  auto epoch = d.batch(0, 100, &s);  // one epoch = every member exactly once
  CHECK(std::count(s.begin(), s.end(), 0) == 90);
  CHECK(std::count(s.begin(), s.end(), 1) == 10);
  std::set<std::vector<int64_t>> distinct;
  for (const auto& e : epoch)
    distinct.insert(e.tokens);
  auto next = d.batch(1, 100);  // the next epoch: the same examples in another order
  std::set<std::vector<int64_t>> again;
  for (const auto& e : next)
    again.insert(e.tokens);
  CHECK(distinct == again);
  // A weighted source with a fixed set draws only members of it.
  std::vector<DataSource> w{{"a", task_of("{name: addition, train_digits: [1, 5]}"), 1.0, 7}};
  TrainingData dw(w, 5);
  std::set<std::vector<int64_t>> members;
  for (int64_t step = 0; step < 20; ++step) {
    for (const auto& e : dw.batch(step, 50))
      members.insert(e.tokens);
  }
  CHECK(members.size() <= 7);
  CHECK(members.size() >= 5);
}

TEST_CASE("mixture: one source reproduces the single-task batches exactly", "[stages][mixture]") {
  // The streams single-task runs have always used (so earlier runs and figures are unchanged):
  // online, step s samples from Rng(seed, s, 1); a fixed set is drawn from Rng(seed, 0xDA7A)
  // and visited in epochs, epoch e a Fisher-Yates permutation seeded by (seed, e, 2).
  auto t = task_of("{name: addition, train_digits: [1, 4]}");
  const uint64_t seed = 9;
  TrainingData online(t, 0, seed);
  for (int64_t step : {0, 1, 5}) {
    Rng rng(mix_seed(seed, {static_cast<uint64_t>(step), 1}));
    for (const auto& e : online.batch(step, 16))
      CHECK(e.tokens == t->sample_train(rng).tokens);
  }
  const int64_t n = 37;
  std::vector<Example> set;
  Rng draw(mix_seed(seed, {0xDA7A}));
  for (int64_t i = 0; i < n; ++i)
    set.push_back(t->sample_train(draw));
  TrainingData fixed(t, n, seed);
  for (int64_t step : {0, 1, 5}) {
    auto batch = fixed.batch(step, 16);
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t g = step * 16 + i, epoch = g / n;
      std::vector<int64_t> perm(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      Rng rng(mix_seed(seed, {static_cast<uint64_t>(epoch), 2}));
      for (int64_t j = n - 1; j > 0; --j)
        std::swap(perm[j], perm[rng.uniform_int(0, j)]);
      CHECK(batch[static_cast<size_t>(i)].tokens == set[static_cast<size_t>(perm[g % n])].tokens);
    }
  }
}

TEST_CASE("mixture: task.mixture in YAML, its errors", "[stages][mixture]") {
  test::TempDir tmp;
  std::string y = kBase;
  y = replaced(
      y,
      "task: {name: addition, train_digits: [1, 3], eval_digits: [1, 6]}",
      "task:\n  name: addition\n  train_digits: [1, 3]\n  eval_digits: [1, 6]\n  mixture:\n"
      "    - {source: standard, dataset_size: 90}\n    - {source: primers, dataset_size: 10, "
      "train_digits: [6, 6]}");
  Experiment e = load_yaml(tmp, y);
  REQUIRE(e.sources.size() == 2);
  CHECK(e.sources[0].name == "standard");
  CHECK(e.sources[1].dataset_size == 10);
  // The primers inherit the experiment's task options and change the length only.
  Rng rng(1);
  auto p = e.sources[1].task->sample_train(rng);
  CHECK(p.length() > e.sources[0].task->sample_train(rng).length());
  // The resolved config keeps the mixture; reloading it gives the same sources.
  test::write_text(tmp.file("resolved.yaml"), e.resolved_yaml());
  CHECK(Experiment::load(tmp.file("resolved.yaml")).sources.size() == 2);

  std::string partial = y;
  partial =
      replaced(partial, "{source: standard, dataset_size: 90}", "{source: standard, weight: 0.9}");
  CHECK_THROWS_WITH(load_yaml(tmp, partial, "p.yaml"),
                    Contains("p.yaml") && Contains("every mixture source a weight"));
  std::string dup = y;
  dup = replaced(dup, "source: primers", "source: standard");
  CHECK_THROWS_WITH(load_yaml(tmp, dup, "d.yaml"),
                    Contains("two mixture sources are named 'standard'"));
  std::string typo = y;
  typo = replaced(typo, "train_digits: [6, 6]", "train_digit: [6, 6]");
  CHECK_THROWS_WITH(load_yaml(tmp, typo, "t.yaml"),
                    Contains("t.yaml:") && Contains("train_digits"));
  std::string both = y + "";
  both = replaced(both,
                  "train: {steps: 20, batch_size: 8}",
                  "train: {steps: 20, batch_size: 8, dataset_size: 5}");
  CHECK_THROWS_WITH(load_yaml(tmp, both, "b.yaml"), Contains("its own dataset_size"));
}

TEST_CASE("stages: parsing, overrides and defaults", "[stages]") {
  test::TempDir tmp;
  const std::string y = std::string(kBase) + R"(stages:
  - {name: base}
  - name: tune
    init_from: base
    task: {train_digits: [1, 5]}
    train: {steps: 7, optimizer: {name: adam, lr: 0.0005}}
  - {name: final, kind: eval, eval: {samples: 3}}
)";
  Experiment e = load_yaml(tmp, y);
  REQUIRE(e.stages.size() == 3);
  CHECK(e.stages[0].kind == "train");
  CHECK(e.stages[0].init_from.empty());
  CHECK(e.stages[1].init_from == "base");
  CHECK(e.stages[1].init_from_stage);
  CHECK(e.stages[2].init_from == "tune");  // eval reads the previous stage by default
  // Overrides apply to the stage only; what it does not override is the file's.
  CHECK(e.stages[0].experiment->train.steps == 20);
  CHECK(e.stages[1].experiment->train.steps == 7);
  CHECK(e.stages[1].experiment->train.lr == Approx(0.0005));
  CHECK(e.stages[1].experiment->train.batch_size == 8);
  CHECK(e.stages[1].experiment->task->grid_axes()[0].train_hi == 5);
  CHECK(e.stages[2].experiment->eval.samples == 3);
  CHECK(e.stages[2].experiment->task->grid_axes()[0].train_hi == 3);
  CHECK(final_experiment(e).train.steps == 7);
  CHECK(final_experiment(e).eval.samples == 3);
  // config.yaml records the resolved stages; reloading it resolves to the same.
  test::write_text(tmp.file("resolved.yaml"), e.resolved_yaml());
  Experiment back = Experiment::load(tmp.file("resolved.yaml"));
  REQUIRE(back.stages.size() == 3);
  CHECK(back.stages[1].experiment->train.steps == 7);
  CHECK(back.stages[1].experiment->task->grid_axes()[0].train_hi == 5);
  CHECK(back.stages[2].init_from == "tune");
  CHECK(without_provenance(back.resolved_yaml()) == without_provenance(e.resolved_yaml()));
}

TEST_CASE("stage context: what a plugin sees is the stage's resolved experiment", "[stages]") {
  test::TempDir tmp;
  const std::string y = std::string(kBase) + R"(eval: {samples: 10, seed: 77}
stages:
  - {name: base}
  - name: wide
    init_from: base
    seed: 5
    model: {d_ff: 48}
)";
  Experiment e = load_yaml(tmp, replaced(y, "eval: {samples: 10}\n", ""), "ctx.yaml");
  REQUIRE(e.stages.size() == 2);
  const std::string run = tmp.file("run");
  StageContext first(e.stages, 0, run, false);
  StageContext ctx(e.stages, 1, run, false);
  CHECK(first.name() == "base");
  CHECK(ctx.name() == "wide");
  CHECK(ctx.file() == tmp.file("ctx.yaml"));
  // The stage's overrides, not the file's: its seed and its model section.
  CHECK(first.seed() == 3);
  CHECK(ctx.seed() == 5);
  CHECK(ctx.eval_seed() == 77);
  CHECK(first.model_config().d_ff == 32);
  CHECK(ctx.model_config().d_ff == 48);
  CHECK(ctx.model_config().d_model == 16);
  CHECK(first.init_from().empty());
  CHECK(ctx.init_from() == "base");
  CHECK(&ctx.task() == ctx.experiment().task.get());
  CHECK(ctx.dir() == RunDir(run).stage("wide").str());
  CHECK(fs::is_directory(ctx.dir()));
  CHECK(ctx.folder().str() == ctx.dir());
  CHECK(ctx.run_dir() == run);
  CHECK_FALSE(ctx.resume());
  // build_model is the stage's model, seeded as the experiment builds it.
  Transformer a = ctx.build_model(torch::kCPU), b = ctx.experiment().build_model(torch::kCPU);
  CHECK(a->named_parameters()["blocks.0.ff.down.weight"].size(1) == 48);
  for (const auto& p : a->named_parameters()) {
    CHECK(torch::equal(p.value(), b->named_parameters()[p.key()]));
  }
  // fail() names the file, the line of the stage's entry and the message.
  CHECK_THROWS_WITH(ctx.fail("this stage needs X"),
                    Contains("ctx.yaml:10:") && Contains("this stage needs X"));
}

TEST_CASE("stages: errors name the file, the key and what was expected", "[stages]") {
  test::TempDir tmp;
  auto fails = [&](const std::string& stages, const std::string& what) {
    INFO(stages);
    CHECK_THROWS_WITH(load_yaml(tmp, std::string(kBase) + "stages:\n" + stages, "bad.yaml"),
                      Contains("bad.yaml") && Contains(what));
  };
  fails("  - {name: a, kind: trian}\n", "did you mean 'train'");
  fails("  - {name: a, kind: train, stepz: 3}\n", "stepz");
  fails("  - {name: a}\n  - {name: a}\n", "two stages are named 'a'");
  fails("  - {name: a, init_from: b}\n  - {name: b}\n", "runs after it");
  fails("  - {name: a, init_from: a}\n", "as itself");
  fails("  - {name: a, train: {steps: 0}}\n", "train.steps must be >= 1");
  fails("  - {name: a/b}\n", "cannot name a folder");
  fails("  - {name: a, new_parameters: maybe, init_from: x}\n", "must be one of error, init");
  fails("  - {name: a, init_optimizer: true}\n", "no init_from");
  fails("  - {kind: train}\n", "needs a name");
}

TEST_CASE("stages: init_from loads by name; new, dropped and mis-shaped parameters",
          "[stages][init]") {
  test::TempDir tmp;
  auto model_of = [&](const std::string& position, int64_t d_model) {
    std::string y = kBase;
    y = replaced(y, "position: [{name: coupling, max_position: 32}]", "position: " + position);
    y = replaced(y, "d_model: 16", fmt::format("d_model: {}", d_model));
    return load_yaml(tmp, y).build_model(torch::kCPU);
  };
  Transformer plain = model_of("[{name: coupling, max_position: 32}]", 16);
  const std::string ckpt = tmp.file("plain.safetensors");
  save_safetensors(ckpt, named_weights(plain), {{"step", "20"}});

  // Same model: every tensor copied.
  Transformer same = model_of("[{name: coupling, max_position: 32}]", 16);
  CHECK(load_weights_by_name(same, ckpt, {}).empty());
  for (auto& [n, p] : named_weights(same)) {
    for (auto& [m, q] : named_weights(plain)) {
      if (n == m)
        CHECK(torch::equal(p, q));
    }
  }
  // A learned absolute embedding added in the later stage: an error unless new_parameters: init.
  Transformer grown =
      model_of("[{name: coupling, max_position: 32}, {name: ape, max_position: 64}]", 16);
  CHECK_THROWS_WITH(load_weights_by_name(grown, ckpt, {}),
                    Contains("is new") && Contains("new_parameters: init"));
  auto fresh = load_weights_by_name(grown, ckpt, InitRules{true, false});
  REQUIRE(!fresh.empty());
  for (const auto& n : fresh)
    CHECK_THAT(n, Contains("position"));
  // The other way: the checkpoint has a parameter the model lacks.
  const std::string big = tmp.file("grown.safetensors");
  save_safetensors(big, named_weights(grown), {{"step", "20"}});
  Transformer shrunk = model_of("[{name: coupling, max_position: 32}]", 16);
  CHECK_THROWS_WITH(load_weights_by_name(shrunk, big, {}),
                    Contains("not in this model") && Contains("dropped_parameters"));
  CHECK(load_weights_by_name(shrunk, big, InitRules{false, true}).empty());
  // Another width: every mismatch names the parameter and both shapes.
  Transformer wide = model_of("[{name: coupling, max_position: 32}]", 32);
  CHECK_THROWS_WITH(
      load_weights_by_name(wide, ckpt, {}),
      Contains("tok_emb.weight") && Contains("[") && Contains("but the checkpoint has"));
}

TEST_CASE("stages: init_optimizer takes Adam's moments and step from the checkpoint",
          "[stages][init]") {
  test::TempDir tmp;
  Experiment e = load_yaml(tmp, kBase);
  Transformer a = e.build_model(torch::kCPU);
  fs::create_directories(tmp.file("a") + "/checkpoints");
  fs::create_directories(tmp.file("b") + "/checkpoints");
  Trainer ta(e.train, e.seed, *e.task, a, torch::kCPU, tmp.file("a"));
  for (int64_t s = 0; s < 3; ++s)
    ta.step(ta.batches_for_step(s), s);
  ta.save_checkpoint(3);
  const std::string ckpt = ta.latest_checkpoint();
  Transformer b = e.build_model(torch::kCPU);
  Trainer tb(e.train, e.seed, *e.task, b, torch::kCPU, tmp.file("b"));
  tb.load_optimizer_state(ckpt);
  tb.save_checkpoint(0);
  auto fa = load_safetensors(ckpt), fb = load_safetensors(tb.latest_checkpoint());
  int64_t moments = 0;
  for (const auto& [name, t] : fa.tensors) {
    if (name.rfind("optimizer.", 0) != 0)
      continue;
    ++moments;
    const torch::Tensor* other = fb.find(name);
    REQUIRE(other != nullptr);
    CHECK(torch::equal(t, *other));
    CHECK(t.abs().sum().item<double>() > 0);  // three steps left real moments
  }
  CHECK(moments == 2 * static_cast<int64_t>(named_weights(a).size()));
}

TEST_CASE("analysis: pre-softmax scores are what the attention weights are the softmax of",
          "[stages][analysis]") {
  test::TempDir tmp;
  Experiment e = load_yaml(tmp, kBase);
  Transformer m = e.build_model(torch::kCPU);
  auto samples = cell_samples(*e.task, GridCell{{"digits", 3}}, 1, 7);
  AttentionRequest post, pre;
  pre.pre_softmax = true;
  auto w = mean_attention(m, *e.task, samples, torch::kCPU, post);
  auto s = mean_attention(m, *e.task, samples, torch::kCPU, pre);
  REQUIRE(w.maps.size() == s.maps.size());
  REQUIRE(w.maps.size() == 2);  // one layer x two heads
  for (size_t i = 0; i < w.maps.size(); ++i) {
    CHECK(test::max_abs_diff(torch::softmax(s.maps[i].mean, -1), w.maps[i].mean) < 1e-6);
    CHECK(std::isinf(s.maps[i].mean[0][1].item<double>()));  // causal: the first query sees one key
  }
  // Constant keys: over one sample every key is its own; over many, the keys where all agree.
  for (const auto& map : w.maps) {
    CHECK(map.constant_keys == std::vector<uint8_t>(map.keys.size(), 1));
  }
  auto many = cell_samples(*e.task, GridCell{{"digits", 3}}, 64, 7);
  auto wm = mean_attention(m, *e.task, many, torch::kCPU, post);
  std::vector<uint8_t> want(wm.maps[0].keys.size(), 1);
  for (const auto& ex : many) {
    for (size_t t = 0; t < want.size(); ++t)
      want[t] &= ex.tokens[t] == many[0].tokens[t] ? 1 : 0;
  }
  CHECK(wm.maps[0].constant_keys == want);
  CHECK(std::count(want.begin(), want.end(), 0) >= 6);  // the operands' digits vary
  CHECK(want[0] == 1);                                  // BOS is the same in every sample
  // Samples of different lengths cannot be averaged.
  auto mixed = cell_samples(*e.task, GridCell{{"digits", 2}}, 1, 7);
  mixed.push_back(samples[0]);
  CHECK_THROWS_WITH(mean_attention(m, *e.task, mixed, torch::kCPU, post), Contains("one length"));
  AttentionRequest correct;
  correct.correct_only = true;
  // An untrained model answers nothing: no maps, and the number offered, for the caller to say why.
  auto none = mean_attention(m, *e.task, samples, torch::kCPU, correct);
  CHECK(none.maps.empty());
  CHECK(none.samples == 0);
  CHECK(none.drawn == 1);
}

TEST_CASE(
    "self-labelled examples: written and read back with the task's causal IDs; errors name file "
    "and line",
    "[stages][self_label]") {
  test::TempDir tmp;
  auto task = task_of("{name: addition, train_digits: [1, 4], eval_digits: [1, 6]}");
  Rng rng(7);
  std::vector<Example> written;
  for (int i = 0; i < 5; ++i) {
    Example ex = task->sample_train(rng);
    // A label is the model's answer: keep the prompt, replace the response (here a wrong one).
    if (i == 2) {
      for (int64_t t = ex.prompt_length; t + 1 < ex.length(); ++t)
        ex.tokens[static_cast<size_t>(t)] = 2;  // "0"
    }
    written.push_back(ex);
  }
  const std::string path = tmp.file("labels.jsonl");
  write_labelled_examples(path, written, *task);
  const auto back = read_labelled_examples(path, *task);
  REQUIRE(back.size() == written.size());
  for (size_t i = 0; i < back.size(); ++i) {
    INFO(i);
    CHECK(back[i].tokens == written[i].tokens);
    CHECK(back[i].prompt_length == written[i].prompt_length);
    // The IDs decoding gives them; for a correct example they equal the task's own.
    CHECK(back[i].position_ids ==
          task->causal_position_ids(written[i].tokens, written[i].prompt_length));
    if (i != 2)
      CHECK(back[i].position_ids == written[i].position_ids);
    for (int64_t t = 0; t < back[i].length(); ++t) {
      CHECK(back[i].loss_mask[static_cast<size_t>(t)] == (t >= back[i].prompt_length ? 1 : 0));
    }
  }
  CHECK_THAT(test::read_text(path), Contains("\"text\":"));
  // A batch of them trains like any fixed set: the union of a mixture includes every label.
  DataSource labels;
  labels.name = "labels";
  labels.task = task;
  labels.examples = back;
  DataSource standard;
  standard.name = "standard";
  standard.task = task;
  standard.dataset_size = 3;
  TrainingData data({standard, labels}, 1);
  CHECK(data.sources()[1].dataset_size == 5);
  std::vector<int> from;
  auto batch = data.batch(0, 8, &from);
  CHECK(std::count(from.begin(), from.end(), 1) == 5);

  test::write_text(tmp.file("bad.jsonl"), test::read_text(path) + "{\"tokens\": [1, 2]}\n");
  CHECK_THROWS_WITH(read_labelled_examples(tmp.file("bad.jsonl"), *task),
                    Contains("bad.jsonl:6") && Contains("prompt_length"));
  test::write_text(tmp.file("vocab.jsonl"), "{\"tokens\": [1, 99, 1], \"prompt_length\": 1}\n");
  CHECK_THROWS_WITH(read_labelled_examples(tmp.file("vocab.jsonl"), *task),
                    Contains("vocab.jsonl:1") && Contains("outside the task's vocabulary"));
  CHECK_THROWS_WITH(read_labelled_examples(tmp.file("none.jsonl"), *task), Contains("none.jsonl"));
  // Found by the labels fuzz target: a token too large for an int64 (JSON keeps it as a float),
  // whose conversion was undefined behaviour; and fractional ids.
  test::write_text(tmp.file("huge.jsonl"),
                   "{\"tokens\": [1, 688888888888888888888888888888, 1], \"prompt_length\": 1}\n");
  CHECK_THROWS_WITH(
      read_labelled_examples(tmp.file("huge.jsonl"), *task),
      Contains("huge.jsonl:1: token 6.888888888888889e+29 is not a token id (an integer)"));
  test::write_text(tmp.file("frac.jsonl"), "{\"tokens\": [1, 3.4, 1], \"prompt_length\": 1.5}\n");
  CHECK_THROWS_WITH(read_labelled_examples(tmp.file("frac.jsonl"), *task),
                    Contains("token 3.4 is not a token id"));
  test::write_text(tmp.file("plen.jsonl"), "{\"tokens\": [1, 2, 1], \"prompt_length\": 1e40}\n");
  CHECK_THROWS_WITH(read_labelled_examples(tmp.file("plen.jsonl"), *task),
                    Contains("prompt_length 1e+40 is not an integer"));
}

TEST_CASE("self_label: from_stage sources and their errors", "[stages][self_label]") {
  test::TempDir tmp;
  std::string y = std::string(kBase) + R"(stages:
  - {name: base}
  - {name: label1, kind: self_label, lengths: [4, 5], samples: 10}
  - name: round1
    init_from: base
    task:
      mixture:
        - {source: standard, dataset_size: 50}
        - {source: r1, from_stage: label1}
)";
  Experiment e = load_yaml(tmp, y);
  REQUIRE(e.stages.size() == 3);
  const auto& sources = e.stages[2].experiment->sources;
  REQUIRE(sources.size() == 2);
  CHECK(sources[1].from_stages == std::vector<std::string>{"label1"});
  // Training data cannot be built before the labelling stage has run.
  CHECK_THROWS_WITH(
      e.stages[2].experiment->training_data(tmp.file("run")),
      Contains("'r1'") && Contains("stage 'label1'") && Contains("must run before this one"));
  CHECK_THROWS_WITH(
      load_yaml(tmp,
                replaced(y, "from_stage: label1}", "from_stage: label1, train_digits: [2, 2]}"),
                "o.yaml"),
      Contains("o.yaml") && Contains("not 'train_digits'"));
  CHECK_THROWS_WITH(load_yaml(tmp, replaced(y, "lengths: [4, 5], ", ""), "l.yaml"),
                    Contains("l.yaml") && Contains("lengths"));
  CHECK_THROWS_WITH(
      load_yaml(tmp,
                replaced(y, "[4, 5], samples: 10}", "[4, 5], samples: 10, filters: [vote]}"),
                "f.yaml"),
      Contains("f.yaml") && Contains("length"));
}

TEST_CASE("self_improve: rounds expand into label, train and eval stages", "[stages][self_label]") {
  test::TempDir tmp;
  std::string y = std::string(kBase) + R"(stages:
  - {name: base}
  - {name: base2, seed: 9}
  - name: si
    kind: self_improve
    rounds: 3
    lengths: [4, 5]
    samples: 40
    voters: [base2]
    train: {steps: 7}
    eval: {samples: 6}
)";
  Experiment e = load_yaml(tmp, y);
  std::vector<std::string> names, kinds, from;
  for (const auto& st : e.stages) {
    names.push_back(st.name);
    kinds.push_back(st.kind);
    from.push_back(st.init_from);
  }
  CHECK(names == std::vector<std::string>{"base",
                                          "base2",
                                          "si0_eval",
                                          "si1_label",
                                          "si1",
                                          "si1_v1",
                                          "si1_eval",
                                          "si2_label",
                                          "si2",
                                          "si2_v1",
                                          "si2_eval",
                                          "si3_label",
                                          "si3",
                                          "si3_eval",
                                          "si_rounds"});
  CHECK(kinds[3] == "self_label");
  CHECK(kinds[4] == "train");
  CHECK(kinds.back() == "compare_stages");
  // The rounds start from the previous stage (base2, the entry gives no init_from), each
  // lineage goes on from its own previous round, and every label stage asks the round's model.
  // The voter lineage trains in every round but the last, where nothing would ask its model.
  CHECK(from == std::vector<std::string>{"",
                                         "",
                                         "base2",
                                         "base2",
                                         "base2",
                                         "base2",
                                         "si1",
                                         "si1",
                                         "si1",
                                         "si1_v1",
                                         "si2",
                                         "si2",
                                         "si2",
                                         "si3",
                                         "si3_eval"});
  // Query lengths move by hi - lo + 1 per round; the voters are the other lineage's models.
  CHECK(e.stages[3].options.get_int_range("lengths") == std::pair<int64_t, int64_t>{4, 5});
  CHECK(e.stages[7].options.get_int_range("lengths") == std::pair<int64_t, int64_t>{6, 7});
  CHECK(e.stages[11].options.get_int_range("lengths") == std::pair<int64_t, int64_t>{8, 9});
  CHECK(e.stages[7].options.get_string_list("voters") == std::vector<std::string>{"si1_v1"});
  CHECK(e.stages[7].options.get_int("samples") == 40);
  // Each round trains on the task's examples and every round's labels so far, half and half.
  const auto& src = e.stages[8].experiment->sources;
  REQUIRE(src.size() == 2);
  CHECK(src[0].from_stages.empty());
  CHECK(src[0].weight == 0.5);
  CHECK(src[1].from_stages == std::vector<std::string>{"si1_label", "si2_label"});
  CHECK(e.stages[8].experiment->train.steps == 7);
  CHECK(e.stages[0].experiment->train.steps == 20);
  // The voter lineage trains with seed + 1 (of the file's seed, 3), base2 with its own 9.
  CHECK(e.stages[1].experiment->seed == 9);
  CHECK(e.stages[5].experiment->seed == 4);
  CHECK(e.stages[4].experiment->seed == 3);
  CHECK(e.stages[6].experiment->eval.samples == 6);
  CHECK(e.stages.back().options.get_string_list("stages") ==
        std::vector<std::string>{"si0_eval", "si1_eval", "si2_eval", "si3_eval"});
  // The resolved config lists the stages written out; loading it gives the same stages.
  test::write_text(tmp.file("resolved.yaml"), e.resolved_yaml());
  Experiment again = Experiment::load(tmp.file("resolved.yaml"));
  REQUIRE(again.stages.size() == e.stages.size());
  CHECK(again.stages[5].experiment->seed == 4);
  CHECK(without_provenance(again.resolved_yaml()) == without_provenance(e.resolved_yaml()));

  // length_step, self_weight 1 (labels only), no evaluation of the start.
  Experiment f = load_yaml(
      tmp,
      replaced(
          replaced(y,
                   "samples: 40",
                   "samples: 40\n    length_step: 1\n    self_weight: 1\n    eval_start: false"),
          "voters: [base2]",
          "init_from: base"),
      "f.yaml");
  CHECK(f.stages[2].name == "si1_label");
  CHECK(f.stages[2].init_from == "base");
  CHECK(f.stages[5].options.get_int_range("lengths") == std::pair<int64_t, int64_t>{5, 6});
  REQUIRE(f.stages[3].experiment->sources.size() == 1);
  CHECK(f.stages[3].experiment->sources[0].from_stages == std::vector<std::string>{"si1_label"});

  // Errors name the file and the key.
  CHECK_THROWS_WITH(load_yaml(tmp, replaced(y, "rounds: 3", "rounds: 0"), "r.yaml"),
                    Contains("r.yaml") && Contains("rounds"));
  CHECK_THROWS_WITH(load_yaml(tmp, replaced(y, "rounds: 3", "rounds: 3\n    round: 2"), "k.yaml"),
                    Contains("k.yaml") && Contains("'round'"));
  CHECK_THROWS_WITH(
      load_yaml(tmp, replaced(y, "train: {steps: 7}", "task: {mixture: []}"), "m.yaml"),
      Contains("m.yaml") && Contains("mixture is its own"));
  CHECK_THROWS_WITH(
      load_yaml(tmp, replaced(y, "voters: [base2]", "voters: [base2]\n    agree: 3"), "a.yaml"),
      Contains("a.yaml") && Contains("cannot agree among 2"));
  CHECK_THROWS_WITH(
      load_yaml(
          tmp,
          replaced(replaced(y, "{name: base2", "{name: si1"), "voters: [base2]", "voters: [si1]"),
          "n.yaml"),
      Contains("n.yaml") && Contains("two stages are named 'si1'"));
}
