// The registry every component kind shares (Registry<Base, Context>), on a toy kind: adding,
// building from a name or a map of options, the errors a researcher sees (an unknown name with
// the closest one and the known ones, a wrong option type, a name registered twice), and a
// library's components removed with it.
#include "helpers.h"

#include "lengen/config/node.h"
#include "lengen/registry/registry.h"

#include <memory>
#include <string>

using namespace lengen;
using Catch::Contains;

namespace {

struct Widget {
  std::string name;
  int64_t size = 0;
  int64_t context = 0;
};

using WidgetRegistry = Registry<Widget, int64_t>;

void add_widget(WidgetRegistry& r, const std::string& name, const std::string& library) {
  ComponentSpec spec{
      "",
      name,
      "a widget for the test",
      {OptionSpec::integer("size", "how big").with_default(YAML::Node(1)).at_least(1)}};
  r.add(spec, PluginOrigin{library, "test", "0"}, [name](const Options& o, const int64_t& ctx) {
    return std::make_shared<Widget>(Widget{name, o.get_int("size"), ctx});
  });
}

}  // namespace

TEST_CASE("registry: components are built from a name or a map of options", "[registry]") {
  WidgetRegistry r("widget");
  add_widget(r, "wide", "<builtin>");
  add_widget(r, "narrow", "libwidgets.so");
  CHECK(r.names() == std::vector<std::string>{"narrow", "wide"});
  CHECK(r.find("wide") != nullptr);
  CHECK(r.find("wid") == nullptr);
  CHECK(r.find("wide")->spec.kind == "widget");

  auto bare = r.create(load_config_string("wide", "<test>"), 7);
  CHECK(bare->name == "wide");
  CHECK(bare->size == 1);  // the default
  CHECK(bare->context == 7);
  auto given = r.create(load_config_string("{name: narrow, size: 3}", "<test>"), 0);
  CHECK(given->name == "narrow");
  CHECK(given->size == 3);

  // The library's components leave with it.
  r.remove_library("libwidgets.so");
  CHECK(r.names() == std::vector<std::string>{"wide"});
}

TEST_CASE("registry: errors name the file, the key, the closest name and the known ones",
          "[registry]") {
  WidgetRegistry r("widget");
  add_widget(r, "wide", "<builtin>");
  add_widget(r, "narrow", "<builtin>");
  CHECK_THROWS_WITH(r.create(load_config_string("{name: wid}", "w.yaml"), 0),
                    Contains("w.yaml") && Contains("unknown widget 'wid'") &&
                        Contains("did you mean 'wide'") && Contains("narrow, wide"));
  CHECK_THROWS_WITH(r.create(load_config_string("{name: wide, size: big}", "w.yaml"), 0),
                    Contains("w.yaml") && Contains("size"));
  CHECK_THROWS_WITH(r.create(load_config_string("{name: wide, size: 0}", "w.yaml"), 0),
                    Contains("size"));
  CHECK_THROWS_WITH(r.create(load_config_string("{size: 2}", "w.yaml"), 0), Contains("'name:'"));
  CHECK_THROWS_WITH(add_widget(r, "wide", "libother.so"),
                    Contains("widget 'wide' is registered twice") && Contains("<builtin>") &&
                        Contains("libother.so"));
}
