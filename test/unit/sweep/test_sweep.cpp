// Sweep planning (grid x zip + points, names, validation before anything runs) and the
// aggregation statistics (median, quartiles, fraction of seeds above the threshold).
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <tuple>

using namespace lengen;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A sweep of every kind of axis: a grid (a scheme list and seeds), a zip group and an explicit
// point.
std::string ablation_sweep(const std::string& name, const std::string& output_dir) {
  return fmt::format(R"(name: {}
extends: base.yaml
output_dir: {}
set: {{train.steps: 7}}
grid:
  position: [[nope], [{{name: coupling, max_position: 16}}]]
  seed: [0, 1, 2]
zip:
  - {{model.d_model: [16, 32], model.d_ff: [32, 64]}}
points:
  - {{model.layers: 2, seed: 5}}
)",
                     name,
                     output_dir);
}

}  // namespace

TEST_CASE("sweep: grid x zip, then explicit points; names from what varies", "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"), ablation_sweep("abl", dir.str()));
  sweep::Sweep s = sweep::load_sweep(dir.file("s.yaml"));
  REQUIRE(s.points.size() == 2 * 3 * 2 + 1);
  CHECK(s.axes == std::vector<std::string>{
                      "position", "seed", "model.d_model", "model.d_ff", "model.layers"});
  // First axis slowest; zip members move together; names use short keys and scheme names.
  CHECK(s.points[0].name == "position=nope,d_model=16,d_ff=32,seed=0");
  CHECK(s.points[1].name == "position=nope,d_model=32,d_ff=64,seed=0");
  CHECK(s.points[2].config_name == "position=nope,d_model=16,d_ff=32");
  CHECK(s.points[2].seed == 1);
  CHECK(s.points[6].name == "position=coupling,d_model=16,d_ff=32,seed=0");
  CHECK(s.points[12].name == "layers=2,seed=5");
  // Every point lives under the sweep's folder as runs/<config>/<seed>; `set` applies to all.
  CHECK(s.points[3].run_dir ==
        (fs::path(dir.str()) / "abl" / "runs" / "position=nope,d_model=32,d_ff=64" / "1").string());
  CHECK(std::find(s.points[3].overrides.begin(), s.points[3].overrides.end(), "train.steps=7") !=
        s.points[3].overrides.end());

  // The plan: sweep.json and each point's resolved config, before anything runs.
  sweep::write_plan(s);
  auto manifest = nlohmann::json::parse(test::read_text(fs::path(s.dir) / "sweep.json"));
  CHECK(manifest["points"].size() == 13);
  CHECK(manifest["points"][12]["varied"]["model.layers"] == "2");
  const std::string cfg = test::read_text(fs::path(s.points[7].run_dir) / "config.yaml");
  CHECK_THAT(cfg, Contains("d_model: 32") && Contains("steps: 7") && Contains("coupling"));
  for (const auto& p : s.points)
    CHECK(sweep::point_state(p) == sweep::State::kMissing);
}

TEST_CASE("sweep: a point that ran with another config is refused, staged runs included",
          "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  auto plan = [&](int steps) {
    test::write_text(dir.file("s.yaml"),
                     fmt::format("name: re\nbase: base.yaml\noutput_dir: {}\nset: {{train.steps: "
                                 "{}}}\ngrid: {{seed: [0, 1, 2]}}\n",
                                 dir.str(),
                                 steps));
    return sweep::load_sweep(dir.file("s.yaml"));
  };
  sweep::Sweep s = plan(7);
  sweep::write_plan(s);
  // Nothing ran: the plan may change and the configs are rewritten.
  sweep::write_plan(plan(8));
  CHECK_THAT(test::read_text(fs::path(s.points[0].run_dir) / "config.yaml"), Contains("steps: 8"));
  // Point 0 of a plain run (checkpoints), point 1 of a staged run (stages/ only), point 2 with
  // results only: each is refused under another config, naming the sweep file and the point.
  fs::create_directories(fs::path(s.points[0].run_dir) / "checkpoints");
  CHECK_THROWS_WITH(sweep::write_plan(plan(9)),
                    Contains("s.yaml") && Contains("seed=0") && Contains("different config"));
  fs::remove_all(fs::path(s.points[0].run_dir) / "checkpoints");
  fs::create_directories(fs::path(s.points[1].run_dir) / "stages" / "train");
  CHECK_THROWS_WITH(sweep::write_plan(plan(9)), Contains("seed=1"));
  fs::remove_all(fs::path(s.points[1].run_dir) / "stages");
  fs::create_directories(fs::path(s.points[2].run_dir) / "eval");
  test::write_text((fs::path(s.points[2].run_dir) / "eval" / "summary.json").string(), "{}");
  CHECK_THROWS_WITH(sweep::write_plan(plan(9)), Contains("seed=2"));
  // The refusal comes before any file is written (the points before it keep their configs),
  // and check_plan (what `lengen sweep --dry-run` calls) refuses the same plan, writing nothing.
  CHECK_THAT(test::read_text(fs::path(s.points[0].run_dir) / "config.yaml"), Contains("steps: 8"));
  CHECK_THROWS_WITH(sweep::check_plan(plan(9)), Contains("seed=2") && Contains("different config"));
  CHECK_NOTHROW(sweep::check_plan(plan(8)));
  // The same config again is not a change: the finished point stays.
  CHECK_NOTHROW(sweep::write_plan(plan(8)));
  // Nor is an option added since the point ran (its config.yaml lacks it), read at its default;
  // the plan rewrites the file with it. The same option at another value is a change.
  const fs::path cfg0 = fs::path(s.points[0].run_dir) / "config.yaml";
  fs::create_directories(fs::path(s.points[0].run_dir) / "checkpoints");
  std::string old = test::read_text(cfg0);
  REQUIRE(old.find("  softmax_eps: 0\n") != std::string::npos);
  old.erase(old.find("  softmax_eps: 0\n"), std::string("  softmax_eps: 0\n").size());
  test::write_text(cfg0.string(), old);
  CHECK_NOTHROW(sweep::write_plan(plan(8)));
  CHECK_THAT(test::read_text(cfg0), Contains("softmax_eps: 0"));
  // Nor is the same data written in another YAML style: a flow list as a block list here.
  const std::string flow = test::read_text(cfg0);
  const std::smatch digits = [&] {
    std::smatch m;
    REQUIRE(std::regex_search(flow, m, std::regex(R"(\n  train_digits: \[(\d+), (\d+)\]\n)")));
    return m;
  }();
  test::write_text(
      cfg0.string(),
      flow.substr(0, static_cast<size_t>(digits.position(0))) +
          fmt::format("\n  train_digits:\n    - {}\n    - {}\n", digits.str(1), digits.str(2)) +
          digits.suffix().str());
  REQUIRE(test::read_text(cfg0).find("train_digits: [") == std::string::npos);
  CHECK_NOTHROW(sweep::write_plan(plan(8)));
  std::string other = test::read_text(cfg0);
  other.replace(other.find("  softmax_eps: 0\n"),
                std::string("  softmax_eps: 0\n").size(),
                "  softmax_eps: 0.5\n");
  test::write_text(cfg0.string(), other);
  CHECK_THROWS_WITH(sweep::write_plan(plan(8)), Contains("seed=0") && Contains("different config"));
}

TEST_CASE("sweep: labels name an axis's values in point names", "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"),
                   fmt::format(R"(name: lab
extends: base.yaml
output_dir: {}
grid:
  train.optimizer: [{{name: adam, lr: 0.001}}, {{name: adamw, lr: 0.002, weight_decay: 0.1}}]
  seed: [0, 1]
zip:
  - {{model.d_model: [16, 32], model.d_ff: [32, 64]}}
labels:
  train.optimizer: [adam-small, adamw-wd]
  model.d_ff: [narrow, wide]
)",
                               dir.str()));
  sweep::Sweep s = sweep::load_sweep(dir.file("s.yaml"));
  REQUIRE(s.points.size() == 8);
  // The labelled keys take their names; the others keep their values.
  CHECK(s.points[0].name == "optimizer=adam-small,d_model=16,d_ff=narrow,seed=0");
  CHECK(s.points[5].name == "optimizer=adamw-wd,d_model=32,d_ff=wide,seed=0");
  // The label names the point only: the value itself is what the experiment gets.
  sweep::write_plan(s);
  const std::string cfg = test::read_text(fs::path(s.points[5].run_dir) / "config.yaml");
  CHECK_THAT(cfg, Contains("adamw") && Contains("weight_decay: 0.1") && Contains("d_ff: 64"));
  CHECK_THAT(test::read_text(fs::path(s.points[0].run_dir) / "config.yaml"), !Contains("adamw"));

  auto fails = [&](const std::string& labels, const std::string& needle) {
    test::write_text(dir.file("bad.yaml"),
                     "name: bad\nbase: base.yaml\noutput_dir: " + dir.str() +
                         "\ngrid: {seed: [0, 1]}\n" + labels);
    INFO(labels);
    CHECK_THROWS_WITH(sweep::load_sweep(dir.file("bad.yaml")), Contains(needle));
  };
  fails("labels: {seed: [a]}", "one name per value: the axis has 2 values");
  fails("labels: {seed: [a, a]}", "distinct");
  fails("labels: {model.layers: [a, b]}", "'model.layers' is not a key of 'grid:' or 'zip:'");
  fails("labels: {seed: [a]}", "bad.yaml:5:");
}

TEST_CASE("sweep: --only keeps the points with an axis's values, by value or component name",
          "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"), ablation_sweep("only", dir.str()));
  const sweep::Sweep s = sweep::load_sweep(dir.file("s.yaml"));
  auto names = [&](const std::vector<std::string>& only) {
    std::vector<std::string> out;
    for (const auto& p : sweep::select_points(s, only))
      out.push_back(fmt::format("{}:{}", p.index, p.name));
    return out;
  };
  // A scheme list by its component name; one key's values are alternatives; keys all hold;
  // each point keeps its index (the Slurm array task and sweep.json use it).
  CHECK(names({"position=coupling", "seed=0"}) ==
        std::vector<std::string>{"6:position=coupling,d_model=16,d_ff=32,seed=0",
                                 "7:position=coupling,d_model=32,d_ff=64,seed=0"});
  // seed 1 or 5 with d_model 32: both positions of seed 1; the explicit seed-5 point sets no
  // d_model.
  CHECK(names({"seed=1", "seed=5", "model.d_model=32"}) ==
        std::vector<std::string>{"3:position=nope,d_model=32,d_ff=64,seed=1",
                                 "9:position=coupling,d_model=32,d_ff=64,seed=1"});
  CHECK(names({"model.layers=2"}) == std::vector<std::string>{"12:layers=2,seed=5"});
  CHECK(names({"position=[nope]", "model.d_ff=64"}).size() == 3);  // the value as written, too
  // A name given under labels: stands for its value.
  test::write_text(dir.file("l.yaml"),
                   test::read_text(dir.file("s.yaml")) + "labels: {model.d_ff: [narrow, wide]}\n");
  const auto wide =
      sweep::select_points(sweep::load_sweep(dir.file("l.yaml")), {"model.d_ff=wide", "seed=2"});
  REQUIRE(wide.size() == 2);
  CHECK(wide[1].name == "position=coupling,d_model=32,d_ff=wide,seed=2");
  // Errors name the filter and what would have been valid.
  CHECK_THROWS_WITH(sweep::select_points(s, {"seed"}), Contains("expected KEY=VALUE"));
  CHECK_THROWS_WITH(sweep::select_points(s, {"model.heads=2"}),
                    Contains("'model.heads' is not an axis") && Contains("axes: position, seed"));
  CHECK_THROWS_WITH(sweep::select_points(s, {"seed=9"}),
                    Contains("no point") && Contains("its values: 0; 1; 2; 5"));
  CHECK_THROWS_WITH(sweep::select_points(s, {"seed=5", "position=coupling"}),
                    Contains("no point of"));
  // A point that does not set an axis key has its resolved experiment's value there: the grid
  // runs with the base's layers: 1, the explicit point with the base's position [nope].
  CHECK(names({"model.layers=1", "seed=0", "model.d_model=16"}) ==
        std::vector<std::string>{"0:position=nope,d_model=16,d_ff=32,seed=0",
                                 "6:position=coupling,d_model=16,d_ff=32,seed=0"});
  CHECK(names({"seed=5", "position=nope"}) == std::vector<std::string>{"12:layers=2,seed=5"});
  CHECK_THROWS_WITH(sweep::select_points(s, {"model.layers=3"}), Contains("its values: 1; 2"));
}

TEST_CASE("sweep: --set set.KEY and grid.KEY add one key to that map, the base's other keys kept",
          "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"),
                   fmt::format(R"(name: keys
base: base.yaml
output_dir: {}
set: {{train.steps: 7, model.d_ff: 48}}
grid: {{seed: [0]}}
)",
                               dir.str()));
  const sweep::Sweep s = sweep::load_sweep(
      dir.file("s.yaml"), {"set.model.layers=2", "set.model.d_ff=40", "grid.model.heads=[1, 4]"});
  REQUIRE(s.points.size() == 2);
  CHECK(s.axes == std::vector<std::string>{"seed", "model.heads"});
  CHECK(s.points[1].name == "heads=4,seed=0");
  sweep::write_plan(s);
  const YAML::Node cfg = YAML::LoadFile((fs::path(s.points[1].run_dir) / "config.yaml").string());
  // The base's model keys stay; the sweep's own set key is replaced, not duplicated.
  CHECK(cfg["model"]["layers"].as<int>() == 2);
  CHECK(cfg["model"]["heads"].as<int>() == 4);
  CHECK(cfg["model"]["d_model"].as<int>() == 16);
  CHECK(cfg["model"]["d_ff"].as<int>() == 40);
  CHECK(cfg["train"]["steps"].as<int>() == 7);
  CHECK(cfg["train"]["batch_size"].as<int>() == 4);
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("s.yaml"), {"set.model.layers=[1"}),
                    Contains("set.model.layers") && Contains("not valid YAML"));
}

TEST_CASE("sweep: invalid axes are refused before anything runs, naming the sweep file",
          "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  auto fails = [&](const std::string& body, const std::string& needle) {
    test::write_text(dir.file("bad.yaml"),
                     "name: bad\nbase: base.yaml\noutput_dir: " + dir.str() + "\n" + body);
    INFO(body);
    CHECK_THROWS_WITH(sweep::load_sweep(dir.file("bad.yaml")), Contains(needle));
    CHECK(!fs::exists(fs::path(dir.str()) / "bad"));
  };
  fails("grid: {model.layerz: [1, 2]}", "bad.yaml:4:");
  fails("grid: {model.layerz: [1, 2]}", "layerz");
  fails("grid: {model.layers: [1, -3]}", "model.layers must be >= 0");
  fails("grid: {position: [[nope], [fancy_scheme]]}", "unknown position 'fancy_scheme'");
  fails("zip: [{model.d_model: [16, 32], model.d_ff: [32]}]", "equal lengths");
  fails("grid: {seed: [1, 1]}", "two points are the same experiment");
  fails("grid: {seed: []}", "non-empty list");
  fails("grdi: {seed: [1]}", "did you mean 'grid'");
  fails("", "varies nothing");
  test::write_text(dir.file("nobase.yaml"), "name: x\ngrid: {seed: [1]}\n");
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("nobase.yaml")),
                    Contains("exactly one of 'base:' or 'extends:'"));
}

TEST_CASE("sweep: aggregate takes median, quartiles and the fraction above threshold over seeds",
          "[sweep]") {
  test::TempDir dir;
  const fs::path root = dir.path;
  nlohmann::json points = nlohmann::json::array();
  const std::vector<std::vector<double>> acc = {
      {0.2, 1.0}, {0.9, 0.5}, {1.0, 0.0}};  // seed x digits
  for (int seed = 0; seed < 4; ++seed) {
    const std::string rel = "runs/cfg/" + std::to_string(seed);
    points.push_back({{"index", seed},
                      {"name", "cfg,seed=" + std::to_string(seed)},
                      {"config", "cfg"},
                      {"seed", seed},
                      {"varied", {{"seed", std::to_string(seed)}}},
                      {"run_dir", rel}});
    if (seed == 3)
      continue;  // never ran: not aggregated
    nlohmann::json cells = nlohmann::json::array();
    for (int d = 0; d < 2; ++d) {
      cells.push_back({{"digits", d + 1},
                       {"samples", 10},
                       {"correct", static_cast<int>(acc[seed][d] * 10)},
                       {"accuracy", acc[seed][d]},
                       {"ci95", {0.0, 1.0}}});
    }
    fs::create_directories(root / rel / "eval");
    std::ofstream(root / rel / "eval" / "summary.json")
        << nlohmann::json{{"axes", {"digits"}}, {"cells", cells}}.dump();
  }
  std::ofstream(root / "sweep.json") << nlohmann::json{
      {"name", "t"},
      {"axes", {"seed"}},
      {"threshold", 0.9},
      {"points", points}}.dump();
  CHECK(sweep::aggregate(root.string()) == 3);
  const std::string summary = test::read_text(root / "aggregate" / "summary.csv");
  // digits 1: {0.2, 0.9, 1.0} -> median 0.9, q25 0.55, q75 0.95, 2 of 3 seeds >= 0.9.
  CHECK_THAT(summary,
             Contains("cfg,1,3,0.900000,0.550000,0.950000,0.400000,0.666667,0.200000,1.000000"));
  // digits 2: {1.0, 0.5, 0.0} -> median 0.5, 1 of 3.
  CHECK_THAT(summary,
             Contains("cfg,2,3,0.500000,0.250000,0.750000,0.500000,0.333333,0.000000,1.000000"));
  const std::string results = test::read_text(root / "aggregate" / "results.csv");
  CHECK(std::count(results.begin(), results.end(), '\n') == 1 + 3 * 2);
  // A different threshold on the command line.
  sweep::aggregate(root.string(), 0.5);
  CHECK_THAT(test::read_text(root / "aggregate" / "summary.csv"),
             Contains("cfg,2,3,0.500000,0.250000,0.750000,0.500000,0.666667"));
  CHECK_THROWS_WITH(sweep::aggregate((root / "nothing").string()), Contains("no sweep.json"));

  // A second evaluation of some runs (`lengen eval RUN --out long --set ...`) aggregates on its
  // own, into aggregate/evals/long/, leaving the main aggregate as it was.
  CHECK_THROWS_WITH(sweep::aggregate(root.string(), -1, "long"),
                    Contains("no point has evals/long"));
  CHECK_THROWS_WITH(sweep::aggregate(root.string(), -1, "../x"), Contains("not a path"));
  for (int seed = 0; seed < 2; ++seed) {
    const fs::path eval = root / ("runs/cfg/" + std::to_string(seed)) / "evals" / "long" / "eval";
    fs::create_directories(eval);
    const double a = seed == 0 ? 0.3 : 0.7;
    nlohmann::json cells = nlohmann::json::array({{{"digits", 40},
                                                   {"samples", 10},
                                                   {"correct", static_cast<int>(a * 10)},
                                                   {"accuracy", a},
                                                   {"ci95", {0.0, 1.0}}}});
    std::ofstream(eval / "summary.json")
        << nlohmann::json{{"axes", {"digits"}}, {"cells", cells}}.dump();
  }
  const std::string before = test::read_text(root / "aggregate" / "summary.csv");
  CHECK(sweep::aggregate(root.string(), -1, "long") == 2);  // seed 2 has no evals/long: left out
  CHECK(sweep::aggregate_dir(root.string(), "long") ==
        (root / "aggregate" / "evals" / "long").string());
  const std::string longer = test::read_text(root / "aggregate" / "evals" / "long" / "summary.csv");
  // digits 40: {0.3, 0.7} -> median 0.5, no seed at 0.9.
  CHECK_THAT(longer,
             Contains("cfg,40,2,0.500000,0.400000,0.600000,0.200000,0.000000,0.300000,0.700000"));
  CHECK(test::read_text(root / "aggregate" / "summary.csv") == before);

  // An eval stage of a multi-stage run (the model before fine-tuning) aggregates the same way,
  // into aggregate/stages/<name>/.
  CHECK_THROWS_WITH(
      sweep::aggregate(root.string(), -1, "", "control"),
      Contains("no point has stages/control/eval/summary.json") && Contains("stage of kind eval"));
  CHECK_THROWS_WITH(sweep::aggregate(root.string(), -1, "long", "control"), Contains("give one"));
  CHECK_THROWS_WITH(sweep::aggregate(root.string(), -1, "", "a/b"), Contains("not a path"));
  for (int seed = 0; seed < 3; ++seed) {
    const fs::path eval =
        root / ("runs/cfg/" + std::to_string(seed)) / "stages" / "control" / "eval";
    fs::create_directories(eval);
    const double a = 0.1 * seed;
    nlohmann::json cells = nlohmann::json::array({{{"digits", 5},
                                                   {"samples", 10},
                                                   {"correct", seed},
                                                   {"accuracy", a},
                                                   {"ci95", {0.0, 1.0}}}});
    std::ofstream(eval / "summary.json")
        << nlohmann::json{{"axes", {"digits"}}, {"cells", cells}}.dump();
  }
  CHECK(sweep::aggregate(root.string(), -1, "", "control") == 3);
  CHECK(sweep::aggregate_dir(root.string(), "", "control") ==
        (root / "aggregate" / "stages" / "control").string());
  CHECK(sweep::aggregate_dir(root.string()) == (root / "aggregate").string());
  // digits 5: {0, 0.1, 0.2} -> median 0.1.
  CHECK_THAT(test::read_text(root / "aggregate" / "stages" / "control" / "summary.csv"),
             Contains("cfg,5,3,0.100000,0.050000,0.150000,0.100000,0.000000,0.000000,0.200000"));
  CHECK(test::read_text(root / "aggregate" / "summary.csv") == before);
}

TEST_CASE("compare: finished runs of one name are seeds of one configuration", "[sweep]") {
  test::TempDir dir;
  const fs::path root = dir.path;
  // name, seed, accuracy at digits 1 and 2
  const std::vector<std::tuple<std::string, int, double, double>> runs = {{"coupled", 0, 1.0, 0.2},
                                                                          {"coupled", 1, 0.8, 0.6},
                                                                          {"coupled", 2, 0.9, 1.0},
                                                                          {"nope", 0, 0.3, 0.0}};
  std::vector<std::string> dirs;
  for (const auto& [name, seed, a1, a2] : runs) {
    const fs::path run = root / "runs" / name / std::to_string(seed);
    fs::create_directories(run / "eval");
    std::ofstream(run / "config.yaml") << "name: " << name << "\nseed: " << seed << "\n";
    nlohmann::json cells = nlohmann::json::array();
    int d = 1;
    for (double a : {a1, a2}) {
      cells.push_back({{"digits", d++},
                       {"samples", 10},
                       {"correct", static_cast<int>(a * 10)},
                       {"accuracy", a},
                       {"ci95", {0.0, 1.0}}});
    }
    std::ofstream(run / "eval" / "summary.json") << nlohmann::json{
        {"axes", {"digits"}},
        {"cells", cells},
        {"trained", {{"digits", {1, 1}}}}}.dump();
    dirs.push_back(run.string());
  }
  const std::string out = (root / "cmp").string();
  CHECK(sweep::compare_runs(dirs, out) == 4);
  const std::string summary = test::read_text(root / "cmp" / "aggregate" / "summary.csv");
  // coupled, digits 1: {1.0, 0.8, 0.9} -> median 0.9, 2 of 3 seeds >= 0.9; digits 2: median 0.6.
  CHECK_THAT(summary, Contains("coupled,coupled,1,3,0.900000"));
  CHECK_THAT(summary, Contains("coupled,coupled,2,3,0.600000"));
  CHECK_THAT(summary, Contains("nope,nope,1,1,0.300000"));
  const auto meta =
      nlohmann::json::parse(test::read_text(root / "cmp" / "aggregate" / "aggregate.json"));
  CHECK(meta["configs"] == nlohmann::json({"coupled", "nope"}));
  CHECK(meta["trained"]["digits"] == nlohmann::json({1, 1}));

  // Errors name the run.
  CHECK_THROWS_WITH(sweep::compare_runs({dirs[0], dirs[0]}, out),
                    Contains("a second run of 'coupled' with seed 0"));
  CHECK_THROWS_WITH(sweep::compare_runs({(root / "runs").string()}, out),
                    Contains("no config.yaml"));
  fs::remove(fs::path(dirs[3]) / "eval" / "summary.json");
  CHECK_THROWS_WITH(sweep::compare_runs({dirs[0], dirs[3]}, out),
                    Contains("has not been evaluated"));
  std::ofstream(fs::path(dirs[3]) / "eval" / "summary.json")
      << R"({"axes": ["bits"], "cells": []})";
  CHECK_THROWS_WITH(sweep::compare_runs({dirs[0], dirs[3]}, out),
                    Contains("compare runs of one grid"));
}

TEST_CASE("sweep: several small points share one GPU (executor.points_per_gpu)", "[sweep]") {
  // Worker slots: -j wins; a file asking for several workers keeps them; with GPUs and one
  // worker in the file, GPUs x points_per_gpu; without GPUs, the file's workers.
  CHECK(sweep::local_workers(3, 1, 2, 4) == 3);
  CHECK(sweep::local_workers(0, 2, 4, 3) == 2);
  CHECK(sweep::local_workers(0, 1, 2, 1) == 2);
  CHECK(sweep::local_workers(0, 1, 2, 3) == 6);
  CHECK(sweep::local_workers(0, 1, 0, 3) == 1);
  // Slots round-robin over the GPUs: 2 GPUs x 3 points each.
  const std::vector<std::string> gpus{"0", "1"};
  std::map<std::string, int> per_gpu;
  for (size_t slot = 0; slot < 6; ++slot)
    ++per_gpu[sweep::gpu_for_slot(slot, gpus)];
  CHECK(per_gpu == std::map<std::string, int>{{"0", 3}, {"1", 3}});
  CHECK(sweep::gpu_for_slot(0, gpus) == "0");
  CHECK(sweep::gpu_for_slot(1, gpus) == "1");  // the first points spread over the GPUs
  CHECK(sweep::gpu_for_slot(5, {}).empty());
  // The file's key, and its refusal.
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"),
                   "name: s\nbase: base.yaml\noutput_dir: " + dir.str() +
                       "\ngrid: {seed: [0, 1]}\nexecutor: {points_per_gpu: 4}\n");
  CHECK(sweep::load_sweep(dir.file("s.yaml")).points_per_gpu == 4);
  CHECK(sweep::load_sweep(dir.file("s.yaml")).workers == 1);
  test::write_text(dir.file("bad.yaml"),
                   "name: s\nbase: base.yaml\noutput_dir: " + dir.str() +
                       "\ngrid: {seed: [0, 1]}\nexecutor: {points_per_gpu: 0}\n");
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("bad.yaml")),
                    Contains("bad.yaml:5") && Contains("points_per_gpu must be >= 1"));
}

TEST_CASE("sweep: the ETA counts what running points have left and shares the rest over workers",
          "[sweep]") {
  // Two workers start two 100 s points together, 4 more wait. When the first finishes, the
  // other has run 100 s too: 4 points x 100 s / 2 workers = 200 s, not 4 x 100 s (the
  // wall-clock-per-finished estimate, which ignored the point already done in parallel).
  CHECK(sweep::sweep_eta_seconds(100.0, {100.0}, 4, 2) == Approx(200.0));
  // A running point that has used 30 s of the mean has 70 s left.
  CHECK(sweep::sweep_eta_seconds(100.0, {30.0}, 1, 2) == Approx(85.0));
  // A running point slower than the mean is counted as about to finish, never negative.
  CHECK(sweep::sweep_eta_seconds(100.0, {250.0}, 0, 2) == Approx(0.0));
  // One worker: the points run one after another.
  CHECK(sweep::sweep_eta_seconds(60.0, {}, 3, 1) == Approx(180.0));
  // Nothing left.
  CHECK(sweep::sweep_eta_seconds(60.0, {}, 0, 4) == Approx(0.0));
}

TEST_CASE("shipped experiments and sweeps load, and every model builds", "[sweep][shipped]") {
  // Every YAML under experiments/ is what a researcher runs first: an unknown key, a bad value
  // or a model whose shape does not add up must fail here, not an hour into a GPU job.
  const fs::path root = fs::path(LENGEN_SOURCE_DIR) / "experiments";
  int64_t experiments = 0, sweeps = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".yaml") {
      continue;
    }
    INFO(e.path().string());
    // A sweep is a file with a `base:` experiment (in experiments/sweeps/ or beside its base).
    if (e.path().parent_path().filename() == "sweeps" ||
        YAML::LoadFile(e.path().string())["base"]) {
      sweep::Sweep s = sweep::load_sweep(e.path().string());
      CHECK(!s.points.empty());
      ++sweeps;
    } else {
      Experiment exp = Experiment::load(e.path().string());
      CHECK(exp.build_model(torch::kCPU)->parameter_count() > 0);
      ++experiments;
    }
  }
  CHECK(experiments >= 10);
  CHECK(sweeps >= 4);
}

TEST_CASE(
    "sweep: a grid that multiplies out beyond 100,000 points is refused before it is expanded",
    "[sweep]") {
  // Found by the sweep loader's fuzz target (30-minute campaign): a grid of many three-value axes
  // took longer than 10 s to plan.
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  std::string grid = "name: big\nbase: base.yaml\ngrid:\n";
  for (int i = 0; i < 12; ++i)
    grid += "  task.x" + std::to_string(i) + ": [1, 2, 3]\n";
  test::write_text(dir.file("big.yaml"), grid);
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("big.yaml")),
                    Contains("big.yaml") && Contains("more than 100000 points (12 axes)"));
}

TEST_CASE("sweep: the point cap counts grid and listed points together", "[sweep]") {
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("s.yaml"),
                   "name: s\nbase: base.yaml\ngrid: {seed: [0, 1, 2]}\n"
                   "points:\n  - {seed: 7}\n  - {seed: 8}\n");
  CHECK(sweep::load_sweep(dir.file("s.yaml"), {}, 5).points.size() == 5);
  CHECK_THROWS_WITH(
      sweep::load_sweep(dir.file("s.yaml"), {}, 4),
      Contains("s.yaml") && Contains("more than 4 points (3 from the grid, 2 listed)"));
  CHECK_THROWS_WITH(sweep::load_sweep(dir.file("s.yaml"), {}, 2),
                    Contains("more than 2 points (1 axes)"));
}
