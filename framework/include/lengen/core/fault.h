#pragma once

// Fault injection for the tests of kills and full disks: named moments in lengen's code
// ("train.step", "write:grid.csv", "stage.done:base") where a test can have the process stop
// dead. Inert unless the environment variable LENGEN_FAULT is set, which only tests do:
//
//   LENGEN_FAULT=ACTION@SITE#N[,ACTION@SITE#N...]
//
// ACTION is `kill` (SIGKILL to itself: a node failure or the OOM killer at that instant) or
// `stop` (SIGSTOP to itself: the test then fills the disk, or anything else, and sends
// SIGCONT). It fires the N-th time (1-based, counted in this process) a moment whose name
// begins with SITE is reached. The item `trace` prints every moment reached, with its count.
// docs/testing.md, "Kills and full disks", lists the moments.

#include "lengen/core/export.h"

#include <string_view>

namespace lengen::fault {

/// Marks a moment. Costs one branch when LENGEN_FAULT is unset.
LENGEN_API void reached(std::string_view site);

/// `reached(prefix + name)`, building the string only when LENGEN_FAULT is set.
LENGEN_API void reached(std::string_view prefix, std::string_view name);

}  // namespace lengen::fault
