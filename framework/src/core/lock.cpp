// FolderLock: an open file description lock on FOLDER/lengen.lock (fcntl F_OFD_SETLK, Linux
// 3.15+; per open file, so no other descriptor of the file in this process can drop it), with
// POSIX record locks where OFD locks are refused. NFS carries both to the server's lock manager.
#include "lengen/core/lock.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen {

namespace {

// F_OFD_SETLK(W) where the kernel has them, F_SETLK(W) otherwise; -1 with errno on failure.
int lock_whole_file(int fd, bool wait) {
  struct flock fl {};

  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;  // the whole file
#ifdef F_OFD_SETLK
  int rc;
  do {
    rc = ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
  } while (rc != 0 && errno == EINTR && wait);
  if (rc == 0 || errno != EINVAL)
    return rc;
#endif
  int rc2;
  do {
    rc2 = ::fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl);
  } while (rc2 != 0 && errno == EINTR && wait);
  return rc2;
}

std::string read_record(int fd) {
  std::string text;
  char buf[512];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
    text.pop_back();
  return text;
}

std::string host_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0)
    return "unknown";
  return host;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// This process's command line ("lengen run exp.yaml --resume"), from /proc/self/cmdline.
std::string own_command() {
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "lengen";
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < 1024)
    text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  while (!text.empty() && text.back() == '\0')
    text.pop_back();
  for (char& c : text) {
    if (c == '\0' || c == '\n')
      c = ' ';
  }
  const size_t slash = text.rfind('/', text.find(' '));  // the program's name, not its path
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

}  // namespace

std::string FolderLock::holder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "";
  const std::string record = read_record(fd);
  ::close(fd);
  return record;
}

std::string FolderLock::file_in(const std::string& folder) {
  return (fs::path(folder) / "lengen.lock").string();
}

FolderLock::FolderLock(const std::string& folder,
                       const std::string& command,
                       bool wait,
                       const std::string& wait_hint) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  path_ = file_in(folder);
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  LENGEN_CHECK(fd >= 0, "{}: cannot open the folder's lock file ({})", path_, std::strerror(errno));
  if (lock_whole_file(fd, false) != 0) {
    const int err = errno;
    if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
      logger()->warn(
          "{}: this file system keeps no locks ({}); nothing stops a second process from writing "
          "{} at "
          "the same time",
          path_,
          std::strerror(err),
          folder);
      ::close(fd);
      return;
    }
    if (err != EACCES && err != EAGAIN) {
      ::close(fd);
      LENGEN_FAIL("{}: cannot lock ({})", path_, std::strerror(err));
    }
    std::string who = read_record(fd);
    if (who.empty())
      who = "another process (it has not written its name yet)";
    if (!wait) {
      ::close(fd);
      LENGEN_FAIL("{} is in use: {} holds {}. Stop that process, or wait for it with {}",
                  folder,
                  who,
                  path_,
                  wait_hint);
    }
    logger()->info("{} is in use: {} holds it; waiting for it to finish", folder, who);
    if (lock_whole_file(fd, true) != 0) {
      const int werr = errno;
      ::close(fd);
      LENGEN_FAIL("{}: waiting for the lock failed ({})", path_, std::strerror(werr));
    }
    logger()->info("{}: the lock is free now; going on", folder);
  }
  // Held: record who holds it (a record left by a process that died goes).
  const std::string before = read_record(fd);
  if (!before.empty())
    logger()->debug("{}: taking over from {}, which no longer holds it", path_, before);
  const std::string record = fmt::format("PID {} on host {} ({}, since {})\n",
                                         ::getpid(),
                                         host_name(),
                                         command.empty() ? own_command() : command,
                                         utc_now());
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    logger()->warn("{}: could not record the holder ({}); the lock is held all the same",
                   path_,
                   std::strerror(errno));
  }
  fd_ = fd;
}

FolderLock::~FolderLock() {
  if (fd_ < 0)
    return;
  // Leave the file (another process may have it open, waiting); empty it so it names no one.
  if (::ftruncate(fd_, 0) != 0) {
    // nothing to do: the lock goes with the descriptor either way
  }
  ::close(fd_);
}

namespace {

// `NAME.tmp` or `NAME.tmp-DIGITS`: an atomic write's temporary.
bool torn_name(const std::string& name) {
  const size_t at = name.rfind(".tmp");
  if (at == std::string::npos || at == 0)
    return false;
  const std::string tail = name.substr(at + 4);
  return tail.empty() || (tail.size() > 1 && tail[0] == '-' &&
                          tail.find_first_not_of("0123456789", 1) == std::string::npos);
}

int remove_torn_below(const fs::path& dir, bool top) {
  std::error_code ec;
  if (!top && fs::exists(FolderLock::file_in(dir.string()), ec))
    return 0;  // another writer's folder
  int removed = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2) && !e.is_symlink(ec2)) {
      removed += remove_torn_below(e.path(), false);
    } else if (e.is_regular_file(ec2) && torn_name(e.path().filename().string())) {
      if (fs::remove(e.path(), ec2)) {
        logger()->info("removed {}, left by a writer that was stopped halfway", e.path().string());
        ++removed;
      }
    }
  }
  return removed;
}

}  // namespace

int FolderLock::remove_torn_files() const {
  return remove_torn_below(fs::path(path_).parent_path(), true);
}

}  // namespace lengen
