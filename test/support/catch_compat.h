#pragma once

// Catch2 v2 (Debian 12) and v3 (Debian 13) behind one include. The tests are written in v2's
// spelling; under v3 this maps the few names that moved: the string matcher Contains, the
// unqualified Approx and the listener base class. LENGEN_CATCH2_MAJOR is the version CMake found
// (a header probe would see a second copy of Catch2 in a system folder).
#if !defined(LENGEN_CATCH2_MAJOR)
#error "LENGEN_CATCH2_MAJOR must be set by the build (CMakeLists.txt, lengen_unit_test_main)"
#endif
#if LENGEN_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, cs);
}

using TestEventListenerBase = EventListenerBase;
}  // namespace Catch

using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
