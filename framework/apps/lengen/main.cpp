// lengen: the command-line front end. Every subcommand builds what it needs from an
// experiment file or a run directory and prints one clean message on error.
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/version.h"
#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"
#include "lengen/sweep/sweep.h"
#include "lengen/taotp/program.h"
#include "lengen/train/batch.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/evaluator.h"
#include "lengen/train/objective.h"
#include "lengen/train/tensorboard.h"
#include "lengen/train/trainer.h"

#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace lengen;

namespace {

struct Common {
  std::vector<std::string> sets;
  std::vector<std::string> plugin_dirs;
  std::string log_level = "info";
  bool debug = false;
};

void add_common(CLI::App* app, Common& c, bool with_set = true) {
  if (with_set) {
    app->add_option("--set", c.sets, "override a config key: --set train.steps=100 (repeatable)");
  }
  app->add_option("--plugin-path", c.plugin_dirs, "extra plugin folder (repeatable)");
}

void setup(const Common& c) {
  set_log_level(c.debug ? "debug" : c.log_level);
  for (const auto& d : c.plugin_dirs) {
    add_plugin_dir(d);
  }
}

// A run directory holds config.yaml; an experiment is a .yaml file. Accept either.
std::string config_of(const std::string& run_or_file) {
  if (fs::is_directory(run_or_file)) {
    std::string cfg = (fs::path(run_or_file) / "config.yaml").string();
    LENGEN_CHECK(fs::exists(cfg), "{}: not a run directory (no config.yaml)", run_or_file);
    return cfg;
  }
  return run_or_file;
}

std::string newest_checkpoint(const std::string& run_dir) {
  fs::path dir = fs::path(run_dir) / "checkpoints";
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string f = e.path().string();
    if (e.path().extension() == ".safetensors" && f > best) {
      best = f;
    }
  }
  LENGEN_CHECK(!best.empty(), "{}: no checkpoint found (train it first with `lengen run`)",
               dir.string());
  return best;
}

// Experiment + model with the run's newest weights.
struct LoadedRun {
  Experiment exp;
  Transformer model{nullptr};
  torch::Device device{torch::kCPU};
  std::string dir;
};

LoadedRun load_run(const std::string& run, const std::vector<std::string>& sets) {
  LoadedRun r;
  r.dir = fs::is_directory(run) ? run : "";
  r.exp = Experiment::load(config_of(run), sets);
  if (r.dir.empty()) {
    r.dir = r.exp.run_dir();
  }
  configure_threads(r.exp.threads);
  r.device = r.exp.torch_device();
  r.model = r.exp.build_model(r.device);
  load_weights(r.model, newest_checkpoint(r.dir));
  r.model->eval();
  return r;
}

// "digits=12,operands=3" -> cell; `option` names the flag in errors.
GridCell parse_cell(const std::string& text, const char* option) {
  GridCell cell;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string kv = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = kv.find('=');
    LENGEN_CHECK(eq != std::string::npos && eq + 1 < kv.size() &&
                     kv.find_first_not_of("0123456789", eq + 1) == std::string::npos,
                 "{} {}: expected axis=value[,axis=value], e.g. digits=12,operands=3", option, text);
    cell[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    start = comma == std::string::npos ? text.size() : comma + 1;
  }
  return cell;
}

std::string cell_text(const GridCell& c) {
  std::string out;
  for (const auto& [k, v] : c) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  }
  return out;
}

void print_table(const std::vector<CellResult>& results, const std::vector<std::string>& axes) {
  std::string head;
  for (const auto& a : axes) {
    head += fmt::format("{:>8} ", a);
  }
  fmt::print("\n{}{:>9} {:>17} {:>8}\n", head, "accuracy", "95% interval", "samples");
  for (const auto& r : results) {
    std::string row;
    for (const auto& a : axes) {
      row += fmt::format("{:>8} ", r.cell.at(a));
    }
    fmt::print("{}{:>8.1f}% {:>7.1f}% - {:>5.1f}% {:>8}\n", row, 100 * r.accuracy,
               100 * r.ci_low, 100 * r.ci_high, r.samples);
  }
  fmt::print("\n");
}

std::string self_exe() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).string();
}

// A plot helper: installed under share/lengen/scripts, or in the source tree.
std::string plot_script(const std::string& name = "plot_grid.py") {
  fs::path exe = fs::path(self_exe()).parent_path();
  for (const fs::path& p : {exe / ".." / "share" / "lengen" / "scripts" / name,
                            fs::path(LENGEN_SOURCE_DIR) / "scripts" / name}) {
    if (fs::exists(p)) {
      return p.lexically_normal().string();
    }
  }
  return "";
}

void plot(const std::string& run_dir, const std::string& title, const std::vector<GridAxis>& axes) {
  std::string script = plot_script();
  const char* py = "/usr/bin/python3";
  if (script.empty() || !fs::exists(py)) {
    logger()->info("plotting tools not found; eval/grid.csv is written (see scripts/plot_grid.py)");
    return;
  }
  std::string extra;
  if (axes.size() == 1 && axes[0].train_hi > 0) {
    extra = fmt::format(" --train-max {}", axes[0].train_hi);
  } else if (axes.size() == 2 && axes[0].train_hi > 0 && axes[1].train_hi > 0) {
    extra = fmt::format(" --train-box {},{},{},{}", axes[0].train_lo, axes[0].train_hi, axes[1].train_lo,
                        axes[1].train_hi);
  }
  std::string cmd = fmt::format("{} '{}' '{}/eval/grid.csv' '{}/plots/grid.png' --title '{}'{} 2>&1", py, script,
                                run_dir, run_dir, title, extra);
  int rc = std::system(cmd.c_str());
  if (rc == 0) {
    logger()->info("plot written to {}/plots/grid.png", run_dir);
  } else {
    logger()->warn("plotting failed (exit {}); eval/grid.csv is intact", rc);
  }
}

std::vector<CellResult> run_eval(LoadedRun& r) {
  auto t0 = std::chrono::steady_clock::now();
  auto results = evaluate_grid(r.model, *r.exp.task, r.exp.eval, r.device,
                               [&](const CellResult& c, size_t done, size_t total) {
                                 logger("eval")->info("[{}/{}] {}: {:.1f}%", done, total,
                                                      cell_text(c.cell), 100 * c.accuracy);
                               });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  logger("eval")->info("evaluated {} cells x {} samples in {:.1f}s ({})", results.size(),
                       r.exp.eval.samples, secs, metric_description(r.exp.eval));
  write_grid_results((fs::path(r.dir) / "eval").string(), results, r.exp.eval.axes(),
                     metric_description(r.exp.eval), trained_ranges(r.exp.task->grid_axes()));
  print_table(results, r.exp.eval.axes());
  const auto axes = r.exp.task->grid_axes();
  plot(r.dir, fmt::format("{} (seed {})", r.exp.name, r.exp.seed), axes);
  // TensorBoard: accuracy per cell and the picture, at the trained step count.
  EventWriter tb((fs::path(r.dir) / "tensorboard").string());
  const int64_t step = r.exp.train.steps;
  double mean = 0;
  for (const auto& c : results) {
    std::string tag;
    for (const auto& [k, v] : c.cell) tag += fmt::format("{}{}={}", tag.empty() ? "" : ",", k, v);
    tb.scalar("eval/accuracy/" + tag, step, c.accuracy);
    mean += c.accuracy / static_cast<double>(results.size());
  }
  tb.scalar("eval/mean_accuracy", step, mean);
  const fs::path png = fs::path(r.dir) / "plots" / "grid.png";
  if (fs::exists(png)) {
    std::ifstream in(png, std::ios::binary);
    tb.image("eval/grid", step, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  return results;
}

void on_signal(int) { request_stop(); }

std::string ids_text(const PositionIds& ids, size_t t) {
  std::string s;
  for (size_t l = 0; l < ids.size(); ++l) {
    s += fmt::format("{}{}", l ? "," : "", t < ids[l].size() ? std::to_string(ids[l][t]) : "-");
  }
  return s;
}

}  // namespace

std::vector<int64_t> index_list(const std::string& text, int64_t n, const char* what) {
  std::vector<int64_t> out;
  if (text.empty()) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    LENGEN_CHECK(!item.empty() && *end == '\0' && v >= 0 && v < n, "--{} {}: '{}' is not in [0, {})", what,
                 text, item, n);
    out.push_back(v);
  }
  return out;
}

// `lengen attention`: the attention weights of chosen layers and heads, averaged over N test
// samples of one grid cell (which share one length), as JSON and a PNG grid of heatmaps.
void run_attention(const std::string& run, const std::string& cell_text_in, int64_t n, const std::string& layers_text,
                   const std::string& heads_text, std::string out, const std::vector<std::string>& sets) {
  LoadedRun r = load_run(run, sets);
  const Task& task = *r.exp.task;
  GridCell cell = parse_cell(cell_text_in, "--cell");
  for (const auto& a : task.grid_axes()) {
    LENGEN_CHECK(cell.count(a.name), "--cell {}: the task's grid also needs '{}'", cell_text_in, a.name);
  }
  LENGEN_CHECK(n >= 1, "--samples must be >= 1");
  const std::vector<std::string> names = r.model->attention_names();
  auto layers = index_list(layers_text, static_cast<int64_t>(names.size()), "layers");
  auto heads = index_list(heads_text, r.exp.model.heads, "heads");
  Rng rng(mix_seed(r.exp.eval.seed, {0xA77}));
  std::vector<Example> exs;
  for (int64_t i = 0; i < n; ++i) exs.push_back(task.sample_eval(cell, rng));
  for (const auto& e : exs) {
    LENGEN_CHECK(e.length() == exs[0].length(), "samples of cell {} differ in length ({} and {}); attention maps "
                 "can be averaged only over equal lengths", cell_text_in, e.length(), exs[0].length());
  }
  auto objective = objective_for(r.model);
  Batch b = objective->make_batch(task, exs);
  std::vector<torch::Tensor> attn;
  {
    torch::NoGradGuard ng;
    r.model->eval();
    objective->logits(r.model, b.to(r.device), &attn);
  }
  nlohmann::json j;
  auto token_row = [&](const torch::Tensor& t) {  // [B, T] -> the first sample's token strings
    std::vector<std::string> out;
    for (int64_t i = 0; i < t.size(1); ++i) out.push_back(task.vocabulary().token(t[0][i].item<int64_t>()));
    return out;
  };
  // Decoder self-attention (and the encoder's of `encoder`) is over the model's inputs;
  // an encoder_decoder's encoder is over the source, its cross-attention from target to source.
  const std::vector<std::string> tokens = token_row(b.inputs);
  const std::vector<std::string> source = b.source.defined() ? token_row(b.source) : tokens;
  j["tokens"] = tokens;
  j["cell"] = cell;
  j["samples"] = n;
  j["run"] = r.dir;
  nlohmann::json maps = nlohmann::json::array();
  for (int64_t l : layers) {
    auto mean = attn[static_cast<size_t>(l)].mean(0).to(torch::kCPU, torch::kFloat64);  // [H, T, S]
    for (int64_t h : heads) {
      auto m = mean[h].contiguous();
      std::vector<std::vector<double>> rows(static_cast<size_t>(m.size(0)));
      for (int64_t q = 0; q < m.size(0); ++q) {
        auto row = m[q];
        rows[q].assign(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
      }
      const std::string& nm = names[static_cast<size_t>(l)];
      const bool cross = nm.find(".cross") != std::string::npos;
      const bool enc = nm.rfind("encoder.", 0) == 0;
      maps.push_back({{"layer", l}, {"name", nm}, {"head", h}, {"weights", rows},
                      {"queries", enc ? source : tokens}, {"keys", enc || cross ? source : tokens}});
    }
  }
  j["maps"] = maps;
  if (out.empty()) {
    std::string name;
    for (const auto& [k, v] : cell) name += fmt::format("{}{}={}", name.empty() ? "" : ",", k, v);
    out = (fs::path(r.dir) / "attention" / name).string();
  }
  fs::create_directories(out);
  const std::string json_path = (fs::path(out) / "attention.json").string();
  write_file_atomic(json_path, j.dump() + "\n");
  logger()->info("averaged attention of {} samples ({} tokens) written to {}", n, tokens.size(), json_path);
  std::string script = plot_script("plot_attention.py");
  if (!script.empty() && fs::exists("/usr/bin/python3")) {
    int rc = std::system(fmt::format("/usr/bin/python3 '{}' '{}' 2>&1", script, json_path).c_str());
    if (rc == 0) {
      logger()->info("heatmaps written to {}/attention.png", out);
    } else {
      logger()->warn("plotting failed (exit {}); {} is intact", rc, json_path);
    }
  }
}

// Logs and draws an aggregate folder that sweep::aggregate (or compare_runs) has written.
void plot_aggregate(const std::string& dir, int64_t n, bool plots) {
  const fs::path out = fs::path(dir) / "aggregate";
  logger("sweep")->info("aggregated {} completed points into {}/results.csv and summary.csv", n, out.string());
  std::string script = plot_script("plot_sweep.py");
  const char* py = "/usr/bin/python3";
  if (!plots || n == 0) return;
  if (script.empty() || !fs::exists(py)) {
    logger("sweep")->info("plotting tools not found; the CSV files are written (see scripts/plot_sweep.py)");
    return;
  }
  int rc = std::system(fmt::format("{} '{}' '{}' 2>&1", py, script, out.string()).c_str());
  if (rc == 0) {
    logger("sweep")->info("heatmaps written to {}/*.png", out.string());
  } else {
    logger("sweep")->warn("plotting failed (exit {}); the CSV files are intact", rc);
  }
}

void run_aggregate(const std::string& dir, double threshold, bool plots) {
  plot_aggregate(dir, sweep::aggregate(dir, threshold), plots);
}

int run_sweep(const std::string& file, const std::string& executor, int64_t jobs, const std::string& gpus_text,
              bool dry, bool status, bool cancel, int64_t point, const std::string& job,
              const std::vector<std::string>& sets) {
  auto log = logger("sweep");
  sweep::Sweep s = sweep::load_sweep(file, sets);
  if (cancel) {
    fmt::print("cancelled {} Slurm job(s) of {}\n", sweep::cancel_slurm(s), s.name);
    return 0;
  }
  if (point >= 0) {
    LENGEN_CHECK(point < static_cast<int64_t>(s.points.size()), "{}: there is no point {} (the sweep has {})",
                 file, point, s.points.size());
    const auto& p = s.points[static_cast<size_t>(point)];
    if (!fs::exists(fs::path(p.run_dir) / "config.yaml")) sweep::write_plan(s);
    if (sweep::point_state(p) == sweep::State::kDone) {
      log->info("point {} ({}) is already done", point, p.name);
      return 0;
    }
    log->info("point {} ({}) -> {}", point, p.name, p.run_dir);
    return sweep::run_point(s, p, self_exe(), s.threads_per_run, job);
  }
  // One state query per point (a running Slurm point costs a squeue call).
  std::map<sweep::State, int64_t> counts;
  std::vector<sweep::State> states;
  std::vector<int64_t> todo;
  for (const auto& p : s.points) {
    auto st = sweep::point_state(p);
    states.push_back(st);
    ++counts[st];
    if (st != sweep::State::kDone && st != sweep::State::kRunning) todo.push_back(p.index);
  }
  if (status || (dry && executor == "local")) {
    fmt::print("{} ({} points, folder {})\n", s.name, s.points.size(), s.dir);
    for (const auto& p : s.points) {
      fmt::print("  {:>4}  {:<12} {}\n", p.index, sweep::state_name(states[static_cast<size_t>(p.index)]), p.name);
    }
    std::vector<std::string> parts;
    for (auto st : {sweep::State::kDone, sweep::State::kRunning, sweep::State::kFailed, sweep::State::kInterrupted,
                    sweep::State::kMissing}) {
      parts.push_back(fmt::format("{} {}", counts[st], sweep::state_name(st)));
    }
    fmt::print("{}\n", join(parts, ", "));
    return 0;
  }
  sweep::write_plan(s);
  if (executor == "slurm") {
    const fs::path dir = fs::path(s.dir) / "slurm";
    fs::create_directories(dir);
    const std::string script = sweep::slurm_script(s, todo, self_exe());
    const std::string path = (dir / "sweep.sbatch").string();
    write_file_atomic(path, script);
    if (dry) {
      fmt::print("{}", script);
      log->info("dry run: {} written, nothing submitted", path);
      return 0;
    }
    const std::string id = sweep::submit_slurm(s, path);
    fmt::print("submitted job array {} ({} points) from {}\n", id, todo.size(), path);
    return 0;
  }
  std::vector<std::string> gpus;
  std::stringstream gs(gpus_text);
  for (std::string g; std::getline(gs, g, ',');) {
    if (!g.empty()) gpus.push_back(g);
  }
  if (gpus.empty() && torch::cuda::is_available()) {
    for (int64_t g = 0; g < static_cast<int64_t>(torch::cuda::device_count()); ++g) gpus.push_back(std::to_string(g));
  }
  const int64_t workers = jobs > 0 ? jobs : (s.workers > 1 || gpus.empty() ? s.workers : static_cast<int64_t>(gpus.size()));
  const int64_t failures = sweep::run_local(s, self_exe(), workers, gpus);
  run_aggregate(s.dir, -1, true);
  if (failures > 0) {
    log->error("{} point(s) failed; `lengen sweep {} --status` lists them, running the sweep again retries them",
               failures, file);
    return 1;
  }
  return 0;
}

// `lengen taotp run|count|export`.
void run_taotp(const std::string& what, const std::string& program_file, const std::string& vocab_file,
               const std::string& input, const std::string& eos_token, const std::string& dtype,
               const std::string& sep, int64_t steps, bool ids, bool trace, const std::string& run_dir,
               std::string out_file, const std::vector<std::string>& sets) {
  if (what == "count") {
    auto program = taotp::load_program(program_file);
    auto c = taotp::count_parameters(program);
    fmt::print("parameters: {}\nnon-zero: {}\n", c.total, c.nonzero);
    fmt::print("(vocab {}, block {}, d_model {}, {} layers{})\n", program.vocab_size(), program.block_size(),
               program.d_model(), program.layers.size(), program.tied() ? ", tied embeddings" : "");
    return;
  }
  if (what == "export") {
    LoadedRun r = load_run(run_dir, sets);
    r.model->to(torch::kCPU);
    auto program = taotp::export_program(r.exp, r.model);
    if (out_file.empty()) {
      fs::create_directories(fs::path(r.dir) / "taotp");
      out_file = (fs::path(r.dir) / "taotp" / "program.json").string();
    }
    const std::string vocab_out = (fs::path(out_file).parent_path() / "vocab.json").string();
    write_file_atomic(out_file, taotp::program_to_json(program));
    nlohmann::json v = r.exp.task->vocabulary().tokens();
    write_file_atomic(vocab_out, v.dump() + "\n");
    auto c = taotp::count_parameters(program);
    fmt::print("wrote {} ({} parameters, {} non-zero) and {}\n", out_file, c.total, c.nonzero, vocab_out);
    return;
  }
  auto program = taotp::load_program(program_file);
  std::vector<std::string> vocab;
  if (!vocab_file.empty()) {
    vocab = taotp::load_vocabulary(vocab_file);
    LENGEN_CHECK(static_cast<int64_t>(vocab.size()) == program.vocab_size(),
                 "{} has {} tokens but the program's tok_emb has {} rows", vocab_file, vocab.size(),
                 program.vocab_size());
  }
  LENGEN_CHECK(ids || !vocab.empty(), "--vocab is required unless --ids is given");
  auto token_id = [&](const std::string& t) -> int64_t {
    if (ids) {
      char* end = nullptr;
      const long long v = std::strtoll(t.c_str(), &end, 10);
      LENGEN_CHECK(end && *end == '\0' && v >= 0 && v < program.vocab_size(),
                   "'{}' is not a token index in [0, {})", t, program.vocab_size());
      return v;
    }
    auto it = std::find(vocab.begin(), vocab.end(), t);
    LENGEN_CHECK(it != vocab.end(), "token '{}' is not in {}{}", t, vocab_file, did_you_mean(t, vocab));
    return it - vocab.begin();
  };
  auto token_text = [&](int64_t i) { return ids || vocab.empty() ? std::to_string(i) : vocab[i]; };
  std::vector<int64_t> tokens;
  std::istringstream in(input);
  for (std::string t; in >> t;) tokens.push_back(token_id(t));
  const int64_t eos = eos_token.empty() ? -1 : token_id(eos_token);
  if (steps < 0) {
    steps = program.block_size() - static_cast<int64_t>(tokens.size()) + 1;
    LENGEN_CHECK(steps > 0, "the input has {} tokens but the program's block_size is {}", tokens.size(),
                 program.block_size());
  }
  auto built = taotp::build_model(program, dtype == "float32" ? torch::kFloat32 : torch::kFloat64);
  auto tracer = [&](int64_t step, const torch::Tensor& logits) {
    auto top = logits.to(torch::kFloat64).topk(std::min<int64_t>(5, logits.size(0)));
    std::vector<std::string> parts;
    for (int64_t k = 0; k < std::get<0>(top).size(0); ++k) {
      parts.push_back(fmt::format("'{}' {:.6g}", token_text(std::get<1>(top)[k].item<int64_t>()),
                                  std::get<0>(top)[k].item<double>()));
    }
    fmt::print(stderr, "step {}: argmax {} '{}'; top: {}\n", step + 1,
               taotp::argmax_lowest(logits), token_text(taotp::argmax_lowest(logits)), join(parts, ", "));
  };
  auto generated = taotp::greedy_decode(built.model, program.block_size(), tokens, steps, eos,
                                        trace ? std::function<void(int64_t, const torch::Tensor&)>(tracer) : nullptr);
  if (!generated.empty() && generated.back() == eos) generated.pop_back();
  std::vector<std::string> out;
  for (int64_t t : generated) out.push_back(token_text(t));
  fmt::print("{}\n", join(out, sep));
}

int main(int argc, char** argv) {
  CLI::App app{fmt::format("lengen {}: length-generalization experiments on arithmetic", kVersion)};
  app.require_subcommand(1);
  Common common;
  app.add_flag("--debug", common.debug, "verbose logging");
  app.set_version_flag("--version", fmt::format("lengen {} (LibTorch {})", kVersion, torch_version()));
#ifdef LENGEN_BUILD_PLUGIN_DIR
  set_build_plugin_dir(LENGEN_BUILD_PLUGIN_DIR);
#endif

  // run ---------------------------------------------------------------------------------
  auto* run = app.add_subcommand("run", "train an experiment, evaluate it, write the results");
  std::string run_file;
  bool resume = false, fresh = false, no_eval = false;
  run->add_option("experiment", run_file, "experiment YAML file")->required();
  run->add_flag("--resume", resume, "continue from the run's newest checkpoint");
  run->add_flag("--fresh", fresh, "discard an existing run directory's checkpoints");
  run->add_flag("--no-eval", no_eval, "train only");
  add_common(run, common);

  // eval --------------------------------------------------------------------------------
  auto* ev = app.add_subcommand("eval", "evaluate a trained run on its grid (or a changed one)");
  std::string eval_run;
  bool eval_decode = false;
  ev->add_option("run", eval_run, "run directory (runs/<name>/<seed>)")->required();
  ev->add_flag("--decode", eval_decode, "use true KV-cached greedy decoding");
  add_common(ev, common);

  // decode ------------------------------------------------------------------------------
  auto* dec = app.add_subcommand("decode", "greedy-decode a query with a trained model");
  std::string dec_run, dec_query;
  bool dec_ids = false;
  dec->add_option("run", dec_run, "run directory")->required();
  dec->add_option("query", dec_query, "query text, e.g. 57+48")->required();
  dec->add_flag("--ids", dec_ids, "print every token with its position IDs");
  add_common(dec, common);

  // example -----------------------------------------------------------------------------
  auto* exa = app.add_subcommand("example", "show the exact token/ID/loss layout of a task");
  std::string ex_file, ex_query, ex_cell;
  int64_t ex_count = 1;
  bool ex_json = false;
  exa->add_option("experiment", ex_file, "experiment YAML file")->required();
  exa->add_option("--query", ex_query, "render this query (e.g. 57+48)");
  exa->add_option("--eval", ex_cell, "render evaluation samples of a cell, e.g. digits=12");
  exa->add_option("-n,--count", ex_count, "number of samples");
  exa->add_flag("--json", ex_json, "machine-readable output");
  add_common(exa, common);

  // plugins -----------------------------------------------------------------------------
  auto* plg = app.add_subcommand("plugins", "list position schemes and tasks with their options");
  std::string describe;
  bool markdown = false;
  plg->add_option("--describe", describe, "print one component's options");
  plg->add_flag("--markdown", markdown, "print the config reference as Markdown");
  add_common(plg, common, false);

  // logits ------------------------------------------------------------------------------
  auto* lg = app.add_subcommand("logits", "next-token logits of a model for a prompt, as JSON");
  std::string lg_run, lg_text;
  lg->add_option("run", lg_run, "run directory")->required();
  lg->add_option("prompt", lg_text, "query (e.g. 57+48) or raw tokens with --raw")->required();
  bool lg_raw = false;
  lg->add_flag("--raw", lg_raw, "prompt is a raw token string (BOS included)");
  add_common(lg, common);

  // bench -------------------------------------------------------------------------------
  auto* bn = app.add_subcommand("bench", "median ms per training step and tokens/s of a config");
  std::string bn_file;
  int64_t bn_steps = 20, bn_warmup = 3;
  bn->add_option("experiment", bn_file, "experiment YAML file")->required();
  bn->add_option("--steps", bn_steps, "timed steps");
  bn->add_option("--warmup", bn_warmup, "untimed steps first");
  add_common(bn, common);

  // attention ---------------------------------------------------------------------------
  auto* at = app.add_subcommand("attention", "average attention maps over samples of one cell -> PNG + JSON");
  std::string at_run, at_cell, at_layers, at_heads, at_out;
  int64_t at_n = 32;
  at->add_option("run", at_run, "run directory")->required();
  at->add_option("--cell", at_cell, "grid cell, e.g. digits=5,operands=3")->required();
  at->add_option("-n,--samples", at_n, "test samples averaged (default 32)");
  at->add_option("--layers", at_layers, "comma-separated layers (default all)");
  at->add_option("--heads", at_heads, "comma-separated heads (default all)");
  at->add_option("-o,--output", at_out, "output folder (default RUN/attention/<cell>)");
  add_common(at, common);

  // taotp -------------------------------------------------------------------------------
  auto* tp = app.add_subcommand("taotp", "hand-set Transformer programs (The Art of Transformer Programming)");
  tp->require_subcommand(1);
  auto* tp_run = tp->add_subcommand("run", "greedy-decode with a program and print the new tokens");
  auto* tp_count = tp->add_subcommand("count", "the book's parameter counts of a program");
  auto* tp_export = tp->add_subcommand("export", "write a trained run as a program (+ its vocabulary)");
  std::string tp_program, tp_vocab, tp_input, tp_eos, tp_dtype = "float64", tp_sep = " ", tp_out;
  int64_t tp_steps = -1;
  bool tp_ids = false, tp_trace = false;
  tp_run->add_option("program", tp_program, "program file (JSON or the book's Python literal)")->required();
  tp_run->add_option("--vocab", tp_vocab, "vocabulary: one token per line, or a list of strings");
  tp_run->add_option("--input", tp_input, "input tokens separated by spaces (indices with --ids)")->required();
  tp_run->add_option("--steps", tp_steps, "tokens to generate (default: until --eos or the block is full)");
  tp_run->add_option("--eos", tp_eos, "stop after emitting this token (not printed)");
  tp_run->add_flag("--ids", tp_ids, "input and output are token indices");
  tp_run->add_flag("--trace", tp_trace, "print each step's arg-max and top logits");
  tp_run->add_option("--dtype", tp_dtype, "float64 (default) or float32")->check(CLI::IsMember({"float64", "float32"}));
  tp_run->add_option("--sep", tp_sep, "separator between printed tokens (default one space)");
  tp_count->add_option("program", tp_program, "program file")->required();
  std::string tp_run_dir;
  tp_export->add_option("run", tp_run_dir, "run directory")->required();
  tp_export->add_option("-o,--output", tp_out, "program file to write (default RUN/taotp/program.json)");
  for (auto* c : {tp_run, tp_count, tp_export}) add_common(c, common, c == tp_export);

  // sweep / aggregate ---------------------------------------------------------------------
  auto* sw = app.add_subcommand("sweep", "run every point of a sweep here or on Slurm; --status, --cancel");
  std::string sw_file, sw_executor = "local", sw_job, sw_gpus;
  int64_t sw_jobs = 0, sw_point = -1;
  bool sw_dry = false, sw_status = false, sw_cancel = false;
  sw->add_option("sweep", sw_file, "sweep YAML file")->required();
  sw->add_option("--executor", sw_executor, "local (default) or slurm")->check(CLI::IsMember({"local", "slurm"}));
  sw->add_option("-j,--jobs", sw_jobs, "local: points at a time (default: executor.workers)");
  sw->add_option("--gpus", sw_gpus, "local: comma-separated CUDA devices, one per worker slot");
  sw->add_flag("--dry-run", sw_dry, "list the points (local) or print the batch script (slurm); run nothing");
  sw->add_flag("--status", sw_status, "which points are done, running, failed, interrupted or missing");
  sw->add_flag("--cancel", sw_cancel, "scancel the sweep's Slurm jobs");
  sw->add_option("--point", sw_point, "run one point by index (what each Slurm array task calls)")->group("");
  sw->add_option("--job", sw_job, "Slurm job ID of this task")->group("");
  add_common(sw, common);
  auto* ag = app.add_subcommand("aggregate", "collect a sweep into CSV and median/IQR/fraction heatmaps");
  std::string ag_dir;
  double ag_threshold = -1;
  bool ag_no_plot = false;
  ag->add_option("sweep_dir", ag_dir, "the sweep's folder (holds sweep.json)")->required();
  ag->add_option("--threshold", ag_threshold, "accuracy a seed must reach to count (default: the sweep's)");
  ag->add_flag("--no-plot", ag_no_plot, "CSV only");
  add_common(ag, common, false);
  auto* cmp = app.add_subcommand("compare", "several finished runs side by side (median over seeds of one name)");
  std::vector<std::string> cmp_runs;
  std::string cmp_out;
  double cmp_threshold = 0.9;
  bool cmp_no_plot = false;
  cmp->add_option("runs", cmp_runs, "run directories (runs/<name>/<seed>)")->required();
  cmp->add_option("-o,--out", cmp_out, "folder for sweep.json and aggregate/ (CSV, panel.png, ...)")->required();
  cmp->add_option("--threshold", cmp_threshold, "accuracy a seed must reach to count");
  cmp->add_flag("--no-plot", cmp_no_plot, "CSV only");
  add_common(cmp, common, false);

  CLI11_PARSE(app, argc, argv);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  try {
    setup(common);
    if (run->parsed()) {
      Experiment exp = Experiment::load(run_file, common.sets);
      const int64_t threads = configure_threads(exp.threads);
      const std::string dir = exp.run_dir();
      if (fresh) {
        fs::remove_all(fs::path(dir) / "checkpoints");
        fs::remove_all(fs::path(dir) / "eval");
      }
      fs::create_directories(dir);
      write_file_atomic((fs::path(dir) / "config.yaml").string(), exp.resolved_yaml());
      torch::Device device = exp.torch_device();
      Transformer model = exp.build_model(device);
      logger()->info("{}: {} parameters, device {}, {} threads, run directory {}", exp.name,
                     model->parameter_count(), device.str(), threads, dir);
      Trainer trainer(exp.train, exp.seed, *exp.task, model, device, dir);
      trainer.set_bf16_autocast(exp.bf16_autocast(device));
      TrainResult tr = trainer.run(resume);
      if (tr.seconds > 0) {
        logger("train")->info("trained {} steps in {:.1f}s ({:.0f} tokens/s), final loss {:.4f}",
                              tr.steps, tr.seconds, tr.tokens_per_second, tr.final_loss);
      }
      if (!no_eval) {
        LoadedRun r;
        r.exp = exp;
        r.model = model;
        r.device = device;
        r.dir = dir;
        run_eval(r);
      }
    } else if (ev->parsed()) {
      LoadedRun r = load_run(eval_run, common.sets);
      if (eval_decode) {
        r.exp.eval.greedy_decode = true;
      }
      run_eval(r);
    } else if (dec->parsed()) {
      LoadedRun r = load_run(dec_run, common.sets);
      const Task& task = *r.exp.task;
      Example ex = task.parse_query(dec_query);
      std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
      std::vector<PositionIds> ids;
      auto response = objective_for(r.model)->decode(r.model, task, {ex}, r.device, &ids)[0];
      std::vector<int64_t> all = prompt;
      all.insert(all.end(), response.begin(), response.end());
      const bool ok = task.exact_match(ex, response);
      fmt::print("{}\n", task.render(all));
      fmt::print("reference: {}  ({})\n", task.render(ex.tokens), ok ? "correct" : "WRONG");
      if (dec_ids) {
        fmt::print("{:>4} {:>6} {:>10}\n", "t", "token", "ids");
        for (size_t t = 0; t < all.size(); ++t) {
          fmt::print("{:>4} {:>6} {:>10}{}\n", t, task.vocabulary().token(all[t]),
                     ids_text(ids[0], t), t + 1 == all.size() ? "  (not fed back)" : "");
        }
      }
    } else if (exa->parsed()) {
      Experiment exp = Experiment::load(ex_file, common.sets);
      const Task& task = *exp.task;
      std::vector<Example> examples;
      if (!ex_query.empty()) {
        examples.push_back(task.parse_query(ex_query));
      } else {
        Rng rng(mix_seed(exp.seed, {0xE4A}));
        GridCell cell = parse_cell(ex_cell, "--eval");
        for (int64_t i = 0; i < ex_count; ++i) {
          examples.push_back(ex_cell.empty() ? task.sample_train(rng) : task.sample_eval(cell, rng));
        }
      }
      nlohmann::json out = nlohmann::json::array();
      for (const auto& e : examples) {
        if (ex_json) {
          std::vector<std::string> toks;
          for (int64_t t : e.tokens) {
            toks.push_back(task.vocabulary().token(t));
          }
          out.push_back({{"text", task.render(e.tokens)},
                         {"tokens", toks},
                         {"token_ids", e.tokens},
                         {"position_ids", e.position_ids},
                         {"loss_mask", e.loss_mask},
                         {"prompt_length", e.prompt_length},
                         {"meta", e.meta}});
          continue;
        }
        fmt::print("{}\n", task.render(e.tokens));
        std::string row = fmt::format("{:<8}", "token");
        for (int64_t t : e.tokens) {
          row += fmt::format("{:>4}", task.vocabulary().token(t));
        }
        fmt::print("{}\n", row);
        for (size_t l = 0; l < e.position_ids.size(); ++l) {
          row = fmt::format("{:<8}", fmt::format("ids[{}]", l));
          for (int64_t v : e.position_ids[l]) {
            row += fmt::format("{:>4}", v);
          }
          fmt::print("{}\n", row);
        }
        row = fmt::format("{:<8}", "loss");
        for (uint8_t m : e.loss_mask) {
          row += fmt::format("{:>4}", m ? "x" : ".");
        }
        fmt::print("{}\n(prompt: first {} tokens)\n\n", row, e.prompt_length);
      }
      if (ex_json) {
        fmt::print("{}\n", out.dump(2));
      }
    } else if (plg->parsed()) {
      std::vector<std::string> errors;
      load_all_plugins(&errors);
      for (const auto& e : errors) {
        logger("plugin")->error("{}", e);
      }
      // Where a position scheme applies: asked of an instance built with default options.
      auto applies_in = [](const std::string& name) -> std::string {
        const auto* p = position_registry().find(name);
        if (!p) return "";
        try {
          auto s = position_registry().create(load_config_string(name, "<describe>"),
                                              SchemeContext{16, 2, 8, 1, 3});
          std::vector<std::string> kinds;
          for (auto k : {AttentionKind::kCausalSelf, AttentionKind::kBidirectionalSelf,
                         AttentionKind::kCross}) {
            if (s->supports(k)) kinds.push_back(attention_kind_name(k));
          }
          return join(kinds, ", ");
        } catch (const Error&) {
          return "";  // needs options to be built; nothing to say
        }
      };
      auto print_entry = [&](const auto& e, bool full) {
        const std::string kinds = applies_in(e->spec.name);
        if (markdown) {
          fmt::print("### `{}` ({})\n\n{}\n\n", e->spec.name, e->spec.kind, e->spec.summary);
          if (!kinds.empty()) {
            fmt::print("Applies in: {} attention.\n\n", kinds);
          }
          if (!e->spec.options.empty()) {
            fmt::print("| option | type | description |\n| --- | --- | --- |\n");
            for (const auto& o : e->spec.options) {
              fmt::print("| `{}` | {} | {} |\n", o.key, o.describe_type(), o.doc);
            }
            fmt::print("\n");
          }
          return;
        }
        fmt::print("  {:<15} {}\n", e->spec.name, e->spec.summary);
        if (full) {
          fmt::print("  from {} ({} {})\n", e->origin.library, e->origin.plugin, e->origin.version);
          if (!kinds.empty()) {
            fmt::print("  applies in: {} attention\n", kinds);
          }
          for (const auto& o : e->spec.options) {
            fmt::print("    {:<14} {}\n    {:<14} ({})\n", o.key, o.doc, "", o.describe_type());
          }
        }
      };
      if (!describe.empty()) {
        const auto* p = position_registry().find(describe);
        const auto* t = task_registry().find(describe);
        LENGEN_CHECK(p || t, "no position scheme or task named '{}'{}", describe,
                     did_you_mean(describe, [] {
                       auto n = position_registry().names();
                       auto m = task_registry().names();
                       n.insert(n.end(), m.begin(), m.end());
                       return n;
                     }()));
        if (p) print_entry(p, true);
        if (t) print_entry(t, true);
      } else {
        fmt::print(markdown ? "## Position schemes\n\n" : "position schemes:\n");
        for (const auto* e : position_registry().list()) print_entry(e, markdown);
        fmt::print(markdown ? "## Tasks\n\n" : "tasks:\n");
        for (const auto* e : task_registry().list()) print_entry(e, markdown);
        if (!markdown) {
          fmt::print("architectures (model.arch):\n");
          for (const auto& a : architectures()) {
            fmt::print("  {:<15} {}\n", a.name, a.summary);
          }
          fmt::print("plugin search path: {}\n", join(plugin_search_path(), ":"));
        }
      }
    } else if (lg->parsed()) {
      LoadedRun r = load_run(lg_run, common.sets);
      const Task& task = *r.exp.task;
      std::vector<int64_t> prompt;
      if (lg_raw) {
        prompt = task.vocabulary().encode(lg_text);
      } else {
        Example ex = task.parse_query(lg_text);
        prompt.assign(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
      }
      PositionIds pid = task.causal_position_ids(prompt, static_cast<int64_t>(prompt.size()));
      const int64_t T = static_cast<int64_t>(prompt.size());
      auto tokens = torch::tensor(prompt, torch::kInt64).view({1, T});
      auto ids = torch::empty({static_cast<int64_t>(pid.size()), 1, T}, torch::kInt64);
      for (size_t l = 0; l < pid.size(); ++l) {
        ids[static_cast<int64_t>(l)][0] = torch::tensor(pid[l], torch::kInt64);
      }
      torch::NoGradGuard ng;
      r.model->eval();
      torch::Tensor logits;
      if (r.model->arch().layout == Layout::kSequence) {
        logits = r.model->forward(tokens.to(r.device), ids.to(r.device))[0][T - 1];  // [V]
      } else {
        // The first output position that predicts the response: the decoder's first step
        // (encoder_decoder) or the first slot (encoder).
        LENGEN_CHECK(!lg_raw, "--raw: the '{}' architecture needs a query the task can parse",
                     r.model->arch().name);
        auto objective = objective_for(r.model);
        Batch b = objective->make_batch(task, {task.parse_query(lg_text)}).to(r.device);
        const int64_t first = b.mask[0].nonzero()[0][0].item<int64_t>();
        logits = objective->logits(r.model, b)[0][first];  // [V]
      }
      logits = logits.to(torch::kCPU, torch::kFloat64);
      std::vector<double> values(logits.data_ptr<double>(), logits.data_ptr<double>() + logits.numel());
      std::vector<std::string> toks;
      for (int64_t t : prompt) {
        toks.push_back(task.vocabulary().token(t));
      }
      nlohmann::json j{{"prompt_tokens", toks},
                       {"position_ids", pid},
                       {"vocabulary", task.vocabulary().tokens()},
                       {"logits", values},
                       {"argmax", task.vocabulary().token(logits.argmax().item<int64_t>())}};
      fmt::print("{}\n", j.dump(2));
    } else if (bn->parsed()) {
      Experiment exp = Experiment::load(bn_file, common.sets);
      const int64_t threads = configure_threads(exp.threads);
      torch::Device device = exp.torch_device();
      Transformer model = exp.build_model(device);
      fs::path tmp = fs::temp_directory_path() / fmt::format("lengen-bench-{}", ::getpid());
      Trainer trainer(exp.train, exp.seed, *exp.task, model, device, tmp.string());
      trainer.set_bf16_autocast(exp.bf16_autocast(device));
      std::vector<double> ms, data_ms;
      int64_t tokens = 0;
      for (int64_t s = 0; s < bn_warmup + bn_steps; ++s) {
        auto d0 = std::chrono::steady_clock::now();
        Batch b = trainer.batch_for_step(s);
        auto t0 = std::chrono::steady_clock::now();
        if (s >= bn_warmup) {
          data_ms.push_back(std::chrono::duration<double, std::milli>(t0 - d0).count());
        }
        trainer.step(b, s);
        if (device.is_cuda()) {
          torch::cuda::synchronize();
        }
        double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (s >= bn_warmup) {
          ms.push_back(dt);
          tokens += b.tokens;
        }
      }
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      const double mean_tokens = static_cast<double>(tokens) / static_cast<double>(ms.size());
      nlohmann::json j{{"experiment", exp.name},
                       {"parameters", model->parameter_count()},
                       {"device", device.str()},
                       {"threads", threads},
                       {"batch_size", exp.train.batch_size},
                       {"tokens_per_step", mean_tokens},
                       {"steps", bn_steps},
                       {"median_ms_per_step", median},
                       {"median_data_ms_per_step", [&] {
                          std::sort(data_ms.begin(), data_ms.end());
                          return data_ms[data_ms.size() / 2];
                        }()},
                       {"min_ms_per_step", sorted.front()},
                       {"max_ms_per_step", sorted.back()},
                       {"tokens_per_s", mean_tokens / (median / 1000.0)},
                       {"torch", torch_version()}};
      fmt::print("{}\n", j.dump(2));
      fs::remove_all(tmp);
    }
    if (sw->parsed()) {
      return run_sweep(sw_file, sw_executor, sw_jobs, sw_gpus, sw_dry, sw_status, sw_cancel, sw_point, sw_job,
                       common.sets);
    }
    if (ag->parsed()) {
      run_aggregate(ag_dir, ag_threshold, !ag_no_plot);
    }
    if (cmp->parsed()) {
      plot_aggregate(cmp_out, sweep::compare_runs(cmp_runs, cmp_out, cmp_threshold), !cmp_no_plot);
    }
    if (at->parsed()) {
      run_attention(at_run, at_cell, at_n, at_layers, at_heads, at_out, common.sets);
    }
    if (tp->parsed()) {
      run_taotp(tp_run->parsed() ? "run" : tp_count->parsed() ? "count" : "export", tp_program,
                tp_vocab, tp_input, tp_eos, tp_dtype, tp_sep, tp_steps, tp_ids, tp_trace, tp_run_dir,
                tp_out, common.sets);
    }
  } catch (const Interrupted& e) {
    fmt::print(stderr, "lengen: {}\n", e.what());
    return kExitInterrupted;  // resumable, not failed (sweeps and Slurm tasks read this)
  } catch (const Error& e) {
    fmt::print(stderr, "lengen: error: {}\n", e.what());
    return 1;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "lengen: LibTorch error: {}\n",
               common.debug ? e.what() : e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "lengen: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
