#include "lengen/core/run_dir.h"

#include "lengen/core/lock.h"

#include <fmt/format.h>

#include <algorithm>

namespace fs = std::filesystem;

namespace lengen {

fs::path RunDir::lock_file() const {
  return FolderLock::file_in(root_.string());
}

fs::path RunDir::checkpoint(int64_t step) const {
  return checkpoints() / fmt::format("step-{:08d}.safetensors", step);
}

bool RunDir::is_checkpoint(const fs::path& file) {
  return file.filename().string().rfind("step-", 0) == 0 && file.extension() == ".safetensors";
}

std::vector<fs::path> RunDir::checkpoint_files() const {
  std::vector<fs::path> all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints(), ec)) {
    if (is_checkpoint(e.path()))
      all.push_back(e.path());
  }
  // The names sort by step (eight digits, zero-padded).
  std::sort(all.begin(), all.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return all;
}

std::string RunDir::newest_checkpoint() const {
  const std::vector<fs::path> all = checkpoint_files();
  return all.empty() ? std::string() : all.back().string();
}

std::vector<fs::path> RunDir::outputs() const {
  return {checkpoints(), eval(), stages(), plots(), eval_curve(), metrics()};
}

bool RunDir::ran() const {
  std::error_code ec;
  return fs::exists(checkpoints(), ec) || fs::exists(stages(), ec) || fs::exists(summary(), ec);
}

}  // namespace lengen
