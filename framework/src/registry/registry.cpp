// What every component kind's registry shares: RegistryBase and the list of registries the
// loader and `lengen plugins` walk. Each kind's registry lives with its kind (position_registry()
// in position/scheme.cpp, task_registry() in task/task.cpp, norm_registry() in model/norm.cpp...).
#include "lengen/registry/registry.h"

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

Registrar::~Registrar() = default;

}  // namespace lengen
