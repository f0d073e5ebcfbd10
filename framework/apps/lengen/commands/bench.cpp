// `lengen bench`: median milliseconds per training step and tokens/s of a config; with
// `--eval`, the wall time and tokens/s of the config's evaluation grid instead.
#include "../cli.h"

#include "lengen/core/version.h"
#include "lengen/eval/evaluator.h"
#include "lengen/model/architecture.h"
#include "lengen/train/flops.h"
#include "lengen/train/op_count.h"
#include "lengen/train/trainer.h"

#include <torch/cuda.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen::cli {
namespace {

class Bench : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("bench", "median ms per training step and tokens/s of a config");
    c->add_option("experiment", file_, "experiment YAML file")->required();
    c->add_option("--steps", steps_, "timed steps");
    c->add_option("--warmup", warmup_, "untimed steps first");
    c->add_option("--peak-tflops",
                  peak_tflops_,
                  "the device's peak TFLOP/s for the model's dtype (e.g. 989 for an H100 SXM in "
                  "bf16, dense): adds the fraction of peak achieved on real tokens");
    c->add_flag("--eval",
                eval_,
                "time the evaluation grid (eval: of the config) instead of training steps; the "
                "model is freshly initialised, so only the teacher-forced check's time is "
                "representative (a decode's length depends on what the model emits)");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    Experiment exp = Experiment::load(file_, common.sets);
    const int64_t threads = configure_threads(exp.threads);
    torch::Device device = exp.torch_device();
    Transformer model = exp.build_model(device);
    if (eval_) {
      return run_eval(exp, model, device, threads);
    }
    fs::path tmp = fs::temp_directory_path() / fmt::format("lengen-bench-{}", ::getpid());
    Trainer trainer(exp.train, exp.seed, *exp.task, model, device, tmp.string());
    trainer.set_bf16_autocast(exp.bf16_autocast(device));
    trainer.set_data(exp.training_data());
    std::vector<double> ms, data_ms;
    int64_t tokens = 0, padded = 0;
    double flops = 0, padded_flops = 0;
    const int64_t vocab = exp.task->vocabulary().size(), pad = exp.task->vocabulary().pad();
    for (int64_t s = 0; s < warmup_ + steps_; ++s) {
      auto d0 = std::chrono::steady_clock::now();
      std::vector<Batch> batches = trainer.batches_for_step(s);
      auto t0 = std::chrono::steady_clock::now();
      if (s >= warmup_)
        data_ms.push_back(std::chrono::duration<double, std::milli>(t0 - d0).count());
      trainer.step(batches, s);
      if (device.is_cuda())
        torch::cuda::synchronize();
      double dt =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (s >= warmup_) {
        ms.push_back(dt);
        for (const auto& b : batches) {
          tokens += b.tokens;
          padded += b.padded_tokens();
          const auto [real, all] = step_flops(exp.model, vocab, pad, b);
          flops += real;
          padded_flops += all;
        }
      }
    }
    // One more step, untimed, with every operator observed: kernels per step.
    int64_t kernels = 0, reads = 0;
    std::vector<std::pair<int64_t, std::string>> top;
    {
      std::vector<Batch> batches = trainer.batches_for_step(warmup_ + steps_);
      OpCounter counter;
      trainer.step(batches, warmup_ + steps_);
      if (device.is_cuda())
        torch::cuda::synchronize();
      kernels = counter.kernels();
      reads = counter.host_reads();
      for (const auto& [name, n] : counter.by_name())
        top.emplace_back(n, name);
      std::sort(top.rbegin(), top.rend());
      top.resize(std::min<size_t>(top.size(), 10));
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    std::sort(data_ms.begin(), data_ms.end());
    const double median = sorted[sorted.size() / 2];
    const double mean_tokens = static_cast<double>(tokens) / static_cast<double>(ms.size());
    const double mean_padded = static_cast<double>(padded) / static_cast<double>(ms.size());
    nlohmann::json j = header(exp, model, device, threads);
    j.update({{"batch_size", exp.train.batch_size},
              {"buckets", exp.train.buckets},
              {"tokens_per_step", mean_tokens},
              {"padded_tokens_per_step", mean_padded},
              {"steps", steps_},
              {"median_ms_per_step", median},
              {"median_data_ms_per_step", data_ms[data_ms.size() / 2]},
              {"min_ms_per_step", sorted.front()},
              {"kernels_per_step", kernels},
              {"host_reads_per_step", reads},
              {"top_kernels", nlohmann::json::array()},
              {"max_ms_per_step", sorted.back()},
              {"tokens_per_s", mean_tokens / (median / 1000.0)},
              {"flops_per_step", flops / static_cast<double>(ms.size())},
              {"tflops_per_s", flops / static_cast<double>(ms.size()) / (median / 1000.0) / 1e12},
              {"padded_tflops_per_s",
               padded_flops / static_cast<double>(ms.size()) / (median / 1000.0) / 1e12}});
    for (const auto& [n, name] : top)
      j["top_kernels"].push_back({name, n});
    if (peak_tflops_ > 0) {
      j["peak_tflops"] = peak_tflops_;
      j["fraction_of_peak"] = j["tflops_per_s"].get<double>() / peak_tflops_;
    }
    fmt::print("{}\n", j.dump(2));
    fs::remove_all(tmp);
    return 0;
  }

  // What every benchmark report starts with: the run and the machine it ran on.
  static nlohmann::json header(const Experiment& exp,
                               Transformer& model,
                               const torch::Device& device,
                               int64_t threads) {
    return {{"experiment", exp.name},
            {"parameters", model->parameter_count()},
            {"device", device.str()},
            {"threads", threads},
            {"torch", torch_version()}};
  }

  // Training FLOPs of a batch (docs/performance.md, "FLOP count"): over each sequence's real
  // length and its own loop count (model.loops_per_length), and over the padded shape the step
  // actually computes (every sample through the batch's longest count).
  static std::pair<double, double> step_flops(const ModelConfig& m,
                                              int64_t vocab,
                                              int64_t pad,
                                              const Batch& b) {
    auto target = b.padding.defined() ? (~b.padding).sum(1) : (b.inputs != pad).sum(1);  // [B]
    auto source =
        b.source_padding.defined() ? (~b.source_padding).sum(1) : torch::zeros_like(target);
    target = target.cpu();
    source = source.cpu();
    auto loops = m.loops_per_length > 0 && b.lengths.defined()
                     ? m.sample_loops(b.lengths.cpu())
                     : torch::full_like(target, m.loops);  // [B]
    const int64_t T = b.inputs.size(1), S = b.source.defined() ? b.source.size(1) : 0;
    double real = 0;
    if (b.segments.defined()) {
      // Packed rows (decoder): each sample's own work, as if it had a row of its own.
      const auto seg = b.segments.cpu();
      auto sg = seg.accessor<int64_t, 2>();
      for (int64_t r = 0; r < seg.size(0); ++r) {
        for (int64_t t = 0, n = 0; t < T; ++t) {
          n += sg[r][t] >= 0;
          if (n > 0 && (t + 1 == T || sg[r][t + 1] != sg[r][t])) {
            real += training_flops(m, vocab, n, 0, m.loops);
            n = 0;
          }
        }
      }
    } else {
      for (int64_t i = 0; i < target.size(0); ++i) {
        real += training_flops(m,
                               vocab,
                               target[i].item<int64_t>(),
                               source[i].item<int64_t>(),
                               loops[i].item<int64_t>());
      }
    }
    const int64_t most = loops.max().item<int64_t>();
    return {real, static_cast<double>(target.size(0)) * training_flops(m, vocab, T, S, most)};
  }

  // What the grid costs the host before any model work, on one thread: drawing every cell's
  // samples (seeded as the evaluator seeds them) and laying them out into batches of up to
  // eval.batch_size. On a GPU this part does not overlap the model's; its share of `seconds`
  // says how much of the grid's time is the host's.
  static double host_data_seconds(const Experiment& exp, Transformer& model) {
    const auto t0 = std::chrono::steady_clock::now();
    const Architecture& arch = model->arch();
    const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, exp.eval.batch_size));
    int64_t sink = 0;
    for (const GridCell& cell : exp.eval.cells()) {
      const std::vector<Example> examples = cell_samples(*exp.task, exp.eval, cell);
      for (size_t first = 0; first < examples.size(); first += chunk) {
        std::vector<Example> part(examples.begin() + static_cast<std::ptrdiff_t>(first),
                                  examples.begin() + static_cast<std::ptrdiff_t>(
                                                         std::min(examples.size(), first + chunk)));
        sink += arch.make_batch(*exp.task, part).tokens;
      }
    }
    (void)sink;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // One untimed pass over the first cell (allocator and kernels warm), then the whole grid.
  static int run_eval(const Experiment& exp,
                      Transformer& model,
                      const torch::Device& device,
                      int64_t threads) {
    EvalConfig warm = exp.eval;
    for (auto& [axis, values] : warm.grid) {
      values.resize(1);
    }
    evaluate_grid(model, *exp.task, warm, device);
    if (device.is_cuda())
      torch::cuda::synchronize();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<CellResult> cells = evaluate_grid(model, *exp.task, exp.eval, device);
    if (device.is_cuda())
      torch::cuda::synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t samples = 0, tokens = 0, correct = 0;
    double slowest = 0;
    for (const auto& c : cells) {
      samples += c.samples;
      correct += c.correct;
      tokens += c.tokens;
      slowest = std::max(slowest, c.seconds);
    }
    const double host_seconds = host_data_seconds(exp, model);
    nlohmann::json j = header(exp, model, device, threads);
    j.update(
        {{"metric", metric_description(exp.eval)},
         {"cells", cells.size()},
         {"samples_per_cell", exp.eval.samples},
         {"eval_batch_size", exp.eval.batch_size},
         {"eval_batch_tokens", eval_batch_tokens(exp.eval.batch_tokens, device, model->config())},
         {"samples", samples},
         {"correct", correct},
         {"autocast", exp.eval.autocast && device.is_cuda()},
         {"tokens", tokens},
         {"seconds", seconds},
         {"slowest_cell_seconds", slowest},
         {"host_data_seconds", host_seconds},
         {"samples_per_s", static_cast<double>(samples) / seconds},
         {"tokens_per_s", static_cast<double>(tokens) / seconds}});
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

 private:
  std::string file_;
  int64_t steps_ = 20, warmup_ = 3;
  bool eval_ = false;
  double peak_tflops_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_bench() {
  return std::make_unique<Bench>();
}
}  // namespace lengen::cli
