#pragma once

// One writer per folder: an advisory lock that a run directory (`lengen run`) or a sweep folder
// (`lengen sweep`) is held by while a process writes it. The lock is the kernel's (an open file
// description lock on FOLDER/lengen.lock, a POSIX record lock where those are missing), so it is
// released on any exit of its holder, SIGKILL and a node failure's lost lease included: a lock
// left by a dead process is simply free. The file records who holds it (PID, host, command,
// since when), so that a second process can say whom it found.

#include "lengen/core/export.h"

#include <string>

namespace lengen {

class LENGEN_API FolderLock {
 public:
  /// Locks `folder` (created if needed) for `command` (e.g. "lengen run exp.yaml"; "": this
  /// process's command line). Where
  /// another process holds it: with `wait`, logs whom it waits for and blocks until it is
  /// free; without, throws an Error naming the folder, the holder's PID, host, command and
  /// start time, and how to wait instead (`wait_hint`, e.g. "--wait"). Where the file system
  /// has no locks, warns and goes on unlocked.
  FolderLock(const std::string& folder,
             const std::string& command,
             bool wait,
             const std::string& wait_hint);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  /// The lock file, FOLDER/lengen.lock.
  const std::string& path() const { return path_; }

  /// The lock file of `folder`, FOLDER/lengen.lock.
  static std::string file_in(const std::string& folder);

  /// Whether the lock is held (false only where the file system has none).
  bool held() const { return fd_ >= 0; }

  /// "PID 1234 on host node7 (lengen run exp.yaml, since 2026-12-06 03:21:45 UTC)": who holds
  /// the lock file at `path` by its record; "" when it records no one.
  static std::string holder(const std::string& path);

  /// Removes what writers killed halfway left in the folder: the temporary files of atomic
  /// writes (`NAME.tmp-PID`, `NAME.tmp`), which only a process holding this lock writes. A
  /// subfolder with a lock of its own (a sweep's point runs) is another writer's and is left
  /// alone. Returns how many files it removed, each logged.
  int remove_torn_files() const;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace lengen
