// Contract of the model's variation points, run over EVERY registered norm and activation:
// what a new one must satisfy to be selected by `model.norm` / `model.activation`. The
// built-ins' formulas are checked one by one in test/unit/model/test_model.cpp.
#include "helpers.h"

#include "lengen/model/transformer.h"

using namespace lengen;
using Schemes = std::vector<std::shared_ptr<PositionScheme>>;

namespace {

// A 2-layer decoder with `norm` in every place it goes (pre and post each residual, final)
// and `activation` in the feed-forward, float64.
Transformer decoder(const std::string& norm, const std::string& activation) {
  ModelConfig c;
  c.layers = 2;
  c.heads = 2;
  c.d_model = 16;
  c.d_ff = 24;
  c.norm = norm;
  c.norm_position = "pre_post";
  c.activation = activation;
  c.embedding_norm = true;
  SchemeContext sc{c.d_model, c.heads, c.head_dim(), c.layers, 1, ""};
  Transformer m(c, 14, Schemes{test::make_scheme("{name: sinusoidal}", sc)});
  m->to(torch::kFloat64);
  return m;
}

// Every parameter of `m` gets a finite gradient from one forward and backward pass.
void check_one_step(Transformer& m) {
  torch::manual_seed(3);
  m->train();
  auto tokens = torch::randint(0, 14, {2, 6}, torch::kInt64);
  auto ids = torch::arange(6).view({1, 1, 6}).expand({1, 2, 6});
  auto logits = m->forward(tokens, ids);  // [2, 6, 14]
  CHECK(logits.sizes() == torch::IntArrayRef({2, 6, 14}));
  logits.logsumexp(-1).mean().backward();
  for (const auto& p : m->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
}

}  // namespace

TEST_CASE("model contract: every registered norm", "[contract][model]") {
  REQUIRE(norm_registry().names().size() >= 4);
  for (const auto* entry : norm_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      CHECK(entry->spec.kind == "norm");
      CHECK(!entry->spec.summary.empty());
      torch::manual_seed(5);
      Norm norm(entry->spec.name, 8, 1e-5);
      norm->to(torch::kFloat64);
      // Its parameters are the holder's, one value per channel, so checkpoints name them
      // `<holder>.<name>` and loading by name works.
      for (const auto& p : norm->named_parameters()) {
        INFO(p.key());
        CHECK(p.key().find('.') == std::string::npos);
        CHECK(p.value().sizes() == torch::IntArrayRef({8}));
      }
      // Shape, finite values and gradients, determinism.
      auto x = torch::randn({3, 5, 8}, torch::kFloat64).requires_grad_();
      auto y = norm(x);
      CHECK(y.sizes() == x.sizes());
      CHECK(torch::equal(y, norm(x)));
      (y * torch::randn_like(y)).sum().backward();
      CHECK(torch::isfinite(x.grad()).all().item<bool>());
      for (const auto& p : norm->parameters())
        CHECK(torch::isfinite(p.grad()).all().item<bool>());
      // Each position is normalised on its own: changing one row changes no other row.
      auto x2 = x.detach().clone();
      x2[1][2].add_(torch::randn({8}, torch::kFloat64));
      auto y2 = norm(x2).detach();
      auto unchanged = torch::ones({3, 5}, torch::kBool);
      unchanged[1][2] = false;
      CHECK(test::max_abs_diff(y2.index({unchanged}), y.detach().index({unchanged})) < 1e-12);
      CHECK(test::max_abs_diff(y2[1][2], y.detach()[1][2]) > 1e-6);  // the changed row moved
      // In a model, in every place a norm goes.
      Transformer m = decoder(entry->spec.name, "gelu");
      check_one_step(m);
    }
  }
}

TEST_CASE("model contract: every registered activation", "[contract][model]") {
  REQUIRE(activation_registry().names().size() >= 4);
  for (const auto* entry : activation_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      CHECK(entry->spec.kind == "activation");
      CHECK(!entry->spec.summary.empty());
      auto act = make_activation(entry->spec.name);
      const int64_t k = act->inputs();
      CHECK((k == 1 || k == 2));
      // [..., k F] -> [..., F], elementwise over the leading dimensions, finite gradients.
      torch::manual_seed(5);
      auto up = torch::randn({3, 4, k * 6}, torch::kFloat64).requires_grad_();
      auto h = act->forward(up);
      CHECK(h.sizes() == torch::IntArrayRef({3, 4, 6}));
      CHECK(test::max_abs_diff(act->forward(up.narrow(0, 1, 1)), h.narrow(0, 1, 1)) < 1e-12);
      h.sum().backward();
      CHECK(torch::isfinite(up.grad()).all().item<bool>());
      // The feed-forward's up-projection has k inputs per hidden unit; the model trains.
      Transformer m = decoder("layernorm", entry->spec.name);
      auto params = m->named_parameters();
      REQUIRE(params.contains("blocks.0.ff.up.weight"));
      CHECK(params["blocks.0.ff.up.weight"].sizes() == torch::IntArrayRef({k * 24, 16}));
      check_one_step(m);
    }
  }
}

TEST_CASE("model contract: an unknown norm or activation is refused listing the registered ones",
          "[contract][model]") {
  CHECK_THROWS_WITH(Norm("rmsnrom", 8, 1e-5),
                    Catch::Contains("unknown norm 'rmsnrom'") &&
                        Catch::Contains("did you mean 'rmsnorm'") && Catch::Contains("layernorm"));
  CHECK_THROWS_WITH(
      make_activation("swiglue"),
      Catch::Contains("unknown activation 'swiglue'") && Catch::Contains("did you mean 'swiglu'"));
  // Through the model section: the file, the key and the choices.
  CHECK_THROWS_WITH(
      ModelConfig::from_config(load_config_string("{norm: batchnorm}", "m.yaml")),
      Catch::Contains("m.yaml") && Catch::Contains("norm") && Catch::Contains("rmsnorm"));
}
