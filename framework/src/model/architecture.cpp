// The architecture registry: the three built-in architectures and any registered later.
#include "lengen/model/architecture.h"

#include "lengen/core/error.h"

#include <map>
#include <mutex>

namespace lengen {

namespace {

std::map<std::string, Architecture>& arch_table() {
  static std::map<std::string, Architecture> table = [] {
    std::map<std::string, Architecture> t;
    t["decoder"] = {"decoder", "decoder-only: causal self-attention, next-token prediction",
                    Layout::kSequence, false, true, false};
    t["encoder"] = {"encoder",
                    "encoder-only: bidirectional self-attention with a key-padding mask and a "
                    "per-position classifier over the output slots (Jelassi et al. 2023)",
                    Layout::kLabeled, true, false, false};
    t["encoder_decoder"] = {"encoder_decoder",
                            "encoder-decoder: bidirectional encoder over the query, causal "
                            "decoder with cross-attention generating the response",
                            Layout::kSeq2Seq, true, true, true};
    return t;
  }();
  return table;
}

std::mutex& arch_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_architecture(Architecture arch) {
  std::lock_guard<std::mutex> lock(arch_mutex());
  LENGEN_CHECK(!arch.name.empty(), "register_architecture: empty name");
  LENGEN_CHECK(arch.encoder || arch.decoder, "architecture '{}' has no stack", arch.name);
  LENGEN_CHECK(arch_table().emplace(arch.name, arch).second,
               "architecture '{}' is registered twice", arch.name);
}

std::vector<Architecture> architectures() {
  std::lock_guard<std::mutex> lock(arch_mutex());
  std::vector<Architecture> out;
  for (const auto& [name, a] : arch_table()) {
    out.push_back(a);
  }
  return out;
}

const Architecture& architecture(const std::string& name) {
  std::lock_guard<std::mutex> lock(arch_mutex());
  auto it = arch_table().find(name);
  if (it == arch_table().end()) {
    std::vector<std::string> names;
    for (const auto& [n, a] : arch_table()) {
      names.push_back(n);
    }
    throw Error(fmt::format("unknown architecture '{}' (registered: {}){}", name, join(names),
                            did_you_mean(name, names)));
  }
  return it->second;
}

}  // namespace lengen
