#pragma once

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/core/rng.h"
#include "lengen/registry/registry.h"
#include "lengen/task/example.h"
#include "lengen/task/vocabulary.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lengen {

/// Framework facts a task may need at construction (none yet; kept for ABI stability).
struct TaskContext {};

/// One axis of a task's evaluation grid, e.g. {"digits", "operand length", 1, 30}.
struct GridAxis {
  std::string name;
  std::string doc;
  int64_t lo = 1;  ///< default range (inclusive); experiments may override it
  int64_t hi = 1;
  int64_t train_lo = 0;  ///< range seen in training (0, 0 when not meaningful); plots mark it
  int64_t train_hi = 0;
};

/// A point of the grid: axis name -> value.
using GridCell = std::map<std::string, int64_t>;

/// A task: vocabulary, data format, samplers and checking. Created by name from YAML.
///
/// Contract (checked by the contract tests for every registered task):
///   * every sampled example is well formed (sizes agree, BOS first, EOS last, ids in range);
///   * causal_position_ids(tokens, prompt_length) equals example.position_ids on every
///     correct example, and the IDs of a prefix do not depend on later tokens;
///   * parse_query(render_query(ex)) reproduces the example's prompt.
class LENGEN_API Task {
 public:
  virtual ~Task();

  virtual const Vocabulary& vocabulary() const = 0;

  /// L: how many levels of position IDs each example carries.
  virtual int64_t position_levels() const = 0;

  /// One training example from the training distribution.
  virtual Example sample_train(Rng& rng) const = 0;

  /// Axes of the evaluation grid with their default ranges.
  virtual std::vector<GridAxis> grid_axes() const = 0;

  /// One evaluation example for a grid cell; throws lengen::Error for impossible cells.
  virtual Example sample_eval(const GridCell& cell, Rng& rng) const = 0;

  /// Builds the example for a query typed by a user (e.g. "57+48"), formatted as the task's
  /// options say; the response is the reference answer when the task can compute it.
  virtual Example parse_query(const std::string& text) const = 0;

  /// Position IDs assigned causally: every ID depends only on the prompt (tokens before
  /// prompt_length) and the tokens up to and including it, never on a reference answer.
  /// tokens [T] -> [L][T]. Used for decoding.
  virtual PositionIds causal_position_ids(const std::vector<int64_t>& tokens,
                                          int64_t prompt_length) const = 0;

  /// Upper bound on the response length (EOS included) for a prompt; decoding stops there.
  virtual int64_t max_response_length(const std::vector<int64_t>& prompt) const = 0;

  /// Exact match of a predicted response (EOS included) against the example's reference.
  virtual bool exact_match(const Example& ex, const std::vector<int64_t>& response) const;

  /// Text of a token sequence (default: concatenated token strings, BOS/EOS shown as-is).
  virtual std::string render(const std::vector<int64_t>& tokens) const;

  /// The example as an encoder-decoder's (source, target) pair (plugin ABI >= 2). Default:
  /// the source is the prompt `BOS query =` with its IDs; the target is the prompt's last
  /// token (the start token, `=`) followed by the response, with the example's IDs, so every
  /// target token keeps the ID it has in the one-sequence layout. Override for a paper's own
  /// seq2seq format. Throws lengen::Error when the task has no such layout.
  virtual Seq2SeqExample to_seq2seq(const Example& ex) const;

  /// The example as an encoder's (input, per-position labels) (plugin ABI >= 2). Default: the
  /// prompt followed by one slot token (the pad token) per response token, labelled with the
  /// response (EOS included) and carrying the response's IDs. Throws lengen::Error when the
  /// response length is not the one max_response_length(prompt) fixes (the slot count would
  /// reveal the answer's length), e.g. an unpadded format. Override for a paper's layout
  /// (Jelassi et al.: labels on the first n_out input positions).
  virtual LabeledExample to_labeled(const Example& ex) const;

  /// The response a per-position prediction stands for: the inverse of to_labeled (plugin
  /// ABI >= 4). `predicted` holds the argmax label of every input position of `lx` [T].
  /// Default: the slots [slot_begin, T) with trailing pad tokens removed (labeled_response).
  /// A task whose to_labeled puts the labels elsewhere (Jelassi et al.: on the first n_out
  /// input positions, EOS not predicted) overrides both; the task contract checks that
  /// from_labeled(to_labeled(ex), labels) == ex.response().
  virtual std::vector<int64_t> from_labeled(const LabeledExample& lx,
                                            const std::vector<int64_t>& predicted) const;
};

/// Generated tokens back from an encoder's per-position outputs: the predicted labels of the
/// slots [slot_begin, T) with trailing pad tokens removed (the reference gives the response).
LENGEN_API std::vector<int64_t> labeled_response(const std::vector<int64_t>& predicted_slots,
                                                 int64_t pad_id);

/// The tasks (`task:`), and the one a Task class registers in (Registrar::add_task).
using TaskRegistry = Registry<Task, TaskContext>;
LENGEN_API TaskRegistry& task_registry();

inline TaskRegistry& registry_of(const Task*) {
  return task_registry();
}

}  // namespace lengen
