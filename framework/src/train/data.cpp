#include "lengen/train/data.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/rng.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <numeric>

namespace lengen {

TrainingData::TrainingData(std::shared_ptr<const Task> task, int64_t dataset_size, uint64_t seed)
    : seed_(seed), single_(true) {
  LENGEN_CHECK(task != nullptr, "training data needs a task");
  DataSource only;
  only.name = "train";
  only.task = std::move(task);
  only.weight = 1.0;
  only.dataset_size = dataset_size;
  sources_.push_back(std::move(only));
  build_sets();
}

TrainingData::TrainingData(std::vector<DataSource> sources, uint64_t seed)
    : sources_(std::move(sources)), seed_(seed) {
  LENGEN_CHECK(!sources_.empty(), "a mixture needs at least one source");
  size_t with_weight = 0;
  for (const auto& s : sources_) {
    LENGEN_CHECK(s.task != nullptr, "mixture source '{}' has no task", s.name);
    LENGEN_CHECK(s.weight >= 0 && s.dataset_size >= 0,
                 "mixture source '{}': weight and dataset_size "
                 "must be >= 0",
                 s.name);
    with_weight += s.weight > 0 ? 1 : 0;
  }
  for (auto& s : sources_) {
    if (!s.examples.empty())
      s.dataset_size = static_cast<int64_t>(s.examples.size());
  }
  weighted_ = with_weight > 0;
  if (weighted_) {
    LENGEN_CHECK(with_weight == sources_.size(),
                 "a mixture gives a weight to every source or to none");
    double total = 0;
    for (const auto& s : sources_)
      total += s.weight;
    double acc = 0;
    for (const auto& s : sources_) {
      acc += s.weight / total;
      cumulative_.push_back(acc);
    }
    cumulative_.back() = 1.0;
  } else {
    for (const auto& s : sources_) {
      LENGEN_CHECK(s.dataset_size > 0,
                   "mixture source '{}' has neither a weight nor a dataset_size: "
                   "an unweighted mixture is the union of fixed sets",
                   s.name);
    }
  }
  build_sets();
}

void TrainingData::build_sets() {
  sets_.assign(sources_.size(), {});
  for (size_t k = 0; k < sources_.size(); ++k) {
    const auto& s = sources_[k];
    if (!s.examples.empty()) {
      sets_[k] = s.examples;
      continue;
    }
    if (s.dataset_size <= 0)
      continue;
    // One source keeps the seed it always had, so single-task runs are unchanged.
    Rng rng(single_ ? mix_seed(seed_, {0xDA7A})
                    : mix_seed(seed_, {0xDA7A, static_cast<uint64_t>(k)}));
    sets_[k].reserve(static_cast<size_t>(s.dataset_size));
    for (int64_t i = 0; i < s.dataset_size; ++i)
      sets_[k].push_back(s.task->sample_train(rng));
  }
  if (!weighted_) {
    for (size_t k = 0; k < sets_.size(); ++k) {
      for (size_t i = 0; i < sets_[k].size(); ++i)
        union_.emplace_back(static_cast<int>(k), static_cast<int64_t>(i));
    }
  }
}

std::vector<Example> TrainingData::batch(int64_t step,
                                         int64_t batch_size,
                                         std::vector<int>* source_of) {
  std::vector<Example> out;
  out.reserve(static_cast<size_t>(batch_size));
  if (source_of)
    source_of->clear();
  auto emit = [&](int k, Example e) {
    out.push_back(std::move(e));
    if (source_of)
      source_of->push_back(k);
  };
  if (weighted_) {
    Rng rng(mix_seed(seed_, {static_cast<uint64_t>(step), 4}));
    for (int64_t i = 0; i < batch_size; ++i) {
      const double u = rng.uniform();
      int k = 0;
      while (k + 1 < static_cast<int>(cumulative_.size()) &&
             u >= cumulative_[static_cast<size_t>(k)])
        ++k;
      const auto& set = sets_[static_cast<size_t>(k)];
      if (set.empty()) {
        emit(k, sources_[static_cast<size_t>(k)].task->sample_train(rng));
      } else {
        emit(k, set[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(set.size()) - 1))]);
      }
    }
    return out;
  }
  if (union_.empty()) {  // one online source
    Rng rng(mix_seed(seed_, {static_cast<uint64_t>(step), 1}));
    for (int64_t i = 0; i < batch_size; ++i)
      emit(0, sources_[0].task->sample_train(rng));
    return out;
  }
  // Epochs over the fixed set (or the union of fixed sets), each a permutation seeded by
  // (seed, epoch).
  const int64_t N = static_cast<int64_t>(union_.size());
  for (int64_t i = 0; i < batch_size; ++i) {
    const int64_t g = step * batch_size + i;
    const int64_t epoch = g / N;
    if (epoch != perm_epoch_) {
      perm_.resize(static_cast<size_t>(N));
      std::iota(perm_.begin(), perm_.end(), 0);
      Rng rng(mix_seed(seed_, {static_cast<uint64_t>(epoch), 2}));
      for (int64_t j = N - 1; j > 0; --j)
        std::swap(perm_[j], perm_[rng.uniform_int(0, j)]);
      perm_epoch_ = epoch;
    }
    const auto [k, idx] = union_[static_cast<size_t>(perm_[g % N])];
    emit(k, sets_[static_cast<size_t>(k)][static_cast<size_t>(idx)]);
  }
  return out;
}

void write_labelled_examples(const std::string& path,
                             const std::vector<Example>& examples,
                             const Task& task) {
  std::string out;
  for (const auto& ex : examples) {
    nlohmann::json j{{"text", task.render(ex.tokens)},
                     {"tokens", ex.tokens},
                     {"prompt_length", ex.prompt_length}};
    out += j.dump() + "\n";
  }
  write_file_atomic(path, out);
}

std::vector<Example> read_labelled_examples(const std::string& path, const Task& task) {
  std::ifstream in(path);
  LENGEN_CHECK(in.good(), "{}: cannot read self-labelled examples (no such file)", path);
  const int64_t V = task.vocabulary().size();
  std::vector<Example> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.empty())
      continue;
    Example ex;
    try {
      const auto j = nlohmann::json::parse(line);
      // Integers only: a number JSON holds as a float (1e30, 3.4) has no token id, and converting
      // one out of int64's range is undefined behaviour.
      const auto& tokens = j.at("tokens");
      if (!tokens.is_array()) {
        throw Error(fmt::format("{}:{}: tokens is a JSON {}, expected a list of token ids",
                                path,
                                n,
                                tokens.type_name()));
      }
      for (const auto& t : tokens) {
        if (!t.is_number_integer()) {
          throw Error(
              fmt::format("{}:{}: token {} is not a token id (an integer)", path, n, t.dump()));
        }
        ex.tokens.push_back(t.get<int64_t>());
      }
      const auto& prompt = j.at("prompt_length");
      if (!prompt.is_number_integer()) {
        throw Error(
            fmt::format("{}:{}: prompt_length {} is not an integer", path, n, prompt.dump()));
      }
      ex.prompt_length = prompt.get<int64_t>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format(
          "{}:{}: not a labelled example ({{\"tokens\": [...], \"prompt_length\": P}}): {}",
          path,
          n,
          e.what()));
    }
    const int64_t T = ex.length();
    if (ex.prompt_length < 1 || ex.prompt_length >= T) {
      throw Error(
          fmt::format("{}:{}: prompt_length {} must leave a response in a sequence of {} tokens",
                      path,
                      n,
                      ex.prompt_length,
                      T));
    }
    for (int64_t t : ex.tokens) {
      if (t < 0 || t >= V) {
        throw Error(fmt::format(
            "{}:{}: token id {} is outside the task's vocabulary of {}", path, n, t, V));
      }
    }
    ex.position_ids = task.causal_position_ids(ex.tokens, ex.prompt_length);
    ex.loss_mask.assign(static_cast<size_t>(T), 0);
    std::fill(ex.loss_mask.begin() + ex.prompt_length, ex.loss_mask.end(), 1);
    ex.answer_begin = ex.prompt_length;
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace lengen
