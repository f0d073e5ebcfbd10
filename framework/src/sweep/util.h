#pragma once
// Helpers the sweep's files share (planning, running, Slurm, aggregation); not installed.
#include "lengen/sweep/sweep.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

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

/// Whether an axis value is the one a user wrote: the same YAML, or for a scalar, the value's
/// component label (`coupling` for `[{name: coupling, max_position: 101}]`).
bool value_matches(const YAML::Node& want, const YAML::Node& have);

/// A `labels:` name written for `key` stands for its value; anything else is returned as
/// written.
YAML::Node resolve_label(const std::map<std::string, std::map<std::string, std::string>>& labels,
                         const std::string& key,
                         const YAML::Node& want);

/// The value at a dotted key (`model.shared_layers`) of a YAML tree; undefined where it has none.
YAML::Node value_at(const YAML::Node& tree, const std::string& key);

/// A point's value of an axis key: the value it sets, or for a point that does not set the key,
/// the value its resolved experiment has there. Undefined where neither has it.
YAML::Node point_value(const std::vector<std::pair<std::string, YAML::Node>>& values,
                       const YAML::Node& resolved,
                       const std::string& key);
YAML::Node point_value(const Point& p, const std::string& key);

}  // namespace lengen::sweep
