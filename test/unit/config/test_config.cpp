// Config: errors name file, line, key and the nearest valid alternative; overrides apply.
#include "helpers.h"

#include "lengen/config/section.h"
#include "lengen/core/parse.h"
#include "lengen/experiment/experiment.h"
#include "lengen/experiment/sections.h"

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
  auto only_ff =
      Experiment::load(dir.file("exp.yaml"), {"model.bias=true", "model.attention_bias=false"})
          .model;
  CHECK(!only_ff.attention_bias);
  CHECK(only_ff.ff_bias);
  CHECK(load("layers=0").layers == 0);
  CHECK(load("norm=taotp_layernorm").norm == "taotp_layernorm");
  CHECK_THROWS_WITH(load("layers=-1"), Contains("model.layers must be >= 0"));
}

TEST_CASE("config: an experiment extends another file", "[config]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "sub");
  test::write_text(dir.file("base.yaml"),
                   std::string(kGood) + "paper: {cite: X, table: T, values: {3: 100, 4: 90}}\n");
  SECTION("maps merge key by key, lists and scalars replace, the name is the file's own") {
    test::write_text((dir.path / "sub" / "child.yaml").string(), R"(extends: ../base.yaml
model: {d_model: 32}
position: [nope]
train: {optimizer: {lr: 0.01}}
)");
    Experiment e = Experiment::load((dir.path / "sub" / "child.yaml").string());
    CHECK(e.name == "child");  // not the base's cfg-test
    CHECK(e.seed == 3);
    CHECK(e.model.d_model == 32);
    CHECK(e.model.layers == 1);  // from the base, beside the child's d_model
    CHECK(e.train.steps == 10);
    REQUIRE(e.position_nodes.size() == 1);  // the list was replaced, not merged
    CHECK(e.position_nodes.front().as_string() == "nope");
    CHECK(e.resolved_yaml().find("lr: 0.01") != std::string::npos);
    CHECK(e.resolved_yaml().find("extends") == std::string::npos);
    REQUIRE(e.paper.rows.size() == 1);
    CHECK(e.paper.rows.front().values.size() == 2);  // inherited whole
    // --set applies on top of the merged tree.
    CHECK(Experiment::load((dir.path / "sub" / "child.yaml").string(), {"model.layers=2"})
              .model.layers == 2);
  }
  SECTION("chains of bases, another task and another paper block replace whole") {
    test::write_text(dir.file("mid.yaml"), "extends: base.yaml\nseed: 5\n");
    test::write_text(dir.file("leaf.yaml"), R"(extends: mid.yaml
name: leaf-run
task: {name: parity, train_bits: [1, 3], eval_bits: [1, 4]}
paper: {cite: Y, table: U, values: {4: 50}}
)");
    Experiment e = Experiment::load(dir.file("leaf.yaml"));
    CHECK(e.name == "leaf-run");
    CHECK(e.seed == 5);
    CHECK(e.task_node.child("name").as_string() == "parity");  // no addition keys merged in
    CHECK(e.paper.cite == "Y");
    REQUIRE(e.paper.rows.size() == 1);
    CHECK(e.paper.rows.front().values.size() == 1);
  }
  SECTION("a key set to null removes the base's") {
    test::write_text(dir.file("plain.yaml"),
                     "extends: base.yaml\npaper: ~\ntrain: {batch_size: ~}\n");
    Experiment e = Experiment::load(dir.file("plain.yaml"));
    CHECK(e.paper.empty());
    CHECK(e.train.steps == 10);
    CHECK(e.train.batch_size == TrainConfig{}.batch_size);  // the default again, not 4
  }
  SECTION("a mistake in a base is reported in the base's file and line") {
    test::write_text(dir.file("bad.yaml"), with_line(kGood, "steps: 10", "stpes: 10"));
    test::write_text(dir.file("child.yaml"), "extends: bad.yaml\nseed: 1\n");
    CHECK_THROWS_WITH(Experiment::load(dir.file("child.yaml")),
                      Contains("bad.yaml:8:3") && Contains("unknown key 'stpes'"));
    test::write_text(dir.file("child2.yaml"), "extends: base.yaml\nmodel: {layres: 2}\n");
    CHECK_THROWS_WITH(Experiment::load(dir.file("child2.yaml")),
                      Contains("child2.yaml:2:") && Contains("did you mean 'layers'"));
  }
  SECTION("a missing base and a cycle are errors naming the key") {
    test::write_text(dir.file("orphan.yaml"), "extends: nowhere.yaml\n");
    CHECK_THROWS_WITH(Experiment::load(dir.file("orphan.yaml")),
                      Contains("orphan.yaml:1:10") && Contains("no such experiment file"));
    test::write_text(dir.file("a.yaml"), "extends: b.yaml\n");
    test::write_text(dir.file("b.yaml"), "extends: a.yaml\n");
    CHECK_THROWS_WITH(Experiment::load(dir.file("a.yaml")), Contains("makes a cycle"));
  }
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
    CHECK_THROWS_WITH(
        load(with_line(kGood, "eval: {samples: 5}", "eval: {samples: 5, grid: {digits: [1, 30]}}")),
        Contains("exp.yaml:6:5, key 'position[0]'") && Contains("digits=19") &&
            Contains("max_position is 20"));
  }
  SECTION("malformed YAML") {
    CHECK_THROWS_WITH(load("name: x\ntask: {name: addition\n"),
                      Contains("exp.yaml:3") && Contains("malformed YAML"));
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
                                  {"train.steps=77",
                                   "position[0].max_position=33",
                                   "model.norm=rmsnorm",
                                   "eval.grid.digits=[2, 3]"});
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

TEST_CASE("config: map and list-of-map options, and sections bound to structs",
          "[config][schema]") {
  using O = OptionSpec;
  const ComponentSpec spec{
      "section",
      "demo",
      "",
      {O::integer("steps", "").with_default(int64_t{10}).at_least(1),
       O::map("optimizer",
              "",
              {O::string("name", "").with_default(std::string("adam")).one_of({"adam", "adamw"}),
               O::number("lr", "").with_default(0.5)})
           .scalar_means("name"),
       O::map_list(
           "sources",
           "",
           {O::string("source", ""), O::number("weight", "").with_default(1.0).at_least(0)}),
       O::map("grid", "").any_keys(),
       O::integer("warmup", "").may_be_absent()}};
  auto validate = [&](const std::string& yaml) {
    return Options::validate(spec, load_config_string(yaml, "s.yaml"), {});
  };

  // Defaults fill nested maps; an optional key is absent; an open map is left to its owner.
  Options d = validate("{}");
  CHECK(d.get_map("optimizer").get_string("name") == "adam");
  CHECK(d.get_map("optimizer").get_float("lr") == 0.5);
  CHECK(d.get_map_list("sources").empty());
  CHECK_FALSE(d.given("warmup"));
  CHECK(to_yaml(d.to_yaml()) == "steps: 10\noptimizer:\n  name: adam\n  lr: 0.5\nsources:\n  []\n");

  // A scalar is the shorthand key; lists validate every element.
  Options o = validate(
      "{optimizer: adamw, sources: [{source: a}, {source: b, weight: 3}], grid: {digits: [1, 5]}}");
  CHECK(o.get_map("optimizer").get_string("name") == "adamw");
  auto sources = o.get_map_list("sources");
  REQUIRE(sources.size() == 2);
  CHECK(sources[1].get_float("weight") == 3.0);
  CHECK(sources[0].get_float("weight") == 1.0);
  CHECK(o.node("grid").child("digits").as_int_list() == std::vector<int64_t>{1, 5});

  // Errors name the file, the line and the nested key path.
  CHECK_THROWS_WITH(
      validate("{optimizer: {name: adam, lrr: 1}}"),
      Contains("s.yaml:1:26") && Contains("unknown key 'lrr'") && Contains("did you mean 'lr'"));
  CHECK_THROWS_WITH(validate("{optimizer: sgd}"),
                    Contains("demo.optimizer.name must be one of adam, adamw"));
  CHECK_THROWS_WITH(validate("{sources: [{source: a}, {source: b, weight: -1}]}"),
                    Contains("demo.sources[1].weight must be >= 0"));
  CHECK_THROWS_WITH(validate("{sources: [{source: a}, {weight: 2}]}"),
                    Contains("demo.sources[1]: missing required key 'source'"));
  CHECK_THROWS_WITH(validate("{sources: {source: a}}"), Contains("expected a list of maps"));
  CHECK_THROWS_WITH(validate("{steps: 0}"), Contains("demo.steps must be >= 1, got 0"));

  // A Section declares each key once with its member: the member's default is the key's
  // default; it reads bound members and writes them back, nested paths as nested maps.
  struct Cfg {
    int64_t steps = 10;
    std::string opt = "adam";
    double lr = 0.5;
    int64_t warmup = 0;
  };

  const Section<Cfg> section =
      Section<Cfg>("demo", "a demo section")
          .field(&Cfg::steps, O::integer("steps", "").at_least(1))
          .option(O::map("optimizer", "").scalar_means("name"))
          .field("optimizer", &Cfg::opt, O::string("name", "").one_of({"adam", "adamw"}))
          .field("optimizer", &Cfg::lr, O::number("lr", ""))
          .option(O::map("grid", "").any_keys())
          .field(&Cfg::warmup, O::integer("warmup", "").may_be_absent());
  const ComponentSpec& declared = section.spec();
  CHECK(declared.name == "demo");
  REQUIRE(declared.options.size() == 4);
  CHECK(declared.options[0].default_value->as<int64_t>() == 10);
  REQUIRE(declared.options[1].fields.size() == 2);
  CHECK(declared.options[1].fields[0].default_value->as<std::string>() == "adam");
  CHECK(declared.options[1].fields[1].default_value->as<double>() == 0.5);
  CHECK_FALSE(declared.options[3].default_value);  // may be absent: no default of its own
  CHECK_THROWS_AS(Section<Cfg>("bad", "").field("schedule", &Cfg::lr, O::number("lr", "")),
                  std::logic_error);
  Cfg c;
  section.read(load_config_string("{steps: 7, optimizer: {lr: 0.25}}", "s.yaml"), c);
  CHECK(c.steps == 7);
  CHECK(c.opt == "adam");
  CHECK(c.lr == 0.25);
  CHECK(c.warmup == 0);
  CHECK(to_yaml(section.write(c)) == "steps: 7\noptimizer:\n  name: adam\n  lr: 0.25\nwarmup: 0\n");
  CHECK_THROWS_WITH(section.read(load_config_string("{steps: 0}", "s.yaml"), c),
                    Contains("demo.steps must be >= 1"));
  CHECK_THROWS_WITH(section.read(load_config_string("{optimizer: sgd}", "s.yaml"), c),
                    Contains("demo.optimizer.name must be one of adam, adamw"));
  // Round trip: what write() gives, read() takes back to the same struct.
  Cfg back;
  back.steps = 1;
  section.read(ConfigNode(section.write(c), nullptr, ""), back);
  CHECK((back.steps == c.steps && back.opt == c.opt && back.lr == c.lr));
  // The framework's sections are documented from their schemas.
  std::vector<std::string> names;
  for (const auto& s : framework_sections())
    names.push_back(s.name);
  CHECK(names ==
        std::vector<std::string>{"experiment", "model", "train", "eval", "stages[i]", "paper"});
}

TEST_CASE("config: leading_integer reads what std::stoll reads, without throwing", "[config]") {
  auto li = [](const std::string& s) { return leading_integer(s); };
  REQUIRE(li("42"));
  CHECK(li("42")->value == 42);
  CHECK(li("42")->used == 2);
  CHECK(li("4,2")->value == 4);
  CHECK(li("4,2")->used == 1);
  CHECK(li(" -7")->value == -7);
  CHECK(li(" -7")->used == 3);
  CHECK(li("9223372036854775807")->value == INT64_MAX);
  CHECK_FALSE(li(""));
  CHECK_FALSE(li("x1"));
  CHECK_FALSE(li(",4"));
  CHECK_FALSE(li("9223372036854775808"));  // out of range
}

TEST_CASE("config: integers are read exactly, integral floats accepted, others refused",
          "[config]") {
  auto int_of = [](const std::string& text) {
    return ConfigNode(YAML::Load("v: " + text)["v"], nullptr, "v").as_int();
  };
  CHECK(int_of("12") == 12);
  CHECK(int_of("-3") == -3);
  CHECK(int_of("1e4") == 10000);
  CHECK(int_of("100.0") == 100);
  CHECK(int_of("9223372036854775807") == INT64_MAX);
  for (const std::string bad : {"1.5", "1e30", "abc", "12abc", "9223372036854775808"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(int_of(bad), Contains("expected an integer"));
  }
}

TEST_CASE("config: a key written as a list, a map or nothing is refused where it is written",
          "[config]") {
  // Found by the sweep loader's fuzz target (test/fuzz/fuzz_sweep.cpp): `grid: {[...]: ~}` reached
  // yaml-cpp's conversion of a key to a string, which threw a bare "bad conversion".
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"name: s\ngrid: {[{label: a, values: {0: 50}}]}\n",
       "bad.yaml:2:8: a key must be a name, found a list"},
      {"task:\n  ? {x: 1}\n  : 2\n", "bad.yaml:2:5: a key must be a name, found a map"},
      {"model: {~: 3}\n", "a key must be a name, found a null"},
  };
  for (const auto& [text, needle] : cases) {
    CAPTURE(text);
    test::write_text(dir.file("bad.yaml"), text);
    CHECK_THROWS_WITH(load_config_file(dir.file("bad.yaml")), Contains(needle));
  }
  CHECK_THROWS_WITH(apply_overrides(load_config_string("a: 1", "<t>"), {"a={[1]: 2}"}),
                    Contains("--set a={[1]: 2}:1:2: a key must be a name, found a list"));
  std::string nested;
  for (int i = 0; i < 300; ++i)
    nested += "[";
  test::write_text(dir.file("deep.yaml"), "a: " + nested + std::string(300, ']') + "\n");
  CHECK_THROWS_WITH(load_config_file(dir.file("deep.yaml")),
                    Contains("nested more than 200 levels deep"));
}

TEST_CASE("config: --set below a value is refused, naming the value", "[config]") {
  // Found by the sweep loader's fuzz target: a grid key "name.x" set below the scalar `name`
  // reached yaml-cpp's "operator[] call on a scalar".
  const ConfigNode root = load_config_string("name: s\nmodel: {layers: 2}\n", "<t>");
  CHECK_THROWS_WITH(apply_overrides(root, {"name.x=1"}),
                    Contains("--set name.x=1: 'name' is a value (s), not a map"));
  CHECK_THROWS_WITH(
      apply_overrides(root, {"model.layers.deep=1"}),
      Contains("--set model.layers.deep=1: 'model.layers' is a value (2), not a map"));
  // Found by the experiment loader's fuzz target (30-minute campaign): a key path of dots or
  // brackets alone left no part to set, and the last part was read from an empty list (UB).
  for (const std::string bad : {".=1", "[]=1", "..[.]=2"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(apply_overrides(root, {bad}),
                      Contains("--set " + bad + ": '") && Contains("names no key"));
  }
}

TEST_CASE("config: extends: a key set to nothing that the base does not have", "[config]") {
  // Found by the experiment loader's fuzz target: `model: {d_model> 32}` (a key "d_model> 32"
  // with no value) extending a base without it put an invalid node into the merged tree, which
  // yaml-cpp refused with a bare "invalid node". Now the key merges as nothing: it loads.
  test::TempDir dir;
  test::write_text(dir.file("base.yaml"), test::kTinyAddition);
  test::write_text(dir.file("exp.yaml"), "extends: base.yaml\nmodel: {d_model> 32}\n");
  CHECK(Experiment::load(dir.file("exp.yaml")).model.d_model == 16);
}

TEST_CASE("config: Options::only gives what validating against the smaller spec gives",
          "[config][schema]") {
  // A stage entry is validated once against the framework's keys and its kind's together; the
  // kind's own options are then taken from that result instead of validating the entry again.
  using O = OptionSpec;
  const ComponentSpec kind{"stage",
                           "demo",
                           "",
                           {O::integer("samples", "").with_default(int64_t{7}).at_least(1),
                            O::string("mode", "").with_default(std::string("a")).one_of({"a", "b"}),
                            O::integer("limit", "").may_be_absent()}};
  ComponentSpec all{"section", "stages[0]", "", {O::string("name", ""), O::integer("seed", "")}};
  for (const auto& opt : kind.options)
    all.options.push_back(opt);
  for (const std::string yaml : {"{name: x, seed: 1}",
                                 "{name: x, seed: 1, samples: 3}",
                                 "{name: x, seed: 2, mode: b, limit: 9}"}) {
    CAPTURE(yaml);
    const ConfigNode entry = load_config_string(yaml, "s.yaml");
    const Options twice = Options::validate(kind, entry, {"name", "seed"});
    const Options once = Options::validate(all, entry, {}).only(kind);
    CHECK(to_yaml(once.to_yaml()) == to_yaml(twice.to_yaml()));
    CHECK(once.component() == "stage 'demo'");
    for (const char* key : {"samples", "mode", "limit"})
      CHECK(once.given(key) == twice.given(key));
    CHECK(once.get_int("samples") == twice.get_int("samples"));
  }
  // A key of the larger spec only is not among them.
  const Options once =
      Options::validate(all, load_config_string("{name: x, seed: 1}", "s.yaml"), {}).only(kind);
  CHECK_THROWS_WITH(once.get_int("seed"), Contains("no declared option 'seed'"));
}
