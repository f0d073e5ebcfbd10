#pragma once

#include "lengen/core/export.h"
#include "lengen/task/task.h"

#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// One source of training examples: a task (its own options, e.g. its own length range), a
/// weight and either a fixed set of `dataset_size` examples or fresh samples (0).
struct DataSource {
  std::string name;                  ///< label in logs and `lengen example`
  std::shared_ptr<const Task> task;  ///< shares the experiment task's vocabulary and ID levels
  double weight = 0;                 ///< > 0; 0 = not given (union of fixed sets, see below)
  int64_t dataset_size = 0;          ///< 0: online; N: a fixed set of N examples
  /// The self_label stages of this run whose labelled examples, together, are this source's
  /// fixed set (`from_stage:` a name or a list; Experiment::stage_labels reads them).
  std::vector<std::string> from_stages;
  std::vector<Example> examples;  ///< given examples: the fixed set, instead of samples
};

/// Self-labelled examples (a self_label stage's labels.jsonl), one JSON object per line:
/// {"text": rendered, "tokens": [ids], "prompt_length": P}. Written atomically.
LENGEN_API void write_labelled_examples(const std::string& path,
                                        const std::vector<Example>& examples,
                                        const Task& task);
/// Reads them back as training examples: the prompt, then the labelled response scored (loss
/// mask 1), with the task's causal position IDs (those decoding gave them). Fails naming the
/// file and line on a malformed line or a token outside the task's vocabulary.
LENGEN_API std::vector<Example> read_labelled_examples(const std::string& path, const Task& task);

/// Where each training batch comes from, deterministic in (seed, step):
///   * one source (today's `train.dataset_size`): fresh samples seeded by (seed, step), or a
///     fixed set visited in epochs, each a permutation seeded by (seed, epoch);
///   * a weighted mixture: each example picks its source with the given proportions, then a
///     uniform member of that source's fixed set or a fresh sample of it;
///   * an unweighted mixture of fixed sets: their union, visited in epochs like one fixed set
///     (Jelassi et al. 2023's priming: (1-eps) N standard examples and eps N primers, exactly).
class LENGEN_API TrainingData {
 public:
  TrainingData() = default;
  /// One source: `task`, online (dataset_size 0) or a fixed set.
  TrainingData(std::shared_ptr<const Task> task, int64_t dataset_size, uint64_t seed);
  /// A mixture; every source needs a weight, or every source a dataset_size and none a weight.
  TrainingData(std::vector<DataSource> sources, uint64_t seed);

  /// The `batch_size` examples of step `step`. `source_of` (optional) receives the index of
  /// the source of each example.
  std::vector<Example> batch(int64_t step,
                             int64_t batch_size,
                             std::vector<int>* source_of = nullptr);

  const std::vector<DataSource>& sources() const { return sources_; }

  bool weighted() const { return weighted_; }

 private:
  void build_sets();

  std::vector<DataSource> sources_;
  uint64_t seed_ = 0;
  bool weighted_ = false;
  bool single_ = false;
  std::vector<std::vector<Example>> sets_;      ///< fixed set per source (empty when online)
  std::vector<std::pair<int, int64_t>> union_;  ///< (source, index) of the union, unweighted
  std::vector<double> cumulative_;              ///< normalised cumulative weights
  std::vector<int64_t> perm_;
  int64_t perm_epoch_ = -1;
};

}  // namespace lengen
