// Loops tied to the input and adaptive looping (Fan et al. 2025): each sample of a batch loops
// its own number of times, as it would alone; at test time each sample keeps the loop whose
// output is most confident; the labeled batch counts each sample's input; config errors.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/model/batch.h"
#include "lengen/model/transformer.h"

using namespace lengen;
using Catch::Contains;

namespace {

constexpr int64_t kVocab = 9, kPad = 0;

ModelConfig looped_encoder(double per_length, int64_t offset) {
  ModelConfig c;
  c.arch = "encoder";
  c.layers = 1;
  c.heads = 2;
  c.d_model = 16;
  c.d_ff = 24;
  c.input_injection = true;
  c.loops = 2;
  c.loops_per_length = per_length;
  c.loops_offset = offset;
  return c;
}

// Two models with the same weights: `rule` has the per-sample loop rule, `fixed` loops a set
// number of times for everyone (its loops are changed with set_loops).
struct Pair {
  Transformer rule{nullptr}, fixed{nullptr};
};

Pair make_pair_of_models(const ModelConfig& rule_cfg) {
  SchemeContext sc{rule_cfg.d_model, rule_cfg.heads, rule_cfg.head_dim(), rule_cfg.layers, 1, ""};
  torch::manual_seed(11);
  Pair p;
  p.rule = Transformer(
      rule_cfg,
      kVocab,
      std::vector<std::shared_ptr<PositionScheme>>{test::make_scheme("{name: rpe_k, k: 16}", sc)});
  ModelConfig fixed_cfg = rule_cfg;
  fixed_cfg.loops_per_length = 0;
  fixed_cfg.loops_offset = 0;
  p.fixed = Transformer(
      fixed_cfg,
      kVocab,
      std::vector<std::shared_ptr<PositionScheme>>{test::make_scheme("{name: rpe_k, k: 16}", sc)});
  torch::NoGradGuard ng;
  auto dst = p.fixed->named_parameters();
  for (const auto& item : p.rule->named_parameters()) {
    dst[item.key()].copy_(item.value());
  }
  p.rule->to(torch::kFloat64);
  p.fixed->to(torch::kFloat64);
  p.rule->eval();
  p.fixed->eval();
  return p;
}

// Samples of different lengths: real tokens 1..8, the last `outputs` positions labelled.
struct Samples {
  std::vector<std::vector<int64_t>> tokens;
  int64_t outputs = 2;
};

Samples make_samples() {
  Samples s;
  torch::manual_seed(5);
  for (int64_t len : {5, 9, 3, 7, 6, 4}) {
    auto t = torch::randint(1, kVocab, {len}, torch::kInt64);
    s.tokens.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
  }
  return s;
}

// The samples from `from` to `to` padded into one input (lengths = unlabelled real tokens).
ModelInputs inputs_of(const Samples& s, size_t from, size_t to) {
  int64_t T = 0;
  for (size_t i = from; i < to; ++i)
    T = std::max<int64_t>(T, static_cast<int64_t>(s.tokens[i].size()));
  const int64_t B = static_cast<int64_t>(to - from);
  auto tokens = torch::full({B, T}, kPad, torch::kInt64);
  auto padding = torch::ones({B, T}, torch::kBool);
  auto labelled = torch::zeros({B, T}, torch::kFloat32);
  std::vector<int64_t> lengths;
  for (size_t i = from; i < to; ++i) {
    const int64_t b = static_cast<int64_t>(i - from), n = static_cast<int64_t>(s.tokens[i].size());
    for (int64_t t = 0; t < n; ++t) {
      tokens[b][t] = s.tokens[i][static_cast<size_t>(t)];
      padding[b][t] = false;
    }
    labelled.index_put_({b, torch::indexing::Slice(n - s.outputs, n)}, 1.0);
    lengths.push_back(n - s.outputs);
  }
  ModelInputs in;
  in.tokens = tokens;
  in.ids = torch::arange(T).add(1).view({1, 1, T}).expand({1, B, T}).clone().masked_fill(
      padding.unsqueeze(0), 0);
  in.padding = padding;
  in.labelled = labelled;
  in.lengths = torch::tensor(lengths, torch::kInt64);
  return in;
}

// -log p(argmax) summed over the labelled rows of one sample's logits [T, V].
double surprise(const torch::Tensor& logits, int64_t n, int64_t outputs) {
  auto rows = logits.narrow(0, n - outputs, outputs).to(torch::kFloat32);
  return (torch::logsumexp(rows, -1) - std::get<0>(rows.max(-1))).sum().item<double>();
}

}  // namespace

TEST_CASE("looping: each sample of a batch loops its own count, as it would alone",
          "[model][loops]") {
  // loops = round(0.5 n + 1), half up: the samples' unlabelled lengths 3, 7, 1, 5, 4, 2 give
  // 3 (2.5), 5 (4.5), 2 (1.5), 4 (3.5), 3, 2 loops.
  auto models = make_pair_of_models(looped_encoder(0.5, 1));
  const Samples s = make_samples();
  torch::NoGradGuard ng;
  const ModelInputs batch = inputs_of(s, 0, s.tokens.size());
  CHECK(torch::equal(models.rule->config().sample_loops(batch.lengths),
                     torch::tensor(std::vector<int64_t>{3, 5, 2, 4, 3, 2})));
  const auto together = models.rule->forward(batch);  // [B, T, V]
  const std::vector<int64_t> loops = {3, 5, 2, 4, 3, 2};
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    INFO("sample " << i);
    const int64_t n = static_cast<int64_t>(s.tokens[i].size());
    models.fixed->set_loops(loops[i]);
    const auto alone = models.fixed->forward(inputs_of(s, i, i + 1))[0];  // [n, V]
    CHECK(test::max_abs_diff(together[static_cast<int64_t>(i)].narrow(0, 0, n), alone) < 1e-9);
    // ... and not what one loop more or less gives: the count matters.
    models.fixed->set_loops(loops[i] + 1);
    CHECK(test::max_abs_diff(models.fixed->forward(inputs_of(s, i, i + 1))[0], alone) > 1e-4);
  }
  // The rows the loss reads (outputs_from) equal those rows of the full pass.
  ModelInputs tail = batch;
  tail.outputs_from = 2;
  CHECK(test::max_abs_diff(models.rule->forward(tail),
                           together.narrow(1, 2, together.size(1) - 2)) < 1e-9);
}

TEST_CASE("looping: adaptive looping keeps each sample's most confident loop", "[model][loops]") {
  auto models = make_pair_of_models(looped_encoder(0.5, 1));
  const Samples s = make_samples();
  const std::vector<int64_t> loops = {3, 5, 2, 4, 3, 2};
  const int64_t extra = 4;
  torch::NoGradGuard ng;
  const ModelInputs batch = inputs_of(s, 0, s.tokens.size());
  const auto plain = models.rule->forward(batch);
  models.rule->set_adaptive_loops(extra);
  const auto adaptive = models.rule->forward(batch);  // [B, T, V]
  std::set<int64_t> chosen_steps;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    INFO("sample " << i);
    const int64_t n = static_cast<int64_t>(s.tokens[i].size());
    // By hand: every loop from 1 to the sample's count + extra, alone; the lowest -log p(argmax)
    // over the labelled rows wins, the earliest on ties.
    int64_t best_k = 0;
    double best = 0;
    torch::Tensor best_logits;
    for (int64_t k = 1; k <= loops[i] + extra; ++k) {
      models.fixed->set_loops(k);
      const auto logits = models.fixed->forward(inputs_of(s, i, i + 1))[0];  // [n, V]
      const double score = surprise(logits, n, s.outputs);
      if (best_k == 0 || score < best) {
        best_k = k;
        best = score;
        best_logits = logits;
      }
    }
    chosen_steps.insert(best_k);
    CHECK(test::max_abs_diff(adaptive[static_cast<int64_t>(i)].narrow(0, 0, n), best_logits) <
          1e-9);
  }
  // The choice is not always the last loop nor always the sample's own count: it was made.
  CHECK(chosen_steps.size() > 1);
  CHECK(test::max_abs_diff(adaptive, plain) > 1e-4);
  // Training never adapts: the model in training mode loops each sample its own count.
  models.rule->train();
  CHECK(test::max_abs_diff(models.rule->forward(batch), plain) < 1e-9);
}

TEST_CASE("looping: the labeled batch counts each sample's unlabelled input tokens",
          "[model][loops]") {
  LabeledExample a, b;
  a.tokens = {3, 4, 5, 6, 0, 0};  // 4 real tokens, the last 2 positions slots
  a.labels = {0, 0, 0, 0, 7, 8};
  a.label_mask = {0, 0, 0, 0, 1, 1};
  a.ids = {{1, 2, 3, 4, 5, 6}};
  b.tokens = {3, 4, 2};  // labels on the input itself (Jelassi et al.'s layout)
  b.labels = {5, 6, 0};
  b.label_mask = {1, 1, 0};
  b.ids = {{1, 2, 3}};
  Batch batch = make_labeled_batch({a, b}, kPad);
  CHECK(torch::equal(batch.lengths, torch::tensor(std::vector<int64_t>{4, 1})));
  CHECK(batch.lengths.device().is_cpu());
  ModelInputs in = batch.model_inputs();
  CHECK(torch::equal(in.lengths, batch.lengths));
  CHECK(torch::equal(in.labelled, batch.mask));
}

TEST_CASE("looping: config errors name the key", "[model][loops][config]") {
  auto parse = [](const std::string& y) {
    return ModelConfig::from_config(load_config_string(y, "m.yaml"));
  };
  CHECK(parse("{arch: encoder, loops_per_length: 1.0, loops_offset: 1}").loops_per_length == 1.0);
  CHECK_THROWS_WITH(
      parse("{arch: decoder, loops_per_length: 1.0}"),
      Contains("m.yaml") && Contains("model.loops_per_length needs the whole output"));
  CHECK_THROWS_WITH(parse("{arch: encoder, loops_offset: 2}"),
                    Contains("set loops_per_length > 0"));
  CHECK_THROWS_WITH(parse("{arch: encoder, loops_per_length: -1}"), Contains("loops_per_length"));

  test::TempDir dir;
  const std::string base = R"(name: loops
task: {name: parity, train_bits: [1, 4], eval_bits: [1, 6]}
position: [nope]
train: {steps: 1, batch_size: 2, optimizer: {name: adam, lr: 0.001}}
)";
  test::write_text(dir.file("dec.yaml"),
                   base +
                       "model: {layers: 1, heads: 2, d_model: 16, d_ff: 16}\n"
                       "eval: {samples: 2, adaptive_loops: 3}\n");
  CHECK_THROWS_WITH(
      Experiment::load(dir.file("dec.yaml")),
      Contains("dec.yaml") && Contains("eval.adaptive_loops picks among whole outputs"));
  test::write_text(dir.file("enc.yaml"),
                   base +
                       "model: {arch: encoder, layers: 1, heads: 2, d_model: 16, d_ff: 16, "
                       "loops_per_length: 1}\n"
                       "eval: {samples: 2, loops: 3}\n");
  CHECK_THROWS_WITH(Experiment::load(dir.file("enc.yaml")),
                    Contains("eval.loops fixes one loop count"));
  auto ok =
      base +
      "model: {arch: encoder, layers: 1, heads: 2, d_model: 16, d_ff: 16, loops_per_length: 1}\n"
      "eval: {samples: 2, adaptive_loops: 3}\n";
  test::write_text(dir.file("ok.yaml"), ok);
  CHECK(Experiment::load(dir.file("ok.yaml")).eval.adaptive_loops == 3);
}
