#pragma once

// The Python-literal subset `ast.literal_eval` accepts for numeric programs (dicts, lists,
// tuples, numbers, strings, True/False/None, `#` comments, trailing commas), JSON included,
// and its conversion to float64 tensors. Private to src/taotp: programs and vocabularies.

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace lengen::taotp {

struct Literal {
  enum Kind { kDict, kList, kNumber, kString, kBool, kNone } kind = kNone;

  double number = 0;
  std::string text;
  std::vector<Literal> items;                           // kList
  std::vector<std::pair<std::string, Literal>> fields;  // kDict, in file order
  int line = 0, column = 0;

  const Literal* field(const std::string& key) const {
    for (const auto& [k, v] : fields) {
      if (k == key)
        return &v;
    }
    return nullptr;
  }
};

/// Parses `text` as one literal; errors name `source`, the line and the column.
Literal parse_literal(const std::string& text, const std::string& source);

/// "source:line:column" of a literal, for error messages.
std::string where(const std::string& source, const Literal& v);

/// A number (-> scalar) or a rectangular nested list of numbers (-> that shape), as float64;
/// fails naming the array `name` on ragged or non-numeric entries.
torch::Tensor to_tensor(const Literal& v, const std::string& name, const std::string& source);

}  // namespace lengen::taotp
