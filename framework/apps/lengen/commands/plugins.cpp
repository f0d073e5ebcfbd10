// `lengen plugins`: every registered kind of component (position schemes, tasks, stage kinds,
// norms, activations, optimizers, decays, architectures), with their options.
#include "../cli.h"

#include "lengen/config/section.h"
#include "lengen/core/log.h"
#include "lengen/experiment/sections.h"
#include "lengen/experiment/stage_spec.h"
#include "lengen/model/activation.h"
#include "lengen/model/architecture.h"
#include "lengen/model/norm.h"
#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"
#include "lengen/sweep/sweep.h"
#include "lengen/train/optimizer.h"
#include "lengen/train/schedule.h"

namespace lengen::cli {
namespace {

class Plugins : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("plugins",
                                 "list position schemes, tasks, stage kinds, norms, activations, "
                                 "optimizers and decays with their options");
    c->add_option("--describe", describe_, "print one component's options");
    c->add_flag("--markdown", markdown_, "print the config reference as Markdown");
    add_common(c, common, false);
    return c;
  }

  int run(const Common&) override {
    std::vector<std::string> errors;
    load_all_plugins(&errors);
    for (const auto& e : errors)
      logger("plugin")->error("{}", e);
    const std::vector<RegistryBase*> kinds = registries();
    if (!describe_.empty()) {
      bool found = false;
      std::vector<std::string> names;
      for (const RegistryBase* r : kinds) {
        if (const ComponentEntry* e = r->entry(describe_)) {
          print_entry(*e, true);
          found = true;
        }
        for (const ComponentEntry* e : r->entries())
          names.push_back(e->spec.name);
      }
      if (!found) {
        std::vector<std::string> titles;
        for (const RegistryBase* r : kinds)
          titles.push_back(r->title());
        LENGEN_FAIL("no component named '{}' among the {}{}",
                    describe_,
                    join(titles, ", "),
                    did_you_mean(describe_, names));
      }
      return 0;
    }
    if (markdown_) {
      // The framework's own sections, from the schemas that validate them.
      fmt::print("## Sections\n\n");
      std::vector<ComponentSpec> sections = framework_sections();
      for (auto& spec : sweep::sweep_sections())
        sections.push_back(std::move(spec));
      for (const auto& spec : sections) {
        fmt::print("### `{}`\n\n{}\n\n| key | type | description |\n| --- | --- | --- |\n",
                   spec.name,
                   spec.summary);
        print_rows(spec.options, "");
        fmt::print("\n");
      }
    }
    for (const RegistryBase* r : kinds) {
      std::string title = r->title();
      if (markdown_) {
        title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
        fmt::print("## {}\n\n", title);
      } else {
        fmt::print("{} ({}):\n", title, r->where());
      }
      for (const ComponentEntry* e : r->entries())
        print_entry(*e, markdown_);
    }
    if (!markdown_) {
      fmt::print("plugin search path: {}\n", join(plugin_search_path(), ":"));
    }
    return 0;
  }

 private:
  // Where a position scheme applies: asked of an instance built with default options.
  static std::string applies_in(const std::string& name) {
    if (!position_registry().find(name))
      return "";
    try {
      auto s = position_registry().create(load_config_string(name, "<describe>"),
                                          SchemeContext{16, 2, 8, 1, 3, ""});
      std::vector<std::string> kinds;
      for (auto k :
           {AttentionKind::kCausalSelf, AttentionKind::kBidirectionalSelf, AttentionKind::kCross}) {
        if (s->supports(k))
          kinds.push_back(attention_kind_name(k));
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
        doc +=
            fmt::format("{}a bare value means {{{}: value}}", doc.empty() ? "" : "; ", o.shorthand);
      }
      fmt::print("| `{}{}` | {} | {} |\n", prefix, o.key, o.describe_type(), doc);
      if (o.type == OptionType::kMap || o.type == OptionType::kMapList) {
        print_rows(o.fields, prefix + o.key + (o.type == OptionType::kMapList ? "[i]." : "."));
      }
    }
  }

  // Every kind of component, in the order the listing and the config reference show them.
  static std::vector<RegistryBase*> registries() {
    return {&position_registry(),
            &task_registry(),
            &stage_registry(),
            &architecture_registry(),
            &norm_registry(),
            &activation_registry(),
            &optimizer_registry(),
            &decay_registry()};
  }

  void print_entry(const ComponentEntry& e, bool full) const {
    const std::string kinds = e.spec.kind == "position" ? applies_in(e.spec.name) : "";
    if (markdown_) {
      fmt::print("### `{}` ({})\n\n{}\n\n", e.spec.name, e.spec.kind, e.spec.summary);
      if (!kinds.empty())
        fmt::print("Applies in: {} attention.\n\n", kinds);
      if (!e.spec.options.empty()) {
        fmt::print("| option | type | description |\n| --- | --- | --- |\n");
        for (const auto& o : e.spec.options)
          fmt::print("| `{}` | {} | {} |\n", o.key, o.describe_type(), o.doc);
        fmt::print("\n");
      }
      return;
    }
    fmt::print("  {:<15} {}\n", e.spec.name, e.spec.summary);
    if (full) {
      fmt::print("  from {} ({} {})\n", e.origin.library, e.origin.plugin, e.origin.version);
      if (!kinds.empty())
        fmt::print("  applies in: {} attention\n", kinds);
      for (const auto& o : e.spec.options)
        fmt::print("    {:<14} {}\n    {:<14} ({})\n", o.key, o.doc, "", o.describe_type());
    }
  }

  std::string describe_;
  bool markdown_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plugins() {
  return std::make_unique<Plugins>();
}
}  // namespace lengen::cli
