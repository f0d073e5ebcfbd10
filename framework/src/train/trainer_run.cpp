// The Trainer's loop: resuming, the steps, progress lines and metrics.jsonl, checkpoints on
// schedule and on a stop request.
#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/train/tensorboard.h"
#include "lengen/train/trainer.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

namespace fs = std::filesystem;

namespace lengen {

namespace {

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) {
    return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  }
  return fmt::format("{}m{:02d}s", s / 60, s % 60);
}

// The steps since the last progress line: their loss (summed on the device, read back once a
// line) and tokens.
struct ProgressWindow {
  std::chrono::steady_clock::time_point t0, start;
  torch::Tensor loss;
  int64_t steps = 0, tokens = 0, padded = 0;
};

// The progress line after step s + 1 of `total` (training started at `first`), its record in
// metrics.jsonl and TensorBoard; then a new window.
void report_progress(ProgressWindow& w,
                     int64_t s,
                     int64_t first,
                     int64_t total,
                     double lr,
                     std::ofstream& metrics,
                     const std::string& metrics_path,
                     std::unique_ptr<EventWriter>& tb,
                     const std::string& run_dir) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - w.start).count();
  const double elapsed = std::chrono::duration<double>(now - w.t0).count();
  const double tps = static_cast<double>(w.tokens) / std::max(dt, 1e-9);
  const double per_step = elapsed / static_cast<double>(s + 1 - first);
  const double eta = per_step * static_cast<double>(total - s - 1);
  const double mean_loss = w.loss.item<double>() / static_cast<double>(w.steps);
  const double real =
      static_cast<double>(w.tokens) / static_cast<double>(std::max<int64_t>(w.padded, 1));
  logger("train")->info(
      "step {:>6}/{} loss {:.4f} lr {:.2e} {:>7.0f} tok/s ({:.0f}% real) {:.1f} ms/step ETA {}",
      s + 1,
      total,
      mean_loss,
      lr,
      tps,
      100.0 * real,
      1000.0 * dt / w.steps,
      format_duration(eta));
  nlohmann::json rec{{"step", s + 1},
                     {"loss", mean_loss},
                     {"lr", lr},
                     {"tokens_per_s", tps},
                     {"real_token_fraction", real},
                     {"elapsed_s", elapsed},
                     {"ms_per_step", 1000.0 * dt / w.steps}};
  metrics << rec.dump() << "\n" << std::flush;
  LENGEN_CHECK(
      metrics.good(), "{}: write failed at step {}: {}", metrics_path, s + 1, std::strerror(errno));
  if (!tb) {
    tb = std::make_unique<EventWriter>(RunDir(run_dir).tensorboard().string());
  }
  tb->scalar("train/loss", s + 1, mean_loss);
  tb->scalar("train/lr", s + 1, lr);
  tb->scalar("train/tokens_per_s", s + 1, tps);
  w.start = now;
  w.loss = torch::Tensor();
  w.steps = w.tokens = w.padded = 0;
}

}  // namespace

void truncate_jsonl(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) {
    return;
  }
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("step", int64_t{0}) <= step) {
        kept += line + "\n";
      }
    } catch (const std::exception&) {
      // A torn last line from a killed run is dropped.
    }
  }
  write_file_atomic(path, kept);
}

int64_t Trainer::start_step(bool resume, const std::string& metrics_path) {
  fs::create_directories(run_dir_);
  int64_t start = 0;
  std::string latest = latest_checkpoint();
  if (resume && !latest.empty()) {
    start = load_checkpoint(latest);
    logger("train")->info("resumed from {} (step {})", latest, start);
    truncate_jsonl(metrics_path, start);
  } else if (!latest.empty()) {
    throw Error(
        fmt::format("{} already holds checkpoints ({}); pass --resume to continue that "
                    "run or --fresh to discard it",
                    run_dir_,
                    latest));
  } else {
    fs::remove(metrics_path);
  }
  return start;
}

TrainResult Trainer::run(bool resume) {
  const std::string metrics_path = RunDir(run_dir_).metrics().string();
  const int64_t start = start_step(resume, metrics_path);
  std::ofstream metrics(metrics_path, std::ios::app);
  LENGEN_CHECK(metrics.good(), "{}: cannot open for writing", metrics_path);
  std::unique_ptr<EventWriter> tb;  // TensorBoard: the same records as metrics.jsonl

  TrainResult result;
  result.steps = start;
  if (started_) {
    started_(start);
  }
  if (start >= cfg_.steps) {
    return result;
  }
  if (start == 0 && periodic_) {
    periodic_(0);  // the curve starts from the initial (or init_from) weights
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  ProgressWindow window{t0, t0, {}, 0, 0, 0};
  torch::Tensor loss;
  int64_t total_tokens = 0;
  // On a GPU the next step's batch is made on a second thread while this step trains (it
  // depends only on (seed, step), so the order of work does not change what is computed). On
  // the CPU that thread would compete with the step's own threads for the cores, so batches
  // are made in turn there.
  const bool ahead = device_.is_cuda();
  auto prefetch = [this, ahead](int64_t s) {
    return std::async(ahead ? std::launch::async : std::launch::deferred,
                      [this, s] { return batches_for_step(s); });
  };
  std::future<std::vector<Batch>> next = prefetch(start);
  for (int64_t s = start; s < cfg_.steps; ++s) {
    std::vector<Batch> batches = next.get();
    // No batch is copied to the device while a CUDA graph is being recorded.
    const bool capturing = will_capture(batches);
    if (s + 1 < cfg_.steps && !capturing) {
      next = prefetch(s + 1);
    }
    loss = step(batches, s);
    if (s + 1 < cfg_.steps && capturing) {
      next = prefetch(s + 1);
    }
    window.loss =
        window.loss.defined() ? window.loss + loss.to(torch::kFloat64) : loss.to(torch::kFloat64);
    ++window.steps;
    for (const auto& b : batches) {
      window.tokens += b.tokens;
      window.padded += b.padded_tokens();
      total_tokens += b.tokens;
    }
    result.steps = s + 1;
    const bool last = s + 1 == cfg_.steps;
    const bool log_now = (s + 1) % cfg_.log_every == 0 || last;
    const bool periodic_now =
        periodic_ && periodic_every_ > 0 && ((s + 1) % periodic_every_ == 0 || last);
    const bool stop =
        stop_requested();  // read once: a signal between two reads would skip the save
    const bool checkpoint_now =
        (cfg_.checkpoint_every > 0 && (s + 1) % cfg_.checkpoint_every == 0) || last || stop;
    if (log_now || periodic_now || checkpoint_now) {
      check_finite();  // before anything reports, evaluates or saves these weights
    }
    if (log_now) {
      report_progress(
          window, s, start, cfg_.steps, schedule_.at(s), metrics, metrics_path, tb, run_dir_);
    }
    fault::reached("train.step");
    if (periodic_now) {
      periodic_(s + 1);
    }
    if (checkpoint_now) {
      save_checkpoint(s + 1);
    }
    if (stop && !last) {
      throw Interrupted(
          fmt::format("interrupted at step {}; checkpoint saved in {}/checkpoints; run "
                      "again with --resume to continue",
                      s + 1,
                      run_dir_));
    }
  }
  result.final_loss = loss.item<double>();
  result.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  result.tokens_per_second = static_cast<double>(total_tokens) / std::max(result.seconds, 1e-9);
  return result;
}

}  // namespace lengen
