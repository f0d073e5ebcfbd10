// lengen._lengen: the C++ half of the Python package (docs/python.md). It opens runs through the
// same code as the CLI (lengen/stage/open_run.h), runs their models and hands tensors to Python
// as torch.Tensor without copies (LibTorch's own pybind11 casters, libtorch_python). The
// package's Python half (python/lengen/) builds the documented API on top of it.
#include "lengen/analysis/attention.h"
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/core/version.h"
#include "lengen/eval/decode.h"
#include "lengen/eval/evaluator.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"
#include "lengen/plugin/abi.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"
#include "lengen/stage/open_run.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"
#include "lengen/sweep/sweep.h"
#include "lengen/train/trainer.h"

#include <torch/extension.h>

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <memory>
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace lengen;

namespace {

// A YAML tree as Python values: maps to dicts, lists to lists, scalars to int, float, bool,
// None or str (in that order of trial), as a YAML reader would type them.
py::object to_python(const YAML::Node& n) {
  if (!n || n.IsNull())
    return py::none();
  if (n.IsMap()) {
    py::dict d;
    for (const auto& kv : n)
      d[py::str(kv.first.as<std::string>())] = to_python(kv.second);
    return std::move(d);
  }
  if (n.IsSequence()) {
    py::list l;
    for (const auto& v : n)
      l.append(to_python(v));
    return std::move(l);
  }
  const std::string text = n.Scalar();
  if (n.Tag() != "!") {  // not quoted: a number or a boolean where it reads as one
    int64_t i = 0;
    double x = 0;
    bool b = false;
    if (YAML::convert<int64_t>::decode(n, i))
      return py::int_(i);
    if (YAML::convert<double>::decode(n, x))
      return py::float_(x);
    if (YAML::convert<bool>::decode(n, b))
      return py::bool_(b);
  }
  return py::str(text);
}

// Sends lengen's log records to Python's logging ("lengen.<name>"). No mutex of its own: the
// GIL orders the records, so a thread that holds it (a call from Python) never waits on a sink
// that waits for it.
class PythonLogSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string name(msg.logger_name.data(), msg.logger_name.size());
    const std::string text(msg.payload.data(), msg.payload.size());
    int level = 20;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        level = 10;
        break;
      case spdlog::level::warn:
        level = 30;
        break;
      case spdlog::level::err:
        level = 40;
        break;
      case spdlog::level::critical:
        level = 50;
        break;
      default:
        break;
    }
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("logging").attr("getLogger")("lengen." + name).attr("log")(level, text);
    } catch (const py::error_already_set&) {
      // logging is being torn down (interpreter exit): drop the record
    }
  }

  void flush_() override {}
};

void log_to_python() {
  auto sink = std::make_shared<PythonLogSink>();
  for (const char* name :
       {"lengen", "calibrate", "config", "eval", "plugin", "stage", "sweep", "threads", "train"}) {
    auto l = logger(name);
    l->sinks().clear();
    l->sinks().push_back(sink);
  }
}

// Ctrl-C during a long call (a run, an evaluation): lengen's own handler asks the run to stop
// after its next checkpoint, as in the CLI; Python's is back when the call returns.
class StopOnInterrupt {
 public:
  StopOnInterrupt() {
    clear_stop();  // an earlier call's Ctrl-C is spent
    old_int_ = std::signal(SIGINT, on_signal);
    old_term_ = std::signal(SIGTERM, on_signal);
  }

  ~StopOnInterrupt() {
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }

 private:
  static void on_signal(int) { request_stop(); }

  void (*old_int_)(int);
  void (*old_term_)(int);
};

// A probe (ModelProbe) that calls a Python function at every site; what it returns must have
// the shape of what it was given.
std::shared_ptr<const ModelProbe> python_probe(const py::object& fn) {
  if (fn.is_none())
    return nullptr;
  auto probe = std::make_shared<ModelProbe>();
  probe->visit = [fn](const std::string& site, const torch::Tensor& value) {
    py::gil_scoped_acquire gil;  // held already in a forward; taken back in an evaluation
    py::object got = fn(site, value);
    if (got.is_none())
      return value;
    torch::Tensor out = got.cast<torch::Tensor>();
    LENGEN_CHECK(out.sizes() == value.sizes(),
                 "patch at '{}': returned a tensor of shape {}, expected {}",
                 site,
                 fmt::format("{}", fmt::join(out.sizes(), "x")),
                 fmt::format("{}", fmt::join(value.sizes(), "x")));
    return out.to(value.device(), value.scalar_type());
  };
  return probe;
}

// Sets a probe on a model for one call.
class ProbeScope {
 public:
  ProbeScope(Transformer& model, std::shared_ptr<const ModelProbe> probe) : model_(model) {
    model_->set_probe(std::move(probe));
  }

  ~ProbeScope() { model_->set_probe(nullptr); }

 private:
  Transformer& model_;
};

py::dict example_dict(const Task& task, const Example& e) {
  std::vector<std::string> toks;
  for (int64_t t : e.tokens)
    toks.push_back(task.vocabulary().token(t));
  std::vector<int> mask(e.loss_mask.begin(), e.loss_mask.end());
  py::dict d;
  d["text"] = task.render(e.tokens);
  d["tokens"] = toks;
  d["token_ids"] = e.tokens;
  d["position_ids"] = e.position_ids;
  d["loss_mask"] = mask;
  d["prompt_length"] = e.prompt_length;
  d["meta"] = e.meta;
  return d;
}

class PyRun {
 public:
  PyRun(const std::string& path,
        const std::string& stage,
        const std::string& device,
        const std::vector<std::string>& sets)
      : r_(open_run(path, sets, stage, device)) {}

  const Task& task() const { return *r_.exp.task; }

  std::string dir() const { return r_.dir; }

  std::string stage() const { return r_.stage; }

  std::string checkpoint() const { return r_.checkpoint; }

  std::string device() const { return r_.device.str(); }

  std::string architecture() const { return r_.model->arch().name(); }

  // The model reads one causal sequence a row (decoder): forward on token IDs applies.
  bool autoregressive() const { return r_.model->arch().one_sequence(); }

  py::object config() const { return to_python(YAML::Load(r_.whole.resolved_yaml())); }

  py::object stage_config() const { return to_python(YAML::Load(r_.exp.resolved_yaml())); }

  std::vector<std::string> vocabulary() const { return task().vocabulary().tokens(); }

  std::vector<std::string> attention_names() const { return r_.model->attention_names(); }

  int64_t heads() const { return r_.exp.model.heads; }

  py::list stages() const {
    py::list out;
    for (const auto& st : r_.whole.stages) {
      py::dict d;
      d["name"] = st.name;
      d["kind"] = st.kind;
      d["init_from"] = st.init_from;
      out.append(d);
    }
    return out;
  }

  py::dict example(const std::string& query) const {
    return example_dict(task(), task().parse_query(query));
  }

  // `n` evaluation samples of a grid cell, the ones `lengen attention` averages over.
  py::list samples(const GridCell& cell, int64_t n) const {
    for (const auto& a : task().grid_axes()) {
      LENGEN_CHECK(
          cell.count(a.name), "samples: the cell also needs '{}' (the task's grid axes)", a.name);
    }
    LENGEN_CHECK(n >= 1, "samples: n must be >= 1, got {}", n);
    py::list out;
    for (const auto& e : cell_samples(task(), cell, n, r_.exp.eval.seed))
      out.append(example_dict(task(), e));
    return out;
  }

  // The prompt of a query as `lengen logits` feeds it: its tokens and their causal IDs.
  std::pair<std::vector<int64_t>, PositionIds> prompt(const std::string& query) const {
    Example ex = task().parse_query(query);
    std::vector<int64_t> p(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
    return {p, causal_ids(p)};
  }

  // Prompts as one right-padded batch: tokens [B, T], ids [L, B, T], lengths [B].
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> prompt_batch(
      const std::vector<std::vector<int64_t>>& tokens, const std::vector<PositionIds>& ids) const {
    LENGEN_CHECK(!tokens.empty() && tokens.size() == ids.size(), "forward: no queries");
    const int64_t B = static_cast<int64_t>(tokens.size());
    const int64_t L = static_cast<int64_t>(ids[0].size());
    int64_t T = 0;
    for (const auto& t : tokens)
      T = std::max<int64_t>(T, static_cast<int64_t>(t.size()));
    auto tok = torch::zeros({B, T}, torch::kInt64);
    auto pid = torch::zeros({L, B, T}, torch::kInt64);
    auto len = torch::zeros({B}, torch::kInt64);
    auto tp = tok.accessor<int64_t, 2>();
    auto ip = pid.accessor<int64_t, 3>();
    for (int64_t b = 0; b < B; ++b) {
      const auto& t = tokens[static_cast<size_t>(b)];
      const auto& p = ids[static_cast<size_t>(b)];
      LENGEN_CHECK(static_cast<int64_t>(p.size()) == L,
                   "forward: query {} has {} levels of position IDs, query 0 {}",
                   b,
                   p.size(),
                   L);
      len[b] = static_cast<int64_t>(t.size());
      for (size_t i = 0; i < t.size(); ++i)
        tp[b][static_cast<int64_t>(i)] = t[i];
      for (int64_t l = 0; l < L; ++l) {
        const auto& row = p[static_cast<size_t>(l)];
        LENGEN_CHECK(row.size() == t.size(),
                     "forward: query {}: {} tokens but {} position IDs at level {}",
                     b,
                     t.size(),
                     row.size(),
                     l);
        for (size_t i = 0; i < row.size(); ++i)
          ip[l][b][static_cast<int64_t>(i)] = row[i];
      }
    }
    return {tok, pid, len};
  }

  // Queries' prompts as `lengen logits` feeds them, batched.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> query_batch(
      const std::vector<std::string>& queries) const {
    std::vector<std::vector<int64_t>> tokens;
    std::vector<PositionIds> ids;
    for (const auto& q : queries) {
      auto [t, p] = prompt(q);
      tokens.push_back(std::move(t));
      ids.push_back(std::move(p));
    }
    return prompt_batch(tokens, ids);
  }

  PositionIds causal_ids(const std::vector<int64_t>& tokens) const {
    for (int64_t t : tokens) {
      LENGEN_CHECK(t >= 0 && t < task().vocabulary().size(),
                   "token id {} is not in the vocabulary (0..{})",
                   t,
                   task().vocabulary().size() - 1);
    }
    return task().causal_position_ids(tokens, static_cast<int64_t>(tokens.size()));
  }

  // Decoder: tokens [B, T], ids [L, B, T] -> logits [B, T, V] and the attention maps.
  std::pair<torch::Tensor, std::vector<torch::Tensor>> forward(const torch::Tensor& tokens,
                                                               const torch::Tensor& ids,
                                                               bool attention,
                                                               const py::object& probe) {
    LENGEN_CHECK(autoregressive(),
                 "forward on token ids: the '{}' architecture reads queries (pass text)",
                 architecture());
    LENGEN_CHECK(tokens.dim() == 2 && ids.dim() == 3 && ids.size(1) == tokens.size(0) &&
                     ids.size(2) == tokens.size(1),
                 "forward: tokens [B, T] and ids [L, B, T] expected, got {} and {}",
                 fmt::format("{}", fmt::join(tokens.sizes(), "x")),
                 fmt::format("{}", fmt::join(ids.sizes(), "x")));
    torch::NoGradGuard no_grad;
    ProbeScope scope(r_.model, python_probe(probe));
    std::vector<torch::Tensor> maps;
    auto logits = r_.model->forward(tokens.to(r_.device, torch::kInt64),
                                    ids.to(r_.device, torch::kInt64),
                                    nullptr,
                                    attention ? &maps : nullptr);
    return {logits, maps};
  }

  // Any architecture: queries rendered in its layout (Architecture::make_batch) -> logits
  // aligned with the batch's targets, the batch's scored mask and the attention maps.
  std::tuple<torch::Tensor, torch::Tensor, std::vector<torch::Tensor>> forward_queries(
      const std::vector<std::string>& queries, bool attention, const py::object& probe) {
    std::vector<Example> examples;
    for (const auto& q : queries)
      examples.push_back(task().parse_query(q));
    torch::NoGradGuard no_grad;
    ProbeScope scope(r_.model, python_probe(probe));
    const Architecture& arch = r_.model->arch();
    Batch b = arch.make_batch(task(), examples).to(r_.device);
    std::vector<torch::Tensor> maps;
    auto logits = arch.logits(r_.model, b, attention ? &maps : nullptr);
    return {logits, b.mask, maps};
  }

  // Greedy, KV-cached: the rendered sequence, the response's tokens, the verdict.
  py::dict decode(const std::string& query) {
    Example ex = task().parse_query(query);
    std::vector<int64_t> all(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
    std::vector<int64_t> response;
    {
      py::gil_scoped_release release;
      response = lengen::decode(r_.model, task(), {ex}, r_.device)[0];
    }
    all.insert(all.end(), response.begin(), response.end());
    py::dict d;
    d["text"] = task().render(all);
    d["response_ids"] = response;
    d["reference"] = task().render(ex.tokens);
    d["correct"] = task().exact_match(ex, response);
    return d;
  }

  // The grid evaluation of `lengen eval`, with its grid or sample count changed.
  py::list evaluate(const std::map<std::string, std::vector<int64_t>>& grid,
                    int64_t samples,
                    bool decode,
                    const py::object& probe) {
    EvalConfig cfg = r_.exp.eval;
    for (const auto& [axis, values] : grid) {
      LENGEN_CHECK(cfg.grid.count(axis),
                   "evaluate: the task's grid has no axis '{}' (axes: {})",
                   axis,
                   join(cfg.axes()));
      LENGEN_CHECK(!values.empty(), "evaluate: no values for axis '{}'", axis);
      cfg.grid[axis] = values;
    }
    if (samples > 0)
      cfg.samples = samples;
    if (decode)
      cfg.greedy_decode = true;
    std::vector<CellResult> results;
    {
      ProbeScope scope(r_.model, python_probe(probe));
      // Python's own Ctrl-C handler stays: KeyboardInterrupt once the evaluation returns.
      py::gil_scoped_release release;
      results = evaluate_grid(r_.model, task(), cfg, r_.device);
    }
    py::list rows;
    for (const auto& c : results) {
      py::dict row;
      for (const auto& [axis, v] : c.cell)
        row[py::str(axis)] = v;
      row["samples"] = c.samples;
      row["correct"] = c.correct;
      row["accuracy"] = c.accuracy;
      row["ci_low"] = c.ci_low;
      row["ci_high"] = c.ci_high;
      rows.append(row);
    }
    return rows;
  }

 private:
  OpenRun r_;
};

// `lengen run FILE --set ...`: the run directory it wrote.
std::string run(const std::string& file,
                const std::vector<std::string>& sets,
                bool resume,
                bool fresh,
                bool no_eval,
                bool wait) {
  const Experiment exp = Experiment::load(file, sets);
  RunOptions options;
  options.resume = resume;
  options.fresh = fresh;
  options.no_eval = no_eval;
  options.wait = wait;
  {
    py::gil_scoped_release release;
    StopOnInterrupt stop;
    configure_threads(exp.threads);
    run_experiment(exp, options);
  }
  return exp.run_dir();
}

// `lengen sweep FILE` on this machine (the local executor), each point run by `lengen` (the
// CLI of this build or installation): the sweep folder.
std::pair<std::string, int64_t> sweep_here(const std::string& file,
                                           const std::vector<std::string>& sets,
                                           const std::vector<std::string>& only,
                                           int64_t jobs,
                                           const std::string& lengen,
                                           bool wait) {
  const sweep::Sweep whole = sweep::load_sweep(file, sets);
  sweep::Sweep s = whole;
  if (!only.empty())
    s.points = sweep::select_points(s, only);
  const int64_t workers = sweep::local_workers(jobs, s.workers, 0, s.points_per_gpu);
  int64_t failures = 0;
  {
    py::gil_scoped_release release;
    failures = sweep::run_here(whole, s, lengen, workers, {}, wait);
  }
  return {s.dir, failures};
}

// The registered components of a kind ("position", "task", "architecture"), plugins on the
// search path loaded first: each one's name, summary and options (key, whether required).
py::list registered(const std::string& kind) {
  load_all_plugins();
  py::list out;
  auto add = [&](const auto& entries) {
    for (const auto* e : entries) {
      py::dict d;
      d["name"] = e->spec.name;
      d["summary"] = e->spec.summary;
      py::list options;
      for (const auto& o : e->spec.options) {
        py::dict od;
        od["key"] = o.key;
        od["type"] = option_type_name(o.type);
        od["required"] = !o.default_value.has_value();
        options.append(od);
      }
      d["options"] = options;
      out.append(d);
    }
  };
  if (kind == "position") {
    add(position_registry().list());
  } else if (kind == "task") {
    add(task_registry().list());
  } else if (kind == "architecture") {
    add(architecture_registry().list());
  } else {
    throw Error(fmt::format("registered: unknown kind '{}' (position, task, architecture)", kind));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_lengen, m) {
  m.doc() = "lengen's C++ core: runs, models and evaluation (docs/python.md)";
  static py::exception<Error> error(m, "Error");
  static py::exception<Interrupted> interrupted(m, "Interrupted", PyExc_KeyboardInterrupt);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      interrupted(e.what());
    } catch (const Error& e) {
      error(e.what());
    } catch (const c10::Error& e) {
      error(fmt::format("LibTorch: {}", e.what_without_backtrace()).c_str());
    }
  });
  m.attr("__version__") = kVersion;
  m.attr("plugin_api") = LENGEN_PLUGIN_API;
  m.attr("plugin_abi") = LENGEN_PLUGIN_ABI;
  m.attr("torch_version") = torch_version();
  m.def("log_to_python", &log_to_python, "send lengen's log records to Python's logging");
  m.def("set_log_level", &set_log_level, py::arg("level"));
  m.def("add_plugin_dir", &add_plugin_dir, py::arg("dir"), "search this folder for plugins first");
  m.def("set_package_plugin_dir",
        &set_build_plugin_dir,
        py::arg("dir"),
        "the plugin folder of this build or installation");
  m.def("plugin_search_path", &plugin_search_path);
  m.def("registered", &registered, py::arg("kind"));
  m.def(
      "run_paths",
      [](const std::string& root, const std::string& eval_name) {
        const RunDir run = eval_name.empty() ? RunDir(root) : RunDir(root).named_eval(eval_name);
        py::dict d;
        d["config"] = run.config().string();
        d["grid"] = run.grid().string();
        d["summary"] = run.summary().string();
        d["examples"] = run.examples().string();
        d["checkpoints"] = run.checkpoints().string();
        d["plots"] = run.plots().string();
        return d;
      },
      py::arg("root"),
      py::arg("eval_name") = "",
      "the files of a run folder (lengen/core/run_dir.h)");
  m.def("sweep",
        &sweep_here,
        py::arg("file"),
        py::arg("sets"),
        py::arg("only"),
        py::arg("jobs"),
        py::arg("lengen"),
        py::arg("wait"));
  m.def("run",
        &run,
        py::arg("file"),
        py::arg("sets"),
        py::arg("resume"),
        py::arg("fresh"),
        py::arg("no_eval"),
        py::arg("wait"));

  py::class_<PyRun>(m, "Run")
      .def(py::init<const std::string&,
                    const std::string&,
                    const std::string&,
                    const std::vector<std::string>&>(),
           py::arg("path"),
           py::arg("stage"),
           py::arg("device"),
           py::arg("sets"))
      .def_property_readonly("dir", &PyRun::dir)
      .def_property_readonly("stage", &PyRun::stage)
      .def_property_readonly("checkpoint", &PyRun::checkpoint)
      .def_property_readonly("device", &PyRun::device)
      .def_property_readonly("architecture", &PyRun::architecture)
      .def_property_readonly("autoregressive", &PyRun::autoregressive)
      .def_property_readonly("config", &PyRun::config)
      .def_property_readonly("stage_config", &PyRun::stage_config)
      .def_property_readonly("vocabulary", &PyRun::vocabulary)
      .def_property_readonly("attention_names", &PyRun::attention_names)
      .def_property_readonly("heads", &PyRun::heads)
      .def_property_readonly("stages", &PyRun::stages)
      .def("example", &PyRun::example, py::arg("query"))
      .def("samples", &PyRun::samples, py::arg("cell"), py::arg("n"))
      .def("prompt", &PyRun::prompt, py::arg("query"))
      .def("causal_ids", &PyRun::causal_ids, py::arg("tokens"))
      .def("prompt_batch", &PyRun::prompt_batch, py::arg("tokens"), py::arg("ids"))
      .def("query_batch", &PyRun::query_batch, py::arg("queries"))
      .def("forward",
           &PyRun::forward,
           py::arg("tokens"),
           py::arg("ids"),
           py::arg("attention"),
           py::arg("probe"))
      .def("forward_queries",
           &PyRun::forward_queries,
           py::arg("queries"),
           py::arg("attention"),
           py::arg("probe"))
      .def("decode", &PyRun::decode, py::arg("query"))
      .def("evaluate",
           &PyRun::evaluate,
           py::arg("grid"),
           py::arg("samples"),
           py::arg("decode"),
           py::arg("probe"));
}
