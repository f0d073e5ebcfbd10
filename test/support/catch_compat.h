#pragma once

// Catch2 v2 (Debian 12) and v3 (Debian 13) behind one include. The tests are written in v2's
// spelling; under v3 this maps the few names that moved: the string matcher Contains, the
// unqualified Approx and the listener base class.
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text, CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, cs);
}
using TestEventListenerBase = EventListenerBase;
}  // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
