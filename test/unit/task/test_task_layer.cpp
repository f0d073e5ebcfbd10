// The task layer's shared pieces: a vocabulary's encoding (longest match, errors naming the
// column and the token) and the decimal arithmetic tasks build their answers with, against
// int64 arithmetic on random operands.
#include "helpers.h"

#include "lengen/core/rng.h"
#include "lengen/task/decimal.h"
#include "lengen/task/vocabulary.h"

#include <string>
#include <vector>

using namespace lengen;
using Catch::Contains;

TEST_CASE("task: a vocabulary encodes by longest match and names what it cannot", "[task]") {
  const Vocabulary v({"<PAD>", "$", "0", "1", "2", "+", "=", "10"}, "<PAD>", "$", "$");
  CHECK(v.size() == 8);
  CHECK(v.pad() == 0);
  CHECK(v.bos() == v.eos());
  CHECK(v.encode("$ 1 + 2 =") == std::vector<int64_t>{1, 3, 5, 4, 6});
  CHECK(v.encode("10+2") == std::vector<int64_t>{7, 5, 4});  // "10" is one token
  CHECK(v.decode(v.encode("$12+10=")) == "$12+10=");
  CHECK(v.id("+") == 5);
  CHECK_THROWS_WITH(v.id("*"), Contains("'*'"));
  CHECK_THROWS_WITH(v.encode("1*2"), Contains("column"));
}

TEST_CASE("task: decimal arithmetic agrees with int64 on random operands", "[task]") {
  Rng rng(mix_seed(5, {1}));
  for (int i = 0; i < 300; ++i) {
    const int64_t da = 1 + static_cast<int64_t>(rng.uniform_int(0, 8));
    const int64_t db = 1 + static_cast<int64_t>(rng.uniform_int(0, 8));
    const std::string a = decimal::random_number(da, rng), b = decimal::random_number(db, rng);
    REQUIRE(static_cast<int64_t>(a.size()) == da);
    const int64_t x = std::stoll(a), y = std::stoll(b);
    CHECK(decimal::add({a, b}) == std::to_string(x + y));
    CHECK(decimal::add({a, b, a}) == std::to_string(2 * x + y));
    CHECK(decimal::multiply(a, b) == std::to_string(x * y));
    CHECK(decimal::mod(a, 97) == x % 97);
    CHECK(decimal::strip_zeros(decimal::pad_left(a, 12)) == a);
  }
}
