// The addition task's tokens and scratchpad format (format.h).
#include "format.h"

#include "lengen/core/error.h"
#include "lengen/task/decimal.h"

#include <fmt/format.h>

#include <algorithm>

namespace lengen::tasks::addition {

using lengen::decimal::pad_left;

std::string hint_text(int64_t h) {
  if (h < 26)
    return std::string(1, static_cast<char>('a' + h));
  if (h < 52)
    return std::string(1, static_cast<char>('A' + h - 26));
  return fmt::format("<{}>", h);
}

std::vector<std::string> vocabulary_tokens(bool scratchpad, int64_t hints) {
  std::vector<std::string> v{
      "<pad>", "$", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "="};
  if (scratchpad)
    v.push_back(">");
  for (int64_t h = 0; h < hints; ++h)
    v.push_back(hint_text(h));
  return v;
}

std::string strip_spaces(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ')
      out += c;
  }
  return out;
}

int64_t hint_offset(int64_t hints, const std::vector<std::string>& ops, lengen::Rng& rng) {
  if (hints == 0)
    return 0;
  size_t longest = 0;
  for (const auto& x : ops)
    longest = std::max(longest, x.size());
  const auto A =
      static_cast<int64_t>(max_sum_length(longest, ops.size()));  // the highest significance
  if (A > hints) {
    throw lengen::Error(fmt::format(
        "addition: index_hints {} cannot mark an answer of {} digits; raise index_hints to at "
        "least {}",
        hints,
        A,
        A));
  }
  return rng.uniform_int(0, hints - A);
}

size_t max_sum_length(size_t digits, size_t m) {
  return lengen::decimal::add(std::vector<std::string>(m, std::string(digits, '9'))).size();
}

PositionIds ScratchpadFormat::causal_ids(const std::vector<int64_t>& tokens,
                                         int64_t prompt_length,
                                         PositionIds ids) const {
  const int64_t s = 1, T = static_cast<int64_t>(tokens.size());
  const int64_t qlen = std::min(prompt_length, T);
  int64_t group = 0, longest = 0;
  for (int64_t t = 1; t < qlen;) {
    if (is_digit(tokens[t])) {
      int64_t end = t;
      while (end < qlen && is_digit(tokens[end]))
        ++end;
      for (int64_t u = t; u < end; ++u) {
        ids[0][u] = s + (reverse_query ? u - t + 1 : end - u);
        ids[1][u] = s + group;
      }
      longest = std::max(longest, end - t);
      t = end;
      continue;
    }
    if (tokens[t] == plus) {
      ids[0][t] = s;
      ids[1][t] = s + group;
      ++group;
    } else if (tokens[t] == eq) {
      ids[0][t] = s;
      ids[1][t] = s;
    }
    ++t;
  }
  int64_t arrows = 0, digits = 0;
  for (int64_t t = prompt_length; t < T; ++t) {
    if (tokens[t] == arrow) {
      ++arrows;
      digits = 0;
      ids[0][t] = s;
      ids[1][t] = s + arrows;
    } else if (is_digit(tokens[t])) {
      ++digits;
      // Reversed: the k-th digit has significance k. Plain: only padded (the constructor
      // refuses the rest), so every number has the query's length and the k-th digit has
      // significance longest - k + 1.
      ids[0][t] = reverse ? s + digits : std::max<int64_t>(0, s + longest - digits + 1);
      ids[1][t] = s + arrows;
    }  // EOS (or anything else): 0, 0
  }
  return ids;
}

Example ScratchpadFormat::example(const std::vector<std::string>& ops,
                                  size_t longest,
                                  size_t L) const {
  // Writes x's digits in the chosen direction; the ID of each is its significance.
  auto digits = [&](const std::string& x, bool reversed, int64_t group, bool loss, Example& ex) {
    for (size_t j = 0; j < x.size(); ++j) {
      const size_t pos = reversed ? x.size() - 1 - j : j;
      ex.push(digit_id(x[pos]), {1 + static_cast<int64_t>(x.size() - pos), group}, loss);
    }
  };
  const size_t width = zero_pad ? L : 0;
  Example ex;
  ex.position_ids.assign(2, {});
  auto push = [&](int64_t tok, int64_t id1, int64_t id2, bool loss) {
    ex.push(tok, {id1, id2}, loss);
  };
  const int64_t s = start;
  push(bos, 0, 0, false);
  for (size_t i = 0; i < ops.size(); ++i) {
    const int64_t group = s + static_cast<int64_t>(i);
    digits(pad_left(ops[i], width), reverse_query, group, false, ex);
    if (i + 1 < ops.size()) {
      push(plus, s, group, false);
    } else {
      push(eq, s, s, false);  // grouped with the first partial sum b_0
    }
  }
  ex.prompt_length = ex.length();
  ex.answer_begin = ex.prompt_length;
  std::vector<std::string> prefix;
  for (size_t i = 0; i <= ops.size(); ++i) {
    const int64_t group = s + static_cast<int64_t>(i);
    if (i > 0) {
      push(arrow, s, group, true);
      prefix.push_back(ops[i - 1]);
      if (i == ops.size())
        ex.answer_begin = ex.length();  // the final sum
    }
    digits(pad_left(i == 0 ? "0" : lengen::decimal::add(prefix), width), reverse, group, true, ex);
  }
  push(eos, 0, 0, true);
  if (!coupled) {
    ex.position_ids.assign(1, {});
    for (int64_t t = 0; t < ex.length(); ++t)
      ex.position_ids[0].push_back(t);
  }
  ex.meta["digits"] = static_cast<int64_t>(longest);
  ex.meta["operands"] = static_cast<int64_t>(ops.size());
  const auto c = lengen::decimal::carries(ops);
  ex.meta["carries"] = c.count;
  ex.meta["carry_chain"] = c.longest_chain;
  return ex;
}

}  // namespace lengen::tasks::addition
