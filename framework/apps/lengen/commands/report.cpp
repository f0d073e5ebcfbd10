// `lengen report`: the reproduction page. With no argument, at the repository root: docs/data/
// -> docs/reproductions.md, docs/reproductions.html and docs/img/reproductions/*.svg (--check:
// compare instead of writing). With a sweep folder: the same page for that sweep (-o FILE.html
// or FILE.md). --collect SWEEP_DIR copies a sweep's aggregate into docs/data/<name>/.
#include "../cli.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/report/reproduction.h"
#include "lengen/sweep/sweep.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen::cli {

namespace {

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Report : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand(
        "report",
        "the reproduction page: docs/reproductions.{md,html} from docs/data/, or the "
        "same page for a sweep folder");
    c->add_option(
        "sweep_dir", sweep_, "a sweep folder: its page instead of the repository's (with -o)");
    c->add_option("-o,--out",
                  out_,
                  "with a sweep folder: the page's file, FILE.html (self-contained) or FILE.md");
    c->add_option("--data", data_, "the data folder (claims.yaml and one folder per data set)")
        ->capture_default_str();
    c->add_option("--docs", docs_, "where the page is written")->capture_default_str();
    c->add_flag("--check",
                check_,
                "write nothing; fail naming each file that differs from what the data give");
    c->add_option("--collect",
                  collect_,
                  "copy SWEEP_DIR's aggregate (results and provenance) into DATA/NAME/");
    c->add_option("--name",
                  name_,
                  "with --collect: the data set's folder name (default: the sweep's folder name)");
    c->add_option("--eval",
                  eval_,
                  "the runs' evals/NAME (`lengen eval RUN --out NAME`) instead of their own eval/");
    add_common(c, common, false);
    return c;
  }

  int run(const Common&) override {
    if (!collect_.empty()) {
      LENGEN_CHECK(sweep_.empty() && !check_,
                   "--collect takes the sweep folder itself; give no other sweep or --check");
      sweep::aggregate(
          collect_, -1, eval_);  // the aggregate the data set copies, up to date with the runs
      const std::string name =
          name_.empty() ? fs::path(collect_).lexically_normal().filename().string() : name_;
      const std::string claims = collect_sweep(collect_, data_, name, eval_);
      logger()->info("collected {} into {}", collect_, (fs::path(data_) / name).string());
      if (!claims.empty()) {
        fmt::print(
            "# claims for {} (its paper: block's cells); add them to {}/claims.yaml with the "
            "paper's key and the "
            "protocol:\n{}",
            name,
            data_,
            claims);
      }
      return 0;
    }
    if (!sweep_.empty()) {
      LENGEN_CHECK(!out_.empty(),
                   "lengen report {}: give the page's file with -o FILE.html (or FILE.md)",
                   sweep_);
      const std::string ext = fs::path(out_).extension().string();
      LENGEN_CHECK(ext == ".html" || ext == ".md", "-o {}: expected a .html or .md file", out_);
      sweep::aggregate(sweep_, -1, eval_);
      const auto files = render_reproductions(sweep_reproductions(sweep_, eval_), ext == ".md");
      const fs::path dir = fs::absolute(out_).parent_path();
      fs::create_directories(dir);
      for (const auto& [rel, text] : files) {
        if (ext == ".md" && rel == "reproductions.html")
          continue;
        const fs::path target = rel.rfind("reproductions.", 0) == 0 ? fs::path(out_) : dir / rel;
        if (rel.rfind("reproductions.", 0) == 0 && fs::path(rel).extension() != ext)
          continue;
        fs::create_directories(fs::absolute(target).parent_path());
        write_file_atomic(target.string(), text);
      }
      logger()->info("wrote {}", out_);
      return 0;
    }
    LENGEN_CHECK(out_.empty(),
                 "-o goes with a sweep folder; the repository's page goes to --docs ({})",
                 docs_);
    const ReproductionPage page = load_reproductions(data_);
    auto files = render_reproductions(page);
    // docs/results.md opens each section with its claims' rows, filled in from the same data.
    const fs::path results = fs::path(docs_) / "results.md";
    if (fs::exists(results))
      files["results.md"] = fill_claim_rows(file_text(results), page, results.string());
    int differ = 0;
    for (const auto& [rel, text] : files) {
      const fs::path target = fs::path(docs_) / rel;
      if (check_) {
        if (file_text(target) != text) {
          fmt::print(stderr,
                     "{}: differs from what {} gives (regenerate with `lengen report`)\n",
                     target.string(),
                     data_);
          ++differ;
        }
        continue;
      }
      fs::create_directories(target.parent_path());
      write_file_atomic(target.string(), text);
    }
    // Pictures of data sets the page no longer shows.
    const fs::path img = fs::path(docs_) / "img" / "reproductions";
    if (fs::is_directory(img)) {
      for (const auto& entry : fs::directory_iterator(img)) {
        const std::string rel = "img/reproductions/" + entry.path().filename().string();
        if (files.count(rel))
          continue;
        if (check_) {
          fmt::print(stderr,
                     "{}: no data set draws it any more (regenerate with `lengen report`)\n",
                     entry.path().string());
          ++differ;
        } else {
          fs::remove(entry.path());
        }
      }
    }
    if (check_) {
      LENGEN_CHECK(differ == 0,
                   "{} file(s) of the reproduction page differ from the data in {}",
                   differ,
                   data_);
      fmt::print("the reproduction page ({} files) matches {}\n", files.size(), data_);
    } else {
      logger()->info("wrote {} files under {}", files.size(), docs_);
    }
    return 0;
  }

 private:
  std::string sweep_, out_, collect_, name_, eval_;
  std::string data_ = "docs/data", docs_ = "docs";
  bool check_ = false;
};

}  // namespace

std::unique_ptr<Command> make_report() {
  return std::make_unique<Report>();
}
}  // namespace lengen::cli
