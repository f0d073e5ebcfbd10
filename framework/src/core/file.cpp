#include "lengen/core/file.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen {

void write_all(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw Error(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// Temp file in the same directory, fsync, rename: readers see the old or the new file, never a
// torn one. The directory is fsync'ed too so the rename survives a crash.
void write_file_atomic(const std::string& path,
                       const std::function<void(int fd, const std::string& tmp)>& write) {
  fs::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
  }
  std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  }
  try {
    write(fd, tmp);
    fault::reached("write:", p.filename().string());  // written, not yet in place
    if (::fsync(fd) != 0) {
      throw Error(fmt::format("{}: fsync failed: {}", tmp, std::strerror(errno)));
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(fmt::format("{}: close failed: {}", tmp, std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("{}: rename failed: {}", path, std::strerror(e)));
  }
  std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  fault::reached("written:", p.filename().string());
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, [&](int fd, const std::string& tmp) {
    write_all(fd, content.data(), content.size(), tmp);
  });
}

}  // namespace lengen
