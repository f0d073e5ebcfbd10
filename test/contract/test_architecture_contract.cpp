// Contract of the architectures, run over every registered position scheme where it has a
// meaning: the encoder-decoder's full forward equals KV-cached incremental decoding (the
// encoder run once, cross keys cached); padding invariance (a batch of mixed lengths gives
// each sample the logits it gets alone) for all three layouts; the encoder sees later tokens;
// a looped stack equals the unrolled one with shared weights; per-layer scheme tables follow
// distinct blocks, not loops; layouts the task cannot render are refused naming both.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"
#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"

#include <algorithm>

using namespace lengen;
using Schemes = std::vector<std::shared_ptr<PositionScheme>>;

namespace {

ModelConfig tiny(const std::string& arch, const std::string& norm_position = "pre") {
  ModelConfig m;
  m.arch = arch;
  m.layers = 2;
  m.encoder_layers = arch == "encoder_decoder" ? 1 : -1;
  m.heads = 2;
  m.d_model = 16;
  m.d_head = 12;
  m.d_ff = 24;
  m.norm = "rmsnorm";
  m.norm_position = norm_position;
  m.activation = "gelu";
  return m;
}

std::vector<Example> examples(const Task& task, int n, int64_t first_digits = 1) {
  Rng rng(5);
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(task.sample_eval({{"digits", first_digits + i % 9}}, rng));
  }
  return out;
}

Transformer build(const ModelConfig& cfg, const Task& task, const std::string& scheme) {
  SchemeContext sc{
      cfg.d_model, cfg.heads, cfg.head_dim(), cfg.attention_layers(), task.position_levels(), ""};
  torch::manual_seed(7);
  Transformer m(cfg, task.vocabulary().size(), Schemes{test::make_scheme(scheme, sc)});
  m->to(torch::kFloat64);
  m->eval();
  return m;
}

// Scored logits of row b of a batch: [n, V] at the positions where mask is 1.
torch::Tensor scored(const torch::Tensor& logits, const Batch& b, int64_t row) {
  auto idx = b.mask[row].nonzero().squeeze(1);  // [n]
  return logits[row].index_select(0, idx);      // [n, V]
}

}  // namespace

TEST_CASE("architecture contract: every scheme in every architecture", "[contract][arch]") {
  load_all_plugins();
  auto task = test::make_task("{name: addition, position_ids: coupled}");
  const auto exs = examples(*task, 5);
  for (const auto* entry : position_registry().list()) {
    for (const std::string& arch : architecture_registry().names()) {
      DYNAMIC_SECTION(entry->spec.name << " / " << arch) {
        ModelConfig cfg = tiny(arch);
        const auto arch_ptr = architecture(arch);
        const Architecture& a = *arch_ptr;
        SchemeContext sc{cfg.d_model, cfg.heads, cfg.head_dim(), cfg.attention_layers(), 1, ""};
        auto probe = test::make_scheme(test::scheme_yaml(*entry), sc);
        bool self_ok = true;
        for (const StackSpec& s : a.stacks(cfg)) {
          self_ok =
              self_ok && (probe->hooks() == kHookInputEmbedding || probe->supports(s.attention));
        }
        if (!self_ok) {
          // Refused where it has no meaning, naming the scheme's place and the architecture.
          CHECK_THROWS_WITH(Transformer(cfg, task->vocabulary().size(), Schemes{probe}),
                            Catch::Contains("position[0]") && Catch::Contains(arch));
          return;
        }
        Transformer model = build(cfg, *task, test::scheme_yaml(*entry));
        const Architecture* objective = &model->arch();
        torch::NoGradGuard ng;

        // Padding invariance: each sample alone == the same sample in a mixed-length batch.
        Batch batch = objective->make_batch(*task, exs);
        auto logits = objective->logits(model, batch);  // [B, T, V]
        REQUIRE(torch::isfinite(logits).all().item<bool>());
        for (size_t i = 0; i < exs.size(); ++i) {
          Batch one = objective->make_batch(*task, {exs[i]});
          auto alone = objective->logits(model, one);
          CHECK(test::max_abs_diff(scored(logits, batch, static_cast<int64_t>(i)),
                                   scored(alone, one, 0)) < 1e-9);
        }

        // Logits of the scored rows only (the last block and the head skip the rows before
        // the first scored position) == those rows of the full forward, and so are the
        // loss's gradients. The full forward asks for attention maps, which takes the
        // explicit attention path; on LibTorch 2.x the other takes the fused kernel, with the
        // scheme's bias and the causal rows' offset as its mask, so this also checks that
        // kernel (and the bias's gradient) against the explicit path.
        Batch later = objective->make_batch(*task, examples(*task, 3, 4));
        REQUIRE((later.first_scored > 0 || later.source.defined()));  // seq2seq scores from 0
        const int64_t rows = later.inputs.size(1) - later.first_scored;
        {
          torch::AutoGradMode grad_on(true);
          std::vector<torch::Tensor> maps;
          auto full = objective->logits(model, later, &maps);
          CHECK(test::max_abs_diff(full, objective->logits(model, later)) < 1e-10);
          auto part = objective->scored_logits(model, later);  // [B, rows, V]
          REQUIRE(part.size(1) == rows);
          CHECK(test::max_abs_diff(full.narrow(1, later.first_scored, rows), part) < 1e-10);
          auto gradients = [&](const torch::Tensor& lg) {
            model->zero_grad();
            objective->loss(lg, later).backward();
            std::vector<torch::Tensor> g;
            for (const auto& p : model->parameters()) {
              g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
            }
            return g;
          };
          auto g_full = gradients(full), g_part = gradients(part);
          double biggest = 0, diff = 0;
          for (size_t i = 0; i < g_full.size(); ++i) {
            biggest = std::max(biggest, g_full[i].abs().max().item<double>());
            diff = std::max(diff, test::max_abs_diff(g_full[i], g_part[i]));
          }
          CHECK(biggest > 1e-4);
          CHECK(diff < 1e-10);
          model->zero_grad();
        }

        // Full forward == KV-cached incremental decoding (the autoregressive layouts).
        if (!a.one_pass()) {
          for (const auto& ex : exs) {
            Batch one = objective->make_batch(*task, {ex});
            auto full = objective->logits(model, one);  // [1, T, V]
            const int64_t T = one.inputs.size(1);
            // decoder: the prompt at once (minus its last token), then token by token;
            // encoder_decoder: the source and the start token, then token by token.
            const int64_t first = a.one_sequence() ? ex.prompt_length - 1 : 1;
            KVCache cache;
            ModelInputs in = one.model_inputs();
            in.tokens = one.inputs.slice(1, 0, first);
            in.ids = one.ids.slice(2, 0, first);
            std::vector<torch::Tensor> rows{model->forward(in, &cache)};
            for (int64_t t = first; t < T; ++t) {
              ModelInputs step;
              step.tokens = one.inputs.slice(1, t, t + 1);
              step.ids = one.ids.slice(2, t, t + 1);
              rows.push_back(model->forward(step, &cache));
            }
            CHECK(test::max_abs_diff(full, torch::cat(rows, 1)) < 1e-9);
          }
        }
      }
    }
  }
}

TEST_CASE("architecture contract: the encoder sees later tokens, the decoder does not",
          "[contract][arch]") {
  load_all_plugins();
  auto task = test::make_task("{name: addition, position_ids: coupled}");
  const auto ex = examples(*task, 1, 6)[0];
  for (const std::string& arch : architecture_registry().names()) {
    DYNAMIC_SECTION(arch) {
      Transformer model = build(tiny(arch), *task, "{name: coupling, max_position: 64}");
      const Architecture* objective = &model->arch();
      torch::NoGradGuard ng;
      Batch b = objective->make_batch(*task, {ex});
      auto base = objective->logits(model, b);  // [1, T, V]
      // Change the query's second digit (an input every architecture reads; decoder: a
      // position after the first, so its first output must not move).
      Batch changed = b;
      const int64_t digit = task->vocabulary().id("7") == b.inputs[0][2].item<int64_t>()
                                ? task->vocabulary().id("3")
                                : task->vocabulary().id("7");
      torch::Tensor& where = b.source.defined() ? changed.source : changed.inputs;
      where = where.clone();
      where[0][2] = digit;
      auto moved = objective->logits(model, changed);
      const double first_row = test::max_abs_diff(base.select(1, 0), moved.select(1, 0));
      const auto stacks = model->stacks();
      const bool causal_only = std::all_of(stacks.begin(), stacks.end(), [](const StackSpec& s) {
        return s.attention == AttentionKind::kCausalSelf;
      });
      if (causal_only) {
        CHECK(first_row < 1e-12);  // causal only: position 0 cannot see position 2
      } else {
        CHECK(first_row > 1e-9);  // bidirectional (or cross-attending to the source)
      }
    }
  }
}

TEST_CASE("architecture contract: looped stacks", "[contract][arch]") {
  load_all_plugins();
  auto task = test::make_task("{name: addition, position_ids: coupled}");
  const auto exs = examples(*task, 3);
  for (const std::string& arch : architecture_registry().names()) {
    DYNAMIC_SECTION(arch) {
      const auto own = architecture(arch)->own_keys();
      const bool two_stacks = std::find(own.begin(), own.end(), "encoder_layers") != own.end();
      // Looped: one block per stack applied twice; unrolled: two blocks, the second a copy.
      ModelConfig looped = tiny(arch);
      looped.layers = 1;
      looped.loops = 2;
      ModelConfig unrolled = tiny(arch);
      unrolled.layers = 2;
      unrolled.encoder_layers = two_stacks ? 2 : -1;
      if (two_stacks) {
        looped.encoder_layers = 1;
      }
      Transformer a = build(looped, *task, "{name: coupling, max_position: 64}");
      Transformer b = build(unrolled, *task, "{name: coupling, max_position: 64}");
      {
        torch::NoGradGuard ng;
        auto pa = a->named_parameters();
        for (auto& item : b->named_parameters()) {
          std::string name = item.key();
          for (const StackSpec& s : b->stacks()) {
            const std::string second = s.name + ".1.";
            if (name.rfind(second, 0) == 0) {
              name = s.name + ".0." + name.substr(second.size());
            }
          }
          REQUIRE(pa.contains(name));
          item.value().copy_(pa[name]);
        }
      }
      const Architecture* objective = &a->arch();
      torch::NoGradGuard ng;
      Batch batch = objective->make_batch(*task, exs);
      CHECK(test::max_abs_diff(objective->logits(a, batch), objective->logits(b, batch)) < 1e-10);
      // Scored rows only: only the last application skips rows; the earlier ones keep all.
      const int64_t from = batch.first_scored, rows = batch.inputs.size(1) - from;
      CHECK(test::max_abs_diff(objective->scored_logits(a, batch),
                               objective->logits(a, batch).narrow(1, from, rows)) < 1e-10);
      // Attention maps: one per application, named by loop.
      std::vector<torch::Tensor> maps;
      objective->logits(a, batch, &maps);
      CHECK(maps.size() == a->attention_names().size());
      CHECK(a->attention_names().back().find("@1") != std::string::npos);
      // More loops at test time: runs and changes the output.
      auto two = objective->logits(a, batch);
      a->set_loops(4);
      auto four = objective->logits(a, batch);
      CHECK(torch::isfinite(four).all().item<bool>());
      CHECK(test::max_abs_diff(two, four) > 1e-6);
    }
  }
  SECTION("input injection adds the embedding before every loop after the first") {
    ModelConfig c = tiny("decoder");
    c.layers = 1;
    c.loops = 2;
    Transformer plain = build(c, *task, "{name: coupling, max_position: 64}");
    c.input_injection = true;
    Transformer injected = build(c, *task, "{name: coupling, max_position: 64}");
    const Architecture* objective = &plain->arch();
    torch::NoGradGuard ng;
    Batch batch = objective->make_batch(*task, exs);
    // Same weights (same seed), different function.
    CHECK(test::max_abs_diff(objective->logits(plain, batch), objective->logits(injected, batch)) >
          1e-6);
    plain->set_loops(1);
    injected->set_loops(1);
    CHECK(test::max_abs_diff(objective->logits(plain, batch), objective->logits(injected, batch)) <
          1e-12);
  }
}

TEST_CASE("architecture contract: per-layer scheme tables follow distinct blocks",
          "[contract][arch]") {
  load_all_plugins();
  ModelConfig c = tiny("decoder");
  c.layers = 6;
  c.shared_layers = true;
  CHECK(c.attention_layers() == 1);
  c.shared_layers = false;
  c.loops = 3;
  CHECK(c.attention_layers() == 6);
  ModelConfig ed = tiny("encoder_decoder");
  CHECK(ed.attention_layers() == 3);  // 1 encoder + 2 decoder blocks
  // Through an experiment: rpe_k with per-layer tables allocates one per distinct block.
  test::TempDir dir;
  test::write_text(dir.file("u.yaml"), R"(name: u
task: {name: addition, position_ids: sequential}
model: {layers: 4, shared_layers: true, heads: 2, d_model: 16, d_ff: 16}
position: [{name: rpe_k, k: 4, per_layer: true}]
)");
  Experiment exp = Experiment::load(dir.file("u.yaml"));
  Transformer m = exp.build_model(torch::kCPU);
  auto params = m->named_parameters();
  REQUIRE(params.contains("position.0.key_vectors"));
  CHECK(params["position.0.key_vectors"].size(0) == 1);
}

TEST_CASE("architecture contract: layouts a task cannot render are refused at load",
          "[contract][arch]") {
  load_all_plugins();
  test::TempDir dir;
  // Unpadded addition: the answer's length depends on the answer, which output slots would leak.
  test::write_text(dir.file("e.yaml"), R"(name: e
task: {name: addition, zero_pad: false, reverse_output: false, position_ids: sequential}
model: {arch: encoder, layers: 1, heads: 2, d_model: 16, d_ff: 16}
position: [ape]
)");
  CHECK_THROWS_WITH(Experiment::load(dir.file("e.yaml")),
                    Catch::Contains("task 'addition'") && Catch::Contains("'encoder'") &&
                        Catch::Contains("e.yaml"));
  // The same task is fine for the autoregressive layouts.
  test::write_text(dir.file("s.yaml"), R"(name: s
task: {name: addition, zero_pad: false, reverse_output: false, position_ids: sequential}
model: {arch: encoder_decoder, layers: 1, heads: 2, d_model: 16, d_ff: 16}
position: [ape]
)");
  CHECK_NOTHROW(Experiment::load(dir.file("s.yaml")));
  // An unknown architecture names the registered ones.
  test::write_text(dir.file("x.yaml"), R"(name: x
task: {name: addition}
model: {arch: encodr}
position: [nope]
)");
  CHECK_THROWS_WITH(Experiment::load(dir.file("x.yaml")),
                    Catch::Contains("unknown architecture 'encodr'") &&
                        Catch::Contains("'encoder'") && Catch::Contains("x.yaml") &&
                        Catch::Contains("encoder_decoder"));
}
