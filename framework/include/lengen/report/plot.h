#pragma once

// The pictures drawn by the plotting scripts (scripts/plot_*.py, Debian's python3-matplotlib):
// finding a script and running it. Part of the plugin surface (a stage plugin draws its own
// pictures with run_plot); the evaluation reports are lengen/report/report.h.

#include "lengen/core/export.h"

#include <string>

namespace lengen {

/// A plotting script by file name, from <the running executable>/../share/lengen/scripts: the
/// install's copy, or in a build tree a link to the source tree's scripts/. "" when not found.
LENGEN_API std::string find_script(const std::string& name);

/// `s` as one shell word: single-quoted, with any ' inside written as '\''.
LENGEN_API std::string shell_quote(const std::string& s);

/// Whether plots can be drawn here: /usr/bin/python3 imports matplotlib (asked once).
LENGEN_API bool plotting_available();

/// Runs scripts/<script> with /usr/bin/python3 and `args` (already quoted). Logs `what` on
/// success; on failure (or when matplotlib or the script is missing) logs a message naming
/// `intact`, the results that were written anyway. Returns whether a picture was drawn.
LENGEN_API bool run_plot(const std::string& script,
                         const std::string& args,
                         const std::string& what,
                         const std::string& intact);

}  // namespace lengen
