#pragma once
// Files written so that a reader, a crash or a full disk never sees half of one: the content
// goes to "<path>.tmp-<pid>" in the same folder, is flushed with fsync and renamed over
// `path` (the folder is fsync'ed too). A failure throws lengen::Error naming the file and the
// system's reason ("No space left on device") and leaves any previous file intact. Every
// result, checkpoint and record lengen writes whole goes through here.

#include "lengen/core/export.h"

#include <cstddef>
#include <functional>
#include <string>

namespace lengen {

/// Writes `content` to `path` atomically (parent folders created).
LENGEN_API void write_file_atomic(const std::string& path, const std::string& content);

/// Writes `path` atomically with `write`, which writes the content to the open descriptor
/// `fd` of the temporary file `tmp` (with write_all).
LENGEN_API void write_file_atomic(const std::string& path,
                                  const std::function<void(int fd, const std::string& tmp)>& write);

/// Writes all `n` bytes of `data` to `fd`, retrying short writes; throws naming `path` and
/// errno's reason on failure.
LENGEN_API void write_all(int fd, const char* data, size_t n, const std::string& path);

}  // namespace lengen
