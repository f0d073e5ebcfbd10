// OpCounter: RecordFunction observers that count leaf, non-view operators.
#include "lengen/train/op_count.h"

#include "lengen/core/error.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace lengen {
namespace {

// Callbacks are plain function pointers, so their state is global: one counter at a time.
std::atomic<bool> g_active{false};
std::mutex g_mutex;
std::map<std::string, int64_t> g_counts;  // guarded by g_mutex
std::atomic<int64_t> g_reads{0};
std::atomic<bool> g_trace_reads{false};  // LENGEN_TRACE_READS=1: print where each read happens
std::atomic<uint64_t> g_generation{0};   // one per counter: a thread's older stack is stale
std::unordered_map<std::string, bool> g_is_kernel;  // guarded by g_mutex: per operator
thread_local std::vector<bool> t_inside;            // per open operator: inside a counted one
thread_local uint64_t t_generation = 0;             // the counter t_inside belongs to

// This thread's stack of open operators, emptied if it was left by an earlier counter (an
// operator still open on this thread when that counter was removed).
std::vector<bool>& open_operators() {
  const uint64_t now = g_generation.load();
  if (t_generation != now) {
    t_inside.clear();
    t_generation = now;
  }
  return t_inside;
}

// An operator with its own CPU or CUDA kernel (not a composite of others) that computes a
// tensor: not a view (a result aliasing an input without writing it), not an allocation.
bool is_kernel_locked(const c10::OperatorName& op) {
  const std::string key = op.name + "." + op.overload_name;
  auto it = g_is_kernel.find(key);
  if (it != g_is_kernel.end()) {
    return it->second;
  }
  static const std::set<std::string> kAllocation = {
      "aten::empty", "aten::empty_strided", "aten::resize_"};
  // Multi-tensor and fused operators are one launch (a few, by chunk) on CUDA; a CPU-only
  // LibTorch registers no CUDA kernels and runs some of them as a loop of per-tensor ones.
  const bool multi_tensor =
      op.name.rfind("aten::_foreach_", 0) == 0 || op.name.rfind("aten::_fused_", 0) == 0;
  bool kernel = false;
  auto handle = c10::Dispatcher::singleton().findSchema(op);
  if (handle && kAllocation.count(op.name) == 0 &&
      (multi_tensor || handle->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
       handle->hasKernelForDispatchKey(c10::DispatchKey::CUDA))) {
    const auto& returns = handle->schema().returns();
    kernel = returns.empty();  // a void in-place operator, e.g. _foreach_add_
    if (!returns.empty()) {
      const auto* alias = returns[0].alias_info();
      const auto kind = returns[0].type()->kind();
      kernel = (alias == nullptr || alias->isWrite()) &&
               (kind == c10::TypeKind::TensorType || kind == c10::TypeKind::ListType);
    }
  }
  g_is_kernel.emplace(key, kernel);
  return kernel;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  // The operators that hand a tensor's value (or its size) to the host: on a GPU the host
  // waits for every kernel queued before them. A value read inside a kernel (the CPU fused
  // Adam reads its step count) is that kernel's host tensor, not a device read; nonzero syncs
  // wherever it runs (masked_select calls it).
  const char* name = fn.name();
  auto& inside = open_operators();
  const bool parent_inside = !inside.empty() && inside.back();
  if ((!parent_inside && std::strcmp(name, "aten::_local_scalar_dense") == 0) ||
      std::strcmp(name, "aten::nonzero") == 0) {
    ++g_reads;
    if (g_trace_reads) {
      fmt::print(stderr, "OpCounter: host read ({}) at\n{}\n", name, c10::get_backtrace(1, 16));
    }
  }
  bool counted = false;
  if (!parent_inside) {
    if (const auto op = fn.operator_name()) {
      std::lock_guard<std::mutex> lock(g_mutex);
      counted = is_kernel_locked(*op);
      if (counted) {
        ++g_counts[op->name];
      }
    }
  }
  inside.push_back(parent_inside || counted);
  return nullptr;
}

void on_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  auto& inside = open_operators();
  if (!inside.empty()) {  // empty: started before the counter existed
    inside.pop_back();
  }
}

}  // namespace

OpCounter::OpCounter() {
  LENGEN_CHECK(!g_active.exchange(true), "internal: only one OpCounter may exist at a time");
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_counts.clear();
  }
  g_reads = 0;
  ++g_generation;
  const char* trace = std::getenv("LENGEN_TRACE_READS");
  g_trace_reads = trace != nullptr && std::string(trace) == "1";
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OpCounter::~OpCounter() {
  at::removeCallback(handle_);
  g_active = false;
}

int64_t OpCounter::kernels() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t n = 0;
  for (const auto& [name, count] : g_counts) {
    n += count;
  }
  return n;
}

int64_t OpCounter::host_reads() const {
  return g_reads;
}

std::map<std::string, int64_t> OpCounter::by_name() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

}  // namespace lengen
