#include "lengen/experiment/experiment.h"
#include "lengen/train/objective.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/version.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"
#include "lengen/train/batch.h"

#include <filesystem>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace fs = std::filesystem;

namespace lengen {

int64_t configure_threads(int64_t threads) {
#ifdef __GLIBC__
  // Training allocates and frees the same large activation buffers every step. Past glibc's
  // default mmap threshold each of those is an mmap/munmap pair plus page faults (measured: a
  // third of the quickstart's step time was system time). Keep them on the heap instead.
  static const bool tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)tuned;
#endif
  int64_t n = threads > 0 ? threads : static_cast<int64_t>(std::thread::hardware_concurrency());
  n = std::max<int64_t>(1, n);
  torch::set_num_threads(static_cast<int>(n));
  return n;
}

namespace {

SchemeContext scheme_context(const ModelConfig& m, int64_t levels) {
  SchemeContext c;
  c.d_model = m.d_model;
  c.heads = m.heads;
  c.head_dim = m.head_dim();
  c.layers = m.attention_layers();  // one table per distinct block, not per loop
  c.position_levels = levels;
  return c;
}

std::vector<std::shared_ptr<PositionScheme>> build_schemes(const std::vector<ConfigNode>& nodes,
                                                           const SchemeContext& ctx) {
  std::vector<std::shared_ptr<PositionScheme>> out;
  for (const auto& n : nodes) {
    out.push_back(position_registry().create(n, ctx));
  }
  return out;
}

// IDs of examples as a [L, B, T] tensor (padding 0).
torch::Tensor ids_tensor(const std::vector<Example>& examples) {
  return make_batch(examples, 0).ids;
}

}  // namespace

Experiment Experiment::load(const std::string& path, const std::vector<std::string>& overrides) {
  Experiment e;
  e.file = path;
  ConfigNode root = apply_overrides(load_config_file(path), overrides);
  MapReader r(root);
  e.name = r.get_string("name", fs::path(path).stem().string());
  e.seed = static_cast<uint64_t>(r.get_int("seed", 0));
  e.device = r.get_choice("device", e.device, {"cpu", "cuda", "auto"});
  e.dtype = r.get_choice("dtype", e.dtype, {"float32", "float64", "bfloat16"});
  e.output_dir = r.get_string("output_dir", e.output_dir);
  e.threads = r.get_int("threads", e.threads);
  r.ignore("provenance");  // written into resolved configs; informational only

  // Plugins listed in the file are loaded first (paths relative to the file).
  ConfigNode plugins = r.child("plugins");
  if (plugins.defined()) {
    for (size_t i = 0; i < plugins.size(); ++i) {
      ConfigNode p = plugins.at(i);
      fs::path pp = p.as_string();
      if (pp.is_relative()) {
        pp = fs::path(path).parent_path() / pp;
      }
      try {
        load_plugin(pp.string());
      } catch (const Error& err) {
        p.fail(err.what());
      }
      e.plugins.push_back(pp.string());
    }
  }

  e.task_node = r.required("task");
  e.task = task_registry().create(e.task_node, TaskContext{});
  e.model = ModelConfig::from_config(r.child("model"));

  ConfigNode pos = r.required("position");
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
  e.train = TrainConfig::from_config(r.child("train"));
  e.eval = EvalConfig::from_config(r.child("eval"), e.task->grid_axes());
  r.finish();

  // Build the schemes once now: validates their options and lets them check that every
  // evaluation cell and the training distribution fit (e.g. IDs <= max_position), so an
  // impossible length fails before training instead of after it.
  auto schemes = build_schemes(e.position_nodes, scheme_context(e.model, e.task->position_levels()));
  for (const auto& cell : e.eval.cells()) {
    Rng rng(mix_seed(e.eval.seed, {0xC0FFEE}));
    Example ex;
    try {
      ex = e.task->sample_eval(cell, rng);
    } catch (const Error& err) {
      root.child("eval").fail(fmt::format("grid cell {}: {}", YAML::Dump(YAML::Node(cell)), err.what()));
    }
    for (size_t i = 0; i < schemes.size(); ++i) {
      try {
        schemes[i]->check_ids(ids_tensor({ex}));
      } catch (const Error& err) {
        std::string c;
        for (const auto& [k, v] : cell) {
          c += fmt::format("{}{}={}", c.empty() ? "" : ", ", k, v);
        }
        e.position_nodes[i].fail(fmt::format("evaluation cell {} cannot be represented: {} "
                                             "(shrink eval.grid or raise the scheme's limit)",
                                             c, err.what()));
      }
    }
  }
  {
    Rng rng(mix_seed(e.seed, {0xC0FFEE}));
    std::vector<Example> sample;
    for (int i = 0; i < 256; ++i) {
      sample.push_back(e.task->sample_train(rng));
    }
    // The task must render its examples in the architecture's layout (a refusal names both).
    const std::string task_name =
        e.task_node.is_scalar() ? e.task_node.as_string() : e.task_node.child("name").as_string();
    try {
      check_layout(*e.task, task_name, architecture(e.model.arch), sample);
    } catch (const Error& err) {
      root.child("model").child("arch").fail(err.what());
    }
    for (size_t i = 0; i < schemes.size(); ++i) {
      try {
        schemes[i]->transform_ids(ids_tensor(sample), /*offset=*/0, /*training=*/true);
      } catch (const Error& err) {
        e.position_nodes[i].fail(fmt::format("training examples cannot be represented: {}",
                                             err.what()));
      }
    }
  }
  return e;
}

Transformer Experiment::build_model(const torch::Device& device) const {
  // Initialisation draws from torch's generator, which LibTorch seeds non-deterministically:
  // derive it from the experiment seed so a run (and a killed-and-resumed run) is reproducible.
  torch::manual_seed(mix_seed(seed, {0x1A17}));
  auto schemes = build_schemes(position_nodes, scheme_context(model, task->position_levels()));
  Transformer m(model, task->vocabulary().size(), schemes);
  m->to(device);
  if (dtype == "float64") {
    m->to(torch::kFloat64);
  }
  return m;
}

std::string Experiment::run_dir() const {
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
    logger()->warn("{}: dtype bfloat16 is autocast on CUDA only; training in float32 on {}", file,
                   dev.str());
    return false;
  }
  return true;
}

torch::Dtype Experiment::torch_dtype() const {
  return dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

std::string Experiment::resolved_yaml() const {
  YAML::Node n;
  n["name"] = name;
  n["seed"] = seed;
  n["device"] = device;
  n["dtype"] = dtype;
  n["output_dir"] = output_dir;
  n["threads"] = threads;
  if (!plugins.empty()) {
    n["plugins"] = plugins;
  }
  YAML::Node t = task_registry().options_of(task_node).to_yaml();
  YAML::Node task_yaml;
  task_yaml["name"] = task_node.is_scalar() ? task_node.as_string() : task_node.child("name").as_string();
  for (const auto& kv : t) {
    task_yaml[kv.first] = kv.second;
  }
  n["task"] = task_yaml;
  n["model"] = model.to_yaml();
  for (const auto& pn : position_nodes) {
    YAML::Node p;
    p["name"] = pn.is_scalar() ? pn.as_string() : pn.child("name").as_string();
    for (const auto& kv : position_registry().options_of(pn).to_yaml()) {
      p[kv.first] = kv.second;
    }
    n["position"].push_back(p);
  }
  n["train"] = train.to_yaml();
  n["eval"] = eval.to_yaml();
  YAML::Node prov;
  prov["lengen"] = kVersion;
  prov["torch"] = torch_version();
  prov["source"] = file;
  for (const auto& lp : loaded_plugins()) {
    YAML::Node p;
    p["name"] = lp.origin.plugin;
    p["version"] = lp.origin.version;
    p["path"] = lp.origin.library;
    p["abi"] = lp.abi_version;
    p["api"] = lp.api_version;
    p["torch"] = lp.torch_version;
    prov["plugins"].push_back(p);
  }
  n["provenance"] = prov;
  return to_yaml(n);
}

}  // namespace lengen
