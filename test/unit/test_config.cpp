// Config: errors name file, line, key and the nearest valid alternative; overrides apply.
#include "helpers.h"
#include "lengen/experiment/experiment.h"

using namespace lengen;
using Catch::Contains;

namespace {

const char* kGood = R"(name: cfg-test
seed: 3
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position:
  - {name: coupling, max_position: 20}
train:
  steps: 10
  batch_size: 4
  optimizer: {name: adam, lr: 0.001}
eval: {samples: 5}
)";

std::string with_line(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("config: a valid experiment loads", "[config]") {
  test::TempDir dir;
  test::write_text(dir.file("exp.yaml"), kGood);
  Experiment e = Experiment::load(dir.file("exp.yaml"));
  CHECK(e.name == "cfg-test");
  CHECK(e.seed == 3);
  CHECK(e.model.d_model == 16);
  CHECK(e.train.steps == 10);
  CHECK(e.eval.cells().size() == 4);
  // The resolved config round-trips through the loader.
  test::write_text(dir.file("resolved.yaml"), e.resolved_yaml());
  Experiment again = Experiment::load(dir.file("resolved.yaml"));
  auto body = [](const std::string& y) { return y.substr(0, y.find("provenance:")); };
  CHECK(body(again.resolved_yaml()) == body(e.resolved_yaml()));
  CHECK(e.resolved_yaml().find("liblengen-position-coupling.so") != std::string::npos);
}

TEST_CASE("config: model.bias sets both bias kinds; the specific keys win", "[config]") {
  test::TempDir dir;
  test::write_text(dir.file("exp.yaml"), kGood);
  auto load = [&](const std::string& set) {
    return Experiment::load(dir.file("exp.yaml"), {"model." + set}).model;
  };
  CHECK(!load("d_ff=32").attention_bias);
  CHECK(!load("d_ff=32").ff_bias);
  CHECK(load("bias=true").attention_bias);
  CHECK(load("bias=true").ff_bias);
  auto only_ff = Experiment::load(dir.file("exp.yaml"), {"model.bias=true", "model.attention_bias=false"}).model;
  CHECK(!only_ff.attention_bias);
  CHECK(only_ff.ff_bias);
  CHECK(load("layers=0").layers == 0);
  CHECK(load("norm=taotp_layernorm").norm == "taotp_layernorm");
  CHECK_THROWS_WITH(load("layers=-1"), Contains("model.layers must be >= 0"));
}

TEST_CASE("config: errors name file, line and key", "[config]") {
  test::TempDir dir;
  auto load = [&](const std::string& text) {
    test::write_text(dir.file("exp.yaml"), text);
    return Experiment::load(dir.file("exp.yaml"));
  };
  SECTION("unknown key with a suggestion") {
    CHECK_THROWS_WITH(load(with_line(kGood, "steps: 10", "stpes: 10")),
                      Contains("exp.yaml:8:3") && Contains("unknown key 'stpes'") &&
                          Contains("did you mean 'steps'"));
  }
  SECTION("unknown top-level key") {
    CHECK_THROWS_WITH(load(std::string(kGood) + "modle: {}\n"),
                      Contains("exp.yaml:12:1") && Contains("did you mean 'model'"));
  }
  SECTION("wrong type") {
    CHECK_THROWS_WITH(load(with_line(kGood, "batch_size: 4", "batch_size: four")),
                      Contains("exp.yaml:9:15") && Contains("train.batch_size") &&
                          Contains("expected an integer, got 'four'"));
  }
  SECTION("impossible value") {
    CHECK_THROWS_WITH(load(with_line(kGood, "steps: 10", "steps: 0")),
                      Contains("train.steps must be >= 1"));
    CHECK_THROWS_WITH(load(with_line(kGood, "heads: 2", "heads: 3")),
                      Contains("not divisible by heads 3"));
  }
  SECTION("unknown plugin with a suggestion") {
    CHECK_THROWS_WITH(load(with_line(kGood, "name: coupling", "name: coupeling")),
                      Contains("exp.yaml:6:5") && Contains("unknown position 'coupeling'") &&
                          Contains("did you mean 'coupling'"));
    CHECK_THROWS_WITH(load(with_line(kGood, "name: addition", "name: additon")),
                      Contains("unknown task 'additon'") && Contains("did you mean 'addition'"));
  }
  SECTION("unknown plugin option") {
    CHECK_THROWS_WITH(load(with_line(kGood, "max_position: 20", "max_postion: 20")),
                      Contains("exp.yaml:6:22") && Contains("did you mean 'max_position'"));
  }
  SECTION("choice typo") {
    CHECK_THROWS_WITH(load(with_line(kGood, "d_ff: 32", "d_ff: 32, norm: rmsnrom")),
                      Contains("model.norm") && Contains("did you mean 'rmsnorm'"));
  }
  SECTION("an evaluation length the scheme cannot represent fails before training") {
    CHECK_THROWS_WITH(load(with_line(kGood, "eval: {samples: 5}",
                                     "eval: {samples: 5, grid: {digits: [1, 30]}}")),
                      Contains("exp.yaml:6:5, key 'position[0]'") && Contains("digits=19") &&
                          Contains("max_position is 20"));
  }
  SECTION("malformed YAML") {
    CHECK_THROWS_WITH(load("name: x\ntask: {name: addition\n"), Contains("exp.yaml:3") &&
                                                                     Contains("malformed YAML"));
  }
  SECTION("missing file") {
    CHECK_THROWS_WITH(Experiment::load(dir.file("nope.yaml")), Contains("nope.yaml: cannot open"));
  }
  SECTION("missing required section") {
    CHECK_THROWS_WITH(load("name: x\nposition: [nope]\n"), Contains("missing required key 'task'"));
  }
}

TEST_CASE("config: --set overrides", "[config]") {
  test::TempDir dir;
  test::write_text(dir.file("exp.yaml"), kGood);
  Experiment e = Experiment::load(dir.file("exp.yaml"),
                                  {"train.steps=77", "position[0].max_position=33",
                                   "model.norm=rmsnorm", "eval.grid.digits=[2, 3]"});
  CHECK(e.train.steps == 77);
  CHECK(e.model.norm == "rmsnorm");
  CHECK(e.eval.grid.at("digits") == std::vector<int64_t>{2, 3});
  CHECK(e.resolved_yaml().find("max_position: 33") != std::string::npos);
  CHECK(Experiment::load(dir.file("exp.yaml"), {"position.0.max_position=34"})
            .resolved_yaml()
            .find("max_position: 34") != std::string::npos);
  CHECK_THROWS_WITH(Experiment::load(dir.file("exp.yaml"), {"train.stepz=5"}),
                    Contains("--set train.stepz=5") && Contains("did you mean 'steps'"));
  CHECK_THROWS_WITH(Experiment::load(dir.file("exp.yaml"), {"train.steps=many"}),
                    Contains("--set train.steps=many") && Contains("expected an integer"));
  CHECK_THROWS_WITH(Experiment::load(dir.file("exp.yaml"), {"train.steps"}),
                    Contains("expected key.path=value"));
}

TEST_CASE("config: closest_match", "[config]") {
  CHECK(closest_match("coupeling", {"coupling", "nope", "ape"}) == "coupling");
  CHECK(closest_match("xyz", {"coupling", "sinusoidal"}).empty());
}
