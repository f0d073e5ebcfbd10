// Contract of the stage-kind extension point, run over EVERY registered stage kind (built in
// and any found on the plugin path): a summary and a documented option each; an entry that
// gives each required option a value of its type loads (the kind's own checks run when the
// file loads, before any stage runs); an unknown key and a value of the wrong type are refused
// naming the file, the line and the key.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"
#include "lengen/stage/stage.h"

using namespace lengen;
using Catch::Contains;

namespace {

const char* kHead = R"(name: contract
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: coupling, max_position: 32}]
train: {steps: 2, batch_size: 4}
stages:
  - {name: base}
)";

// A YAML value of the option's type within its range and choices.
std::string value_for(const OptionSpec& o) {
  const double lo = o.min.value_or(1.0);
  switch (o.type) {
    case OptionType::kInt:
      return std::to_string(static_cast<int64_t>(std::max(lo, 1.0)));
    case OptionType::kFloat:
      return std::to_string(o.max ? (std::max(lo, 0.0) + *o.max) / 2 : std::max(lo, 0.5));
    case OptionType::kBool:
      return "true";
    case OptionType::kString:
      return o.choices.empty() ? "base" : o.choices.front();
    case OptionType::kIntList:
      return "[2, 3]";
    case OptionType::kFloatList:
      return "[0.5]";
    case OptionType::kStringList:
      return o.choices.empty() ? "[base]" : "[" + o.choices.front() + "]";
    case OptionType::kMap:
      return "{}";
    case OptionType::kMapList:
      return "[]";
    case OptionType::kComponent:  // no stage kind takes one yet
    case OptionType::kAny:
      throw std::logic_error("stage contract: give option '" + o.key + "' (a " + o.reference +
                             ") a value in value_for");
  }
  return "";
}

}  // namespace

TEST_CASE("stage contract: every registered stage kind", "[contract][stage]") {
  load_all_plugins();
  test::TempDir tmp;
  const auto kinds = stage_registry().list();
  REQUIRE(kinds.size() >= 5);  // train, eval, self_label, self_improve, compare_stages (+ plugins')
  for (const auto* entry : kinds) {
    DYNAMIC_SECTION(entry->spec.name) {
      CHECK(entry->spec.summary.size() > 0);
      std::string stage = "  - name: probe\n    kind: " + entry->spec.name + "\n";
      for (const auto& o : entry->spec.options) {
        CHECK(o.doc.size() > 0);
        if (!o.default_value && !o.optional)
          stage += "    " + o.key + ": " + value_for(o) + "\n";
      }
      const std::string ok = tmp.file(entry->spec.name + ".yaml");
      test::write_text(ok, std::string(kHead) + stage);
      Experiment e = Experiment::load(ok);
      CHECK(e.stages.size() >= 2);
      if (find_stage_expansion(entry->spec.name) == nullptr) {
        CHECK(e.stages[1].kind == entry->spec.name);
      }
      // An unknown key (line 10 of the file: the probe's third line).
      const std::string bad = tmp.file(entry->spec.name + "-bad.yaml");
      test::write_text(bad,
                       std::string(kHead) + "  - name: probe\n    kind: " + entry->spec.name +
                           "\n    no_such_option: 1\n" +
                           stage.substr(stage.find('\n', stage.find("kind:")) + 1));
      CHECK_THROWS_WITH(Experiment::load(bad),
                        Contains(entry->spec.name + "-bad.yaml:10") && Contains("no_such_option"));
      // A value of the wrong type, for each option that takes a number or a list.
      for (const auto& o : entry->spec.options) {
        if (o.type != OptionType::kInt && o.type != OptionType::kIntList)
          continue;
        std::string wrong = std::string(kHead) + "  - name: probe\n    kind: " + entry->spec.name +
                            "\n    " + o.key + ": {not: a number}\n";
        for (const auto& other : entry->spec.options) {
          if (other.key != o.key && !other.default_value && !other.optional) {
            wrong += "    " + other.key + ": " + value_for(other) + "\n";
          }
        }
        const std::string file = tmp.file(entry->spec.name + "-" + o.key + ".yaml");
        test::write_text(file, wrong);
        CHECK_THROWS_WITH(Experiment::load(file),
                          Contains(entry->spec.name + "-" + o.key + ".yaml:10") && Contains(o.key));
      }
    }
  }
}
