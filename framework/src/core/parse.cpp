#include "lengen/core/parse.h"

#include <stdexcept>

namespace lengen {

std::optional<LeadingInteger> leading_integer(const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used, 10);
    return LeadingInteger{static_cast<int64_t>(v), used};
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

}  // namespace lengen
