// Contract of the task extension point, run over every registered task and, for addition,
// every format option: well-formed examples, causal position IDs that equal the teacher-forced
// IDs on correct responses and never depend on later tokens, and query round trips.
#include "helpers.h"

#include "lengen/plugin/loader.h"

#include <algorithm>

using namespace lengen;

namespace {

// The example in the other two layouts (Task::to_seq2seq, Task::to_labeled).
void check_layouts(const Task& task, const Example& ex) {
  const int64_t P = ex.prompt_length, T = ex.length();
  // seq2seq: the source is the prompt (default) or the query inside it (a paper's own format,
  // seq2seq_arithmetic: no BOS, no start token); the target starts with the prompt's last token
  // and continues with the response; IDs are the example's.
  Seq2SeqExample s = task.to_seq2seq(ex);
  const auto S = static_cast<int64_t>(s.source.size());
  const int64_t begin = S == P ? 0 : 1;  // the whole prompt, or without BOS and the start token
  REQUIRE((S == P || S == P - 2));
  CHECK(s.source == std::vector<int64_t>(ex.tokens.begin() + begin, ex.tokens.begin() + begin + S));
  CHECK(s.target.front() == ex.tokens[static_cast<size_t>(P - 1)]);
  CHECK(std::vector<int64_t>(s.target.begin() + 1, s.target.end()) == ex.response());
  CHECK(s.loss_mask.front() == 0);
  for (size_t l = 0; l < ex.position_ids.size(); ++l) {
    const auto& ids = ex.position_ids[l];
    CHECK(s.source_ids[l] == std::vector<int64_t>(ids.begin() + begin, ids.begin() + begin + S));
    CHECK(s.target_ids[l] == std::vector<int64_t>(ids.begin() + (P - 1), ids.end()));
  }
  // labeled: when the query fixes the response length, one slot per response token with its
  // label and ID; otherwise a refusal that says why.
  std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + P);
  if (task.max_response_length(prompt) != T - P) {
    CHECK_THROWS_WITH(task.to_labeled(ex), Catch::Contains("fixes"));
    return;
  }
  LabeledExample e = task.to_labeled(ex);
  REQUIRE(static_cast<int64_t>(e.labels.size()) == e.length());
  REQUIRE(static_cast<int64_t>(e.label_mask.size()) == e.length());
  REQUIRE(e.ids.size() == ex.position_ids.size());
  // Every task: the labels read back through from_labeled give the response (the decode's
  // verdict is the teacher-forced one), and at least one position is scored.
  CHECK(task.from_labeled(e, e.labels) == ex.response());
  CHECK(std::count(e.label_mask.begin(), e.label_mask.end(), uint8_t{1}) > 0);
  if (e.slot_begin != P) {
    return;  // a paper's own layout (padded_arithmetic: labels on the first n_out inputs)
  }
  // The default layout: the prompt, then one slot per response token.
  REQUIRE(e.length() == T);
  CHECK(e.ids == ex.position_ids);
  for (int64_t t = 0; t < T; ++t) {
    const auto i = static_cast<size_t>(t);
    CHECK(e.tokens[i] == (t < P ? ex.tokens[i] : task.vocabulary().pad()));
    CHECK(e.label_mask[i] == (t < P ? 0 : ex.loss_mask[i]));
    if (t >= P) {
      CHECK(e.labels[i] == ex.tokens[i]);
    }
  }
  CHECK(labeled_response({e.labels.begin() + P, e.labels.end()}, task.vocabulary().pad()) ==
        ex.response());
}

void check_contract(const Task& task, const Example& ex) {
  const auto& v = task.vocabulary();
  const int64_t T = ex.length();
  REQUIRE(T >= 3);
  REQUIRE(static_cast<int64_t>(ex.position_ids.size()) == task.position_levels());
  for (const auto& level : ex.position_ids) {
    REQUIRE(static_cast<int64_t>(level.size()) == T);
  }
  REQUIRE(static_cast<int64_t>(ex.loss_mask.size()) == T);
  CHECK(ex.tokens.front() == v.bos());
  CHECK(ex.tokens.back() == v.eos());
  CHECK(ex.prompt_length > 0);
  CHECK(ex.prompt_length < T);
  for (int64_t t = 0; t < T; ++t) {
    CHECK(ex.tokens[t] >= 0);
    CHECK(ex.tokens[t] < v.size());
    CHECK(ex.tokens[t] != v.pad());
    CHECK(ex.loss_mask[t] == (t >= ex.prompt_length ? 1 : 0));
  }
  // Causal IDs equal the teacher-forced IDs on the correct response...
  PositionIds causal = task.causal_position_ids(ex.tokens, ex.prompt_length);
  CHECK(causal == ex.position_ids);
  // ...and the IDs of every prefix are the prefix of the IDs (nothing looks ahead).
  for (int64_t t = ex.prompt_length; t <= T; ++t) {
    std::vector<int64_t> prefix(ex.tokens.begin(), ex.tokens.begin() + t);
    PositionIds p = task.causal_position_ids(prefix, ex.prompt_length);
    for (size_t l = 0; l < p.size(); ++l) {
      CHECK(std::equal(p[l].begin(), p[l].end(), ex.position_ids[l].begin()));
    }
  }
  // Decoding has room for the reference response.
  std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
  CHECK(task.max_response_length(prompt) >= T - ex.prompt_length);
  CHECK(task.exact_match(ex, ex.response()));
  check_layouts(task, ex);
}

// Contract and query round trip over `n` training samples of a task built from inline YAML.
void check_task_yaml(const std::string& yaml, int n, uint64_t seed) {
  auto task = test::make_task(yaml);
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    Example ex = task->sample_train(rng);
    check_contract(*task, ex);
    std::string text = task->render({ex.tokens.begin() + 1, ex.tokens.begin() + ex.prompt_length});
    Example back = task->parse_query(text);
    CHECK(back.tokens == ex.tokens);
    CHECK(back.position_ids == ex.position_ids);
  }
}

}  // namespace

TEST_CASE("task contract: every registered task with default options", "[contract][task]") {
  load_all_plugins();
  REQUIRE(!task_registry().names().empty());
  for (const auto& name : task_registry().names()) {
    DYNAMIC_SECTION(name) {
      auto task = test::make_task("{name: " + name + "}");
      Rng rng(5);
      for (int i = 0; i < 50; ++i) {
        check_contract(*task, task->sample_train(rng));
      }
      auto axes = task->grid_axes();
      REQUIRE(!axes.empty());
      GridCell cell;
      for (const auto& a : axes) {
        cell[a.name] = a.hi;
      }
      check_contract(*task, task->sample_eval(cell, rng));
    }
  }
}

TEST_CASE("task contract: addition with scratchpad, every format option", "[contract][task]") {
  // Cho et al. 2025's Figures 6 and 14: padded or not, plain or reversed query and output.
  for (const char* pad : {"zero_pad: true, pad_to: answer", "zero_pad: false"}) {
    for (const char* reverse : {"true", "false"}) {
      for (const char* query : {"false", "true"}) {
        for (const char* ids : {"coupled", "sequential"}) {
          if (std::string(pad) == "zero_pad: false" && std::string(reverse) == "false" &&
              std::string(ids) == "coupled") {
            continue;  // refused at construction: the IDs would leak the answer's length
          }
          DYNAMIC_SECTION(pad << " reverse_output " << reverse << " reverse_query " << query
                              << " ids " << ids) {
            check_task_yaml(
                fmt::format("{{name: addition, {}, scratchpad: true, reverse_output: {}, "
                            "reverse_query: {}, position_ids: {}, train_operands: [2, 6], "
                            "mixed_lengths: true, train_digits: [1, 8], eval_operands: [2, 9]}}",
                            pad,
                            reverse,
                            query,
                            ids),
                40,
                4);
          }
        }
      }
    }
  }
}

TEST_CASE("task contract: addition, every format option", "[contract][task]") {
  for (const char* pad : {"true", "false"}) {
    for (const char* pad_to : {"operand", "answer"}) {
      for (const char* reverse : {"true", "false"}) {
        for (const char* ids : {"coupled", "abacus", "sequential"}) {
          for (const char* operands : {"2", "3"}) {
            if (std::string(pad) == "false" && std::string(reverse) == "false" &&
                std::string(ids) != "sequential") {
              continue;  // refused at construction (tested in the addition plugin tests)
            }
            const char* query =
                std::string(operands) == "3" ? "true" : "false";  // both, without doubling
            DYNAMIC_SECTION("zero_pad " << pad << " pad_to " << pad_to << " reverse " << reverse
                                        << " ids " << ids << " operands " << operands
                                        << " reverse_query " << query) {
              check_task_yaml(
                  fmt::format(
                      "{{name: addition, zero_pad: {}, pad_to: {}, reverse_output: {}, "
                      "reverse_query: {}, position_ids: {}, operands: {}, train_digits: [1, 12]}}",
                      pad,
                      pad_to,
                      reverse,
                      query,
                      ids,
                      operands),
                  60,
                  9);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("task contract: addition with index hints, every format option", "[contract][task]") {
  for (const char* pad : {"true", "false"}) {
    for (const char* pad_to : {"operand", "answer"}) {
      for (const char* reverse : {"true", "false"}) {
        for (const char* operands : {"2", "3"}) {
          const char* query = std::string(operands) == "3" ? "true" : "false";
          DYNAMIC_SECTION("zero_pad " << pad << " pad_to " << pad_to << " reverse " << reverse
                                      << " operands " << operands) {
            check_task_yaml(
                fmt::format("{{name: addition, zero_pad: {}, pad_to: {}, reverse_output: {}, "
                            "reverse_query: {}, position_ids: sequential, operands: {}, "
                            "train_digits: [1, 12], index_hints: 20}}",
                            pad,
                            pad_to,
                            reverse,
                            query,
                            operands),
                40,
                5);
          }
        }
      }
    }
  }
}

TEST_CASE("task contract: parity, every format option", "[contract][task]") {
  for (const char* opts : {"scratchpad: true, position_ids: coupled",
                           "scratchpad: true, position_ids: sequential",
                           "scratchpad: false, position_ids: sequential"}) {
    DYNAMIC_SECTION(opts) {
      check_task_yaml(fmt::format("{{name: parity, train_bits: [1, 30], {}}}", opts), 60, 3);
    }
  }
}

TEST_CASE("task contract: padded_arithmetic, every operation", "[contract][task]") {
  for (const char* op : {"add", "mod_add", "mul", "mod_mul", "elementwise_add"}) {
    DYNAMIC_SECTION(op) {
      check_task_yaml(
          fmt::format("{{name: padded_arithmetic, operation: {}, width: 12, modulus: 128, "
                      "train_digits: [1, 12], train_set_size: 30}}",
                      op),
          60,
          8);
    }
  }
}

TEST_CASE("task contract: multiplication, every format option", "[contract][task]") {
  std::vector<std::string> formats{"scratchpad: true",
                                   "scratchpad: true, position_ids: sequential"};
  for (const char* pad : {"true", "false"}) {
    for (const char* reverse : {"true", "false"}) {
      for (const char* ids : {"coupled", "sequential"}) {
        if (std::string(pad) == "false" && std::string(reverse) == "false" &&
            std::string(ids) == "coupled") {
          continue;  // refused at construction (tested in the plugin's tests)
        }
        formats.push_back(
            fmt::format("zero_pad: {}, reverse_output: {}, position_ids: {}", pad, reverse, ids));
      }
    }
  }
  for (const auto& f : formats) {
    DYNAMIC_SECTION(f) {
      check_task_yaml(
          "{name: multiplication, train_a_digits: [1, 7], train_b_digits: [1, 6], " + f + "}",
          40,
          6);
    }
  }
}
