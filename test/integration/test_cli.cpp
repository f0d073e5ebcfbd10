// The command line end to end: run, config, eval, decode, example, plugins, logits, bench; errors
// exit non-zero with file/line; a run killed with SIGKILL resumes to the same final weights.
#include "helpers.h"

#include "lengen/core/error.h"
#include "lengen/report/report.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/tensorboard.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace lengen;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const char* kCli = R"(name: cli
seed: 2
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 5]}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64}
position: [{name: coupling, max_position: 16}]
train:
  steps: 40
  batch_size: 16
  optimizer: {name: adam, lr: 0.003}
  log_every: 10
  checkpoint_every: 20
eval: {samples: 20}
)";

std::string cli() {
  return LENGEN_CLI;
}

using test::sh;

}  // namespace

TEST_CASE("cli: run writes the run directory; eval, decode, logits read it", "[cli]") {
  test::TempDir tmp;
  test::write_text(tmp.file("cli.yaml"), kCli);
  const std::string out_dir = tmp.file("runs");
  std::string log = sh(fmt::format("run {} --set output_dir={}", tmp.file("cli.yaml"), out_dir));
  CHECK_THAT(log, Contains("step") && Contains("tok/s") && Contains("ETA"));
  CHECK_THAT(log, Contains("accuracy") && Contains("95% interval"));
  const fs::path run = fs::path(out_dir) / "cli" / "2";
  for (const char* f : {"config.yaml",
                        "metrics.jsonl",
                        "eval/grid.csv",
                        "eval/summary.json",
                        "checkpoints/step-00000040.safetensors"}) {
    INFO(f);
    CHECK(fs::exists(run / f));
  }
  // metrics.jsonl: one record per log period.
  std::ifstream m(run / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(m, line); ++lines) {
    auto j = nlohmann::json::parse(line);
    CHECK(j.contains("loss"));
    CHECK(j.contains("tokens_per_s"));
  }
  CHECK(lines == 4);
  // grid.csv: header + 5 cells.
  std::ifstream g(run / "eval" / "grid.csv");
  std::string header;
  std::getline(g, header);
  CHECK(header == "digits,samples,correct,accuracy,ci_low,ci_high");

  SECTION("a second run without --resume refuses to overwrite") {
    int rc = 0;
    std::string err =
        sh(fmt::format("run {} --set output_dir={}", tmp.file("cli.yaml"), out_dir), &rc);
    CHECK(rc == 1);
    CHECK_THAT(err, Contains("already holds checkpoints"));
  }
  SECTION("eval with true decoding gives the same table as teacher forcing") {
    const std::string tf = test::read_text((run / "eval" / "grid.csv").string());
    sh(fmt::format("eval {} --decode", run.string()));
    CHECK(test::read_text((run / "evals" / "decode" / "eval" / "grid.csv").string()) == tf);
  }
  SECTION("a changed evaluation goes to evals/NAME and leaves the run's own results as they were") {
    const std::string own = test::read_text((run / "eval" / "grid.csv").string());
    const std::string own_summary = test::read_text((run / "eval" / "summary.json").string());
    std::string log = sh(fmt::format("eval {} --set eval.samples=7", run.string()));
    CHECK_THAT(log, Contains("evals/eval.samples=7"));
    CHECK(test::read_text((run / "eval" / "grid.csv").string()) == own);
    CHECK(test::read_text((run / "eval" / "summary.json").string()) == own_summary);
    const fs::path changed = run / "evals" / "eval.samples=7";
    CHECK_THAT(test::read_text((changed / "eval" / "grid.csv").string()), Contains(",7,"));
    CHECK_THAT(test::read_text((changed / "config.yaml").string()), Contains("samples: 7"));
    // --out names the folder; a path is refused before anything is written.
    sh(fmt::format("eval {} --set eval.samples=5 --out five", run.string()));
    CHECK(fs::exists(run / "evals" / "five" / "eval" / "summary.json"));
    // The run's config.yaml pins the grid it was evaluated on (digits 1-5); an override of the
    // task's range moves the grid with it, and an explicit eval.grid wins over that.
    sh(fmt::format("eval {} --set 'task.eval_digits=[2,7]' --set eval.samples=5 --out wider",
                   run.string()));
    const std::string wider =
        test::read_text((run / "evals" / "wider" / "eval" / "grid.csv").string());
    CHECK(std::count(wider.begin(), wider.end(), '\n') == 1 + 6);
    CHECK_THAT(wider, Contains("\n2,5,") && Contains("\n7,5,"));
    sh(
        fmt::format("eval {} --set 'task.eval_digits=[2,7]' --set 'eval.grid.digits=[6]' --set "
                    "eval.samples=5 --out six",
                    run.string()));
    const std::string six = test::read_text((run / "evals" / "six" / "eval" / "grid.csv").string());
    CHECK(std::count(six.begin(), six.end(), '\n') == 1 + 1);
    CHECK_THAT(six, Contains("\n6,5,"));
    int rc = 0;
    std::string err = sh(fmt::format("eval {} --out ../escape", run.string()), &rc);
    CHECK(rc == 1);
    CHECK_THAT(err, Contains("expected a folder name"));
    CHECK_FALSE(fs::exists(run / "escape"));
    // Without changes, eval rewrites the run's own results (the same figures).
    sh(fmt::format("eval {}", run.string()));
    CHECK(test::read_text((run / "eval" / "grid.csv").string()) == own);
  }
  SECTION("decode prints the output and the IDs") {
    std::string d = sh(fmt::format("decode {} 57+48 --ids", run.string()));
    CHECK_THAT(d, Contains("reference: $57+48=501$"));
    CHECK_THAT(d, Contains("token") && Contains("ids"));
  }
  SECTION("attention averages maps over samples of one cell") {
    sh(fmt::format("attention {} --cell digits=3 -n 8 -o {}", run.string(), tmp.file("att")));
    auto j = nlohmann::json::parse(std::ifstream(tmp.file("att") + "/attention.json"));
    REQUIRE(j["maps"].size() == 2);  // 1 layer x 2 heads
    const auto& w = j["maps"][1]["weights"];
    CHECK(w.size() == j["tokens"].size());
    for (const auto& row : w) {
      double sum = 0;
      for (double x : row)
        sum += x;
      CHECK(std::abs(sum - 1.0) < 1e-5);  // each query's weights are a distribution
    }
    CHECK(w[0][1].get<double>() == 0.0);  // causal: the first query sees only itself
    int rc = 0;
    std::string err = sh(fmt::format("attention {} --cell digit=3", run.string()), &rc);
    CHECK(rc == 1);
    CHECK_THAT(err, Contains("needs 'digits'"));
    err = sh(fmt::format("attention {} --cell digits=3 --heads 5", run.string()), &rc);
    CHECK(rc == 1);
    CHECK_THAT(err, Contains("not in [0, 2)"));
  }
  SECTION("logits prints one value per vocabulary token") {
    auto j = nlohmann::json::parse(sh(fmt::format("logits {} 12+34", run.string())));
    CHECK(j["logits"].size() == j["vocabulary"].size());
    CHECK(j["prompt_tokens"].size() == 7);
  }
}

TEST_CASE("cli: a run with a paper: block ends with the paper's figures beside its own", "[cli]") {
  test::TempDir tmp;
  test::write_text(
      tmp.file("cli.yaml"),
      std::string(kCli) +
          "paper: {cite: \"Smith et al.\", table: \"Table 9\", values: {1: 100, 5: 0, 9: 50}}\n");
  const std::string log =
      sh(fmt::format("run {} --set output_dir={}", tmp.file("cli.yaml"), tmp.file("runs")));
  CHECK_THAT(log, Contains("Smith et al., Table 9: lengen's figure (the paper's)"));
  const fs::path run = fs::path(tmp.file("runs")) / "cli" / "2";
  // paper.csv carries the run's own accuracy from grid.csv at every evaluated length, the
  // paper's where it gives one, and their difference; 9 digits was not evaluated.
  std::map<std::string, double> grid;
  std::ifstream g(run / "eval" / "grid.csv");
  std::string line;
  std::getline(g, line);
  while (std::getline(g, line)) {
    const auto c1 = line.find(','), c3 = line.find(',', line.find(',', c1 + 1) + 1);
    grid[line.substr(0, c1)] = std::stod(line.substr(c3 + 1, line.find(',', c3 + 1) - c3 - 1));
  }
  REQUIRE(grid.size() == 5);
  std::ifstream p(run / "eval" / "paper.csv");
  std::getline(p, line);
  CHECK(line ==
        "config,label,digits,paper,seeds,median,q25,q75,min,max,difference,statistic,lengen,lengen_"
        "difference");
  int rows = 0;
  while (std::getline(p, line)) {
    ++rows;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');)
      f.push_back(x);
    f.resize(14);
    INFO(line);
    CHECK(f[0] == "cli");
    if (f[2] == "9") {
      CHECK(f[3] == "50.00");
      CHECK(f[5].empty());
      continue;
    }
    CHECK(std::stod(f[5]) == Approx(100 * grid.at(f[2])).margin(0.006));
    CHECK(f[3] == (f[2] == "1" ? "100.00" : f[2] == "5" ? "0.00" : ""));
    if (!f[3].empty())
      CHECK(std::stod(f[10]) == Approx(std::stod(f[5]) - std::stod(f[3])).margin(0.011));
  }
  CHECK(rows == 6);
  CHECK(fs::exists(run / "plots" / "paper.png") == plotting_available());
  CHECK_THAT(test::read_text((run / "config.yaml").string()), Contains("Table 9"));
}

TEST_CASE("cli: every architecture runs, evaluates, decodes, prints logits and attention",
          "[cli][arch]") {
  const std::string arch = GENERATE(as<std::string>{}, "encoder_decoder", "encoder");
  INFO(arch);
  test::TempDir tmp;
  test::write_text(tmp.file("cli.yaml"), kCli);
  const std::string out_dir = tmp.file("runs");
  std::string log = sh(fmt::format(
      "run {} --set output_dir={} --set model.arch={}", tmp.file("cli.yaml"), out_dir, arch));
  CHECK_THAT(log, Contains("accuracy"));
  const fs::path run = fs::path(out_dir) / "cli" / "2";
  CHECK_THAT(test::read_text((run / "config.yaml").string()), Contains("arch: " + arch));
  // TensorBoard: training scalars and the accuracy of every cell, CRCs intact.
  std::string tags;
  for (const auto& f : fs::directory_iterator(run / "tensorboard")) {
    for (const auto& rec : read_event_records(f.path().string()))
      tags += rec;
  }
  CHECK_THAT(tags,
             Contains("train/loss") && Contains("train/tokens_per_s") &&
                 Contains("eval/accuracy/digits=5") && Contains("eval/mean_accuracy"));
  // Greedy decoding gives the teacher-forced verdicts (a short run: some right, some wrong).
  const std::string tf = test::read_text((run / "eval" / "grid.csv").string());
  sh(fmt::format("eval {} --decode", run.string()));
  CHECK(test::read_text((run / "evals" / "decode" / "eval" / "grid.csv").string()) == tf);
  CHECK_THAT(sh(fmt::format("decode {} 12+34", run.string())), Contains("reference: "));
  auto logits = nlohmann::json::parse(sh(fmt::format("logits {} 12+34", run.string())));
  CHECK(logits["logits"].size() == logits["vocabulary"].size());
  sh(fmt::format("attention {} --cell digits=3 -n 4 -o {}", run.string(), tmp.file("att")));
  auto att = nlohmann::json::parse(test::read_text(tmp.file("att/attention.json")));
  CHECK(att["maps"].size() >= 2);
  if (arch == "encoder_decoder") {
    // Encoder, decoder self- and cross-attention maps, each with its own query/key tokens.
    bool cross = false;
    for (const auto& m : att["maps"]) {
      if (m["name"].get<std::string>().find(".cross") != std::string::npos) {
        cross = true;
        CHECK(m["keys"].size() != m["queries"].size());
        CHECK(m["weights"][0].size() == m["keys"].size());
      }
    }
    CHECK(cross);
  }
}

TEST_CASE("cli: example, plugins and bench need no trained model", "[cli]") {
  test::TempDir tmp;
  test::write_text(tmp.file("cli.yaml"), kCli);
  std::string text = sh(fmt::format("example {} --query 57+48", tmp.file("cli.yaml")));
  CHECK_THAT(text, Contains("$57+48=501$"));
  auto j = nlohmann::json::parse(
      sh(fmt::format("example {} --eval digits=4 -n 2 --json", tmp.file("cli.yaml"))));
  REQUIRE(j.size() == 2);
  CHECK(j[0]["tokens"].size() == 1 + 4 + 1 + 4 + 1 + 5 + 1);
  CHECK(j[0]["position_ids"][0][1] == 5);  // most significant digit of a 4-digit operand
  std::string plugins = sh("plugins");
  for (const char* n : {"nope", "ape", "sinusoidal", "coupling", "addition"}) {
    CHECK_THAT(plugins, Contains(n));
  }
  CHECK_THAT(sh("plugins --describe coupling"),
             Contains("max_position") && Contains("random_offset"));
  auto b =
      nlohmann::json::parse(sh(fmt::format("bench {} --steps 3 --warmup 1", tmp.file("cli.yaml"))));
  CHECK(b["median_ms_per_step"].get<double>() > 0);
  CHECK(b["tokens_per_s"].get<double>() > 0);
  CHECK(b["tflops_per_s"].get<double>() > 0);
  CHECK(b["padded_tflops_per_s"].get<double>() >= b["tflops_per_s"].get<double>());
  auto peak = nlohmann::json::parse(
      sh(fmt::format("bench {} --steps 2 --warmup 0 --peak-tflops 0.001", tmp.file("cli.yaml"))));
  CHECK(peak["fraction_of_peak"].get<double>() ==
        Approx(peak["tflops_per_s"].get<double>() / 0.001));
  // --eval times the grid (eval_digits 1-5, 20 samples each) on the untrained model.
  auto e = nlohmann::json::parse(sh(fmt::format("bench {} --eval", tmp.file("cli.yaml"))));
  CHECK(e["cells"] == 5);
  CHECK(e["samples"] == 5 * 20);
  CHECK(e["seconds"].get<double>() > 0);
  // Tokens of the 100 sequences: 1+L+1+L+1+(L+1)+1 per sample of L digits, 20 of each L.
  CHECK(e["tokens"] == 20 * (5 * 5 + 3 * (1 + 2 + 3 + 4 + 5)));
}

TEST_CASE("cli: config prints the resolved experiment without running it", "[cli]") {
  test::TempDir tmp;
  test::write_text(tmp.file("cli.yaml"), kCli);
  test::write_text(
      tmp.file("child.yaml"),
      fmt::format("extends: cli.yaml\nname: child\nmodel: {{d_model: 48}}\noutput_dir: {}\n",
                  tmp.file("runs")));
  int rc = 0;
  const std::string text =
      sh(fmt::format("config {} --set train.steps=7", tmp.file("child.yaml")), &rc);
  REQUIRE(rc == 0);
  // The chain merged (this file's keys over the base's), --set applied, defaults filled in.
  CHECK_THAT(text,
             Contains("name: child") && Contains("d_model: 48") && Contains("heads: 2") &&
                 Contains("steps: 7") && Contains("dtype: float32"));
  CHECK_THAT(text, !Contains("extends") && !Contains("d_model: 32") && !Contains("steps: 40"));
  CHECK_FALSE(fs::exists(tmp.file("runs")));  // nothing ran
  // What it prints is a complete experiment: loading it again prints the same configuration.
  test::write_text(tmp.file("resolved.yaml"), text);
  auto body = [](const std::string& y) { return y.substr(0, y.find("provenance:")); };
  CHECK(body(sh(fmt::format("config {}", tmp.file("resolved.yaml")))) == body(text));
  CHECK_THAT(sh(fmt::format("config {}", tmp.file("missing.yaml")), &rc),
             Contains("missing.yaml: cannot open"));
  CHECK(rc == 1);
}

TEST_CASE("cli: bad input exits 1 with a clear message", "[cli]") {
  test::TempDir tmp;
  std::string bad = kCli;
  bad.replace(bad.find("d_ff: 64"), 8, "d_fff: 64");
  test::write_text(tmp.file("bad.yaml"), bad);
  int rc = 0;
  std::string err = sh(fmt::format("run {}", tmp.file("bad.yaml")), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("bad.yaml:4:43") && Contains("did you mean 'd_ff'"));
  CHECK_THAT(err, !Contains("terminate"));
  err = sh(fmt::format("run {}", tmp.file("missing.yaml")), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("missing.yaml: cannot open"));
}

TEST_CASE("cli: a run killed with SIGKILL resumes to the same final weights", "[cli][resume]") {
  test::TempDir tmp;
  std::string cfg = kCli;
  cfg.replace(cfg.find("steps: 40"), 9, "steps: 400");
  cfg.replace(cfg.find("checkpoint_every: 20"), 20, "checkpoint_every: 50");
  test::write_text(tmp.file("k.yaml"), cfg);
  const std::string a = tmp.file("a"), b = tmp.file("b");
  sh(fmt::format("run {} --no-eval --set output_dir={}", tmp.file("k.yaml"), a));
  // Start b in the background and kill it hard once a checkpoint exists.
  const fs::path ckpt_dir = fs::path(b) / "cli" / "2" / "checkpoints";
  REQUIRE(test::kill_hard_when_file_appears(
      fmt::format("{} run {} --no-eval --set output_dir={}", cli(), tmp.file("k.yaml"), b),
      ckpt_dir.string(),
      ".safetensors",
      tmp.str()));
  CHECK(!fs::exists(ckpt_dir / "step-00000400.safetensors"));
  sh(fmt::format("run {} --no-eval --resume --set output_dir={}", tmp.file("k.yaml"), b));
  auto fa = load_safetensors(
      (fs::path(a) / "cli" / "2" / "checkpoints" / "step-00000400.safetensors").string());
  auto fb = load_safetensors((ckpt_dir / "step-00000400.safetensors").string());
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    INFO(fa.tensors[i].first);
    CHECK(torch::equal(fa.tensors[i].second, fb.tensors[i].second));
  }
}

TEST_CASE("cli: taotp run, count and export", "[cli][taotp]") {
  const std::string dir = std::string(LENGEN_SOURCE_DIR) + "/experiments/taotp/";
  const std::string hello = dir + "hello_world.taotp", vocab = dir + "hello_world.vocab";
  CHECK(sh(fmt::format(
            "taotp run {} --vocab {} --input '<bos>' --eos '<eos>' --sep ''", hello, vocab)) ==
        "Hello World!\n");
  // Token indices in and out (the space token is index 2).
  CHECK(sh(fmt::format("taotp run {} --ids --input 9 --eos 10", hello)) ==
        "1 8 0 0 7 2 4 7 3 0 6 5\n");
  std::string traced =
      sh(fmt::format("taotp run {} --vocab {} --input '<bos>' --steps 2 --trace", hello, vocab));
  CHECK_THAT(traced, Contains("step 1: argmax 1 'H'") && Contains("step 2: argmax 8 'e'"));
  std::string counted = sh("taotp count " + hello);
  CHECK_THAT(counted, Contains("parameters: 72") && Contains("non-zero: 68"));

  test::TempDir tmp;
  int rc = 0;
  test::write_text(tmp.file("bad.taotp"), "{'tok_emb': [[1, 2]],\n 'pos_emb': [[1, 2], [3]]}");
  std::string err = sh("taotp count " + tmp.file("bad.taotp"), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("bad.taotp:2:") && Contains("rectangular"));
  err = sh(fmt::format("taotp run {} --vocab {} --input 'x'", hello, vocab), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("token 'x' is not in"));
  err = sh(fmt::format("taotp run {} --vocab {} --input '<bos>' --steps 20", hello, vocab), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("block_size"));

  // A trained decoder exported as a program decodes like the model.
  test::write_text(tmp.file("ape.yaml"), R"(name: ape
seed: 3
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 3], position_ids: sequential}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64, norm: layernorm, activation: relu}
position: [{name: ape, max_position: 20}]
train: {steps: 60, batch_size: 32, log_every: 60, checkpoint_every: 60}
)");
  sh(fmt::format("run {} --set output_dir={} --no-eval", tmp.file("ape.yaml"), tmp.file("runs")));
  const std::string run = tmp.file("runs") + "/ape/3";
  CHECK_THAT(sh("taotp export " + run), Contains("program.json") && Contains("vocab.json"));
  for (const char* query : {"12+34", "7+5", "305+812"}) {  // equal lengths: no zero padding
    std::string decoded = sh(fmt::format("decode {} {}", run, query));
    // "$12+34=640$" -> "640"
    std::string first = decoded.substr(0, decoded.find('\n'));
    std::string answer = first.substr(first.find('=') + 1);
    if (!answer.empty() && answer.back() == '$')
      answer.pop_back();
    std::string input = "$";
    for (char c : std::string(query) + "=")
      input += std::string(" ") + c;
    std::string program_out =
        sh(fmt::format("taotp run {0}/taotp/program.json --vocab {0}/taotp/vocab.json --input "
                       "'{1}' --eos '$' --sep ''",
                       run,
                       input));
    program_out.pop_back();  // newline
    INFO(query << ": model " << answer << ", program " << program_out);
    const size_t n = std::min(answer.size(), program_out.size());
    CHECK(answer.substr(0, n) == program_out.substr(0, n));
    CHECK(n > 0);
  }
}

namespace {

// A local sweep over seeds of a tiny NoPE run: <tmp>/base.yaml and <tmp>/s.yaml, output in
// <tmp>/<name>.
void write_seed_sweep(const test::TempDir& tmp,
                      const std::string& name,
                      int64_t steps,
                      int64_t log_every,
                      int64_t checkpoint_every,
                      int64_t eval_digits,
                      const std::string& seeds) {
  test::write_text(tmp.file("base.yaml"),
                   fmt::format(R"(name: base
task: {{name: addition, train_digits: [1, 3], eval_digits: [1, {}]}}
model: {{layers: 1, heads: 2, d_model: 16, d_ff: 32}}
position: [nope]
train: {{steps: {}, batch_size: 8, log_every: {}, checkpoint_every: {}}}
eval: {{samples: 10}}
)",
                               eval_digits,
                               steps,
                               log_every,
                               checkpoint_every));
  test::write_text(tmp.file("s.yaml"),
                   fmt::format(R"(name: {}
base: base.yaml
output_dir: {}
grid: {{seed: {}}}
executor: {{workers: 2, threads_per_run: 1}}
)",
                               name,
                               tmp.str(),
                               seeds));
}

// Starts `lengen sweep <tmp>/s.yaml [extra]` in a child process, its output in <tmp>/sweep.log.
pid_t start_sweep(const test::TempDir& tmp,
                  const char* extra_flag = nullptr,
                  const char* extra_value = nullptr) {
  pid_t pid = fork();
  if (pid == 0) {
    const std::string log = tmp.file("sweep.log");
    // One open file for both streams (two would each keep their own offset and write over
    // each other, as a plot script's traceback did where matplotlib is missing).
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), fileno(stderr));
    execl(LENGEN_CLI,
          LENGEN_CLI,
          "sweep",
          tmp.file("s.yaml").c_str(),
          extra_flag,
          extra_value,
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("cli: a local sweep records a failure, finishes the rest, and a rerun completes it",
          "[cli][sweep]") {
  test::TempDir tmp;
  write_seed_sweep(tmp, "local", 20, 10, 10, 4, "[0, 1, 2]");
  const fs::path root = fs::path(tmp.str()) / "local";
  // Point 1 will fail at run time: a corrupt checkpoint where --resume looks.
  const fs::path bad = root / "runs" / "local" / "1" / "checkpoints";
  fs::create_directories(bad);
  test::write_text((bad / "step-00000005.safetensors").string(), "not a checkpoint");

  int rc = 0;
  std::string log = sh("sweep " + tmp.file("s.yaml"), &rc);
  CHECK(rc == 1);
  CHECK_THAT(log, Contains("point local,seed=1 failed") && Contains("1 point(s) failed"));
  std::string status = sh("sweep " + tmp.file("s.yaml") + " --status");
  CHECK_THAT(status, Contains("2 done, 0 running, 1 failed, 0 interrupted, 0 missing"));
  auto failed =
      nlohmann::json::parse(std::ifstream(root / "runs" / "local" / "1" / "sweep-failed.json"));
  CHECK(failed["exit_status"] == 1);
  CHECK(fs::exists(failed["log"].get<std::string>()));
  const auto done_at = fs::last_write_time(root / "runs" / "local" / "0" / "eval" / "summary.json");

  // Fixed, the rerun runs only the failed point and leaves the finished ones alone.
  fs::remove(bad / "step-00000005.safetensors");
  log = sh("sweep " + tmp.file("s.yaml"));
  CHECK_THAT(log, Contains("3 points, 1 to run"));
  CHECK(fs::last_write_time(root / "runs" / "local" / "0" / "eval" / "summary.json") == done_at);
  CHECK_THAT(sh("sweep " + tmp.file("s.yaml") + " --status"),
             Contains("3 done, 0 running, 0 failed"));
  // The sweep aggregated itself: one row per point and cell.
  std::ifstream results(root / "aggregate" / "results.csv");
  std::string all((std::istreambuf_iterator<char>(results)), {});
  CHECK(std::count(all.begin(), all.end(), '\n') == 1 + 3 * 4);
  CHECK(fs::exists(root / "aggregate" / "panel.png") == plotting_available());

  // An invalid axis is refused before anything is planned.
  test::write_text(tmp.file("bad.yaml"), "name: bad\nbase: base.yaml\ngrid: {model.layerz: [1]}\n");
  std::string err = sh("sweep " + tmp.file("bad.yaml"), &rc);
  CHECK(rc == 1);
  CHECK_THAT(err, Contains("bad.yaml:3:") && Contains("layerz"));
}

TEST_CASE("cli: Ctrl-C stops a local sweep cleanly; the next run resumes the stopped points",
          "[cli][sweep]") {
  test::TempDir tmp;
  write_seed_sweep(tmp, "stop", 4000, 500, 50, 3, "[0, 1]");
  const fs::path runs = fs::path(tmp.str()) / "stop" / "runs" / "stop";
  const pid_t pid = start_sweep(tmp);
  // Interrupt once both points have a checkpoint.
  for (int i = 0; i < 600; ++i) {
    if (fs::exists(runs / "0" / "checkpoints") && fs::exists(runs / "1" / "checkpoints") &&
        !fs::is_empty(runs / "0" / "checkpoints") && !fs::is_empty(runs / "1" / "checkpoints")) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(!fs::exists(runs / "0" / "eval" / "summary.json"));
  kill(pid, SIGINT);
  int raw = 0;
  waitpid(pid, &raw, 0);
  CHECK(WIFEXITED(raw));
  std::string status = sh("sweep " + tmp.file("s.yaml") + " --status");
  CHECK_THAT(status, Contains("0 done, 0 running, 0 failed, 2 interrupted"));
  // Both stopped with a checkpoint; the next run resumes them to the end.
  std::string log = sh("sweep " + tmp.file("s.yaml"));
  INFO(log);
  for (const char* seed : {"0", "1"}) {
    std::ifstream in(runs / seed / "sweep.log");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK_THAT(text, Contains("resumed from"));
  }
  CHECK_THAT(sh("sweep " + tmp.file("s.yaml") + " --status"),
             Contains("2 done, 0 running, 0 failed, 0 interrupted"));
}

TEST_CASE("cli: a local sweep does not start a point that another process took meanwhile",
          "[cli][sweep]") {
  test::TempDir tmp;
  write_seed_sweep(tmp, "shared", 300, 100, 100, 3, "[0, 1]");
  const fs::path runs = fs::path(tmp.str()) / "shared" / "runs" / "shared";
  const pid_t pid = start_sweep(tmp, "-j", "1");
  // Once the sweep has listed both points and started point 0, a second sweeper (this test
  // process, alive on this host) claims point 1 the way `lengen sweep` does.
  for (int i = 0; i < 3000 && !fs::exists(runs / "0" / "sweep-running.json"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(fs::exists(runs / "0" / "sweep-running.json"));
  REQUIRE(!fs::exists(runs / "0" / "eval" / "summary.json"));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  fs::create_directories(runs / "1");
  test::write_text((runs / "1" / "sweep-running.json").string(),
                   nlohmann::json{{"pid", ::getpid()}, {"host", host}}.dump());
  int raw = 0;
  waitpid(pid, &raw, 0);
  std::ifstream in(tmp.file("sweep.log"));
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  INFO(log);
  CHECK(WIFEXITED(raw));
  CHECK_THAT(
      log,
      Contains("2 points, 2 to run") && Contains("skip shared,seed=1: running in another process"));
  CHECK(!Contains("start shared,seed=1").match(log));
  CHECK(fs::exists(runs / "0" / "eval" / "summary.json"));
  CHECK(!fs::exists(runs / "1" / "checkpoints"));
  CHECK_THAT(sh("sweep " + tmp.file("s.yaml") + " --status"), Contains("1 done, 1 running"));
}

TEST_CASE("cli: a run stopped by a signal its supervisor did not send is interrupted, not failed",
          "[cli][sweep]") {
  // What a Slurm array task sees when the job is torn down: the training process itself gets
  // SIGTERM. `lengen run` checkpoints and exits kExitInterrupted; the point is resumable.
  test::TempDir tmp;
  write_seed_sweep(tmp, "term", 4000, 500, 50, 3, "[0]");
  const fs::path run = fs::path(tmp.str()) / "term" / "runs" / "term" / "0";
  const pid_t pid = start_sweep(tmp, "--point", "0");
  int64_t child = 0;
  for (int i = 0; i < 600 && child == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(run / "checkpoints") && !fs::is_empty(run / "checkpoints") &&
        fs::exists(run / "sweep-running.json")) {
      child = nlohmann::json::parse(test::read_text((run / "sweep-running.json").string()))
                  .value("pid", int64_t{0});
    }
  }
  REQUIRE(child > 0);
  REQUIRE(child != pid);  // the training process, not the supervisor
  kill(static_cast<pid_t>(child), SIGTERM);
  int raw = 0;
  waitpid(pid, &raw, 0);
  CHECK_THAT(test::read_text((run / "sweep.log").string()), Contains("interrupted at step"));
  CHECK_THAT(sh("sweep " + tmp.file("s.yaml") + " --status"),
             Contains("0 done, 0 running, 0 failed, 1 interrupted"));
  CHECK(fs::exists(run / "sweep-stopped.json"));
  auto stopped = nlohmann::json::parse(test::read_text((run / "sweep-stopped.json").string()));
  CHECK(stopped["exit_status"] == kExitInterrupted);
}

TEST_CASE("cli: typos in a key or a plugin name are named with the closest valid one", "[cli]") {
  // A fresh process has loaded no plugin yet: the message must still list the installed ones.
  test::TempDir tmp;
  std::string good = kCli;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    test::write_text(tmp.file("typo.yaml"), t);
    int rc = 0;
    std::string out =
        sh("run " + tmp.file("typo.yaml") + " --set output_dir=" + tmp.file("r"), &rc);
    CHECK(rc == 1);
    return out;
  };
  CHECK_THAT(with("position:", "positionn:"),
             Contains("typo.yaml:5:1") && Contains("unknown key 'positionn'") &&
                 Contains("did you mean 'position'"));
  CHECK_THAT(with("name: coupling", "name: cuopling"),
             Contains("unknown position 'cuopling'") && Contains("did you mean 'coupling'") &&
                 Contains("rope") && !Contains("known: none"));
  CHECK_THAT(with("name: addition", "name: addtion"),
             Contains("unknown task 'addtion'") && Contains("did you mean 'addition'") &&
                 Contains("multiplication"));
}
