// Running a sweep on Slurm: the job-array script, submission, cancellation.
#include "util.h"

#include "lengen/core/error.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace lengen::sweep {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------
// Slurm

std::string slurm_script(const Sweep& s,
                         const std::vector<int64_t>& indices,
                         const std::string& lengen) {
  LENGEN_CHECK(!indices.empty(), "nothing to submit: every point of {} is done or running", s.name);
  std::vector<std::string> ids;
  for (int64_t i : indices)
    ids.push_back(std::to_string(i));
  const fs::path logs = fs::path(s.dir) / "slurm";
  std::string out = "#!/bin/bash\n";
  out += fmt::format("# lengen sweep {} ({} of {} points); generated, do not edit\n",
                     s.name,
                     indices.size(),
                     s.points.size());
  out += fmt::format("#SBATCH --job-name=lengen-{}\n", sanitize(s.name));
  out += fmt::format("#SBATCH --array={}{}\n",
                     join(ids, ","),
                     s.slurm.array_limit > 0 ? fmt::format("%{}", s.slurm.array_limit) : "");
  out += fmt::format("#SBATCH --output={}/%A_%a.out\n", logs.string());
  out += fmt::format("#SBATCH --error={}/%A_%a.err\n", logs.string());
  out += "#SBATCH --requeue\n#SBATCH --open-mode=append\n#SBATCH --signal=B:TERM@60\n";
  if (!s.slurm.partition.empty())
    out += fmt::format("#SBATCH --partition={}\n", s.slurm.partition);
  if (!s.slurm.time.empty())
    out += fmt::format("#SBATCH --time={}\n", s.slurm.time);
  if (!s.slurm.account.empty())
    out += fmt::format("#SBATCH --account={}\n", s.slurm.account);
  if (!s.slurm.qos.empty())
    out += fmt::format("#SBATCH --qos={}\n", s.slurm.qos);
  if (!s.slurm.mem.empty())
    out += fmt::format("#SBATCH --mem={}\n", s.slurm.mem);
  if (s.slurm.cpus_per_task > 0)
    out += fmt::format("#SBATCH --cpus-per-task={}\n", s.slurm.cpus_per_task);
  if (s.slurm.gpus_per_task > 0)
    out += fmt::format("#SBATCH --gpus-per-task={}\n", s.slurm.gpus_per_task);
  for (const auto& line : s.slurm.extra)
    out += line + "\n";
  // A BLAS kernel set lengen chose for the submitting machine's processor (use_native_blas_kernels)
  // is that machine's: a node without AVX-512 would die of it. Each node's lengen chooses anew.
  out +=
      "if [ -n \"${LENGEN_BLAS_FALLBACK:-}\" ]; then unset OPENBLAS_CORETYPE LENGEN_BLAS_FALLBACK; "
      "fi\n";
  if (!s.slurm.setup.empty())
    out += s.slurm.setup + "\n";
  // The point runs as a child of this shell so that the TERM Slurm sends before a time limit
  // reaches lengen, which checkpoints; a requeued task resumes from that checkpoint.
  out += fmt::format(
      "'{}' sweep '{}' --point \"$SLURM_ARRAY_TASK_ID\" --job "
      "\"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\" &\n",
      lengen,
      s.file);
  out +=
      "child=$!\ntrap 'kill -TERM $child' TERM\nwait $child\nstatus=$?\nif [ $status -gt 128 ]; "
      "then wait $child; status=$?; fi\nexit $status\n";
  return out;
}

std::string submit_slurm(const Sweep& s, const std::string& script_path) {
  int status = 0;
  std::string out = capture(fmt::format("sbatch --parsable '{}'", script_path), &status);
  LENGEN_CHECK(status == 0, "sbatch failed (exit {}): {}", status, out);
  std::string job = out.substr(0, out.find_first_of(";\n"));
  LENGEN_CHECK(!job.empty() && std::all_of(job.begin(), job.end(), ::isdigit),
               "sbatch printed no job ID: {}",
               out);
  std::ofstream(fs::path(s.dir) / "slurm" / "jobs.txt", std::ios::app) << job << "\n";
  return job;
}

int64_t cancel_slurm(const Sweep& s) {
  const fs::path jobs = fs::path(s.dir) / "slurm" / "jobs.txt";
  LENGEN_CHECK(fs::exists(jobs), "{}: no Slurm jobs were submitted for this sweep", jobs.string());
  std::ifstream in(jobs);
  int64_t n = 0;
  for (std::string job; std::getline(in, job);) {
    if (job.empty())
      continue;
    int status = 0;
    capture("scancel " + job, &status);
    if (status == 0)
      ++n;
  }
  return n;
}

}  // namespace lengen::sweep
