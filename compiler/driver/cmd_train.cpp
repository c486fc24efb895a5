// `pipec run SPEC` on a spec with a train block: compiles the block and trains on the CPU with the
// reference executor, reading batches from its data pipeline. `--pipeline NAME`, or a flag that only
// makes sense for a pipeline (--take, --output, --checkpoint, --resume), runs the pipeline instead, as
// `pipec run` did before specs could train.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/spec_options.h"
#include "compiler/lower/lower.h"
#include "compiler/train/lower_train.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/exec/stage_stats.h"
#include "runtime/ops/kernel_error.h"
#include "runtime/threads/cancellation.h"
#include "runtime/train/train_loop.h"

namespace pipec {

namespace fs = std::filesystem;

const char* kTrainUsage =
    "\n"
    "Training (a spec with a train block; --pipeline, --take, --output, --checkpoint or --resume run the\n"
    "pipeline instead):\n"
    "  --train NAME           the train block to run (default: the only one)\n"
    "  --steps N              train N steps (replaces the block's steps and epochs)\n"
    "  --epochs N             train N passes over the data (with --steps: N x steps, steps per epoch)\n"
    "  --init FILE            start from the weights in FILE (safetensors, as --save writes them)\n"
    "  --save FILE            write the trained weights to FILE (safetensors)\n"
    "  --seed S               initial weights, dropout and the pipeline's random ops (default 0)\n"
    "  --stats-json FILE      write the training summary, with every step's loss, as JSON\n";

namespace {

struct TrainArgs {
  std::string spec;
  std::string train;
  std::optional<int64_t> steps, epochs;
  std::string save, init, stats_json;
  uint64_t seed = 0;
  int threads = 0;
  bool no_jit = false;
  DevicePolicy device = DevicePolicy::Auto;
};

bool has_flag(const Args& args, const char* flag) {
  std::string f = flag;
  for (const std::string& a : args)
    if (a == f || a.rfind(f + "=", 0) == 0) return true;
  return false;
}

bool parse_count(const std::string& flag, const std::string& text, int64_t min, int64_t& out) {
  try {
    size_t pos = 0;
    long long v = std::stoll(text, &pos);
    if (pos != text.size() || v < min) throw std::invalid_argument(text);
    out = v;
    return true;
  } catch (...) {
    std::cerr << "pipec run: " << flag << " needs an integer" << (min > 0 ? " of at least " + std::to_string(min) : std::string())
              << ", not `" << text << "`\n";
    return false;
  }
}

bool parse_train_args(const std::vector<std::string>& rest, TrainArgs& a) {
  for (size_t i = 0; i < rest.size(); ++i) {
    std::string flag = rest[i], value;
    bool inline_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    auto need = [&](std::string& out) {
      if (inline_value) {
        out = value;
        return true;
      }
      if (i + 1 >= rest.size()) {
        std::cerr << "pipec run: " << flag << " needs a value\n";
        return false;
      }
      out = rest[++i];
      return true;
    };
    std::string v;
    int64_t n = 0;
    if (flag == "--train") {
      if (!need(a.train)) return false;
    } else if (flag == "--steps" || flag == "--epochs") {
      if (!need(v) || !parse_count(flag, v, 1, n)) return false;
      (flag == "--steps" ? a.steps : a.epochs) = n;
    } else if (flag == "--save") {
      if (!need(a.save)) return false;
    } else if (flag == "--init") {
      if (!need(a.init)) return false;
    } else if (flag == "--stats-json") {
      if (!need(a.stats_json)) return false;
    } else if (flag == "--seed") {
      if (!need(v) || !parse_count(flag, v, 0, n)) return false;
      a.seed = static_cast<uint64_t>(n);
    } else if (flag == "--threads") {
      if (!need(v) || !parse_count(flag, v, 1, n)) return false;
      a.threads = static_cast<int>(std::min<int64_t>(n, 1024));
    } else if (flag == "--no-jit") {
      a.no_jit = true;
    } else if (flag == "--device") {
      if (!need(v)) return false;
      if (v == "auto") a.device = DevicePolicy::Auto;
      else if (v == "cpu") a.device = DevicePolicy::Cpu;
      else if (v == "gpu") a.device = DevicePolicy::Gpu;
      else {
        std::cerr << "pipec run: --device must be auto, cpu or gpu, not `" << v << "`\n";
        return false;
      }
    } else if (!flag.empty() && flag[0] == '-') {
      std::cerr << "pipec run: unknown option " << flag << " (see pipec run --help)\n";
      return false;
    } else if (a.spec.empty()) {
      a.spec = flag;
    } else {
      std::cerr << "pipec run: expected one spec file, got `" << a.spec << "` and `" << flag << "`\n";
      return false;
    }
  }
  if (a.spec.empty()) {
    std::cerr << "pipec run: no spec file\n";
    return false;
  }
  return true;
}

std::string percent(double part, double whole) { return fmt::format("{:.1f}%", whole > 0 ? 100.0 * part / whole : 0.0); }

std::string progress_line(const TrainProgress& p) {
  std::string steps = p.total_steps ? fmt::format("{}/{}", format_thousands(p.step), format_thousands(*p.total_steps))
                                    : format_thousands(p.step);
  double rate = p.elapsed > 0 ? p.examples / p.elapsed : 0;
  std::string line = fmt::format("step {}  loss {:.4g}  {} ex/s  input {}  elapsed {}", steps, p.smoothed_loss,
                                 format_thousands(static_cast<uint64_t>(rate)), percent(p.input_wait, p.elapsed), format_duration(p.elapsed));
  if (p.total_steps && p.step > 0) line += "  ETA " + format_duration(p.elapsed / p.step * (*p.total_steps - p.step));
  return line;
}

void print_summary(std::ostream& out, const TrainProgram& t, const TrainSummary& s, const TrainArgs& a) {
  const TrainProgress& p = s.last;
  out << fmt::format("train {}: {} steps ({} examples) in {:.2f} s, {} examples/s\n", t.name, format_thousands(p.step),
                     format_thousands(p.examples), p.elapsed, format_thousands(static_cast<uint64_t>(p.elapsed > 0 ? p.examples / p.elapsed : 0)));
  out << fmt::format("  loss        {:.6g} at the last step, {:.6g} smoothed, {:.6g} at the first\n", p.loss, p.smoothed_loss, s.first_loss);
  const double total = std::max(p.elapsed, 1e-9);
  out << fmt::format("  time        input wait {:.2f} s ({}), forward {:.2f} s ({}), loss {:.2f} s ({}), backward {:.2f} s ({}), "
                     "optimizer {:.2f} s ({})\n",
                     p.input_wait, percent(p.input_wait, total), s.phases[0], percent(s.phases[0], total), s.phases[1],
                     percent(s.phases[1], total), s.phases[2], percent(s.phases[2], total), s.phases[3], percent(s.phases[3], total));
  out << "  executor    reference (-O0: plain loops with f64 accumulation, one thread)\n";
  if (t.precision != "fp32") out << fmt::format("  note        precision {} is not implemented yet: trained in fp32\n", t.precision);
  if (t.strategy != "single") out << fmt::format("  note        strategy {} is not implemented yet: trained in one process\n", t.strategy);
  if (!a.init.empty()) out << fmt::format("  weights     started from {}\n", a.init);
  if (!a.save.empty())
    out << fmt::format("  weights     saved to {} ({} tensors, {:.2f} MB)\n", a.save, s.saved_tensors, s.saved_bytes / 1e6);
}

void write_stats(const std::string& path, const TrainProgram& t, const TrainSummary& s) {
  std::ofstream o(path);
  const TrainProgress& p = s.last;
  o << "{\n";
  o << fmt::format("  \"train\": \"{}\",\n  \"steps\": {},\n  \"examples\": {},\n  \"seconds\": {:.6f},\n", t.name, p.step, p.examples, p.elapsed);
  o << fmt::format("  \"examples_per_second\": {:.3f},\n", p.elapsed > 0 ? p.examples / p.elapsed : 0.0);
  o << fmt::format("  \"first_loss\": {:.17g},\n  \"final_loss\": {:.17g},\n  \"smoothed_loss\": {:.17g},\n", s.first_loss, p.loss,
                   p.smoothed_loss);
  o << fmt::format("  \"input_wait_seconds\": {:.6f},\n  \"forward_seconds\": {:.6f},\n  \"loss_seconds\": {:.6f},\n", p.input_wait,
                   s.phases[0], s.phases[1]);
  o << fmt::format("  \"backward_seconds\": {:.6f},\n  \"optimizer_seconds\": {:.6f},\n", s.phases[2], s.phases[3]);
  o << "  \"losses\": [";
  for (size_t i = 0; i < s.losses.size(); ++i) o << (i ? ", " : "") << fmt::format("{:.17g}", s.losses[i]);
  o << "]\n}\n";
}

}  // namespace

std::optional<int> run_training_if_asked(const Args& args) {
  for (const char* pipeline_flag : {"--pipeline", "--take", "--output", "--checkpoint", "--checkpoint-every", "--resume"})
    if (has_flag(args, pipeline_flag)) {
      if (has_flag(args, "--train")) {
        std::cerr << "pipec run: " << pipeline_flag << " runs a pipeline; it does not go with --train\n";
        return 2;
      }
      return std::nullopt;
    }
  SpecOptions opts;
  std::vector<std::string> rest;
  std::vector<std::string> extra = {"--train", "--steps", "--epochs", "--save", "--init", "--seed", "--threads", "--no-jit", "--device",
                                    "--stats-json"};
  extra.insert(extra.end(), opt_flag_names().begin(), opt_flag_names().end());
  if (!parse_spec_options(args, opts, rest, "run", extra)) return 2;
  PassOptions passes;
  if (!take_opt_flags(rest, passes, "run")) return 2;
  TrainArgs a;
  if (!parse_train_args(rest, a)) return 2;

  auto program = check_file(a.spec, opts.check);
  if (!program->io_error.empty()) return std::nullopt;  // the pipeline path reports it
  std::vector<const Decl*> blocks;
  for (const auto& d : program->main().decls)
    if (d->kind == DeclKind::Train) blocks.push_back(d.get());
  bool train_flags = !a.train.empty() || a.steps || a.epochs || !a.save.empty() || !a.init.empty();
  if (blocks.empty() && !train_flags) return std::nullopt;
  program->diags.print(std::cerr, opts.color);
  if (program->diags.has_errors()) return 1;
  if (blocks.empty()) {
    std::cerr << "pipec run: " << a.spec << " has no train block to go with --train, --steps, --epochs, --save or --init\n";
    return 2;
  }
  const Decl* block = nullptr;
  std::string names;
  for (const Decl* d : blocks) {
    names += " " + d->name;
    if (d->name == a.train) block = d;
  }
  if (!a.train.empty() && !block) {
    std::cerr << "pipec run: no train block named `" << a.train << "`; the spec has:" << names << "\n";
    return 2;
  }
  if (!block && blocks.size() > 1) {
    std::cerr << "pipec run: the spec has several train blocks; choose one with --train:" << names << "\n";
    return 2;
  }
  if (!block) block = blocks[0];
  auto compiled = lower_train(*program, *block, program->diags);
  if (!compiled) {
    program->diags.print(std::cerr, opts.color);
    return 1;
  }
  const TrainProgram& t = *compiled;
  const Expr* data_expr = train_data_expr(*block);
  Plan plan = lower_dataset(*program, *data_expr, t.data_pipeline.empty() ? t.name + ".data" : t.data_pipeline);
  TrainLength length;
  try {
    length = train_length(t, a.steps, a.epochs, plan.stages.back().element.infinite);
  } catch (const TrainError& e) {
    std::cerr << "pipec run: " << e.what() << "\n";
    return 2;
  }
  append_data_repeat(plan, length);
  if (auto problems = verify_plan(plan); !problems.empty()) {
    std::cerr << "pipec run: internal error: the data plan does not verify:\n";
    for (auto& p : problems) std::cerr << "  " << p << "\n";
    return 2;
  }
  try {
    run_passes(plan, passes);
  } catch (const PassError& e) {
    std::cerr << "pipec run: " << e.what();
    return 2;
  }
  if (!a.no_jit && passes.opt_level > 0) codegen::attach_native_kernels(plan);

  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  install_signal_cancellation();
  CancellationToken cancel = CancellationToken::child_of(process_cancellation_token());
  TrainOptions to;
  to.seed = a.seed;
  to.threads = a.threads;
  to.spec_dir = fs::absolute(fs::path(a.spec)).parent_path().string();
  to.cancel = &cancel;
  to.length = length;
  to.init_path = a.init;
  to.save_path = a.save;
  bool tty = isatty(STDERR_FILENO) && !opts.quiet;
  auto last_print = std::chrono::steady_clock::now();
  auto on_step = [&](const TrainProgress& p) {
    auto now = std::chrono::steady_clock::now();
    if (!tty || now - last_print < std::chrono::milliseconds(250)) return;
    last_print = now;
    std::cerr << "\r" << progress_line(p) << "\033[K" << std::flush;
  };
  try {
    TrainSummary s = run_training(t, plan, to, on_step);
    if (tty) std::cerr << "\r\033[K";
    if (!opts.quiet) print_summary(std::cerr, t, s, a);
    if (!a.stats_json.empty()) write_stats(a.stats_json, t, s);
  } catch (const CancelledError&) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "pipec run: interrupted\n";
    return 130;
  } catch (const WeightsFileError& e) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "pipec run: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "pipec run: error: train `" << t.name << "`: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace pipec
