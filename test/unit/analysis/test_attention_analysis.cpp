// The analysis layer's attention maps: a cell's samples are the same for every caller and lie
// in the cell; the mean map of a set of samples is the mean of each sample's own map, its rows
// distributions over the keys a causal decoder sees.
#include "helpers.h"

#include "lengen/analysis/attention.h"
#include "lengen/model/architecture.h"
#include "lengen/model/transformer.h"

using namespace lengen;

namespace {

Transformer tiny_decoder(const Task& task) {
  ModelConfig m;
  m.layers = 2;
  m.heads = 2;
  m.d_model = 16;
  m.d_ff = 32;
  SchemeContext sc{m.d_model, m.heads, m.head_dim(), m.layers, 1, ""};
  torch::manual_seed(3);
  std::vector<std::shared_ptr<PositionScheme>> schemes{
      test::make_scheme("{name: ape, max_position: 64}", sc)};
  Transformer model(m, task.vocabulary().size(), schemes);
  model->to(torch::kFloat64);
  model->eval();
  return model;
}

}  // namespace

TEST_CASE("analysis: a cell's samples are fixed by the seed and lie in the cell", "[analysis]") {
  auto task = test::make_task("{name: addition}");
  const auto a = cell_samples(*task, {{"digits", 4}}, 6, 1234);
  const auto b = cell_samples(*task, {{"digits", 4}}, 6, 1234);
  const auto c = cell_samples(*task, {{"digits", 4}}, 6, 99);
  REQUIRE(a.size() == 6);
  bool any_other = false;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].tokens == b[i].tokens);
    CHECK(a[i].tokens.size() == a[0].tokens.size());  // one length: a cell's samples average
    CHECK(a[i].meta.at("digits") == 4);
    any_other = any_other || a[i].tokens != c[i].tokens;
  }
  CHECK(any_other);
}

TEST_CASE("analysis: the mean map is the mean of the samples' own maps", "[analysis]") {
  auto task = test::make_task("{name: addition}");
  Transformer model = tiny_decoder(*task);
  const auto samples = cell_samples(*task, {{"digits", 3}}, 5, 1234);
  AttentionRequest req;
  const AttentionMaps maps = mean_attention(model, *task, samples, torch::kCPU, req);
  CHECK(maps.samples == 5);
  REQUIRE(maps.maps.size() == 2 * 2);  // layers x heads
  // Each sample alone, through the architecture's own batch.
  std::vector<std::vector<torch::Tensor>> alone;
  for (const auto& s : samples) {
    std::vector<torch::Tensor> attn;
    torch::NoGradGuard no_grad;
    const Batch b = model->arch().make_batch(*task, {s});
    model->arch().logits(model, b, &attn);
    alone.push_back(attn);
  }
  for (const auto& m : maps.maps) {
    INFO(m.name << " head " << m.head);
    auto sum = torch::zeros_like(m.mean);
    for (const auto& attn : alone)
      sum += attn[static_cast<size_t>(m.layer)][0][m.head].to(torch::kFloat64);
    CHECK(torch::allclose(m.mean, sum / 5.0, 1e-12, 1e-12));
    CHECK(torch::allclose(
        m.mean.sum(-1), torch::ones({m.mean.size(0)}, torch::kFloat64), 1e-9, 1e-9));
    CHECK(m.mean.triu(1).abs().max().item<double>() == 0.0);  // causal
  }
}
