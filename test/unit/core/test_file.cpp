// write_file_atomic: a file is replaced whole or not at all, and a failed write names the file
// and leaves the previous content and no temporary file behind.
#include "helpers.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"

#include <filesystem>

using namespace lengen;
namespace fs = std::filesystem;

namespace {
// The names in `dir`, sorted.
std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("file: write_file_atomic creates folders and replaces a file whole", "[file]") {
  test::TempDir tmp;
  const std::string path = (tmp.path / "a" / "b" / "grid.csv").string();
  write_file_atomic(path, "first\n");
  CHECK(test::read_text(path) == "first\n");
  write_file_atomic(path, std::string("second, longer\n\0binary", 22));
  CHECK(test::read_text(path) == std::string("second, longer\n\0binary", 22));
  write_file_atomic(path, "");
  CHECK(test::read_text(path).empty());
  CHECK(names(tmp.path / "a" / "b") == std::vector<std::string>{"grid.csv"});
}

TEST_CASE("file: a write that fails leaves the previous file and no temporary", "[file]") {
  test::TempDir tmp;
  const std::string path = tmp.file("summary.json");
  write_file_atomic(path, "kept");
  // The content half written, then the writer fails (as a full disk does in write_all).
  CHECK_THROWS_WITH(write_file_atomic(path,
                                      [](int fd, const std::string& name) {
                                        write_all(fd, "half", 4, name);
                                        throw Error(name + ": write failed: No space left");
                                      }),
                    Catch::Contains("summary.json.tmp-") && Catch::Contains("No space left"));
  CHECK(test::read_text(path) == "kept");
  CHECK(names(tmp.path) == std::vector<std::string>{"summary.json"});
}

TEST_CASE("file: write_all names the file when the descriptor cannot be written", "[file]") {
  CHECK_THROWS_WITH(write_all(-1, "x", 1, "/some/where.safetensors"),
                    Catch::Contains("/some/where.safetensors: write failed"));
}

TEST_CASE("file: a folder that cannot be created is named", "[file]") {
  test::TempDir tmp;
  test::write_text(tmp.file("plain"), "a file, not a folder");
  CHECK_THROWS_WITH(write_file_atomic(tmp.file("plain/x.csv"), "y"),
                    Catch::Contains("plain/x.csv.tmp-") && Catch::Contains("cannot create"));
  CHECK(test::read_text(tmp.file("plain")) == "a file, not a folder");
}
