// The reproduction page: figures over seeds in the paper's statistic, the verdict rule, the two
// data formats, errors that name the file and line, a sweep folder as a page, --collect, and
// pages that are a function of their data.
#include "helpers.h"

#include "lengen/eval/paper.h"
#include "lengen/report/reproduction.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

using namespace lengen;
using Catch::Contains;

namespace {

// A data set of two configurations over three seeds at 10 and 20 digits (percent, seed order).
void write_tiny_set(const test::TempDir& dir, const std::string& name = "tiny") {
  std::filesystem::create_directories(dir.path / name);
  test::write_text(
      dir.file(name + "/source.yaml"),
      "file: experiments/quickstart.yaml\nmeasured: 2026-12-06\ncommit: abc1234\nkernels: AVX2\n"
      "threads: 2\nseconds: [100, 300, 200]\ncell_axes: [digits]\ntrained: {digits: [1, 10]}\n");
  test::write_text(dir.file(name + "/results.csv"),
                   "point,config,seed,digits,samples,correct,accuracy,ci_low,ci_high\n"
                   "\"a,seed=0\",a,0,10,100,100,1.0,0.9,1\n"
                   "\"a,seed=1\",a,1,10,100,100,1.0,0.9,1\n"
                   "\"a,seed=2\",a,2,10,100,100,1.0,0.9,1\n"
                   "\"a,seed=0\",a,0,20,100,92,0.92,0.8,1\n"
                   "\"a,seed=1\",a,1,20,100,41,0.41,0.3,0.5\n"
                   "\"a,seed=2\",a,2,20,100,95,0.95,0.9,1\n"
                   "\"b,seed=0\",b,0,20,100,0,0.0,0,0.1\n"
                   "\"b,seed=1\",b,1,20,100,3,0.03,0,0.1\n"
                   "\"b,seed=2\",b,2,20,100,0,0.0,0,0.1\n");
}

std::string claims_yaml(const std::string& claims) {
  return "papers:\n  p: {authors: Doe et al., year: 2024, title: A Paper, arxiv: "
         "'2401.00001'}\nclaims:\n" +
         claims;
}

const ClaimRow& row_of(const std::vector<ClaimRow>& rows, const std::string& id) {
  for (const auto& r : rows) {
    if (r.claim.id == id)
      return r;
  }
  FAIL("no row " << id);
  return rows.front();
}

}  // namespace

TEST_CASE("report: lengen's figures in the paper's statistic and the verdict rule", "[report]") {
  test::TempDir dir;
  write_tiny_set(dir);
  test::write_text(dir.file("claims.yaml"), claims_yaml(R"(
  - {id: med, paper: p, where: "Fig 1", cell: 20, value: 100, data: tiny, config: a, command: "lengen run x"}
  - {id: mean, paper: p, where: "Fig 1", cell: 20, value: 76, statistic: mean, data: tiny, config: a, command: c}
  - {id: best, paper: p, where: "Fig 1", cell: 20, value: 95, statistic: best, data: tiny, config: a, command: c}
  - {id: edge, paper: p, where: "Fig 1", cell: 20, value: 82, data: tiny, config: a, command: c}
  - {id: base, paper: p, where: "Fig 1", cell: 20, value: 0, data: tiny, config: b, command: c}
  - {id: dir, paper: p, where: "Fig 1", cell: 20, value: 30, data: tiny, config: a, versus: base, command: c}
  - {id: against, paper: p, where: "Fig 1", cell: 20, value: 30, data: tiny, config: b, versus: med, command: c}
  - {id: none, paper: p, where: "Fig 1", cell: 10, value: ~, data: tiny, config: a, command: c}
  - {id: bound, paper: p, where: "Fig 1", cell: 20, value: 60, at_least: true, data: tiny, config: a, command: c}
  - {id: bound-missed, paper: p, where: "Fig 1", cell: 20, value: 20, at_least: true, data: tiny, config: b, command: c}
)"));
  const ReproductionPage page = load_reproductions(dir.str());
  const auto rows = claim_rows(page);
  REQUIRE(rows.size() == 10);
  const ClaimRow& med = row_of(rows, "med");
  CHECK(med.seeds == 3);
  CHECK(med.median == Approx(0.92));
  CHECK(med.min == Approx(0.41));
  CHECK(med.max == Approx(0.95));
  CHECK(med.above == Approx(2.0 / 3));  // 0.92 and 0.95 reach 90%
  CHECK(med.ours == Approx(0.92));
  CHECK(med.verdict == "reproduces");  // 8 points below, within 10
  CHECK(row_of(rows, "mean").ours == Approx((0.92 + 0.41 + 0.95) / 3));
  CHECK(row_of(rows, "mean").verdict == "reproduces");  // the mean 76.0 against 76
  CHECK(row_of(rows, "best").ours == Approx(0.95));
  CHECK(row_of(rows, "edge").verdict == "reproduces");  // exactly 10 points off counts
  CHECK(row_of(rows, "base").verdict == "reproduces");  // 0 [0, 3] against 0
  // 92 against 30 is off by 62; the paper's comparison with `base` (30 > 0) holds in lengen (92 >
  // 0).
  CHECK(row_of(rows, "dir").verdict == "direction only");
  // b's 0 is 30 points off; the paper has it below `med` (30 < 100), and so does lengen (0 < 92).
  CHECK(row_of(rows, "against").verdict == "direction only");
  CHECK(row_of(rows, "none").verdict == "no paper figure");
  CHECK(row_of(rows, "bound").verdict == "reproduces");  // 92 above a bound of 60
  CHECK(row_of(rows, "bound-missed").verdict ==
        "does not");  // 0 below a bound of 20 by more than 10
  CHECK_THAT(render_reproductions(page).at("reproductions.md"),
             Contains("| >= 60 (median) | 92 |"));
}

TEST_CASE("report: direction only needs the paper's sign in lengen's figures", "[report]") {
  test::TempDir dir;
  write_tiny_set(dir);
  test::write_text(dir.file("claims.yaml"), claims_yaml(R"(
  - {id: a10, paper: p, where: "T", cell: 10, value: 50, data: tiny, config: a, command: c}
  - {id: a20, paper: p, where: "T", cell: 20, value: 40, data: tiny, config: a, versus: a10, command: c}
  - {id: b20, paper: p, where: "T", cell: 20, value: 60, data: tiny, config: b, versus: a10, command: c}
)"));
  const auto rows = claim_rows(load_reproductions(dir.str()));
  CHECK(row_of(rows, "a10").verdict == "does not");        // 100 against 50
  CHECK(row_of(rows, "a20").verdict == "direction only");  // paper 40 < 50, lengen 92 < 100
  CHECK(row_of(rows, "b20").verdict == "does not");        // paper 60 > 50, lengen 0 < 100
}

TEST_CASE("report: a summary record gives what it kept and no more", "[report]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "s");
  test::write_text(dir.file("s/source.yaml"),
                   "origin: transcribed\ntime: 5 min a run\ncell_axes: [digits, operands]\n");
  test::write_text(dir.file("s/summary.csv"),
                   "config,digits,operands,seeds,median,min,max\n"
                   "x,10,10,3,0.14,0,0.52\n"
                   "x,5,10,3,0.91,,\n");
  test::write_text(dir.file("claims.yaml"), claims_yaml(R"(
  - {id: full, paper: p, where: "F", cell: [10, 10], value: 20, statistic: mean, data: s, command: c}
  - {id: median-only, paper: p, where: "F", cell: "5,10", value: 90, data: s, command: c}
  - {id: mean-unknown, paper: p, where: "F", cell: "5,10", value: 90, statistic: mean, data: s, command: c}
)"));
  const auto rows = claim_rows(load_reproductions(dir.str()));
  // Three seeds with median, min and max: every seed is known.
  CHECK(row_of(rows, "full").ours == Approx((0 + 0.14 + 0.52) / 3));
  CHECK(row_of(rows, "full").above == Approx(0.0));
  CHECK(row_of(rows, "full").verdict == "reproduces");
  CHECK(row_of(rows, "median-only").median == Approx(0.91));
  CHECK(std::isnan(row_of(rows, "median-only").above));
  CHECK(std::isnan(row_of(rows, "median-only").min));
  CHECK(row_of(rows, "median-only").verdict == "reproduces");
  CHECK(row_of(rows, "mean-unknown").verdict == "not recorded");
  const auto files = render_reproductions(load_reproductions(dir.str()));
  CHECK_THAT(files.at("reproductions.md"), Contains("| 91 [-, -] | - | 3 |"));
}

TEST_CASE("report: bad data are refused naming the file, line and key", "[report]") {
  test::TempDir dir;
  write_tiny_set(dir);
  const std::string ok =
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, data: tiny, config: a, command: c}\n";
  auto refuses = [&](const std::string& claims, const std::string& needle) {
    test::write_text(dir.file("claims.yaml"), claims_yaml(claims));
    CHECK_THROWS_WITH(load_reproductions(dir.str()), Contains(needle));
  };
  refuses(
      "  - {id: x, paper: q, where: W, cell: 20, value: 50, data: tiny, config: a, command: c}\n",
      "paper 'q' is not under papers:");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, data: gone, config: a, command: c}\n",
      "no such data set folder");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 21, value: 50, data: tiny, config: a, command: c}\n",
      "has no cell digits=21");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, data: tiny, config: c, command: c}\n",
      "has no configuration 'c' (it has: a, b)");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 150, data: tiny, config: a, command: c}\n",
      "a percentage in [0, 100], found 150");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, data: tiny, config: a, comand: c}\n",
      "comand");
  refuses(ok + ok, "claim id 'x' is given twice");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, data: tiny, config: a, command: c, "
      "versus: y}\n",
      "versus 'y' is no claim's id");
  refuses(
      "  - {id: x, paper: p, where: W, cell: 20, value: 50, statistic: max, data: tiny, config: a, "
      "command: c}\n",
      "statistic 'max': expected median, mean or best");
  // The data set's own files.
  test::write_text(dir.file("claims.yaml"), claims_yaml(ok));
  const std::string good = test::read_text(dir.file("tiny/results.csv"));
  test::write_text(dir.file("tiny/results.csv"), good + "\"a,seed=3\",a,3,20,100,90,1.5,0,1\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()),
                    Contains("results.csv:11 (accuracy): a fraction in [0, 1], found 1.5"));
  test::write_text(dir.file("tiny/results.csv"), good + "\"a,seed=3\",a,3,20,100,90,abc,0,1\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()),
                    Contains("results.csv:11 (accuracy): expected a number, found 'abc'"));
  test::write_text(dir.file("tiny/results.csv"), good + "\"a,seed=2\",a,2,20,100,90,0.9,0,1\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()),
                    Contains("configuration 'a' has seed 2 at cell 20 twice"));
  test::write_text(dir.file("tiny/results.csv"), good + "\"a,seed=3\",a,3,20\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()),
                    Contains("results.csv:11: 4 fields where the header has 9"));
  test::write_text(dir.file("tiny/results.csv"), "config,seed,accuracy\na,0,1\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()), Contains("results.csv:1: no column 'digits'"));
  test::write_text(dir.file("tiny/results.csv"), good);
  test::write_text(dir.file("tiny/source.yaml"), "cell_axes: [digits]\norigin: guessed\n");
  CHECK_THROWS_WITH(load_reproductions(dir.str()), Contains("origin"));
  std::filesystem::remove(dir.file("claims.yaml"));
  CHECK_THROWS_WITH(load_reproductions(dir.str()), Contains("no claims.yaml"));
}

TEST_CASE("report: the page is a function of its data, with a row and a picture per claim and set",
          "[report]") {
  test::TempDir dir;
  write_tiny_set(dir);
  write_tiny_set(dir, "other");
  test::write_text(dir.file("claims.yaml"), claims_yaml(R"(
  - {id: one, paper: p, where: "Fig 1", cell: 20, value: 100, data: tiny, config: a, command: "lengen sweep s.yaml",
     protocol: ["CPU scale", "300 samples"], results: some-section}
  - {id: two, paper: p, where: "Fig 1 | b", cell: 20, value: 0, data: tiny, config: b, command: c}
  - {id: three, paper: p, where: "Fig 2 <&>", cell: 10, value: 100, data: other, config: a, command: c}
)"));
  const auto page = load_reproductions(dir.str());
  const auto files = render_reproductions(page);
  CHECK(files == render_reproductions(load_reproductions(dir.str())));  // byte for byte
  REQUIRE(files.count("reproductions.md"));
  REQUIRE(files.count("reproductions.html"));
  REQUIRE(files.count("img/reproductions/tiny.svg"));
  REQUIRE(files.count("img/reproductions/other.svg"));
  const std::string& md = files.at("reproductions.md");
  CHECK_THAT(md, Contains("## Doe et al. 2024: A Paper"));
  CHECK_THAT(md, Contains("[arXiv:2401.00001](https://arxiv.org/abs/2401.00001)"));
  CHECK_THAT(md,
             Contains("| [Fig 1](results.md#some-section) | digits=20 | 100 (median) | 92 | 92 "
                      "[41, 95] | 2/3 | 3 | "
                      "CPU scale; 300 samples | **reproduces** | `lengen sweep s.yaml` | 200 s a "
                      "run (100 s to 300 s), "
                      "2 threads | AVX2 |"));
  CHECK_THAT(md, Contains("Fig 1 \\| b"));  // a pipe in a cell is escaped
  CHECK_THAT(md, Contains("**3 claims**: 3 reproduce, 0 direction only, 0 do not."));
  const std::string& html = files.at("reproductions.html");
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
      ++n;
    return n;
  };
  CHECK(count(html, "<tr class=\"claim\"") == 3);
  CHECK(count(html, "<img class=\"plot\"") == 2);
  CHECK_THAT(html, Contains("Fig 2 &lt;&amp;&gt;"));
  CHECK(html.find("<script") == std::string::npos);  // nothing to run: it opens from disk
  const std::string& svg = files.at("img/reproductions/tiny.svg");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.size() > 200);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<polyline") == 2);  // a median line per configuration
  // A data set whose configurations have one cell each draws no picture (nothing to draw a line
  // through).
  test::write_text(dir.file("claims.yaml"),
                   claims_yaml("  - {id: one, paper: p, where: W, cell: 10, value: 100, data: "
                               "tiny, config: a, command: c}\n"));
  std::filesystem::remove(dir.file("tiny/results.csv"));
  test::write_text(dir.file("tiny/results.csv"), "config,seed,digits,accuracy\na,0,10,1\n");
  CHECK(render_reproductions(load_reproductions(dir.str())).count("img/reproductions/tiny.svg") ==
        0);
}

namespace {

// A sweep folder as `lengen sweep` and `lengen aggregate` leave it: two points of one
// configuration, each with its config.yaml, metrics.jsonl and evaluation.
void write_fake_sweep(const test::TempDir& dir, bool with_paper) {
  const auto root = dir.path / "sw";
  nlohmann::json points = nlohmann::json::array();
  for (int seed : {0, 1}) {
    const std::string run = "runs/q/" + std::to_string(seed);
    std::filesystem::create_directories(root / run / "eval");
    test::write_text(
        (root / run / "config.yaml").string(),
        "name: q\nseed: " + std::to_string(seed) +
            "\nprovenance:\n  machine: {cpu: Test CPU, kernel_set: AVX-512}\n  threads_used: 2\n"
            "  source_tree: {version: 0.10.0, commit: abc1234, dirty: false}\n");
    test::write_text((root / run / "metrics.jsonl").string(),
                     "{\"step\": 10, \"elapsed_s\": 40.0}\n{\"step\": 20, \"elapsed_s\": " +
                         std::to_string(90 + 10 * seed) + ".0}\n");
    test::write_text(
        (root / run / "eval" / "summary.json").string(),
        R"({"axes": ["digits"], "cells": [{"digits": 5, "seconds": 4.0}, {"digits": 9, "seconds": 6.0}]})");
    points.push_back({{"name", "q,seed=" + std::to_string(seed)},
                      {"config", "q"},
                      {"seed", seed},
                      {"run_dir", run},
                      {"varied", nlohmann::json::object()}});
  }
  nlohmann::json m{{"name", "q"},
                   {"file", "experiments/q.yaml"},
                   {"axes", {"seed"}},
                   {"threshold", 0.9},
                   {"points", points}};
  if (with_paper) {
    PaperReference paper;
    paper.cite = "Doe et al. 2024";
    paper.table = "Table 9";
    paper.rows.push_back({"Q", {}, {{"9", 0.8}}, {"q"}, ""});
    m["paper"] = paper.to_json();
  }
  test::write_text((root / "sweep.json").string(), m.dump());
  std::filesystem::create_directories(root / "aggregate");
  test::write_text((root / "aggregate" / "aggregate.json").string(),
                   R"({"cell_axes": ["digits"], "trained": {"digits": [1, 5]}})");
  test::write_text(
      (root / "aggregate" / "results.csv").string(),
      "point,config,seed,digits,samples,correct,accuracy,ci_low,ci_high\n"
      "\"q,seed=0\",q,0,5,10,10,1.000000,0.7,1\n\"q,seed=0\",q,0,9,10,7,0.700000,0.4,0.9\n"
      "\"q,seed=1\",q,1,5,10,10,1.000000,0.7,1\n\"q,seed=1\",q,1,9,10,9,0.900000,0.6,1\n");
}

}  // namespace

TEST_CASE("report: --collect counts a staged run's seconds stage by stage", "[report]") {
  test::TempDir dir;
  write_fake_sweep(dir, false);
  // Seed 1 as a staged run: a training stage, a labelling stage with no times, an evaluation
  // stage; RUN/eval is a copy of the last stage's evaluation and RUN has no metrics.jsonl.
  const auto run = dir.path / "sw" / "runs/q/1";
  std::filesystem::remove(run / "metrics.jsonl");
  const auto stages = run / "stages";
  std::filesystem::create_directories(stages / "base" / "eval");
  std::filesystem::create_directories(stages / "label");
  std::filesystem::create_directories(stages / "final" / "eval");
  test::write_text((stages / "base" / "metrics.jsonl").string(),
                   "{\"step\": 5, \"elapsed_s\": 20.0}\n{\"step\": 9, \"elapsed_s\": 50.0}\n");
  test::write_text((stages / "base" / "eval" / "summary.json").string(),
                   R"({"axes": ["digits"], "cells": [{"digits": 5, "seconds": 3.0}]})");
  test::write_text((stages / "final" / "eval" / "summary.json").string(),
                   R"({"axes": ["digits"], "cells": [{"digits": 5, "seconds": 7.0}]})");
  test::write_text((run / "eval" / "summary.json").string(),
                   R"({"axes": ["digits"], "cells": [{"digits": 5, "seconds": 7.0}]})");
  collect_sweep(dir.file("sw"), dir.file("data"), "q-staged");
  const DataSet set = load_data_set(dir.file("data/q-staged"));
  CHECK(set.source.seconds == std::vector<double>{100, 60});  // 50 + 3 + 7, the copy once
}

TEST_CASE("report: a sweep folder is a page; --collect keeps its figures and where they came from",
          "[report]") {
  test::TempDir dir;
  write_fake_sweep(dir, true);
  const ReproductionPage page = sweep_reproductions(dir.file("sw"));
  auto rows = claim_rows(page);
  REQUIRE(rows.size() == 1);  // the paper's one cell
  CHECK(rows[0].claim.where == "Table 9, Q");
  CHECK(rows[0].median == Approx(0.8));
  CHECK(rows[0].above == Approx(0.5));
  CHECK(rows[0].verdict == "reproduces");
  CHECK(render_reproductions(page, false).size() == 1);  // the HTML alone, pictures inline

  const std::string claims = collect_sweep(dir.file("sw"), dir.file("data"), "q-seeds");
  CHECK_THAT(claims, Contains("cell: \"9\", value: 80"));
  const DataSet set = load_data_set(dir.file("data/q-seeds"));
  CHECK(set.source.commit == "abc1234");
  CHECK(set.source.kernels == "AVX-512");
  CHECK(set.source.machine == "Test CPU");
  CHECK(set.source.threads == 2);
  CHECK(set.source.seconds ==
        std::vector<double>{100, 110});  // training's elapsed_s and the evaluation's seconds
  CHECK(set.source.trained.at("digits") == std::make_pair<int64_t, int64_t>(1, 5));
  CHECK(set.accuracy.at("q").at("9").seeds == std::vector<double>{0.7, 0.9});

  // Without a paper: block, every configuration and cell is a row with lengen's figures alone.
  test::TempDir bare;
  write_fake_sweep(bare, false);
  rows = claim_rows(sweep_reproductions(bare.file("sw")));
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].verdict == "no paper figure");
  CHECK(collect_sweep(bare.file("sw"), bare.file("data"), "q").empty());
  CHECK_THROWS_WITH(collect_sweep(bare.file("sw"), bare.file("data"), "../q"),
                    Contains("a folder name, not a path"));
  std::filesystem::remove(bare.file("sw/aggregate/results.csv"));
  CHECK_THROWS_WITH(sweep_reproductions(bare.file("sw")), Contains("not aggregated"));
}

TEST_CASE(
    "report: a document's claim blocks are filled from the data, and refilling changes nothing",
    "[report]") {
  test::TempDir dir;
  write_tiny_set(dir);
  test::write_text(dir.file("claims.yaml"),
                   claims_yaml("  - {id: one, paper: p, where: \"Fig 1\", cell: 20, value: 100, "
                               "data: tiny, config: a, command: c}\n"
                               "  - {id: two, paper: p, where: \"Fig 2\", cell: 20, value: 0, "
                               "data: tiny, config: b, command: c}\n"));
  const auto page = load_reproductions(dir.str());
  const std::string doc =
      "# Results\n\n## A\n\n<!-- claims: one two -->\nstale text\n<!-- /claims -->\n\nProse.\n";
  const std::string filled = fill_claim_rows(doc, page, "results.md");
  CHECK_THAT(
      filled,
      Contains(
          "| Doe et al. 2024: Fig 1 ([row](reproductions.md#doe-et-al-2024-a-paper)) | digits=20 | "
          "100 (median) | 92 | 92 [41, 95] | 2/3 | AVX2 | **reproduces** |"));
  CHECK_THAT(filled, Contains("| Doe et al. 2024: Fig 2"));
  CHECK(filled.find("stale text") == std::string::npos);
  CHECK(filled.rfind("\n\nProse.\n") == filled.size() - 9);
  CHECK(fill_claim_rows(filled, page, "results.md") == filled);
  CHECK(fill_claim_rows("no blocks\n", page, "results.md") == "no blocks\n");
  CHECK_THROWS_WITH(
      fill_claim_rows("x\n<!-- claims: three -->\n<!-- /claims -->\n", page, "results.md"),
      Contains("results.md:2: claim 'three' is not in the data's claims.yaml"));
  CHECK_THROWS_WITH(fill_claim_rows("<!-- claims: one -->\n", page, "results.md"),
                    Contains("results.md:1: a claims block without its '<!-- /claims -->'"));
}
