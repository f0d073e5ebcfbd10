// Model: norms, activations, feed-forward variants, head dimension, weight tying, parameter names.
#include "helpers.h"

#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"
#include "lengen/position/memo.h"
#include "lengen/train/op_count.h"

#include <functional>

using namespace lengen;
using Schemes = std::vector<std::shared_ptr<PositionScheme>>;

namespace {

Transformer make_model(ModelConfig cfg, int64_t vocab = 14) {
  SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.layers, 1, ""};
  return Transformer(cfg, vocab, Schemes{test::make_scheme("nope", sc)});
}

ModelConfig base() {
  ModelConfig c;
  c.layers = 2;
  c.heads = 4;
  c.d_model = 32;
  c.d_ff = 48;
  return c;
}

}  // namespace

TEST_CASE("model: RMSNorm and LayerNorm", "[model]") {
  torch::manual_seed(7);
  auto x = torch::randn({3, 5, 8}, torch::kFloat64);
  const double eps = 1e-6;
  Norm rms("rmsnorm", 8, eps);
  rms->to(torch::kFloat64);
  auto y = rms(x);
  // Every row has root-mean-square ms / (ms + eps) exactly (1 up to eps), whatever its scale.
  auto ms = x.pow(2).mean(-1);
  CHECK(test::max_abs_diff(y.pow(2).mean(-1), ms / (ms + eps)) < 1e-12);
  CHECK(rms->named_parameters().size() == 1);
  Norm ln("layernorm", 8, 1e-6);
  ln->to(torch::kFloat64);
  auto z = ln(x);
  CHECK(z.mean(-1).abs().max().item<double>() < 1e-9);
  CHECK(ln->named_parameters().size() == 2);
  // TAOTP's LayerNorm: epsilon added to the population standard deviation.
  Norm book("taotp_layernorm", 8, 0.5);
  book->to(torch::kFloat64);
  auto centred = x - x.mean(-1, true);
  auto expect = centred / (x.var(-1, /*unbiased=*/false, /*keepdim=*/true).sqrt() + 0.5);
  CHECK(test::max_abs_diff(book(x), expect) < 1e-12);
}

TEST_CASE("model: norm none is the identity and the activations are their formulas", "[model]") {
  torch::manual_seed(9);
  auto x = torch::randn({3, 5, 8}, torch::kFloat64);
  Norm none("none", 8, 1e-5);
  CHECK(none->parameters().empty());
  CHECK(torch::equal(none(x), x));
  auto relu = make_activation("relu"), gelu = make_activation("gelu");
  CHECK(torch::equal(relu->forward(x), x.clamp_min(0)));
  const double r2 = std::sqrt(2.0);
  CHECK(test::max_abs_diff(gelu->forward(x), 0.5 * x * (1 + torch::erf(x / r2))) < 1e-12);
  // Gated: the first half of the input is the gate, the second the linear part.
  auto gate = x.narrow(-1, 0, 4), lin = x.narrow(-1, 4, 4);
  CHECK(test::max_abs_diff(make_activation("geglu")->forward(x),
                           0.5 * gate * (1 + torch::erf(gate / r2)) * lin) < 1e-12);
  CHECK(test::max_abs_diff(make_activation("swiglu")->forward(x),
                           gate * torch::sigmoid(gate) * lin) < 1e-12);
  CHECK(make_activation("geglu")->inputs() == 2);
  CHECK(make_activation("gelu")->inputs() == 1);
}

TEST_CASE("model: RMSNorm's written-out gradient equals autograd's", "[model]") {
  torch::manual_seed(11);
  const double eps = 1e-6;
  Norm rms("rmsnorm", 8, eps);
  rms->to(torch::kFloat64);
  auto w = rms->named_parameters()["weight"];  // a handle: named_parameters() returns a temporary
  {
    torch::NoGradGuard no_grad;
    w.copy_(torch::randn({8}, torch::kFloat64));  // not all ones, so weight terms matter
  }
  // Rows of very different scales (one near zero, where eps counts).
  auto x = (torch::randn({3, 5, 8}, torch::kFloat64) *
            torch::tensor({1e-4, 1.0, 30.0}, torch::kFloat64).view({3, 1, 1}))
               .set_requires_grad(true);
  auto x_ref = x.detach().clone().set_requires_grad(true);
  auto w_ref = w.detach().clone().set_requires_grad(true);
  auto g = torch::randn({3, 5, 8}, torch::kFloat64);
  // Kernels forward and backward (OpCounter): the point of writing the gradient out.
  auto kernels = [&](const std::function<torch::Tensor()>& forward) {
    OpCounter counter;
    forward().backward(g);
    return counter.kernels();
  };
  torch::Tensor y, y_ref;
  const int64_t ours = kernels([&] { return y = rms(x); });
  const int64_t autograd = kernels(
      [&] { return y_ref = x_ref * torch::rsqrt(x_ref.pow(2).mean(-1, true) + eps) * w_ref; });
  INFO("kernels: written-out " << ours << ", autograd " << autograd);
  CHECK(ours <= 13);
  CHECK(ours < autograd);
  CHECK(test::max_abs_diff(y, y_ref) < 1e-12);
  INFO("|dx| " << x.grad().abs().max().item<double>() << ", |dw| "
               << w.grad().abs().max().item<double>());
  CHECK(x.grad().abs().max().item<double>() > 1e-3);
  CHECK(test::max_abs_diff(x.grad(), x_ref.grad()) <
        1e-9 * x_ref.grad().abs().max().item<double>());
  CHECK(test::max_abs_diff(w.grad(), w_ref.grad()) <
        1e-12 * (1 + w_ref.grad().abs().max().item<double>()));
}

TEST_CASE("model: parameter names and shapes follow the documented layout", "[model]") {
  ModelConfig c = base();
  c.d_head = 10;  // independent of d_model / heads
  c.activation = "geglu";
  c.norm_position = "pre_post";
  auto m = make_model(c);
  auto p = m->named_parameters();
  CHECK(p["tok_emb.weight"].sizes() == torch::IntArrayRef({14, 32}));
  CHECK(p["blocks.1.attn.qkv.weight"].sizes() == torch::IntArrayRef({3 * 4 * 10, 32}));
  CHECK(p["blocks.1.attn.out.weight"].sizes() == torch::IntArrayRef({32, 40}));
  // GEGLU: two d_ff-wide input projections (gate, linear) fused, as in Cho et al.'s count.
  CHECK(p["blocks.0.ff.up.weight"].sizes() == torch::IntArrayRef({2 * 48, 32}));
  CHECK(p["blocks.0.ff.down.weight"].sizes() == torch::IntArrayRef({32, 48}));
  for (const char* n : {"norm_attn_pre", "norm_attn_post", "norm_ff_pre", "norm_ff_post"}) {
    CHECK(p.contains(fmt::format("blocks.0.{}.weight", n)));
  }
  CHECK(p.contains("norm_final.weight"));
  CHECK(p.contains("lm_head.weight"));
  CHECK(!p.contains("blocks.0.attn.qkv.bias"));

  c.norm_position = "post";
  auto post = make_model(c)->named_parameters();
  CHECK(!post.contains("blocks.0.norm_attn_pre.weight"));
  CHECK(!post.contains("norm_final.weight"));

  c.tie_embeddings = true;
  c.attention_bias = true;
  auto tied = make_model(c)->named_parameters();
  CHECK(!tied.contains("lm_head.weight"));
  CHECK(tied.contains("blocks.0.attn.qkv.bias"));
  CHECK(!tied.contains("blocks.0.ff.up.bias"));

  c.shared_layers = true;
  auto shared = make_model(c)->named_parameters();
  CHECK(!shared.contains("blocks.1.attn.qkv.weight"));
}

TEST_CASE("model: tied head computes logits with the token embedding", "[model]") {
  ModelConfig c = base();
  c.tie_embeddings = true;
  c.layers = 1;
  auto m = make_model(c);
  m->eval();
  torch::NoGradGuard ng;
  auto tokens = torch::tensor({{1, 2, 3}}, torch::kInt64);
  auto ids = torch::arange(3).view({1, 1, 3});
  auto logits = m->forward(tokens, ids);  // [1, 3, V]
  CHECK(logits.sizes() == torch::IntArrayRef({1, 3, 14}));
  // Perturbing a token's embedding row changes that token's logit column.
  auto before = logits.select(-1, 5).clone();
  m->named_parameters()["tok_emb.weight"][5].add_(torch::randn({32}));
  CHECK(test::max_abs_diff(before, m->forward(tokens, ids).select(-1, 5)) > 1e-3);
}

TEST_CASE("model: every activation trains a step without NaN", "[model]") {
  for (const std::string& act : activation_registry().names()) {
    DYNAMIC_SECTION(act) {
      ModelConfig c = base();
      c.activation = act;
      c.dropout = 0.1;
      auto m = make_model(c);
      m->train();
      auto tokens = torch::randint(0, 14, {2, 6}, torch::kInt64);
      auto ids = torch::arange(6).view({1, 1, 6}).expand({1, 2, 6});
      auto loss = m->forward(tokens, ids).logsumexp(-1).mean();
      loss.backward();
      CHECK(std::isfinite(loss.item<double>()));
    }
  }
}

TEST_CASE("model: config validation", "[model]") {
  auto parse = [](const std::string& y) {
    return ModelConfig::from_config(load_config_string(y, "m.yaml"));
  };
  CHECK(parse("{layers: 3, d_model: 64, heads: 4}").head_dim() == 16);
  CHECK(parse("{d_model: 64, heads: 3, d_head: 20}").head_dim() == 20);
  CHECK_THROWS_WITH(parse("{d_model: 64, heads: 3}"), Catch::Contains("not divisible"));
  CHECK_THROWS_WITH(parse("{activation: gelu2}"), Catch::Contains("did you mean 'gelu'"));
  CHECK_THROWS_WITH(parse("{dropout: 1.5}"), Catch::Contains("model.dropout must be in [0, 1)"));
  CHECK_THROWS_WITH(parse("{layres: 2}"), Catch::Contains("did you mean 'layers'"));
  CHECK_THROWS_WITH(parse("{head_bias: true, tie_embeddings: true}"),
                    Catch::Contains("cannot be combined with model.tie_embeddings"));
  CHECK_THROWS_WITH(parse("{init: xavier}"), Catch::Contains("init"));
  CHECK(parse("{init: normal, init_std: 0.05}").init_std == 0.05);
}

TEST_CASE(
    "model: init normal draws the core's weights from N(0, init_std) and leaves the schemes' alone",
    "[model]") {
  ModelConfig c = base();
  c.d_model = 128;
  c.d_ff = 512;
  c.attention_bias = c.ff_bias = c.head_bias = true;
  auto build = [&](const std::string& init) {
    ModelConfig m = c;
    m.init = init;
    m.init_std = 0.3;
    torch::manual_seed(3);
    SchemeContext sc{m.d_model, m.heads, m.head_dim(), m.layers, 1, ""};
    return Transformer(m, 14, Schemes{test::make_scheme("{name: ape, max_position: 20}", sc)});
  };
  auto pytorch = build("pytorch")->named_parameters();
  auto normal = build("normal")->named_parameters();
  // The scheme is built before the core from the same seed: its table is the same either way.
  CHECK(torch::equal(pytorch["position.0.level0"], normal["position.0.level0"]));
  for (const char* w : {"tok_emb.weight",
                        "blocks.0.attn.qkv.weight",
                        "blocks.1.ff.up.weight",
                        "blocks.1.ff.down.weight",
                        "lm_head.weight"}) {
    INFO(w);
    const double std = normal[w].std().item<double>();
    CHECK(std == Approx(0.3).epsilon(0.1));
    CHECK(std::abs(normal[w].mean().item<double>()) < 0.05);
  }
  // PyTorch's defaults differ: Embedding N(0, 1), Linear U(+-1/sqrt(fan_in)).
  CHECK(pytorch["tok_emb.weight"].std().item<double>() > 0.5);
  CHECK(pytorch["blocks.1.ff.down.weight"].abs().max().item<double>() <=
        1.0 / std::sqrt(512.0) + 1e-7);
  for (const char* b : {"blocks.0.attn.qkv.bias", "blocks.0.ff.up.bias", "lm_head.bias"}) {
    INFO(b);
    CHECK(normal[b].abs().max().item<double>() == 0.0);
    CHECK(pytorch[b].abs().max().item<double>() > 0.0);
  }
  CHECK(normal["norm_final.weight"].eq(1).all().item<bool>());
}

TEST_CASE("model: the embedding norm makes the model blind to the embeddings' scale", "[model]") {
  // With a norm over token + position embeddings, scaling both tables by any constant leaves
  // every logit unchanged; without it the first block's residual sum sees the scale.
  for (bool norm : {true, false}) {
    DYNAMIC_SECTION("embedding_norm " << norm) {
      ModelConfig c = base();
      c.layers = 1;
      c.embedding_norm = norm;
      c.norm_eps = 0.0;
      torch::manual_seed(5);
      SchemeContext sc{c.d_model, c.heads, c.head_dim(), c.layers, 1, ""};
      Transformer m(c, 14, Schemes{test::make_scheme("{name: ape, max_position: 20}", sc)});
      m->to(torch::kFloat64);
      m->eval();
      torch::NoGradGuard ng;
      CHECK(m->named_parameters().contains("norm_embedding.weight") == norm);
      auto tokens = torch::tensor({{1, 2, 3, 4}}, torch::kInt64);
      auto ids = torch::arange(4).view({1, 1, 4});
      auto before = m->forward(tokens, ids);
      auto p = m->named_parameters();
      p["tok_emb.weight"].mul_(7.0);
      p["position.0.level0"].mul_(7.0);
      const double diff = test::max_abs_diff(before, m->forward(tokens, ids));
      if (norm) {
        CHECK(diff < 1e-10);
      } else {
        CHECK(diff > 1e-3);
      }
    }
  }
}

TEST_CASE(
    "model: scale_embedding multiplies the token embedding by sqrt(d_model), not the positions",
    "[model]") {
  // A model with the scale equals the same model (same seed, same weights) without it whose
  // token table was multiplied by sqrt(d_model): the position table is left as it is, so the
  // identity fails if the scale reached the positions or the output head.
  ModelConfig c = base();
  c.layers = 1;
  c.tie_embeddings = false;
  auto build = [&](bool scale) {
    ModelConfig m = c;
    m.scale_embedding = scale;
    torch::manual_seed(9);
    SchemeContext sc{m.d_model, m.heads, m.head_dim(), m.layers, 1, ""};
    Transformer t(m, 14, Schemes{test::make_scheme("{name: ape, max_position: 20}", sc)});
    t->to(torch::kFloat64);
    t->eval();
    return t;
  };
  torch::NoGradGuard ng;
  auto scaled = build(true);
  auto plain = build(false);
  auto tokens = torch::tensor({{1, 2, 3, 4, 5}}, torch::kInt64);
  auto ids = torch::arange(5).view({1, 1, 5});
  const auto with_scale = scaled->forward(tokens, ids);
  CHECK(test::max_abs_diff(with_scale, plain->forward(tokens, ids)) > 1e-3);
  plain->named_parameters()["tok_emb.weight"].mul_(std::sqrt(static_cast<double>(c.d_model)));
  CHECK(test::max_abs_diff(with_scale, plain->forward(tokens, ids)) < 1e-10);
}

TEST_CASE("model: head_bias adds a learned bias to every logit", "[model]") {
  ModelConfig c = base();
  c.head_bias = true;
  auto m = make_model(c);
  m->eval();
  torch::NoGradGuard ng;
  auto p = m->named_parameters();
  REQUIRE(p.contains("lm_head.bias"));
  CHECK(p["lm_head.bias"].sizes() == torch::IntArrayRef({14}));
  auto tokens = torch::tensor({{1, 2, 3}}, torch::kInt64);
  auto ids = torch::arange(3).view({1, 1, 3});
  auto before = m->forward(tokens, ids);
  auto shift = torch::randn({14});
  p["lm_head.bias"].add_(shift);
  CHECK(test::max_abs_diff(m->forward(tokens, ids) - before, shift.expand({1, 3, 14})) < 1e-5);
}

TEST_CASE("model: PositionMemo reuses positions-only work until the positions change", "[model]") {
  PositionMemo<> memo;
  int computed = 0;
  auto ctx_for = [](const torch::Tensor& q, const torch::Tensor& k) {
    AttentionContext c;
    c.query_ids = q;
    c.key_ids = k;
    return c;
  };
  auto compute = [&] {
    ++computed;
    return torch::tensor({computed});
  };
  auto ids = torch::arange(5).view({1, 1, 5});
  CHECK(memo.get(ctx_for(ids, ids), compute).item<int64_t>() == 1);
  // The same tensors (another layer) and equal fresh ones (a later step): reused.
  CHECK(memo.get(ctx_for(ids, ids), compute).item<int64_t>() == 1);
  auto fresh = torch::arange(5).view({1, 1, 5});
  CHECK(memo.get(ctx_for(fresh, fresh), compute).item<int64_t>() == 1);
  CHECK(computed == 1);
  // Different content, shape or variant: recomputed.
  CHECK(memo.get(ctx_for(fresh + 1, fresh + 1), compute).item<int64_t>() == 2);
  CHECK(
      memo.get(ctx_for(torch::arange(6).view({1, 1, 6}), torch::arange(6).view({1, 1, 6})), compute)
          .item<int64_t>() == 3);
  auto six = torch::arange(6).view({1, 1, 6});
  CHECK(memo.get(ctx_for(six, six), compute, /*variant=*/1).item<int64_t>() == 4);
  CHECK(computed == 4);
}

TEST_CASE("model: long sequences without gradients attend block by block, with equal results",
          "[model]") {
  // T > 256 query rows takes the blocked evaluation path under NoGradGuard; with gradients on,
  // the full-matrix path. Both with and without an additive bias (ALiBi), and with a KV cache
  // prefix (the blocked path's causal offset).
  for (const char* scheme : {"nope", "alibi"}) {
    DYNAMIC_SECTION(scheme) {
      ModelConfig c = base();
      SchemeContext sc{c.d_model, c.heads, c.head_dim(), c.layers, 1, ""};
      Transformer m(c, 14, Schemes{test::make_scheme(scheme, sc)});
      m->to(torch::kFloat64);
      m->eval();
      const int64_t T = 600;
      auto tokens = torch::randint(0, 14, {2, T}, torch::kInt64);
      auto ids = torch::arange(T).view({1, 1, T}).expand({1, 2, T});
      auto full = m->forward(tokens, ids);  // grad mode on: the full path
      torch::Tensor blocked, cached;
      {
        torch::NoGradGuard ng;
        blocked = m->forward(tokens, ids);
        KVCache cache;
        m->forward(tokens.narrow(1, 0, 100), ids.narrow(2, 0, 100), &cache);
        cached = m->forward(tokens.narrow(1, 100, T - 100), ids.narrow(2, 100, T - 100), &cache);
      }
      CHECK(test::max_abs_diff(full, blocked) < 1e-10);
      CHECK(test::max_abs_diff(full.narrow(1, 100, T - 100), cached) < 1e-10);
    }
  }
}

TEST_CASE("model: a float64 sinusoidal encoding is computed in float64", "[model]") {
  load_all_plugins();
  SchemeContext sc{32, 2, 16, 1, 1, ""};
  auto s = test::make_scheme("{name: sinusoidal, ids: task}", sc);
  s->to(torch::kFloat64);
  s->eval();
  const std::vector<int64_t> positions{0, 7, 12345, 987654};
  auto ids = torch::tensor(positions, torch::kInt64).view({1, 1, 4});
  auto pe = s->embed(s->transform_ids(ids, 0, false));  // [1, 4, 32]
  REQUIRE(pe.scalar_type() == torch::kFloat64);
  double worst = 0;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int64_t i = 0; i < 16; ++i) {
      const double angle = static_cast<double>(positions[t]) * std::pow(10000.0, -2.0 * i / 32.0);
      worst = std::max(worst, std::abs(pe[0][t][2 * i].item<double>() - std::sin(angle)));
      worst = std::max(worst, std::abs(pe[0][t][2 * i + 1].item<double>() - std::cos(angle)));
    }
  }
  // Frequencies rounded to float32 are off by ~1e-8 relative: ~1e-2 at position 987654; a
  // double computation differs from this one only by the last bits of the angle (~1e-10).
  CHECK(worst < 1e-9);
}

TEST_CASE("model: a UTransformer encoder is one block applied `layers` times",
          "[model][universal]") {
  // Jelassi et al.'s UTransformer (ALBERT: every layer shares one set of weights): with
  // shared_layers the encoder has one block, and 4 layers of it equal the one-layer encoder
  // looped 4 times with the same weights.
  ModelConfig c = base();
  c.arch = "encoder";
  c.norm_position = "post";
  c.layers = 4;
  c.shared_layers = true;
  torch::manual_seed(3);
  auto shared = make_model(c);
  auto p = shared->named_parameters();
  CHECK(p.contains("blocks.0.attn.qkv.weight"));
  CHECK(!p.contains("blocks.1.attn.qkv.weight"));
  ModelConfig one = c;
  one.layers = 1;
  one.shared_layers = false;
  one.loops = 4;
  auto looped = make_model(one);
  {
    torch::NoGradGuard ng;
    auto q = looped->named_parameters();
    REQUIRE(q.size() == p.size());
    for (const auto& item : p) {
      q[item.key()].copy_(item.value());
    }
  }
  shared->eval();
  looped->eval();
  torch::NoGradGuard ng;
  auto tokens = torch::randint(0, 14, {2, 7}, torch::kInt64);
  auto ids = torch::arange(7).view({1, 1, 7}).expand({1, 2, 7});
  auto a = shared->forward(tokens, ids);
  CHECK(test::max_abs_diff(a, looped->forward(tokens, ids)) < 1e-5);
  // ... and differ from a single application.
  looped->set_loops(1);
  CHECK(test::max_abs_diff(a, looped->forward(tokens, ids)) > 1e-3);
}
