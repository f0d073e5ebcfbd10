#pragma once

// Decimal-string helpers shared by the arithmetic task plugins (header-only). Numbers are
// strings of digits, most significant first, no sign.

#include "lengen/core/rng.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace lengen::decimal {

/// "007" -> "7"; all zeros -> "0".
inline std::string strip_zeros(const std::string& x) {
  const size_t i = x.find_first_not_of('0');
  return i == std::string::npos ? "0" : x.substr(i);
}

/// Left-pads with zeros to n digits (longer numbers are returned unchanged).
inline std::string pad_left(const std::string& x, size_t n) {
  return x.size() >= n ? x : std::string(n - x.size(), '0') + x;
}

/// Uniform among numbers with exactly `digits` digits; 1 digit includes 0 (Cho et al. 2025).
inline std::string random_number(int64_t digits, Rng& rng) {
  std::string x;
  x.push_back(static_cast<char>('0' + rng.uniform_int(digits == 1 ? 0 : 1, 9)));
  for (int64_t i = 1; i < digits; ++i) {
    x.push_back(static_cast<char>('0' + rng.uniform_int(0, 9)));
  }
  return x;
}

/// Uniform in [0, 10^digits) (every digit uniform), without leading zeros: Jelassi et al.'s
/// "uniformly sampled in N_{10^n}".
inline std::string random_below_power(int64_t digits, Rng& rng) {
  std::string x;
  for (int64_t i = 0; i < digits; ++i) {
    x.push_back(static_cast<char>('0' + rng.uniform_int(0, 9)));
  }
  return strip_zeros(x);
}

/// Column addition of `xs`, least significant column first: calls f(column, digit, carry out)
/// for every column, going on past the longest operand while a carry remains.
template <class F>
void add_columns(const std::vector<std::string>& xs, F&& f) {
  size_t n = 0;
  for (const auto& x : xs) {
    n = std::max(n, x.size());
  }
  int64_t carry = 0;
  for (size_t k = 0; k < n || carry; ++k) {
    int64_t s = carry;
    for (const auto& x : xs) {
      if (k < x.size()) {
        s += x[x.size() - 1 - k] - '0';
      }
    }
    carry = s / 10;
    f(k, static_cast<int>(s % 10), carry);
  }
}

/// Sum of any number of decimal strings.
inline std::string add(const std::vector<std::string>& xs) {
  std::string out;
  add_columns(xs,
              [&](size_t, int digit, int64_t) { out.push_back(static_cast<char>('0' + digit)); });
  std::reverse(out.begin(), out.end());
  return strip_zeros(out);
}

/// Product of two decimal strings (schoolbook).
inline std::string multiply(const std::string& a, const std::string& b) {
  std::vector<int64_t> acc(a.size() + b.size(), 0);  // least significant first
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b.size(); ++j) {
      acc[i + j] += (a[a.size() - 1 - i] - '0') * (b[b.size() - 1 - j] - '0');
    }
  }
  for (size_t k = 0; k + 1 < acc.size(); ++k) {
    acc[k + 1] += acc[k] / 10;
    acc[k] %= 10;
  }
  std::string out;
  for (auto it = acc.rbegin(); it != acc.rend(); ++it)
    out.push_back(static_cast<char>('0' + *it));
  return strip_zeros(out);
}

/// x mod m for a decimal string x and 1 <= m < 2^32.
inline int64_t mod(const std::string& x, int64_t m) {
  int64_t r = 0;
  for (char c : x) {
    r = (r * 10 + (c - '0')) % m;
  }
  return r;
}

/// Digit-wise sum without carries, (a_k + b_k) mod 10 aligned at the least significant digit
/// (Jelassi et al.'s element-wise addition: 99 (+) 35 = 24), leading zeros removed.
inline std::string add_digitwise(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  std::string out(n, '0');
  for (size_t k = 0; k < n; ++k) {
    const int da = k < a.size() ? a[a.size() - 1 - k] - '0' : 0;
    const int db = k < b.size() ? b[b.size() - 1 - k] - '0' : 0;
    out[n - 1 - k] = static_cast<char>('0' + (da + db) % 10);
  }
  return strip_zeros(out);
}

/// Carries of the column addition of `xs` (Jelassi et al.'s Figure 6): how many columns pass a
/// carry on (NC) and the longest run of consecutive such columns (MC).
struct Carries {
  int64_t count = 0;
  int64_t longest_chain = 0;
};

inline Carries carries(const std::vector<std::string>& xs) {
  size_t n = 0;
  for (const auto& x : xs) {
    n = std::max(n, x.size());
  }
  Carries c;
  int64_t run = 0;
  add_columns(xs, [&](size_t k, int, int64_t carry) {
    if (k >= n)
      return;  // the columns of the operands only
    run = carry > 0 ? run + 1 : 0;
    c.count += carry > 0 ? 1 : 0;
    c.longest_chain = std::max(c.longest_chain, run);
  });
  return c;
}

}  // namespace lengen::decimal
