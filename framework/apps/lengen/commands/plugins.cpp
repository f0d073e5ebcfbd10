// `lengen plugins`: position schemes, tasks, stage kinds, norms, activations and architectures with
// their options.
#include "../cli.h"

#include "lengen/config/section.h"
#include "lengen/core/log.h"
#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"

namespace lengen::cli {
namespace {

class Plugins : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("plugins", "list position schemes, tasks, stage kinds, norms and activations with their options");
    c->add_option("--describe", describe_, "print one component's options");
    c->add_flag("--markdown", markdown_, "print the config reference as Markdown");
    add_common(c, common, false);
    return c;
  }

  int run(const Common&) override {
    std::vector<std::string> errors;
    load_all_plugins(&errors);
    for (const auto& e : errors) logger("plugin")->error("{}", e);
    if (!describe_.empty()) {
      const auto* p = position_registry().find(describe_);
      const auto* t = task_registry().find(describe_);
      const auto* s = stage_registry().find(describe_);
      const auto* nm = norm_registry().find(describe_);
      const auto* a = activation_registry().find(describe_);
      if (!p && !t && !s && !nm && !a) {
        auto n = position_registry().names();
        for (const auto& reg : {task_registry().names(), stage_registry().names(), norm_registry().names(),
                                activation_registry().names()}) {
          n.insert(n.end(), reg.begin(), reg.end());
        }
        LENGEN_FAIL("no position scheme, task, stage kind, norm or activation named '{}'{}", describe_,
                    did_you_mean(describe_, n));
      }
      if (p) print_entry(*p, true);
      if (t) print_entry(*t, true);
      if (s) print_entry(*s, true);
      if (nm) print_entry(*nm, true);
      if (a) print_entry(*a, true);
      return 0;
    }
    if (markdown_) {
      // The framework's own sections, from the schemas that validate them.
      fmt::print("## Sections\n\n");
      for (const auto& spec : framework_sections()) {
        fmt::print("### `{}`\n\n{}\n\n| key | type | description |\n| --- | --- | --- |\n", spec.name, spec.summary);
        print_rows(spec.options, "");
        fmt::print("\n");
      }
    }
    fmt::print(markdown_ ? "## Position schemes\n\n" : "position schemes:\n");
    for (const auto* e : position_registry().list()) print_entry(*e, markdown_);
    fmt::print(markdown_ ? "## Tasks\n\n" : "tasks:\n");
    for (const auto* e : task_registry().list()) print_entry(*e, markdown_);
    fmt::print(markdown_ ? "## Stage kinds\n\n" : "stage kinds (stages[i].kind):\n");
    for (const auto* e : stage_registry().list()) print_entry(*e, markdown_);
    fmt::print(markdown_ ? "## Norms\n\n" : "norms (model.norm):\n");
    for (const auto* e : norm_registry().list()) print_entry(*e, markdown_);
    fmt::print(markdown_ ? "## Activations\n\n" : "activations (model.activation):\n");
    for (const auto* e : activation_registry().list()) print_entry(*e, markdown_);
    if (!markdown_) {
      fmt::print("architectures (model.arch):\n");
      for (const auto& a : architectures()) fmt::print("  {:<15} {}\n", a.name, a.summary);
      fmt::print("plugin search path: {}\n", join(plugin_search_path(), ":"));
    }
    return 0;
  }

 private:
  // Where a position scheme applies: asked of an instance built with default options.
  static std::string applies_in(const std::string& name) {
    if (!position_registry().find(name)) return "";
    try {
      auto s = position_registry().create(load_config_string(name, "<describe>"), SchemeContext{16, 2, 8, 1, 3, ""});
      std::vector<std::string> kinds;
      for (auto k : {AttentionKind::kCausalSelf, AttentionKind::kBidirectionalSelf, AttentionKind::kCross}) {
        if (s->supports(k)) kinds.push_back(attention_kind_name(k));
      }
      return join(kinds, ", ");
    } catch (const Error&) {
      return "";  // needs options to be built; nothing to say
    }
  }

  // Markdown rows of a schema; a nested map's fields follow it as `map.field`.
  static void print_rows(const std::vector<OptionSpec>& options, const std::string& prefix) {
    for (const auto& o : options) {
      std::string doc = o.doc;
      if (o.type == OptionType::kMap && !o.shorthand.empty()) {
        doc += fmt::format("{}a bare value means {{{}: value}}", doc.empty() ? "" : "; ", o.shorthand);
      }
      fmt::print("| `{}{}` | {} | {} |\n", prefix, o.key, o.describe_type(), doc);
      if (o.type == OptionType::kMap || o.type == OptionType::kMapList) {
        print_rows(o.fields, prefix + o.key + (o.type == OptionType::kMapList ? "[i]." : "."));
      }
    }
  }

  template <class Entry>
  void print_entry(const Entry& e, bool full) const {
    const std::string kinds = e.spec.kind == "position" ? applies_in(e.spec.name) : "";
    if (markdown_) {
      fmt::print("### `{}` ({})\n\n{}\n\n", e.spec.name, e.spec.kind, e.spec.summary);
      if (!kinds.empty()) fmt::print("Applies in: {} attention.\n\n", kinds);
      if (!e.spec.options.empty()) {
        fmt::print("| option | type | description |\n| --- | --- | --- |\n");
        for (const auto& o : e.spec.options) fmt::print("| `{}` | {} | {} |\n", o.key, o.describe_type(), o.doc);
        fmt::print("\n");
      }
      return;
    }
    fmt::print("  {:<15} {}\n", e.spec.name, e.spec.summary);
    if (full) {
      fmt::print("  from {} ({} {})\n", e.origin.library, e.origin.plugin, e.origin.version);
      if (!kinds.empty()) fmt::print("  applies in: {} attention\n", kinds);
      for (const auto& o : e.spec.options) fmt::print("    {:<14} {}\n    {:<14} ({})\n", o.key, o.doc, "", o.describe_type());
    }
  }

  std::string describe_;
  bool markdown_ = false;
};

}  // namespace
std::unique_ptr<Command> make_plugins() { return std::make_unique<Plugins>(); }
}  // namespace lengen::cli
