#include "lengen/report/report.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/experiment/experiment.h"
#include "lengen/train/tensorboard.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace fs = std::filesystem;

namespace lengen {

std::string cell_text(const GridCell& cell, const char* sep) {
  std::string out;
  for (const auto& [k, v] : cell) {
    out += fmt::format("{}{}={}", out.empty() ? "" : sep, k, v);
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
    fmt::print("{}{:>8.1f}% {:>7.1f}% - {:>5.1f}% {:>8}\n",
               row,
               100 * r.accuracy,
               100 * r.ci_low,
               100 * r.ci_high,
               r.samples);
  }
  fmt::print("\n");
  std::fflush(stdout);
}

std::string find_script(const std::string& name) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  // Installed: PREFIX/share/lengen/scripts; in a build tree, a link there to the source's scripts/.
  const fs::path p = exe / ".." / "share" / "lengen" / "scripts" / name;
  return fs::exists(p, ec) ? p.lexically_normal().string() : "";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool plotting_available() {
  // Asked once per process: python3 with matplotlib (Debian: python3-matplotlib).
  static const bool ok =
      fs::exists("/usr/bin/python3") &&
      std::system("/usr/bin/python3 -c 'import matplotlib' > /dev/null 2>&1") == 0;
  return ok;
}

bool run_plot(const std::string& script,
              const std::string& args,
              const std::string& what,
              const std::string& intact) {
  const std::string path = find_script(script);
  if (path.empty() || !plotting_available()) {
    logger()->info("plotting needs python3 with matplotlib and scripts/{} ({}); {} is written",
                   script,
                   path.empty() ? "script not found" : "matplotlib not found",
                   intact);
    return false;
  }
  const char* py = "/usr/bin/python3";
  const int rc = std::system(fmt::format("{} '{}' {} 2>&1", py, path, args).c_str());
  if (rc != 0) {
    logger()->warn("plotting failed (exit {}); {} is intact", rc, intact);
    return false;
  }
  logger()->info("{}", what);
  return true;
}

std::vector<CellResult> evaluate_and_report(Transformer& model,
                                            const Experiment& exp,
                                            const EvalConfig& cfg,
                                            const torch::Device& device,
                                            const std::string& dir,
                                            int64_t step) {
  auto t0 = std::chrono::steady_clock::now();
  auto results = evaluate_grid(
      model, *exp.task, cfg, device, [&](const CellResult& c, size_t done, size_t total) {
        logger("eval")->info(
            "[{}/{}] {}: {:.1f}%", done, total, cell_text(c.cell), 100 * c.accuracy);
      });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  logger("eval")->info("evaluated {} cells x {} samples in {:.1f}s ({})",
                       results.size(),
                       cfg.samples,
                       secs,
                       metric_description(cfg));
  const auto axes = exp.task->grid_axes();
  const RunDir run(dir);
  write_grid_results(run, results, cfg.axes(), metric_description(cfg), trained_ranges(axes));
  print_table(results, cfg.axes());
  std::string extra;
  if (axes.size() == 1 && axes[0].train_hi > 0) {
    extra = fmt::format(" --train-max {}", axes[0].train_hi);
  } else if (axes.size() == 2 && axes[0].train_hi > 0 && axes[1].train_hi > 0) {
    extra = fmt::format(" --train-box {},{},{},{}",
                        axes[0].train_lo,
                        axes[0].train_hi,
                        axes[1].train_lo,
                        axes[1].train_hi);
  }
  run_plot("plot_grid.py",
           fmt::format("'{}' '{}' --title '{} (seed {})'{}",
                       run.grid().string(),
                       run.plot("grid.png").string(),
                       exp.name,
                       exp.seed,
                       extra),
           fmt::format("plot written to {}", run.plot("grid.png").string()),
           "eval/grid.csv");
  if (!cfg.breakdown.empty()) {
    run_plot("plot_breakdown.py",
             fmt::format("'{}' '{}' --title '{} (seed {})'",
                         run.summary().string(),
                         run.plot("breakdown.png").string(),
                         exp.name,
                         exp.seed),
             fmt::format("accuracy breakdown plotted to {}", run.plot("breakdown.png").string()),
             "eval/breakdown.csv");
  }
  // TensorBoard: accuracy per cell and the picture.
  EventWriter tb(run.tensorboard().string());
  double mean = 0;
  for (const auto& c : results) {
    tb.scalar("eval/accuracy/" + cell_text(c.cell, ","), step, c.accuracy);
    mean += c.accuracy / static_cast<double>(results.size());
  }
  tb.scalar("eval/mean_accuracy", step, mean);
  const fs::path png = run.plot("grid.png");
  if (fs::exists(png)) {
    std::ifstream in(png, std::ios::binary);
    tb.image("eval/grid", step, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  return results;
}

void append_eval_curve(const std::string& path,
                       int64_t step,
                       const std::vector<CellResult>& results,
                       EventWriter* tensorboard) {
  nlohmann::json cells = nlohmann::json::array();
  double mean = 0;
  for (const auto& c : results) {
    cells.push_back({{"cell", c.cell},
                     {"accuracy", c.accuracy},
                     {"samples", c.samples},
                     {"correct", c.correct}});
    mean += c.accuracy / static_cast<double>(std::max<size_t>(1, results.size()));
    if (tensorboard)
      tensorboard->scalar("curve/accuracy/" + cell_text(c.cell, ","), step, c.accuracy);
  }
  if (tensorboard)
    tensorboard->scalar("curve/mean_accuracy", step, mean);
  nlohmann::json rec{{"step", step}, {"mean_accuracy", mean}, {"cells", cells}};
  std::ofstream out(path, std::ios::app);
  LENGEN_CHECK(out.good(), "{}: cannot open for appending", path);
  out << rec.dump() << "\n" << std::flush;
  LENGEN_CHECK(out.good(), "{}: write failed: {}", path, std::strerror(errno));
}

void plot_eval_curve(const std::string& jsonl, const std::string& png, const std::string& title) {
  run_plot("plot_curves.py",
           fmt::format("'{}' '{}' --title '{}'", jsonl, png, title),
           fmt::format("accuracy curves written to {}", png),
           jsonl);
}

void report_aggregate(const std::string& dir, int64_t n, bool plots, const std::string& out_dir) {
  const fs::path out = out_dir.empty() ? fs::path(dir) / "aggregate" : fs::path(out_dir);
  logger("sweep")->info(
      "aggregated {} completed points into {}/results.csv and summary.csv", n, out.string());
  if (!plots || n == 0)
    return;
  run_plot("plot_sweep.py",
           fmt::format("'{}'", out.string()),
           fmt::format("heatmaps written to {}/*.png", out.string()),
           "the CSV files");
  if (fs::exists(out / "paper.csv")) {
    std::string title = "the paper";
    std::ifstream in(fs::path(dir) / "sweep.json");
    const auto m = nlohmann::json::parse(in, nullptr, false);
    if (!m.is_discarded() && m.contains("paper")) {
      title =
          m["paper"].value("cite", std::string()) + ", " + m["paper"].value("table", std::string());
    }
    run_plot("plot_paper.py",
             fmt::format("'{}' '{}' --title {}",
                         (out / "paper.csv").string(),
                         (out / "paper.png").string(),
                         shell_quote(title)),
             fmt::format("paper comparison plotted to {}/paper.png", out.string()),
             "paper.csv");
  }
}

}  // namespace lengen
