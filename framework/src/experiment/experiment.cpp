// Experiment::from_node (the validated sections, each component built once to check every
// length fits), training data and model building, devices and dtypes. Loading the file is
// load.cpp, `stages:` stages.cpp, `task.mixture` mixture.cpp, config.yaml resolved.cpp.
#include "lengen/experiment/experiment.h"

#include "schemes.h"
#include "util.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/core/version.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"

#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>

namespace fs = std::filesystem;

namespace lengen {

namespace {

// IDs of examples as the architecture lays them out: [L, B, T] tensors, the decoder's (or
// the encoder's) and the source's for seq2seq (padding 0). A task that cannot render the
// layout is reported by check_layout; its one-sequence IDs are checked meanwhile.
std::vector<torch::Tensor> layout_ids(const Task& task,
                                      const Architecture& arch,
                                      const std::vector<Example>& examples) {
  Batch b;
  try {
    b = arch.make_batch(task, examples);
  } catch (const Error&) {
    b = make_batch(examples, 0);
  }
  std::vector<torch::Tensor> out{b.ids};
  if (b.source_ids.defined()) {
    out.push_back(b.source_ids);
  }
  return out;
}

}  // namespace

namespace {

// Loads the plugins a file lists (paths relative to the file); returns their paths.
std::vector<std::string> load_file_plugins(const ConfigNode& plugins, const std::string& path) {
  std::vector<std::string> loaded;
  if (plugins.defined()) {
    const ConfigNode list = plugins.is_sequence() ? plugins : ConfigNode();
    for (size_t i = 0; i < (list.defined() ? list.size() : 1); ++i) {
      ConfigNode p = list.defined() ? list.at(i) : plugins;
      fs::path pp = p.as_string();
      if (pp.is_relative()) {
        pp = fs::path(path).parent_path() / pp;
      }
      try {
        load_plugin(pp.string());
      } catch (const Error& err) {
        p.fail(err.what());
      }
      loaded.push_back(pp.string());
    }
  }
  return loaded;
}

// The evaluation settings fit the architecture and the model; a mixture sizes its own sources.
void check_eval_settings(const Experiment& e) {
  const ConfigNode& root = e.root;
  for (const EvalConfig* ec : {&e.eval, &e.curve_eval}) {
    if (ec->adaptive_loops > 0 && !architecture(e.model.arch)->one_pass()) {
      root.child("eval")
          .child("adaptive_loops")
          .fail(fmt::format("eval.adaptive_loops picks among whole outputs of one forward pass "
                            "(model.arch: encoder); "
                            "'{}' decodes token by token",
                            e.model.arch));
    }
    if (ec->loops > 0 && e.model.loops_per_length > 0) {
      root.child("eval").child("loops").fail(
          "eval.loops fixes one loop count, but model.loops_per_length gives each sample its own; "
          "use eval.adaptive_loops to run more loops");
    }
  }
  if (!e.sources.empty() && e.train.dataset_size > 0) {
    root.child("train")
        .child("dataset_size")
        .fail(
            "train.dataset_size does not apply to a task.mixture: give each source its own "
            "dataset_size");
  }
}

// Without a causal mask nothing tells positions apart: an encoder whose schemes add no
// position information gives equal tokens equal outputs.
void warn_if_unordered(const Experiment& e,
                       const std::vector<std::shared_ptr<PositionScheme>>& schemes) {
  if (architecture(e.model.arch)->one_pass() &&
      std::all_of(
          schemes.begin(), schemes.end(), [](const auto& s) { return s->hooks() == kHookNone; })) {
    logger("config")->warn(
        "{}: an encoder whose position schemes add no position information is "
        "permutation-equivariant: "
        "equal input tokens (e.g. the output slots) always get equal outputs, so a task whose "
        "output "
        "slots must differ cannot be learned; add a scheme with positions (e.g. rpe_k)",
        e.file);
  }
}

// Every evaluation cell (of the grid and of the eval curve) can be sampled, carries the
// breakdown's features, and fits every scheme (e.g. IDs <= max_position).
void check_eval_cells(const Experiment& e,
                      const std::vector<std::shared_ptr<PositionScheme>>& schemes) {
  const ConfigNode& root = e.root;
  std::vector<GridCell> cells = e.eval.cells();
  for (const auto& c : e.curve_eval.cells()) {
    if (std::find(cells.begin(), cells.end(), c) == cells.end())
      cells.push_back(c);
  }
  for (const auto& cell : cells) {
    Rng rng(mix_seed(e.eval.seed, {0xC0FFEE}));
    Example ex;
    try {
      ex = e.task->sample_eval(cell, rng);
    } catch (const Error& err) {
      root.child("eval").fail(
          fmt::format("grid cell {}: {}", YAML::Dump(YAML::Node(cell)), err.what()));
    }
    for (const EvalConfig* ec : {&e.eval, &e.curve_eval}) {
      for (const auto& f : ec->breakdown) {
        if (ex.meta.count(f) == 0) {
          std::vector<std::string> have;
          for (const auto& [k, v] : ex.meta) {
            if (cell.count(k) == 0)
              have.push_back(k);
          }
          const ConfigNode n = root.child("eval").child("breakdown");
          (n.defined() ? n : root.child("eval"))
              .fail(fmt::format(
                  "eval.breakdown: the task writes no feature '{}' (its examples carry: {}){}",
                  f,
                  have.empty() ? std::string("none") : join(have),
                  did_you_mean(f, have)));
        }
      }
    }
    const auto ids = layout_ids(*e.task, *architecture(e.model.arch), {ex});
    for (size_t i = 0; i < schemes.size(); ++i) {
      try {
        for (const auto& t : ids) {
          schemes[i]->check_ids(t);
        }
      } catch (const Error& err) {
        std::string c;
        for (const auto& [k, v] : cell) {
          c += fmt::format("{}{}={}", c.empty() ? "" : ", ", k, v);
        }
        e.position_nodes[i].fail(
            fmt::format("evaluation cell {} cannot be represented: {} "
                        "(shrink eval.grid or raise the scheme's limit)",
                        c,
                        err.what()));
      }
    }
  }
}

// The task renders training examples in the architecture's layout, and every scheme takes
// their IDs.
void check_training_sample(const Experiment& e,
                           const std::vector<std::shared_ptr<PositionScheme>>& schemes) {
  const ConfigNode& root = e.root;
  Rng rng(mix_seed(e.seed, {0xC0FFEE}));
  std::vector<Example> sample;
  for (int i = 0; i < 256; ++i) {
    sample.push_back(
        e.sources.empty()
            ? e.task->sample_train(rng)
            : e.sources[static_cast<size_t>(i) % e.sources.size()].task->sample_train(rng));
  }
  // The task must render its examples in the architecture's layout (a refusal names both).
  const std::string task_name =
      e.task_node.is_scalar() ? e.task_node.as_string() : e.task_node.child("name").as_string();
  try {
    architecture(e.model.arch)->check_layout(*e.task, task_name, sample);
  } catch (const Error& err) {
    root.child("model").child("arch").fail(err.what());
  }
  for (size_t i = 0; i < schemes.size(); ++i) {
    try {
      for (const auto& t : layout_ids(*e.task, *architecture(e.model.arch), sample)) {
        schemes[i]->position_ids(t, /*offset=*/0, /*training=*/true);
      }
    } catch (const Error& err) {
      e.position_nodes[i].fail(
          fmt::format("training examples cannot be represented: {}", err.what()));
    }
  }
}

}  // namespace

Experiment Experiment::from_node(const ConfigNode& root_in,
                                 const std::string& path,
                                 bool allow_stages) {
  Experiment e;
  e.file = path;
  const ConfigNode root = root_in;
  e.root = root;
  const Options top = Options::validate(schema(), root, {});
  e.name = top.given("name") ? top.get_string("name") : fs::path(path).stem().string();
  e.seed = static_cast<uint64_t>(top.get_int("seed"));
  e.device = top.get_string("device");
  e.dtype = top.get_string("dtype");
  e.output_dir = top.get_string("output_dir");
  e.threads = top.get_int("threads");

  // Plugins listed in the file are loaded first (paths relative to the file).
  e.plugins = load_file_plugins(top.node("plugins"), path);

  ConfigNode task_in = top.node("task");
  ConfigNode mixture = task_in.is_map() ? task_in.child("mixture") : ConfigNode();
  e.task_node = mixture.defined() ? without_keys(task_in, {"mixture"}) : task_in;
  e.task = task_registry().create(e.task_node, TaskContext{});
  if (mixture.defined() && mixture.size() > 0) {
    e.sources = parse_mixture(e.task_node, mixture, e.task);
    e.mixture_node = mixture;
  }
  e.model = ModelConfig::from_config(root.child("model"));

  ConfigNode pos = top.node("position");
  if (pos.is_sequence()) {
    if (pos.size() == 0) {
      pos.fail("position: lists no scheme; use [nope] for no position information");
    }
    for (size_t i = 0; i < pos.size(); ++i) {
      e.position_nodes.push_back(pos.at(i));
    }
  } else {
    e.position_nodes.push_back(pos);
  }
  e.train = TrainConfig::from_config(root.child("train"));
  e.eval = EvalConfig::from_config(root.child("eval"), e.task->grid_axes());
  e.curve_eval = e.train.eval_every > 0
                     ? EvalConfig::from_config(merge_config(root.child("eval"), e.train.eval_grid),
                                               e.task->grid_axes())
                     : e.eval;
  check_eval_settings(e);
  e.paper_node = root.child("paper");
  e.paper = PaperReference::from_config(e.paper_node, e.eval.axes(), false);
  ConfigNode stages = root.child("stages");
  if (stages.defined() && !allow_stages) {
    stages.fail("a stage cannot have stages of its own");
  }

  // Build the schemes now, as the first model will (from its seed): they validate their
  // options and check that every evaluation cell and the training distribution fit (e.g. IDs
  // <= max_position), so an impossible length fails before training instead of after it. That
  // model then takes them (build_model): each scheme is built once per model. The caller's
  // generator state is put back.
  {
    CpuGeneratorRestore restore;
    e.built_schemes = build_ahead(
        e.seed, scheme_context(e.model, e.task->position_levels(), e.run_dir()), e.position_nodes);
    const auto& schemes = e.built_schemes->schemes;
    warn_if_unordered(e, schemes);
    check_eval_cells(e, schemes);
    check_training_sample(e, schemes);
  }
  if (stages.defined()) {
    e.parse_stages(stages);
  }
  return e;
}

TrainingData Experiment::training_data(const std::string& run) const {
  if (sources.empty())
    return TrainingData(task, train.dataset_size, seed);
  std::vector<DataSource> resolved = sources;
  for (auto& s : resolved) {
    if (!s.from_stages.empty())
      s.examples = stage_labels(s, run);
  }
  return TrainingData(resolved, seed);
}

std::vector<Example> Experiment::stage_labels(const DataSource& s, const std::string& run) const {
  std::vector<Example> out;
  for (const auto& stage : s.from_stages) {
    const fs::path labels = RunDir(run.empty() ? run_dir() : run).stage(stage).labels();
    if (!fs::exists(labels)) {
      throw Error(fmt::format(
          "mixture source '{}' trains on the labels of stage '{}' ({}), which do not exist: "
          "that self_label stage must run before this one",
          s.name,
          stage,
          labels.string()));
    }
    auto examples = read_labelled_examples(labels.string(), *task);
    if (examples.empty()) {
      logger()->warn("mixture source '{}': stage '{}' kept no labelled example ({})",
                     s.name,
                     stage,
                     labels.string());
    }
    out.insert(out.end(),
               std::make_move_iterator(examples.begin()),
               std::make_move_iterator(examples.end()));
  }
  LENGEN_CHECK(!out.empty(),
               "mixture source '{}': {} kept no labelled example; nothing to train on",
               s.name,
               s.from_stages.size() == 1
                   ? fmt::format("stage '{}'", s.from_stages[0])
                   : fmt::format("none of the stages '{}'", join(s.from_stages, "', '")));
  return out;
}

Transformer Experiment::build_model(const torch::Device& device) const {
  // Initialisation draws from torch's generator, which LibTorch seeds non-deterministically:
  // derive it from the experiment seed so a run (and a killed-and-resumed run) is reproducible.
  torch::manual_seed(model_init_seed(seed));
  const SchemeContext sc = scheme_context(model, task->position_levels(), run_dir());
  std::optional<std::vector<std::shared_ptr<PositionScheme>>> schemes;
  if (built_schemes)
    schemes = built_schemes->take(scheme_key(seed, sc, position_nodes));
  if (!schemes)
    schemes = build_schemes(position_nodes, sc);
  Transformer m(model, task->vocabulary().size(), *schemes);
  m->to(device);
  if (dtype == "float64") {
    m->to(torch::kFloat64);
  }
  return m;
}

std::string Experiment::run_dir() const {
  if (!dir.empty())
    return dir;
  return (fs::path(output_dir) / name / std::to_string(seed)).string();
}

torch::Device Experiment::torch_device() const {
  if (device == "cuda") {
    LENGEN_CHECK(torch::cuda::is_available(),
                 "{}: device is 'cuda' but this LibTorch sees no CUDA device (use cpu or auto)",
                 file);
    return torch::Device(torch::kCUDA);
  }
  if (device == "auto" && torch::cuda::is_available()) {
    return torch::Device(torch::kCUDA);
  }
  return torch::Device(torch::kCPU);
}

bool Experiment::bf16_autocast(const torch::Device& dev) const {
  if (dtype != "bfloat16") {
    return false;
  }
  if (!dev.is_cuda()) {
    logger()->warn(
        "{}: dtype bfloat16 is autocast on CUDA only; training in float32 on {}", file, dev.str());
    return false;
  }
  return true;
}

torch::Dtype Experiment::torch_dtype() const {
  return dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

}  // namespace lengen
