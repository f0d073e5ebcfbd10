// `lengen taotp run|count|export`: hand-set Transformer programs (The Art of Transformer
// Programming): run one, count its parameters, or write a trained run as one.
#include "../cli.h"

#include "lengen/core/file.h"
#include "lengen/taotp/model.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen::cli {
namespace {

void taotp_main(const std::string& what,
                const std::string& program_file,
                const std::string& vocab_file,
                const std::string& input,
                const std::string& eos_token,
                const std::string& dtype,
                const std::string& sep,
                int64_t steps,
                bool ids,
                bool trace,
                const std::string& run_dir,
                std::string out_file,
                const std::vector<std::string>& sets) {
  if (what == "count") {
    auto program = taotp::load_program(program_file);
    auto c = taotp::count_parameters(program);
    fmt::print("parameters: {}\nnon-zero: {}\n", c.total, c.nonzero);
    fmt::print("(vocab {}, block {}, d_model {}, {} layers{})\n",
               program.vocab_size(),
               program.block_size(),
               program.d_model(),
               program.layers.size(),
               program.tied() ? ", tied embeddings" : "");
    return;
  }
  if (what == "export") {
    LoadedRun r = load_run(run_dir, sets);
    r.model->to(torch::kCPU);
    auto program = taotp::export_program(r.exp, r.model);
    if (out_file.empty()) {
      fs::create_directories(fs::path(r.dir) / "taotp");
      out_file = (fs::path(r.dir) / "taotp" / "program.json").string();
    }
    const std::string vocab_out = (fs::path(out_file).parent_path() / "vocab.json").string();
    write_file_atomic(out_file, taotp::program_to_json(program));
    nlohmann::json v = r.exp.task->vocabulary().tokens();
    write_file_atomic(vocab_out, v.dump() + "\n");
    auto c = taotp::count_parameters(program);
    fmt::print(
        "wrote {} ({} parameters, {} non-zero) and {}\n", out_file, c.total, c.nonzero, vocab_out);
    return;
  }
  auto program = taotp::load_program(program_file);
  std::vector<std::string> vocab;
  if (!vocab_file.empty()) {
    vocab = taotp::load_vocabulary(vocab_file);
    LENGEN_CHECK(static_cast<int64_t>(vocab.size()) == program.vocab_size(),
                 "{} has {} tokens but the program's tok_emb has {} rows",
                 vocab_file,
                 vocab.size(),
                 program.vocab_size());
  }
  LENGEN_CHECK(ids || !vocab.empty(), "--vocab is required unless --ids is given");
  auto token_id = [&](const std::string& t) -> int64_t {
    if (ids) {
      char* end = nullptr;
      const long long v = std::strtoll(t.c_str(), &end, 10);
      LENGEN_CHECK(end && *end == '\0' && v >= 0 && v < program.vocab_size(),
                   "'{}' is not a token index in [0, {})",
                   t,
                   program.vocab_size());
      return v;
    }
    auto it = std::find(vocab.begin(), vocab.end(), t);
    LENGEN_CHECK(
        it != vocab.end(), "token '{}' is not in {}{}", t, vocab_file, did_you_mean(t, vocab));
    return it - vocab.begin();
  };
  auto token_text = [&](int64_t i) { return ids || vocab.empty() ? std::to_string(i) : vocab[i]; };
  std::vector<int64_t> tokens;
  std::istringstream in(input);
  for (std::string t; in >> t;)
    tokens.push_back(token_id(t));
  const int64_t eos = eos_token.empty() ? -1 : token_id(eos_token);
  if (steps < 0) {
    steps = program.block_size() - static_cast<int64_t>(tokens.size()) + 1;
    LENGEN_CHECK(steps > 0,
                 "the input has {} tokens but the program's block_size is {}",
                 tokens.size(),
                 program.block_size());
  }
  auto built = taotp::build_model(program, dtype == "float32" ? torch::kFloat32 : torch::kFloat64);
  auto tracer = [&](int64_t step, const torch::Tensor& logits) {
    auto top = logits.to(torch::kFloat64).topk(std::min<int64_t>(5, logits.size(0)));
    std::vector<std::string> parts;
    for (int64_t k = 0; k < std::get<0>(top).size(0); ++k) {
      parts.push_back(fmt::format("'{}' {:.6g}",
                                  token_text(std::get<1>(top)[k].item<int64_t>()),
                                  std::get<0>(top)[k].item<double>()));
    }
    fmt::print(stderr,
               "step {}: argmax {} '{}'; top: {}\n",
               step + 1,
               taotp::argmax_lowest(logits),
               token_text(taotp::argmax_lowest(logits)),
               join(parts, ", "));
  };
  auto generated = taotp::greedy_decode(
      built.model,
      program.block_size(),
      tokens,
      steps,
      eos,
      trace ? std::function<void(int64_t, const torch::Tensor&)>(tracer) : nullptr);
  if (!generated.empty() && generated.back() == eos)
    generated.pop_back();
  std::vector<std::string> out;
  for (int64_t t : generated)
    out.push_back(token_text(t));
  fmt::print("{}\n", join(out, sep));
}

class Taotp : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* tp = app.add_subcommand(
        "taotp", "hand-set Transformer programs (The Art of Transformer Programming)");
    tp->require_subcommand(1);
    run_ = tp->add_subcommand("run", "greedy-decode with a program and print the new tokens");
    count_ = tp->add_subcommand("count", "the book's parameter counts of a program");
    export_ = tp->add_subcommand("export", "write a trained run as a program (+ its vocabulary)");
    run_->add_option("program", program_, "program file (JSON or the book's Python literal)")
        ->required();
    run_->add_option("--vocab", vocab_, "vocabulary: one token per line, or a list of strings");
    run_->add_option("--input", input_, "input tokens separated by spaces (indices with --ids)")
        ->required();
    run_->add_option(
        "--steps", steps_, "tokens to generate (default: until --eos or the block is full)");
    run_->add_option("--eos", eos_, "stop after emitting this token (not printed)");
    run_->add_flag("--ids", ids_, "input and output are token indices");
    run_->add_flag("--trace", trace_, "print each step's arg-max and top logits");
    run_->add_option("--dtype", dtype_, "float64 (default) or float32")
        ->check(CLI::IsMember({"float64", "float32"}));
    run_->add_option("--sep", sep_, "separator between printed tokens (default one space)");
    count_->add_option("program", program_, "program file")->required();
    export_->add_option("run", run_dir_, "run directory")->required();
    export_->add_option(
        "-o,--output", out_, "program file to write (default RUN/taotp/program.json)");
    for (auto* c : {run_, count_, export_})
      add_common(c, common, c == export_);
    return tp;
  }

  int run(const Common& common) override {
    taotp_main(run_->parsed()     ? "run"
               : count_->parsed() ? "count"
                                  : "export",
               program_,
               vocab_,
               input_,
               eos_,
               dtype_,
               sep_,
               steps_,
               ids_,
               trace_,
               run_dir_,
               out_,
               common.sets);
    return 0;
  }

 private:
  CLI::App *run_ = nullptr, *count_ = nullptr, *export_ = nullptr;
  std::string program_, vocab_, input_, eos_, dtype_ = "float64", sep_ = " ", out_, run_dir_;
  int64_t steps_ = -1;
  bool ids_ = false, trace_ = false;
};

}  // namespace

std::unique_ptr<Command> make_taotp() {
  return std::make_unique<Taotp>();
}
}  // namespace lengen::cli
