// What every component kind's registry shares: RegistryBase and the list of registries the
// loader and `lengen plugins` walk. Each kind's registry lives with its kind (position_registry()
// in position/scheme.cpp, task_registry() in task/task.cpp, norm_registry() in model/norm.cpp...).
#include "lengen/registry/registry.h"

#include "lengen/config/node.h"
#include "lengen/registry/reference.h"

#include <algorithm>
#include <vector>

namespace lengen {

namespace {
// Never destroyed: registries leave it from their destructors during static destruction.
std::vector<RegistryBase*>& registries() {
  static auto* all = new std::vector<RegistryBase*>;
  return *all;
}
}  // namespace

RegistryBase::RegistryBase(std::string kind, std::string title, std::string where)
    : kind_(std::move(kind)), title_(std::move(title)), where_(std::move(where)) {
  registries().push_back(this);
}

RegistryBase::~RegistryBase() {
  auto& all = registries();
  all.erase(std::remove(all.begin(), all.end(), this), all.end());
}

std::vector<RegistryBase*> all_registries() {
  return registries();
}

namespace {
// The check OptionSpec::component's references go through (config/schema.h): the registry of
// their kind, which the section that declares the reference has built.
void check_reference(const std::string& kind, const ConfigNode& node) {
  for (const RegistryBase* r : registries()) {
    if (r->kind() == kind) {
      (void)read_reference(*r, node);  // remembered: not read again when it is built
      return;
    }
  }
  node.fail(fmt::format("internal: no {} registry is built to check this reference", kind));
}

const bool reference_check_installed = [] {
  set_reference_check(&check_reference);
  return true;
}();
}  // namespace

Registrar::~Registrar() = default;

}  // namespace lengen
