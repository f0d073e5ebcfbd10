// Component references read once: the memo behind read_reference(), shared by every kind.
#include "lengen/registry/reference.h"

#include <map>
#include <mutex>
#include <utility>

namespace lengen {

namespace {

// The reference's text as Options::get_string gives it: the name, or one line of flow YAML.
std::string reference_text(const ConfigNode& node) {
  if (!node.is_map())
    return node.as_string();
  YAML::Emitter e;
  e << YAML::Flow << node.yaml();
  return e.c_str();
}

struct Memo {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, Reference> read;  ///< (kind, text) -> reference
};

Memo& memo() {
  static auto* m = new Memo;  // never destroyed: registries may outlive static destruction
  return *m;
}

// The remembered reading of `text`, when the library that registered its name still does.
const Reference* remembered(const RegistryBase& registry, const std::string& text) {
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.read.find({registry.kind(), text});
  if (it == m.read.end())
    return nullptr;
  const ComponentEntry* entry = registry.entry(it->second.name);
  return entry && entry->origin.library == it->second.library ? &it->second : nullptr;
}

const Reference& remember(const RegistryBase& registry, const std::string& text, Reference r) {
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.read[{registry.kind(), text}] = std::move(r);
}

}  // namespace

const Reference& read_reference(const RegistryBase& registry, const ConfigNode& node) {
  const ConfigNode name_node = node.is_map() ? node.child("name") : node;
  if (!(node.is_scalar() || node.is_map()) || !name_node.defined() || !name_node.is_scalar()) {
    node.fail(
        fmt::format("expected the name of a registered {} or a map {{name: NAME, "
                    "options...}}",
                    registry.kind()));
  }
  const std::string text = reference_text(node);
  if (const Reference* r = remembered(registry, text))
    return *r;
  const std::string name = name_node.as_string();
  const ComponentEntry* entry = registry.entry(name);
  if (!entry && resolve_by_convention(registry.kind(), name))
    entry = registry.entry(name);
  if (!entry) {
    registry.check_reference(node);  // fails, listing what is installed
    node.fail(fmt::format("unknown {} '{}'", registry.kind(), name));
  }
  // Validation may check references of its own (through this function): no lock held here.
  Options options = Options::validate(entry->spec, node);
  return remember(registry, text, Reference{name, std::move(options), entry->origin.library});
}

const Reference& read_reference(const RegistryBase& registry,
                                const std::string& text,
                                const std::string& where) {
  if (const Reference* r = remembered(registry, text))
    return *r;
  const Reference& read = read_reference(registry, load_config_string(text, where));
  return remember(registry, text, read);  // also under this spelling of it
}

}  // namespace lengen
