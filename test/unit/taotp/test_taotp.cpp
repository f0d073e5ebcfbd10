// TAOTP programs (The Art of Transformer Programming): hand-set weights have one right output,
// so running them checks lengen's core (embeddings, pre-LN with the book's epsilon, attention
// with per-head output projections, ReLU MLP, tied or untied output, greedy decoding) against
// a definition nobody here wrote.
#include "helpers.h"

#include "lengen/eval/decode.h"
#include "lengen/eval/evaluator.h"
#include "lengen/experiment/experiment.h"
#include "lengen/taotp/model.h"
#include "lengen/train/trainer.h"

#include <cmath>
#include <fstream>
#include <sstream>

using namespace lengen;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// pos_enc_3d (TAOTP section 2.3): points of the circle of radius sqrt(3) in the plane
// orthogonal to (1, 1, 1), which LayerNorm leaves fixed.
torch::Tensor pos_enc_3d(double t) {
  const double x = std::cos(t) / std::sqrt(2.0), y = std::sin(t) / std::sqrt(6.0);
  return torch::tensor({x + y, -x + y, -2 * y}, torch::kFloat64) * std::sqrt(3.0);
}

torch::Tensor pos_enc_3d_array(int64_t n) {
  std::vector<torch::Tensor> rows;
  for (int64_t p = 0; p < n; ++p)
    rows.push_back(pos_enc_3d(2 * M_PI * p / n));
  return torch::stack(rows);
}

taotp::Layer zero_layer(int64_t heads, int64_t C, int64_t D, int64_t F) {
  taotp::Layer L;
  L.Q = torch::zeros({heads, C, D}, torch::kFloat64);
  L.K = L.Q.clone();
  L.V = L.Q.clone();
  L.P = L.Q.clone();
  L.M1 = torch::zeros({C, F}, torch::kFloat64);
  L.b1 = torch::zeros({F}, torch::kFloat64);
  L.M2 = torch::zeros({F, C}, torch::kFloat64);
  L.b2 = torch::zeros({C}, torch::kFloat64);
  L.ln1 = L.ln2 = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  return L;
}

// Through the text format and back, so every constructed program also exercises the parser.
taotp::Program round_trip(const taotp::Program& p) {
  return taotp::parse_program(taotp::program_to_json(p), "<constructed>");
}

}  // namespace

TEST_CASE("taotp: the book's Hello World (Figure 8.2) prints Hello World!", "[taotp]") {
  const std::string dir = std::string(LENGEN_SOURCE_DIR) + "/experiments/taotp/";
  auto program = taotp::load_program(dir + "hello_world.taotp");
  REQUIRE(program.vocab_size() == 11);
  REQUIRE(program.block_size() == 13);
  CHECK(program.layers.empty());
  CHECK(program.tied());

  // Recover the token order from the figure: pos_emb[i] is a large multiple of the embedding
  // of the token that follows position i.
  const std::string message = "Hello World!";
  std::vector<int64_t> next(13);
  for (int64_t i = 0; i < 13; ++i) {
    auto d = (program.tok_emb - program.pos_emb[i] / 1e6).pow(2).sum(1);  // [V]
    next[i] = d.argmin().item<int64_t>();
    CHECK(d.min().item<double>() < 0.05);
  }
  std::map<char, int64_t> id_of;
  for (size_t i = 0; i < message.size(); ++i) {
    auto [it, fresh] = id_of.emplace(message[i], next[i]);
    CHECK(it->second == next[i]);  // a repeated character always points at the same row
  }
  std::set<int64_t> used;
  for (const auto& [c, id] : id_of)
    used.insert(id);
  CHECK(used.size() == id_of.size());  // distinct characters, distinct rows
  const int64_t eos = next[12];
  CHECK(used.count(eos) == 0);
  used.insert(eos);
  REQUIRE(used.size() == 10);
  int64_t bos = -1;
  for (int64_t t = 0; t < 11; ++t) {
    if (!used.count(t))
      bos = t;
  }
  // The shipped vocabulary is that order.
  auto vocab = taotp::load_vocabulary(dir + "hello_world.vocab");
  REQUIRE(vocab.size() == 11);
  CHECK(vocab[bos] == "<bos>");
  CHECK(vocab[eos] == "<eos>");
  for (const auto& [c, id] : id_of)
    CHECK(vocab[id] == std::string(1, c));

  auto built = taotp::build_model(program);
  CHECK(built.config.layers == 0);
  for (int64_t start = 0; start < 11; ++start) {
    // From any start token the program spells the message, then <eos>.
    auto out = taotp::greedy_decode(built.model, program.block_size(), {start}, 13, eos);
    std::string text;
    for (size_t i = 0; i + 1 < out.size(); ++i)
      text += vocab[out[i]];
    INFO("start token " << vocab[start]);
    CHECK(text == message);
    CHECK(out.back() == eos);
  }
  auto count = taotp::count_parameters(program);
  CHECK(count.total == 72);    // the book's figure: 11x3 + 13x3
  CHECK(count.nonzero == 68);  // four printed entries are 0.0
  // Decoding past the block is refused before running.
  CHECK_THROWS_WITH(taotp::greedy_decode(built.model, 13, {bos, 1}, 13, -1),
                    Catch::Contains("13 rows"));
}

TEST_CASE("taotp: MIN (Figure 5.2), hardened attention, on random inputs", "[taotp]") {
  const int64_t n = 20, block = 8;
  taotp::Program p;
  p.tok_emb = pos_enc_3d_array(2 * n + 2).slice(0, 1, 1 + n).contiguous();  // tied
  p.pos_emb = torch::zeros({block, 3}, torch::kFloat64);
  p.lnf = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  taotp::Layer L = zero_layer(1, 3, 3, 0);
  L.Q[0].select(1, 0).copy_(pos_enc_3d(M_PI / 2) * 1e8);
  L.K[0].select(1, 0).copy_(pos_enc_3d(0));
  L.V[0] = torch::eye(3, torch::kFloat64);
  L.P[0] = torch::eye(3, torch::kFloat64) * 1e6;
  p.layers.push_back(L);
  p = round_trip(p);

  auto count = taotp::count_parameters(p);
  CHECK(count.total == 6 * block + 39 + 3 * (n - block));  // 6n + 39 with vocab n, block 8
  CHECK(count.nonzero - p.tok_emb.ne(0).sum().item<int64_t>() ==
        11);  // the book: 11 outside tok_emb

  auto built = taotp::build_model(p);
  Rng rng(5);
  for (int sample = 0; sample < 300; ++sample) {
    const int64_t len = 1 + static_cast<int64_t>(rng.uniform_int(0, block - 1));
    std::vector<int64_t> input;
    for (int64_t i = 0; i < len; ++i)
      input.push_back(rng.uniform_int(0, n - 1));
    auto out = taotp::greedy_decode(built.model, block, input, 1, -1);
    INFO("input " << fmt::format("{}", fmt::join(input, " ")));
    CHECK(out[0] == *std::min_element(input.begin(), input.end()));
  }
}

TEST_CASE("taotp: a lookup table as an MLP of spikes (Theorem 6.1), untied output", "[taotp]") {
  // One layer whose attention is zero and whose MLP maps the token's 1-D feature s = e_x . u to
  // 10^6 times the embedding of f(x): three ReLUs per point (a triangle of width min_sep).
  const int64_t V = 12;
  auto emb = pos_enc_3d_array(V);  // [V, 3], fixed under LayerNorm
  Rng rng(3);
  std::vector<int64_t> f(V);
  for (auto& y : f)
    y = rng.uniform_int(0, V - 1);
  auto u = pos_enc_3d(0.3);
  auto s = torch::matmul(emb, u);  // [V] features
  auto sorted = std::get<0>(s.sort());
  const double sep = (sorted.slice(0, 1) - sorted.slice(0, 0, V - 1)).min().item<double>();
  REQUIRE(sep > 1e-3);
  taotp::Program p;
  p.tok_emb = emb;
  p.out_emb = emb * 2.0;  // untied (and different), so out_emb is counted
  p.pos_emb = torch::zeros({1, 3}, torch::kFloat64);
  p.lnf = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  taotp::Layer L = zero_layer(2, 3, 2, 3 * V);
  for (int64_t k = 0; k < V; ++k) {
    const double xk = s[k].item<double>();
    const double bias[3] = {-xk / sep, -xk / sep + 1, -xk / sep - 1};
    const double out[3] = {-2, 1, 1};
    for (int j = 0; j < 3; ++j) {
      L.M1.select(1, 3 * k + j).copy_(u / sep);
      L.b1[3 * k + j] = bias[j];
      L.M2[3 * k + j].copy_(emb[f[k]] * (1e6 * out[j]));
    }
  }
  p.layers.push_back(L);
  p = round_trip(p);
  CHECK(!p.tied());
  // tok_emb + pos_emb + out_emb + Q, K, V, P + M1 + b1 + M2 + b2
  CHECK(taotp::count_parameters(p).total ==
        V * 3 + 3 + V * 3 + 4 * (2 * 3 * 2) + 3 * (3 * V) + 3 * V + (3 * V) * 3 + 3);
  auto built = taotp::build_model(p);
  CHECK(built.config.d_ff == 3 * V);
  CHECK(built.config.ff_bias);
  for (int64_t x = 0; x < V; ++x) {
    CHECK(taotp::greedy_decode(built.model, 1, {x}, 1, -1)[0] == f[x]);
  }
}

TEST_CASE("taotp: the Python-literal spelling and clear errors", "[taotp]") {
  // Single quotes, trailing commas, 1. / -0. / .5 / 1e3, comments, tuples, empty MLP arrays,
  // defaults for every LayerNorm.
  const char* text = R"(# a comment
{'tok_emb': [[1., -0., .5], [1e3, 2, -3],],  # trailing commas
 'pos_emb': ((0, 0, 0),),
 'layers': [{'Q': [[[1.], [0.], [0.]]], "K": [[[1.], [0.], [0.]]], 'V': [[[1.], [0.], [0.]]],
             'P': [[[1.], [0.], [0.]]], 'M1': [[], [], []], 'b1': [], 'M2': [], 'b2': [0, 0, 0.]}],
})";
  auto p = taotp::parse_program(text, "t.py");
  CHECK(p.tok_emb[1][0].item<double>() == 1000.0);
  CHECK(p.tok_emb[0][2].item<double>() == 0.5);
  CHECK(p.layers.at(0).M1.sizes() == torch::IntArrayRef({3, 0}));
  CHECK(p.layers.at(0).M2.sizes() == torch::IntArrayRef({0, 3}));
  CHECK(p.lnf.gamma.item<double>() == 1.0);
  CHECK(taotp::count_parameters(p).total == 6 + 3 + 4 * 3 + 3);
  CHECK(taotp::build_model(p).config.d_ff == 0);

  auto fails = [](const std::string& t, const std::string& needle) {
    INFO(t);
    CHECK_THROWS_WITH(taotp::parse_program(t, "bad.py"), Catch::Contains(needle));
  };
  fails("{'tok_emb': [[1, 2], [3]], 'pos_emb': [[0, 0]]}", "bad.py:1:");
  fails("{'tok_emb': [[1, 2], [3]], 'pos_emb': [[0, 0]]}", "rectangular");
  fails("{'tok_emb': [[1, 2]], 'pos_emb': [[0, 0, 0]]}",
        "pos_emb has shape [1, 3], expected [block_size, 2]");
  fails("{'tok_emb': [[1, 2]], 'pos_emb': [[0, 0]], 'tok_embs': 1}", "did you mean 'tok_emb'");
  fails(
      "{'tok_emb': [[1, 2]], 'pos_emb': [[0, 0]], 'layers': [{'Q': [[[1], [1]]], 'K': [[[1], "
      "[1]]], "
      "'V': [[[1], [1]]], 'P': [[[1, 2], [1, 2]]]}]}",
      "layers[0].P has shape [1, 2, 2], expected [1, 2, 1]");
  fails("{'tok_emb': [[1, 2]], 'pos_emb': [[0, 0]], 'lnf': {'gamma': [1, 1, 1]}}", "lnf.gamma");
  fails("{'tok_emb': [[1, 2]],\n 'pos_emb': [[0, x]]}", "bad.py:2:18: unexpected name 'x'");
  fails("{'tok_emb': [[1, 2]]", "expected ',' or '}'");
  fails("{'pos_emb': [[0, 0]]}", "no 'tok_emb'");
}

TEST_CASE("taotp: export a trained decoder; run on the program reproduces its greedy outputs",
          "[taotp]") {
  test::TempDir dir;
  test::write_text(dir.file("e.yaml"), R"(name: taotp-export
seed: 2
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4], position_ids: sequential}
model: {layers: 2, heads: 2, d_model: 32, d_head: 12, d_ff: 48, norm: layernorm, activation: relu, ff_bias: true}
position: [{name: ape, max_position: 24}]
train: {steps: 150, batch_size: 64, optimizer: {name: adam, lr: 0.003}, schedule: {warmup_steps: 10}, log_every: 150, checkpoint_every: 0}
)");
  for (const char* norm : {"layernorm", "taotp_layernorm"}) {
    DYNAMIC_SECTION(norm) {
      // The format has no epsilon: the book's 1e-10 is used. With it, the arithmetic is the same.
      const bool book_norm = std::string(norm) == "taotp_layernorm";
      Experiment exp =
          Experiment::load(dir.file("e.yaml"),
                           {"output_dir=" + dir.str(),
                            std::string("model.norm=") + norm,
                            book_norm ? "model.norm_eps=1e-10" : "model.norm_eps=1e-5"});
      Transformer model = exp.build_model(torch::kCPU);
      Trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, exp.run_dir()).run(false);
      model->to(torch::kFloat64);
      model->eval();

      auto program = round_trip(taotp::export_program(exp, model));
      CHECK(program.block_size() == 25);
      CHECK(program.layers.size() == 2);
      auto built = taotp::build_model(program);
      const auto& vocab = exp.task->vocabulary();
      Rng rng(8);
      std::vector<std::vector<int64_t>> prompts;
      for (int i = 0; i < 40; ++i) {
        Example ex = exp.task->sample_eval({{"digits", 1 + i % 4}}, rng);
        prompts.emplace_back(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
      }
      for (size_t i = 0; i < prompts.size(); ++i) {
        auto expected = greedy_decode(model, *exp.task, {prompts[i]}, torch::kCPU);
        const int64_t room = program.block_size() - static_cast<int64_t>(prompts[i].size()) + 1;
        auto got =
            taotp::greedy_decode(built.model, program.block_size(), prompts[i], room, vocab.eos());
        const size_t n = std::min(got.size(), expected[0].size());
        INFO("prompt " << vocab.decode(prompts[i]));
        CHECK(std::vector<int64_t>(got.begin(), got.begin() + n) ==
              std::vector<int64_t>(expected[0].begin(), expected[0].begin() + n));
      }
      if (book_norm) {
        // The same arithmetic: logits agree to rounding.
        Batch b = make_batch({exp.task->sample_eval({{"digits", 3}}, rng)}, vocab.pad());
        torch::NoGradGuard ng;
        CHECK(test::max_abs_diff(model->forward(b.inputs, b.ids),
                                 built.model->forward(b.inputs, b.ids)) < 1e-9);
      }
    }
  }
  // What the format cannot express is refused with the reason.
  Experiment coupled = Experiment::load(dir.file("e.yaml"),
                                        {"output_dir=" + dir.str(),
                                         "position=[{name: coupling, max_position: 24}]",
                                         "task.position_ids=coupled"});
  Transformer m = coupled.build_model(torch::kCPU);
  CHECK_THROWS_WITH(taotp::export_program(coupled, m),
                    Catch::Contains("position[0] is 'coupling'"));
  Experiment rms =
      Experiment::load(dir.file("e.yaml"), {"output_dir=" + dir.str(), "model.norm=rmsnorm"});
  Transformer m2 = rms.build_model(torch::kCPU);
  CHECK_THROWS_WITH(taotp::export_program(rms, m2), Catch::Contains("rmsnorm"));
}

TEST_CASE("taotp: the softmax adds Figure 1.1's 1e-10 to its denominator", "[taotp]") {
  // One token, one head whose value cancels the token embedding up to the softmax's
  // 1/(1 + 1e-10): the residual is then +-1e-10 and the final LayerNorm (eps 1e-10 on the
  // std) scales it to +-0.5, so the logits are -1 / +1. Without the softmax epsilon the
  // residual is rounding noise (~1e-16) and the logits ~1e-6: the book's output is lost.
  taotp::Program p;
  p.tok_emb = torch::tensor({{1.0, -1.0}, {-1.0, 1.0}}, torch::kFloat64);  // token 0, token 1
  p.pos_emb = torch::zeros({1, 2}, torch::kFloat64);
  p.lnf = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  taotp::Layer L = zero_layer(1, 2, 2, 0);
  L.V[0] = torch::eye(2, torch::kFloat64) * -(1.0 + 1e-10);  // undoes ln1's 1/(1 + 1e-10)
  L.P[0] = torch::eye(2, torch::kFloat64);
  p.layers.push_back(L);
  auto built = taotp::build_model(p);
  CHECK(built.config.softmax_eps == 1e-10);
  torch::NoGradGuard ng;
  built.model->eval();
  auto logits = built.model->forward(torch::tensor({{int64_t{1}}}),
                                     torch::zeros({1, 1, 1}, torch::kInt64))[0][0];
  // Figure 1.1 by hand (float64): x = -e + e / (1 + 1e-10) per entry, LN = x / (|x| + 1e-10).
  const double x = -1.0 + (1.0 + 1e-10) * (1.0 / (1.0 + 1e-10)) * (1.0 / (1.0 + 1e-10));
  const double ln = x / (std::abs(x) + 1e-10);  // about -0.5
  CHECK(ln == Approx(-0.5).epsilon(1e-5));
  CHECK(logits[1].item<double>() == Approx(-2.0 * ln).epsilon(1e-4));
  CHECK(logits[0].item<double>() == Approx(2.0 * ln).epsilon(1e-4));
}
