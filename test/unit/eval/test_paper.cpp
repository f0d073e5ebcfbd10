// A paper's reference figures (`paper:` in experiment and sweep files): parsing and its errors,
// rows resolved to sweep configurations, and the comparison aggregate writes beside lengen's
// median over seeds.
#include "helpers.h"

#include "lengen/core/version.h"
#include "lengen/eval/paper.h"
#include "lengen/experiment/experiment.h"
#include "lengen/experiment/threads.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

using namespace lengen;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE(
    "paper: an experiment's values per grid cell, in percent or fraction; errors name the key",
    "[paper]") {
  test::TempDir dir;
  test::write_text(dir.file("e.yaml"), std::string(test::kTinyAddition) + R"(paper:
  cite: "Cho et al. 2024"
  table: Figure 1
  note: read off the figure
  values: {1: 100, 3: 99.5, 4: ~, 20: 12.5}
)");
  Experiment e = Experiment::load(dir.file("e.yaml"));
  REQUIRE(e.paper.rows.size() == 1);
  CHECK(e.paper.cite == "Cho et al. 2024");
  CHECK(e.paper.table == "Figure 1");
  const auto& v = e.paper.rows[0].values;
  REQUIRE(v.size() == 3);  // ~: not reported
  CHECK(v[0] == std::make_pair(std::string("1"), 1.0));
  CHECK(v[1].first == "3");
  CHECK(v[1].second == Approx(0.995));
  CHECK(v[2].first == "20");  // beyond the grid: kept, shown without lengen's figure
  // The resolved config keeps the block, and reloading it gives the same reference.
  test::write_text(dir.file("resolved.yaml"), e.resolved_yaml());
  Experiment again = Experiment::load(dir.file("resolved.yaml"));
  CHECK(again.paper.to_json() == e.paper.to_json());

  auto fails = [&](const std::string& paper, const std::string& needle) {
    test::write_text(dir.file("bad.yaml"), std::string(test::kTinyAddition) + "paper:\n" + paper);
    INFO(paper);
    CHECK_THROWS_WITH(Experiment::load(dir.file("bad.yaml")), Contains(needle));
  };
  fails("  cite: x\n  table: y\n  values: {\"3,2\": 50}\n", "expected a digits value");
  fails("  cite: x\n  table: y\n  values: {3: 150}\n", "outside [0, 100] (unit: percent)");
  fails("  cite: x\n  table: y\n  unit: fraction\n  values: {3: 50}\n",
        "outside [0, 1] (unit: fraction)");
  fails("  cite: x\n  table: y\n  values: {three: 50}\n", "bad.yaml:11:");
  fails("  table: y\n  values: {3: 50}\n", "cite");
  fails("  cite: x\n  table: y\n  values: {}\n", "a map of grid cell -> accuracy");
  fails("  cite: x\n  table: y\n  rows: [{values: {3: 50}}]\n", "unknown key 'rows'");
  fails("  cite: x\n  table: y\n  values: {3: 50}\n  tabel: z\n", "did you mean 'table'");
  fails("  cite: x\n  table: y\n  values: {3: 50, 03: 40}\n", "given twice");
}

TEST_CASE("paper: a sweep's rows stand beside the configurations their where: matches", "[paper]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  const std::string head = fmt::format(R"(name: s
base: base.yaml
output_dir: {}
grid:
  position: [[nope], [{{name: coupling, max_position: 16}}]]
  model.layers: [1, 2]
  seed: [0, 1]
)",
                                       dir.str());
  test::write_text(dir.file("s.yaml"), head + R"(paper:
  cite: P
  table: T
  rows:
    - {label: coupled deep, where: {position: coupling, model.layers: 2}, values: {4: 90}}
    - {label: nope, where: {position: [nope]}, values: {4: 0}}
)");
  sweep::Sweep s = sweep::load_sweep(dir.file("s.yaml"));
  REQUIRE(s.paper.rows.size() == 2);
  CHECK(s.paper.rows[0].configs == std::vector<std::string>{"position=coupling,layers=2"});
  CHECK(s.paper.rows[1].configs ==
        std::vector<std::string>{"position=nope,layers=1", "position=nope,layers=2"});
  sweep::write_plan(s);
  const auto manifest = nlohmann::json::parse(test::read_text(fs::path(s.dir) / "sweep.json"));
  CHECK(PaperReference::from_json(manifest["paper"]).to_json() == s.paper.to_json());

  auto fails = [&](const std::string& rows, const std::string& needle) {
    test::write_text(dir.file("bad.yaml"),
                     head + "paper:\n  cite: P\n  table: T\n  rows:\n" + rows);
    INFO(rows);
    CHECK_THROWS_WITH(sweep::load_sweep(dir.file("bad.yaml")), Contains(needle));
  };
  fails("    - {label: a, where: {position: rope}, values: {4: 1}}\n", "matches no configuration");
  fails("    - {label: a, where: {model.heads: 2}, values: {4: 1}}\n", "not an axis of this sweep");
  fails(
      "    - {label: a, where: {position: nope}, values: {4: 1}}\n    - {label: b, where: "
      "{model.layers: 1}, "
      "values: {4: 1}}\n",
      "matches two paper rows: 'a' and 'b'");

  // A row may stand beside an eval stage's figures instead of the run's own: the stage must
  // exist and evaluate in every point the row matches, and it does not count as a second row of
  // the configuration.
  fails("    - {label: a, stage: control, where: {position: nope}, values: {4: 1}}\n",
        "has no evaluating stage 'control'");
  test::write_text(dir.file("staged.yaml"),
                   std::string(test::kTinyAddition) +
                       "stages:\n  - {name: base}\n  - {name: control, kind: eval}\n");
  std::string staged_head = head;
  staged_head.replace(staged_head.find("base.yaml"), 9, "staged.yaml");
  test::write_text(dir.file("st.yaml"), staged_head + R"(paper:
  cite: P
  table: T
  rows:
    - {label: nope, where: {position: nope}, values: {4: 0}}
    - {label: nope before, stage: control, where: {position: nope}, values: {4: 10}}
)");
  sweep::Sweep st = sweep::load_sweep(dir.file("st.yaml"));
  REQUIRE(st.paper.rows.size() == 2);
  CHECK(st.paper.rows[1].stage == "control");
  CHECK(st.paper.rows[1].configs == st.paper.rows[0].configs);
  CHECK(PaperReference::from_json(st.paper.to_json()).rows[1].stage == "control");
  CHECK(st.paper.of_stage("control").rows.size() == 1);
  CHECK(st.paper.of_stage("").rows[0].label == "nope");
  test::write_text(dir.file("st2.yaml"), staged_head + R"(paper:
  cite: P
  table: T
  rows:
    - {label: a, stage: base, where: {position: nope}, values: {4: 0}}
)");
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("st2.yaml")),
                    Contains("no evaluating stage 'base'"));

  // A `labels:` name stands for its value, as in --only; a name of another axis does not.
  const std::string labelled = head + "labels:\n  position: [none, coupled]\n";
  test::write_text(dir.file("l.yaml"), labelled + R"(paper:
  cite: P
  table: T
  rows:
    - {label: coupled, where: {position: coupled, model.layers: 1}, values: {4: 90}}
)");
  sweep::Sweep ls = sweep::load_sweep(dir.file("l.yaml"));
  CHECK(ls.paper.rows[0].configs == std::vector<std::string>{"position=coupled,layers=1"});
  test::write_text(dir.file("l2.yaml"),
                   labelled +
                       "paper:\n  cite: P\n  table: T\n  rows:\n"
                       "    - {label: a, where: {model.layers: coupled}, values: {4: 1}}\n");
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("l2.yaml")), Contains("matches no configuration"));

  // A key an explicit point sets and the grid does not: the grid's points match by the value
  // their resolved experiment has there (layers: 1 from the base), so the two rows split them.
  test::write_text(dir.file("x.yaml"),
                   fmt::format(R"(name: x
base: base.yaml
output_dir: {}
grid:
  position: [[nope], [{{name: coupling, max_position: 16}}]]
  seed: [0, 1]
points:
  - {{position: [nope], model.layers: 2, seed: 0}}
paper:
  cite: P
  table: T
  rows:
    - {{label: shallow, where: {{position: nope, model.layers: 1}}, values: {{4: 10}}}}
    - {{label: deep, where: {{position: nope, model.layers: 2}}, values: {{4: 20}}}}
)",
                               dir.str()));
  sweep::Sweep xs = sweep::load_sweep(dir.file("x.yaml"));
  REQUIRE(xs.paper.rows.size() == 2);
  CHECK(xs.paper.rows[0].configs == std::vector<std::string>{"position=nope"});
  CHECK(xs.paper.rows[1].configs == std::vector<std::string>{"position=nope,layers=2"});
  std::string both = test::read_text(dir.file("x.yaml"));
  both.replace(both.find("position: nope, model.layers: 1"), 31, "position: nope");
  test::write_text(dir.file("x2.yaml"), both);
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("x2.yaml")),
                    Contains("matches two paper rows: 'shallow' and 'deep'"));

  // The base experiment's values describe the base's configuration: a sweep that varies more
  // than the seed prints them only when it opts in with `paper: inherit` (then beside every
  // configuration); a sweep over seeds alone takes them as they are.
  test::write_text(
      dir.file("base.yaml"),
      std::string(test::kTinyAddition) + "paper: {cite: P, table: T, values: {4: 50}}\n");
  test::write_text(dir.file("s2.yaml"), head);
  CHECK(sweep::load_sweep(dir.file("s2.yaml")).paper.empty());
  test::write_text(dir.file("s3.yaml"), head + "paper: inherit\n");
  sweep::Sweep s3 = sweep::load_sweep(dir.file("s3.yaml"));
  REQUIRE(s3.paper.rows.size() == 1);
  CHECK(s3.paper.rows[0].configs.empty());
  test::write_text(
      dir.file("s4.yaml"),
      fmt::format("name: s4\nbase: base.yaml\noutput_dir: {}\ngrid:\n  seed: [0, 1, 2]\n",
                  dir.str()));
  sweep::Sweep s4 = sweep::load_sweep(dir.file("s4.yaml"));
  REQUIRE(s4.paper.rows.size() == 1);
  CHECK(s4.paper.rows[0].values == std::vector<std::pair<std::string, double>>{{"4", 0.5}});
}

TEST_CASE(
    "paper: aggregate writes lengen's median over seeds beside the paper, with the difference",
    "[paper]") {
  test::TempDir dir;
  const fs::path root = dir.path;
  // Two configurations x 3 seeds, digits 1-2. Row A stands beside "a" only; its 5-digit
  // figure was not evaluated.
  const std::map<std::string, std::vector<std::vector<double>>> acc = {
      {"a", {{1.0, 0.2}, {1.0, 0.9}, {0.8, 0.5}}}, {"b", {{0.1, 0.0}, {0.3, 0.0}, {0.2, 0.1}}}};
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [config, seeds] : acc) {
    for (int seed = 0; seed < 3; ++seed) {
      const std::string rel = "runs/" + config + "/" + std::to_string(seed);
      points.push_back({{"index", points.size()},
                        {"name", config + ",seed=" + std::to_string(seed)},
                        {"config", config},
                        {"seed", seed},
                        {"varied", {{"seed", std::to_string(seed)}}},
                        {"run_dir", rel}});
      nlohmann::json cells = nlohmann::json::array();
      for (int d = 0; d < 2; ++d) {
        cells.push_back({{"digits", d + 1},
                         {"samples", 10},
                         {"correct", 0},
                         {"accuracy", seeds[seed][d]},
                         {"ci95", {0.0, 1.0}}});
      }
      fs::create_directories(root / rel / "eval");
      std::ofstream(root / rel / "eval" / "summary.json")
          << nlohmann::json{{"axes", {"digits"}}, {"cells", cells}}.dump();
    }
  }
  PaperReference paper;
  paper.cite = "P";
  paper.table = "Table 1";
  paper.rows.push_back({"A", {}, {{"2", 0.75}, {"5", 1.0}}, {"a"}, ""});
  // The sweep's manifest with these points and `reference` as its paper: block.
  auto write_manifest = [&](const PaperReference& reference) {
    std::ofstream(root / "sweep.json") << nlohmann::json{
        {"name", "t"},
        {"axes", {"seed"}},
        {"threshold", 0.9},
        {"points", points},
        {"paper", reference.to_json()}}.dump();
  };
  write_manifest(paper);
  CHECK(sweep::aggregate(root.string()) == 6);
  const auto lines = lines_of(test::read_text(root / "aggregate" / "paper.csv"));
  REQUIRE(lines.size() == 6);  // "b", which no row stands beside, last with lengen's figures only
  CHECK(lines[4] == "b,,1,,3,20.00,15.00,25.00,10.00,30.00,,median,20.00,");
  CHECK(lines[5] == "b,,2,,3,0.00,0.00,5.00,0.00,10.00,,median,0.00,");
  CHECK(lines[0] ==
        "config,label,digits,paper,seeds,median,q25,q75,min,max,difference,statistic,lengen,lengen_"
        "difference");
  // digits 1 of "a": {1.0, 1.0, 0.8}, no paper figure; digits 2: {0.2, 0.9, 0.5} -> median 50
  // against the paper's 75: -25. The paper's 5 digits: not evaluated.
  CHECK(lines[1] == "a,A,1,,3,100.00,90.00,100.00,80.00,100.00,,median,100.00,");
  CHECK(lines[2] == "a,A,2,75.00,3,50.00,35.00,70.00,20.00,90.00,-25.00,median,50.00,-25.00");
  CHECK(lines[3] == "a,A,5,100.00,0,,,,,,,median,,");

  // A row of an eval stage is left out of the run's own comparison and is the only row of
  // `aggregate --stage`'s.
  for (int seed = 0; seed < 3; ++seed) {
    const fs::path eval = root / ("runs/a/" + std::to_string(seed)) / "stages" / "control" / "eval";
    fs::create_directories(eval);
    nlohmann::json cells = nlohmann::json::array({{{"digits", 2},
                                                   {"samples", 10},
                                                   {"correct", 0},
                                                   {"accuracy", 0.1 * seed},
                                                   {"ci95", {0.0, 1.0}}}});
    std::ofstream(eval / "summary.json")
        << nlohmann::json{{"axes", {"digits"}}, {"cells", cells}}.dump();
  }
  PaperReference staged = paper;
  PaperRow before{"A before", {}, {{"2", 0.3}}, {"a"}, "control"};
  staged.rows.push_back(before);
  write_manifest(staged);
  CHECK(sweep::aggregate(root.string()) == 6);
  CHECK(lines_of(test::read_text(root / "aggregate" / "paper.csv")) == lines);
  CHECK(sweep::aggregate(root.string(), -1, "", "control") == 3);
  const auto stage_lines =
      lines_of(test::read_text(root / "aggregate" / "stages" / "control" / "paper.csv"));
  REQUIRE(stage_lines.size() == 2);
  // {0, 0.1, 0.2} -> median 10 against the paper's 30.
  CHECK(stage_lines[1] ==
        "a,A before,2,30.00,3,10.00,5.00,15.00,0.00,20.00,-20.00,median,10.00,-20.00");

  // A paper that reports means is compared in means: lengen's mean over seeds beside its
  // median, and the difference taken between the means. Digits 2 of "a": {0.2, 0.9, 0.5},
  // mean 53.33 against the paper's 75.
  PaperReference means = paper;
  means.statistic = "mean";
  CHECK(PaperReference::from_json(means.to_json()).statistic == "mean");
  write_manifest(means);
  CHECK(sweep::aggregate(root.string()) == 6);
  const auto mean_lines = lines_of(test::read_text(root / "aggregate" / "paper.csv"));
  CHECK(mean_lines[2] == "a,A,2,75.00,3,50.00,35.00,70.00,20.00,90.00,-25.00,mean,53.33,-21.67");
  CHECK(statistic_of({0.2, 0.9, 0.5}, "best") == 0.9);

  // compare_with_paper directly: a row without configurations stands beside every one.
  paper.rows[0].configs.clear();
  std::vector<ConfigFigures> figures{{"a", {{"2", {0.2, 0.9, 0.5}}}},
                                     {"b", {{"2", {0.0, 0.0, 0.1}}}}};
  const auto cells = compare_with_paper(paper, figures, {"2"});
  REQUIRE(cells.size() == 4);
  CHECK(cells[2].config == "b");
  CHECK(cells[2].median == Approx(0.0));
  CHECK(cells[2].paper == Approx(0.75));
  CHECK(std::isnan(cells[3].median));
  CHECK(quantile({0.0, 1.0}, 0.25) == Approx(0.25));
}

TEST_CASE("paper: compare puts each run's paper: block beside the median of its seeds", "[paper]") {
  test::TempDir dir;
  const fs::path root = dir.path;
  std::vector<std::string> dirs;
  // Three seeds of "coupled" (with the paper's 80% at 2 digits), one run of "nope" without a block.
  const std::vector<std::tuple<std::string, int, double>> runs = {
      {"coupled", 0, 0.5}, {"coupled", 1, 0.9}, {"coupled", 2, 1.0}, {"nope", 0, 0.1}};
  for (const auto& [name, seed, acc] : runs) {
    const fs::path run = root / name / std::to_string(seed);
    fs::create_directories(run / "eval");
    std::ofstream(run / "config.yaml")
        << "name: " << name << "\nseed: " << seed << "\n"
        << (name == "coupled" ? "paper: {cite: P, table: T, values: {2: 80}}\n" : "");
    std::ofstream(run / "eval" / "summary.json") << nlohmann::json{
        {"axes", {"digits"}},
        {"cells",
         {{{"digits", 2},
           {"samples", 10},
           {"correct", 0},
           {"accuracy", acc},
           {"ci95", {0.0, 1.0}}}}}}.dump();
    dirs.push_back(run.string());
  }
  CHECK(sweep::compare_runs(dirs, (root / "cmp").string()) == 4);
  const auto lines = lines_of(test::read_text(root / "cmp" / "aggregate" / "paper.csv"));
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] ==
        "coupled,coupled,2,80.00,3,90.00,70.00,95.00,50.00,100.00,10.00,median,90.00,10.00");
  CHECK(lines[2] == "nope,,2,,1,10.00,10.00,10.00,10.00,10.00,,median,10.00,");
}

TEST_CASE("provenance: a resolved config records the machine its figures depend on", "[paper]") {
  const MachineInfo m = machine_info();
  CHECK_FALSE(m.cpu.empty());             // /proc/cpuinfo's processor
  CHECK_FALSE(m.cpu_capability.empty());  // ATen's kernel dispatch: DEFAULT, AVX2, AVX512...
  test::TempDir dir;
  test::write_text(dir.file("e.yaml"), test::kTinyAddition);
  const std::string yaml = Experiment::load(dir.file("e.yaml")).resolved_yaml();
  CHECK_THAT(yaml, Contains("machine:") && Contains("cpu_capability: " + m.cpu_capability));
}

TEST_CASE(
    "provenance: a resolved config records the source commit, the threads used and the kernel set",
    "[paper]") {
  const SourceInfo source = source_info();
  CHECK(source.version == kVersion);
  // This test binary lives in the build folder of a checkout (CI clones one), so git answers.
  if (source.commit.empty()) {
    WARN("no git checkout around the test binary: provenance records the version alone");
  } else {
    CHECK(source.commit.size() == 40);
    CHECK(source.commit.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  const int64_t threads = configure_threads(1);
  test::TempDir dir;
  test::write_text(dir.file("e.yaml"), test::kTinyAddition);
  const std::string yaml = Experiment::load(dir.file("e.yaml")).resolved_yaml();
  CHECK_THAT(yaml, Contains(fmt::format("threads_used: {}", threads)));
  CHECK_THAT(yaml,
             Contains("commit: " + source.commit) &&
                 Contains(source.dirty ? "dirty: true" : "dirty: false"));
  const MachineInfo m = machine_info();
  if (m.blas.rfind("OpenBLAS", 0) == 0)
    CHECK_FALSE(m.kernel_set.empty());
  CHECK_THAT(yaml, Contains("kernel_set:"));
}

TEST_CASE("provenance: OpenBLAS runs AVX2-class kernels on a processor that has AVX2", "[paper]") {
  // Debian 12's OpenBLAS gives an unknown processor model its SSE3 (Prescott) kernels, at half
  // the speed; the test runner, like the CLI, re-executes itself with OPENBLAS_CORETYPE then.
  const MachineInfo m = machine_info();
  const char* user_choice = std::getenv("OPENBLAS_CORETYPE");
  const char* auto_off = std::getenv("LENGEN_BLAS_AUTO");
  const bool chosen_by_user =
      user_choice != nullptr && std::getenv("LENGEN_BLAS_FALLBACK") == nullptr;
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (m.blas.rfind("OpenBLAS", 0) != 0 || !avx2 || chosen_by_user ||
      (auto_off && std::string(auto_off) == "0")) {
    WARN("not applicable here: " << (m.blas.empty() ? "no OpenBLAS" : m.blas));
    return;
  }
  const bool wide = m.blas.find(" Haswell") != std::string::npos ||
                    m.blas.find(" Zen") != std::string::npos ||
                    m.blas.find(" SkylakeX") != std::string::npos ||
                    m.blas.find(" Cooperlake") != std::string::npos ||
                    m.blas.find(" SapphireRapids") != std::string::npos;
  INFO(m.blas);
  CHECK(wide);
}
