// Experiment::resolved_yaml: the configuration a run writes to config.yaml, every default
// filled in, each stage's overridden sections resolved, and the provenance of what built it.
#include "util.h"

#include "lengen/core/version.h"
#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/registry.h"

#include <ATen/Parallel.h>

namespace lengen {

namespace {

// task, model, position, train and eval, resolved (defaults filled in).
YAML::Node sections_yaml(const Experiment& e) {
  YAML::Node n;
  YAML::Node task_yaml;
  task_yaml["name"] = task_name_of(e.task_node);
  for (const auto& kv : task_registry().options_of(e.task_node).to_yaml()) {
    task_yaml[kv.first] = kv.second;
  }
  if (e.mixture_node.defined()) {
    task_yaml["mixture"] = YAML::Clone(e.mixture_node.yaml());
  }
  n["task"] = task_yaml;
  n["model"] = e.model.to_yaml();
  for (const auto& pn : e.position_nodes) {
    YAML::Node p;
    p["name"] = pn.is_scalar() ? pn.as_string() : pn.child("name").as_string();
    for (const auto& kv : position_registry().options_of(pn).to_yaml()) {
      p[kv.first] = kv.second;
    }
    n["position"].push_back(p);
  }
  n["train"] = e.train.to_yaml();
  n["eval"] = e.eval.to_yaml();
  return n;
}

}  // namespace

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
  YAML::Node sec = sections_yaml(*this);
  for (const char* k : {"task", "model", "position", "train", "eval"})
    n[k] = sec[k];
  // Each stage with its kind's options and, for the sections it overrides, the resolved
  // section (so reloading this file gives the same stages).
  for (const auto& st : stages) {
    YAML::Node s;
    s["name"] = st.name;
    s["kind"] = st.kind;
    if (!st.init_from.empty())
      s["init_from"] = st.init_from;
    if (st.init.init_new)
      s["new_parameters"] = "init";
    if (st.init.drop_unused)
      s["dropped_parameters"] = "ignore";
    if (st.init_optimizer)
      s["init_optimizer"] = true;
    if (st.node.child("seed").defined())
      s["seed"] = st.experiment->seed;
    for (const auto& kv : st.options.to_yaml())
      s[kv.first] = kv.second;
    YAML::Node ssec = sections_yaml(*st.experiment);
    for (const char* k : {"task", "model", "position", "train", "eval"}) {
      if (st.node.child(k).defined())
        s[k] = ssec[k];
    }
    n["stages"].push_back(s);
  }
  if (paper_node.defined())
    n["paper"] = YAML::Clone(paper_node.yaml());
  YAML::Node prov;
  prov["lengen"] = kVersion;
  prov["torch"] = torch_version();
  const MachineInfo machine = machine_info();
  prov["machine"]["cpu"] = machine.cpu;
  prov["machine"]["cpu_capability"] = machine.cpu_capability;
  prov["machine"]["blas"] = machine.blas;
  prov["machine"]["kernel_set"] = machine.kernel_set;
  // The thread count the process computes with now (a run has configured it by the time it
  // writes config.yaml; `threads:` above is what was asked for, 0 meaning the default).
  prov["threads_used"] = static_cast<int64_t>(at::get_num_threads());
  const SourceInfo source = source_info();
  prov["source_tree"]["version"] = source.version;
  prov["source_tree"]["commit"] = source.commit;
  prov["source_tree"]["dirty"] = source.dirty;
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
