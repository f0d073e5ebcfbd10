// Contract of the position-scheme extension point, run over EVERY registered scheme (in-tree
// and any found on the plugin path), in every norm placement and in a looped block: shapes,
// finite gradients, determinism in evaluation, and equal logits in a full forward pass and in
// KV-cached incremental decoding (design note).
#include "helpers.h"

#include "lengen/model/batch.h"
#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"

#include <algorithm>

using namespace lengen;
using Schemes = std::vector<std::shared_ptr<PositionScheme>>;

namespace {

ModelConfig tiny_model(const std::string& norm_position, const std::string& activation) {
  ModelConfig m;
  m.layers = 2;
  m.heads = 2;
  m.d_model = 16;
  m.d_head = 12;  // deliberately not d_model / heads
  m.d_ff = 24;
  m.norm = "rmsnorm";
  m.norm_position = norm_position;
  m.activation = activation;
  return m;
}

// Addition examples with their (coupled) IDs, 1..14 digits.
std::vector<Example> addition_examples(const Task& task, int n) {
  Rng rng(11);
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(task.sample_eval({{"digits", 1 + i % 14}}, rng));
  }
  return out;
}

}  // namespace

TEST_CASE("position contract: every registered scheme", "[contract][position]") {
  load_all_plugins();
  auto task = test::make_task("{name: addition}");
  auto exs = addition_examples(*task, 6);
  const auto names = position_registry().names();
  REQUIRE(names.size() >= 4);
  for (const auto* entry : position_registry().list()) {
    // The three norm placements, and a looped block (one block applied three times with the
    // embedding injected before every loop after the first, as McLeish et al. loop theirs).
    for (const char* placement : {"pre", "post", "pre_post", "looped"}) {
      DYNAMIC_SECTION(entry->spec.name << " / " << placement) {
        torch::manual_seed(0);
        const bool looped = std::string(placement) == "looped";
        ModelConfig cfg = tiny_model(looped ? "pre" : placement, "swiglu");
        if (looped) {
          cfg.layers = 1;
          cfg.loops = 3;
          cfg.input_injection = true;
        }
        SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.attention_layers(), 1, ""};
        auto scheme = test::make_scheme(test::scheme_yaml(*entry), sc);
        CHECK(entry->spec.summary.size() > 0);
        Transformer model(cfg, task->vocabulary().size(), Schemes{scheme});
        model->to(torch::kFloat64);

        // Training forward: shapes and finite gradients.
        model->train();
        Batch b = make_batch(exs, task->vocabulary().pad());
        auto logits = model->forward(b.inputs, b.ids);  // [B, T, V]
        CHECK(logits.sizes() ==
              torch::IntArrayRef({b.inputs.size(0), b.inputs.size(1), task->vocabulary().size()}));
        logits.sum().backward();
        for (const auto& p : model->parameters()) {
          if (p.grad().defined()) {
            CHECK(torch::isfinite(p.grad()).all().item<bool>());
          }
        }

        // Evaluation: deterministic; full pass == KV-cached incremental decoding.
        model->eval();
        torch::NoGradGuard ng;
        for (const auto& ex : exs) {
          const int64_t T = ex.length() - 1;
          Batch one = make_batch({ex}, task->vocabulary().pad());
          auto full = model->forward(one.inputs, one.ids);  // [1, T, V]
          CHECK(torch::equal(full, model->forward(one.inputs, one.ids)));
          KVCache cache;
          const int64_t P = ex.prompt_length;
          auto first = model->forward(one.inputs.slice(1, 0, P), one.ids.slice(2, 0, P), &cache);
          std::vector<torch::Tensor> rows{first};
          for (int64_t t = P; t < T; ++t) {
            rows.push_back(
                model->forward(one.inputs.slice(1, t, t + 1), one.ids.slice(2, t, t + 1), &cache));
          }
          auto inc = torch::cat(rows, 1);  // [1, T, V]
          INFO("max |full - cached| = " << test::max_abs_diff(full, inc));
          CHECK(test::max_abs_diff(full, inc) < 1e-9);
          CHECK(cache.length() == T);
        }
      }
    }
  }
}

TEST_CASE("position contract: randomized positions change training only", "[contract][position]") {
  // Every scheme takes the shared `randomized:` key (Ruoss et al. 2023; 65 = the rows of a
  // max_position: 64 table, which coupling's random offsets also fill). In evaluation the
  // model with it equals the model without it (same weights, same logits); in training it
  // runs with finite gradients on the remapped IDs.
  load_all_plugins();
  auto task = test::make_task("{name: addition}");
  auto exs = addition_examples(*task, 6);
  for (const auto* entry : position_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      ModelConfig cfg = tiny_model("pre", "gelu");
      SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.layers, 1, ""};
      const std::string plain_yaml = test::scheme_yaml(*entry);
      const std::string randomized_yaml =
          plain_yaml.substr(0, plain_yaml.size() - 1) + ", randomized: 65}";
      torch::manual_seed(0);
      Transformer plain(cfg, task->vocabulary().size(), Schemes{test::make_scheme(plain_yaml, sc)});
      torch::manual_seed(0);
      auto scheme = test::make_scheme(randomized_yaml, sc);
      CHECK(scheme->randomized() == 65);
      Transformer randomized(cfg, task->vocabulary().size(), Schemes{scheme});
      plain->to(torch::kFloat64);
      randomized->to(torch::kFloat64);
      Batch b = make_batch(exs, task->vocabulary().pad());
      {
        plain->eval();
        randomized->eval();
        torch::NoGradGuard ng;
        CHECK(torch::equal(plain->forward(b.inputs, b.ids), randomized->forward(b.inputs, b.ids)));
      }
      randomized->train();
      auto logits = randomized->forward(b.inputs, b.ids);  // [B, T, V]
      logits.sum().backward();
      for (const auto& p : randomized->parameters()) {
        if (p.grad().defined()) {
          CHECK(torch::isfinite(p.grad()).all().item<bool>());
        }
      }
    }
  }
}

TEST_CASE("position contract: attention weights are causal distributions", "[contract][model]") {
  auto task = test::make_task("{name: addition}");
  ModelConfig cfg = tiny_model("pre", "gelu");
  SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.layers, 1, ""};
  Transformer model(cfg,
                    task->vocabulary().size(),
                    Schemes{test::make_scheme("{name: coupling, max_position: 64}", sc)});
  model->eval();
  torch::NoGradGuard ng;
  Batch b = make_batch(addition_examples(*task, 3), task->vocabulary().pad());
  std::vector<torch::Tensor> attn;
  auto logits = model->forward(b.inputs, b.ids, nullptr, &attn);
  REQUIRE(attn.size() == 2);
  for (const auto& a : attn) {
    const int64_t T = b.inputs.size(1);
    CHECK(a.sizes() == torch::IntArrayRef({3, cfg.heads, T, T}));
    CHECK(test::max_abs_diff(a.sum(-1), torch::ones({3, cfg.heads, T})) < 1e-5);
    CHECK(a.triu(1).abs().max().item<double>() == 0.0);  // no weight on future keys
  }
  // Returning weights takes the explicit path; logits must not change.
  CHECK(test::max_abs_diff(logits, model->forward(b.inputs, b.ids)) < 1e-5);
}

TEST_CASE("position contract: composed schemes over coupled IDs", "[contract][position]") {
  load_all_plugins();
  auto task = test::make_task("{name: addition}");
  auto exs = addition_examples(*task, 4);
  ModelConfig cfg = tiny_model("pre", "gelu");
  SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.layers, 1, ""};
  // RoPE driven by coupled IDs plus an ALiBi bias over them, on top of coupling tables.
  for (const auto& list : std::vector<std::vector<std::string>>{
           {"{name: coupling, max_position: 64}", "{name: rope, ids: task}"},
           {"nope", "{name: alibi, ids: task}"},
           {"{name: coupling, max_position: 64}", "{name: rope, ids: task}", "alibi"},
           {"{name: rpe_k, values: true, k: 5}"},
           {"{name: coupling, max_position: 64}", "{name: rpe_k, ids: task, k: 4}"},  // quickstart
           {"{name: coupling, max_position: 64}", "{name: rpe_kq, ids: task, values: true}"}}) {
    DYNAMIC_SECTION(list.size() << " schemes: " << list.back()) {
      INFO(join(list, " + "));
      Schemes schemes;
      for (const auto& y : list) {
        schemes.push_back(test::make_scheme(y, sc));
      }
      torch::manual_seed(1);
      Transformer model(cfg, task->vocabulary().size(), schemes);
      model->to(torch::kFloat64);
      model->eval();
      torch::NoGradGuard ng;
      for (const auto& ex : exs) {
        Batch one = make_batch({ex}, task->vocabulary().pad());
        auto full = model->forward(one.inputs, one.ids);
        KVCache cache;
        const int64_t P = ex.prompt_length, T = one.inputs.size(1);
        std::vector<torch::Tensor> rows{
            model->forward(one.inputs.slice(1, 0, P), one.ids.slice(2, 0, P), &cache)};
        for (int64_t t = P; t < T; ++t) {
          rows.push_back(
              model->forward(one.inputs.slice(1, t, t + 1), one.ids.slice(2, t, t + 1), &cache));
        }
        CHECK(test::max_abs_diff(full, torch::cat(rows, 1)) < 1e-9);
      }
    }
  }
}

TEST_CASE("position contract: bidirectional self-attention and cross-attention",
          "[contract][position]") {
  load_all_plugins();
  ModelConfig cfg = tiny_model("pre", "gelu");
  SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.layers, 1, ""};
  const int64_t B = 2, T = 7;
  for (const auto* entry : position_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      auto scheme = test::make_scheme(test::scheme_yaml(*entry), sc);
      scheme->to(torch::kFloat64);
      scheme->eval();
      // Where a scheme has no meaning, building a model that would use it there is refused
      // with the scheme's place in `position:` and the attention kind.
      for (auto kind : {AttentionKind::kBidirectionalSelf, AttentionKind::kCross}) {
        if (scheme->hooks() == kHookInputEmbedding) {
          // An input embedding never acts inside attention: accepted in every kind.
          CHECK_NOTHROW(check_position_support(Schemes{scheme}, kind, "encoder_decoder"));
        } else if (!scheme->supports(kind)) {
          CHECK_THROWS_WITH(
              check_position_support(
                  Schemes{test::make_scheme("nope", sc), scheme}, kind, "encoder_decoder"),
              Catch::Contains("position[1]") && Catch::Contains(attention_kind_name(kind)));
        }
      }
      if (!scheme->supports(AttentionKind::kBidirectionalSelf)) {
        return;
      }
      check_position_support(Schemes{scheme}, AttentionKind::kBidirectionalSelf, "encoder");
      torch::manual_seed(3);
      Attention attn(cfg, 0, AttentionKind::kBidirectionalSelf);
      attn->to(torch::kFloat64);
      attn->eval();
      torch::NoGradGuard ng;
      auto ids = scheme->transform_ids(torch::arange(T).expand({1, B, T}).contiguous(), 0, false);
      auto x = torch::randn({B, T, cfg.d_model}, torch::kFloat64);
      torch::Tensor weights;
      const Schemes schemes{scheme};
      const std::vector<torch::Tensor> id_list{ids};
      AttentionInputs in;
      in.schemes = &schemes;
      in.query_ids = in.key_ids = &id_list;
      AttentionInputs with_weights = in;
      with_weights.attn_out = &weights;
      auto y = attn->forward(x, with_weights);
      CHECK(y.sizes() == x.sizes());
      CHECK(torch::isfinite(y).all().item<bool>());
      // Every query sees every key: the weights are full rows, and the first query's output
      // moves when only the last token changes.
      CHECK(weights.min().item<double>() > 0);
      CHECK(test::max_abs_diff(weights.sum(-1), torch::ones({B, cfg.heads, T})) < 1e-12);
      auto x2 = x.clone();
      x2.select(1, T - 1).add_(1.0);
      auto y2 = attn->forward(x2, in);
      CHECK(test::max_abs_diff(y.select(1, 0), y2.select(1, 0)) > 1e-9);
      // The explicit path (weights requested) and the default path agree.
      CHECK(test::max_abs_diff(y, attn->forward(x, in)) < 1e-12);
    }
  }
}

TEST_CASE("position contract: learned_tables() are what the input embedding adds",
          "[contract][position]") {
  // TAOTP and the addition construction set position tables through learned_tables(): each
  // described table must be a parameter of the scheme, and for a scheme whose only hook is the
  // input embedding, evaluation must add exactly the described rows.
  load_all_plugins();
  auto task =
      test::make_task("{name: addition, scratchpad: true, pad_to: answer}");  // two levels of IDs
  const int64_t C = 16;
  SchemeContext sc{C, 2, 8, 2, task->position_levels(), ""};
  REQUIRE(task->position_levels() == 2);
  Batch b = make_batch(addition_examples(*task, 6), task->vocabulary().pad());
  const int64_t B = b.ids.size(1), T = b.ids.size(2);
  int describing = 0;
  for (const auto* entry : position_registry().list()) {
    describing +=
        test::make_scheme(test::scheme_yaml(*entry), sc)->learned_tables().empty() ? 0 : 1;
  }
  CHECK(describing >= 1);  // the property below is exercised
  for (const auto* entry : position_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      torch::manual_seed(0);
      auto scheme = test::make_scheme(test::scheme_yaml(*entry), sc);
      const auto tables = scheme->learned_tables();
      const auto params = scheme->parameters();
      for (const auto& t : tables) {
        REQUIRE(t.weight.dim() == 2);
        CHECK(t.weight.size(1) == C);
        CHECK(std::any_of(params.begin(), params.end(), [&](const torch::Tensor& p) {
          return p.is_same(t.weight);
        }));
        if (!t.sequence_index)
          CHECK(t.level < task->position_levels());
      }
      if (scheme->hooks() == kHookInputEmbedding && !tables.empty()) {
        scheme->eval();
        torch::NoGradGuard ng;
        for (const auto& t : tables)
          t.weight.normal_();  // distinct tables (coupling's start equal)
        auto got = scheme->embed(scheme->position_ids(b.ids, 0, false)).expand({B, T, C});
        auto want = torch::zeros({B, T, C});
        for (const auto& t : tables) {
          auto rows = t.sequence_index ? torch::arange(T).expand({B, T}) : b.ids[t.level];
          want += torch::embedding(t.weight, rows);
        }
        CHECK(test::max_abs_diff(got, want) < 1e-6);
      }
    }
  }
}
