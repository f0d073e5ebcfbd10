// The registries every component kind shares (RegistryBase, the list the loader and `lengen
// plugins` walk) and the two owned by no layer above: position schemes and tasks.
#include "lengen/registry/registry.h"

#include "lengen/position/scheme.h"
#include "lengen/task/task.h"

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

std::vector<RegistryBase*> all_registries() { return registries(); }

PositionRegistry& position_registry() {
  static PositionRegistry r("position", "position schemes", "position[i]");
  return r;
}

TaskRegistry& task_registry() {
  static TaskRegistry r("task", "tasks", "task");
  return r;
}

Registrar::~Registrar() = default;

}  // namespace lengen
