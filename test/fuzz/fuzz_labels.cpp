// The self-labelled examples reader (RUN/stages/<name>/labels.jsonl, which a later stage trains
// on) on any text, for the tasks that self-improvement labels: each line's tokens are checked
// against the task's vocabulary and get the task's causal position IDs.
#include "fuzz_common.h"

#include "lengen/config/node.h"
#include "lengen/registry/registry.h"
#include "lengen/task/task.h"
#include "lengen/train/data.h"

#include <memory>
#include <vector>

using namespace lengen;

namespace {
std::vector<std::shared_ptr<Task>> tasks;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  for (const char* yaml :
       {"{name: addition}", "{name: addition, scratchpad: true}", "{name: multiplication}"}) {
    try {
      tasks.push_back(task_registry().create(load_config_string(yaml, "<fuzz>"), TaskContext{}));
    } catch (const lengen::Error&) {
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("labels.jsonl", data, size);
  for (const auto& task : tasks) {
    try {
      (void)read_labelled_examples(path, *task);
    } catch (const lengen::Error&) {
    }
  }
  return 0;
}
