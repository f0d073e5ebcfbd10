// The Python-literal parser behind TAOTP programs and vocabularies, and literals to tensors.
#include "literal.h"

#include "lengen/core/error.h"

#include <torch/torch.h>

#include <cctype>
#include <cmath>

namespace lengen::taotp {

namespace {

class Parser {
 public:
  Parser(const std::string& text, std::string source) : s_(text), source_(std::move(source)) {}

  Literal parse() {
    Literal v = value();
    skip();
    if (i_ < s_.size())
      fail("unexpected text after the program");
    return v;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}:{}:{}: {}", source_, line_, column_, what));
  }

 private:
  void advance() {
    if (s_[i_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++i_;
  }

  void skip() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        advance();
      } else if (s_[i_] == '#') {
        while (i_ < s_.size() && s_[i_] != '\n')
          advance();
      } else {
        break;
      }
    }
  }

  bool accept(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      advance();
      return true;
    }
    return false;
  }

  Literal value() {
    skip();
    if (i_ >= s_.size())
      fail("unexpected end of the program, expected a value");
    Literal v;
    v.line = line_;
    v.column = column_;
    const char c = s_[i_];
    if (c == '{') {
      advance();
      v.kind = Literal::kDict;
      while (!accept('}')) {
        skip();
        if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\''))
          fail("expected a quoted key or '}'");
        std::string key = string_body();
        if (!accept(':'))
          fail(fmt::format("expected ':' after the key '{}'", key));
        v.fields.emplace_back(key, value());
        if (!accept(',')) {
          if (!accept('}'))
            fail("expected ',' or '}' in a dict");
          break;
        }
      }
    } else if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      advance();
      v.kind = Literal::kList;
      while (!accept(close)) {
        v.items.push_back(value());
        if (!accept(',')) {
          if (!accept(close))
            fail(fmt::format("expected ',' or '{}' in a list", close));
          break;
        }
      }
    } else if (c == '"' || c == '\'') {
      v.kind = Literal::kString;
      v.text = string_body();
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string word;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) {
        word += s_[i_];
        advance();
      }
      if (word == "True" || word == "true" || word == "False" || word == "false") {
        v.kind = Literal::kBool;
        v.number = (word == "True" || word == "true") ? 1 : 0;
      } else if (word == "None" || word == "null") {
        v.kind = Literal::kNone;
      } else {
        line_ = v.line;
        column_ = v.column;
        fail(
            fmt::format("unexpected name '{}' (a program holds only numbers, lists, dicts and "
                        "strings)",
                        word));
      }
    } else {
      v.kind = Literal::kNumber;
      v.number = number();
    }
    return v;
  }

  std::string string_body() {
    const char quote = s_[i_];
    advance();
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\n')
        fail("unterminated string");
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        advance();
        const char e = s_[i_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += s_[i_];
      }
      advance();
    }
    if (i_ >= s_.size())
      fail("unterminated string");
    advance();
    return out;
  }

  double number() {
    // [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?, as Python writes floats.
    const size_t start = i_;
    auto digits = [&] {
      size_t n = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        advance();
        ++n;
      }
      return n;
    };
    if (s_[i_] == '+' || s_[i_] == '-')
      advance();
    size_t n = digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      advance();
      n += digits();
    }
    if (n == 0) {
      i_ = start;
      fail(fmt::format("expected a number, found '{}'", s_.substr(start, 12)));
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      advance();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'))
        advance();
      if (digits() == 0)
        fail("expected digits after the exponent");
    }
    return std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
  }

  const std::string& s_;
  std::string source_;
  size_t i_ = 0;
  int line_ = 1, column_ = 1;
};

// Shape of a rectangular nested list of numbers; fails on ragged or non-numeric entries.
void collect(const Literal& v,
             size_t depth,
             std::vector<int64_t>& shape,
             std::vector<double>& out,
             const std::string& name,
             const std::string& source) {
  if (v.kind == Literal::kNumber || v.kind == Literal::kBool) {
    if (depth != shape.size()) {
      throw Error(fmt::format("{}: {}: a number where a list was expected (nesting depth {} of {})",
                              where(source, v),
                              name,
                              depth,
                              shape.size()));
    }
    out.push_back(v.number);
    return;
  }
  if (v.kind != Literal::kList) {
    throw Error(fmt::format("{}: {}: expected numbers and lists", where(source, v), name));
  }
  if (depth == shape.size()) {
    if (!out.empty()) {
      throw Error(
          fmt::format("{}: {}: a list where a number was expected", where(source, v), name));
    }
    shape.push_back(static_cast<int64_t>(v.items.size()));
  } else if (shape[depth] != static_cast<int64_t>(v.items.size())) {
    throw Error(
        fmt::format("{}: {}: a row of {} entries where the others have {} (arrays must be "
                    "rectangular)",
                    where(source, v),
                    name,
                    v.items.size(),
                    shape[depth]));
  }
  for (const auto& item : v.items) {
    collect(item, depth + 1, shape, out, name, source);
  }
}

}  // namespace

torch::Tensor to_tensor(const Literal& v, const std::string& name, const std::string& source) {
  if (v.kind == Literal::kNumber || v.kind == Literal::kBool) {
    return torch::tensor(v.number, torch::kFloat64);  // scalar
  }
  std::vector<int64_t> shape;
  std::vector<double> values;
  collect(v, 0, shape, values, name, source);
  if (values.empty()) {
    // [] or [[], []]: the empty array of the listed outer sizes (the innermost is 0).
    std::vector<int64_t> sizes;
    for (int64_t s : shape)
      sizes.push_back(s);
    return torch::zeros(sizes, torch::kFloat64);
  }
  return torch::tensor(values, torch::kFloat64).view(shape).clone();
}

std::string where(const std::string& source, const Literal& v) {
  return fmt::format("{}:{}:{}", source, v.line, v.column);
}

Literal parse_literal(const std::string& text, const std::string& source) {
  return Parser(text, source).parse();
}

}  // namespace lengen::taotp
