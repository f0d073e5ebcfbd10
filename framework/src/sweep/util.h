#pragma once
// Helpers the sweep's files share (planning, running, Slurm, aggregation); not installed.
#include <yaml-cpp/yaml.h>

#include <string>

namespace lengen::sweep {

/// A YAML value in flow style, one line (`[a, b]`, `{name: x}`).
std::string flow(const YAML::Node& n);

/// A label for a value in a point name: scalars as written; a component map by its name (with
/// its options when `detailed`); a list by its elements' labels joined with '+'.
std::string label(const YAML::Node& n, bool detailed);

/// Safe for a folder name.
std::string sanitize(const std::string& s);

/// A file's whole text ("" when it cannot be read).
std::string read_text(const std::string& path);

/// Runs a command, returning its stdout and stderr (and its exit status).
std::string capture(const std::string& cmd, int* status);

}  // namespace lengen::sweep
