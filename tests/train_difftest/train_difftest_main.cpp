// `train_difftest`: differential testing of training. For each seed, generates a random small training
// case (tests/train_difftest/model_generator.h: a model from every layer kind, a loss, an optimizer, a
// precision, random initial weights and data), compiles it as `pipec run` does, and compares the fast
// executor with the reference executor step by step from the same state and over the whole trajectory
// (tests/train_difftest/step_compare.h). Then replays every case folder of the regression folder.
//
//   train_difftest [--cases N] [--first S] [--seed S] [--case DIR] [--regressions DIR] [--no-regressions]
//                  [--keep DIR] [-v]
//
// A failing case is written to a folder under --keep (default ./train-difftest-failures): its spec,
// initial weights, data and settings (tests/train_difftest/case_data.h). `train_difftest --case DIR`
// replays it; copied into tests/train_difftest/regressions/ it is replayed by CI.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "compiler/driver/openmp_waits.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/persist/weights_file.h"
#include "tests/train_difftest/case_data.h"
#include "tests/train_difftest/model_generator.h"
#include "tests/train_difftest/step_compare.h"

namespace fs = std::filesystem;
using namespace pipec;
using namespace pipec::train_difftest;

namespace {

struct Options {
  int64_t cases = 100;
  uint64_t first = 1;
  std::optional<uint64_t> one_seed;
  std::vector<fs::path> case_dirs;
  fs::path regressions = TRAIN_DIFFTEST_REGRESSIONS;
  bool replay_regressions = true;
  bool generated = true;
  fs::path keep = "train-difftest-failures";
  bool verbose = false;
  int replicas = 1;  // --replicas N: the executor under test is N fast executors, data-parallel
};

struct Tally {
  int64_t cases = 0, failures = 0, check_failures = 0, nonfinite = 0, winograd = 0, unbounded = 0, per_replica = 0;
  std::map<std::string, int64_t> per_precision;
  std::map<std::string, std::map<std::string, double>> worst;  // precision -> check -> worst ratio
  std::vector<std::string> failed;                             // one line each
};

// The train block compiled as `pipec run` compiles it: the step graph with its expr nodes on the JIT.
// `kernel_cache`: the run's own folder for the JIT's kernel cache.
std::optional<TrainProgram> compile_case(const fs::path& spec, const fs::path& kernel_cache, std::string& error) {
  CompileRequest req;
  req.path = spec.string();
  req.target = CompileTarget::Train;
  req.options.cpu_kernels = CpuKernels::Jit;
  // Kernels of the same loop nest (an activation's gradient on one shape, an optimizer's update) recur
  // across cases: compiled once per run, in the run's own folder (not the user's cache).
  req.options.jit.cache_dir = kernel_cache.string();
  req.options.data_dir = spec.parent_path().string();
  CompileResult r = compile(req);
  if (!r.ok()) {
    std::ostringstream d;
    r.program->diags.print(d, false);
    error = d.str() + r.error;
    return std::nullopt;
  }
  return std::move(r.trains.at(0).program);
}

void print_spec(const fs::path& spec) {
  std::ifstream in(spec);
  for (std::string line; std::getline(in, line);) std::cout << "  | " << line << "\n";
}

std::string join_worst(const std::map<std::string, double>& w) {
  std::string s;
  for (const auto& [check, ratio] : w) s += fmt::format(" {} {:.3g}", check, ratio);
  return s;
}

// Which algorithm the conv2d layers got, from the fast executor's description (after the steps).
std::string conv_algorithms(const CaseOutcome& r) {
  const std::string& d = r.fast_description;
  if (d.find("conv2d by Winograd") != std::string::npos) return " (Winograd)";
  if (d.find("conv2d layers by Winograd") != std::string::npos) return " (Winograd and direct)";
  if (d.find("conv2d direct") != std::string::npos) return " (direct)";
  return "";
}

// Compiles and compares the case in `dir` (spec.pipe, init.safetensors, data); `label` names it.
// Returns false on a mismatch, after reporting it; `keep_as` receives a copy of the folder then.
// `program` is the case compiled, or nullopt with `error` saying why not.
bool run_case(const std::string& label, const fs::path& dir, const CaseSettings& s,
              const std::map<std::string, Tensor>& data, const std::optional<TrainProgram>& program,
              const std::string& error, const Options& o, Tally& t, const fs::path& keep_as,
              const std::string& note = "") {
  ++t.cases;
  const auto compare_start = std::chrono::steady_clock::now();
  auto keep = [&](const std::string& found, const std::string& fast, const std::string& f64 = "") {
    if (keep_as.empty()) return;
    std::error_code ec;
    fs::create_directories(keep_as.parent_path(), ec);
    fs::remove_all(keep_as, ec);
    fs::copy(dir, keep_as, fs::copy_options::recursive, ec);
    // The case as kept: what it found, and on which machine.
    write_case_json(keep_as, s, {{"isa", train::CpuKernels::isa()}, {"fast", fast}, {"found", found}, {"f64", f64}});
  };
  if (!program) {
    ++t.check_failures;
    ++t.failures;
    t.failed.push_back(fmt::format("{}: the spec does not compile", label));
    std::cout << fmt::format("CHECK FAILED {}: the spec does not compile:\n{}\n", label, error);
    print_spec(dir / "spec.pipe");
    keep("the spec does not compile: " + error, "");
    return false;
  }
  // batch_norm normalizes by each replica's own share of the batch under data parallelism (Keras'
  // default too), which is another function than the whole batch's: such a case is not compared.
  if (s.replicas > 1 && std::any_of(program->step.nodes.begin(), program->step.nodes.end(),
                                    [](const GraphNode& n) { return n.op == ModelOp::BatchNorm; })) {
    ++t.per_replica;
    if (o.verbose) std::cout << label << ": not compared (batch_norm's statistics are each replica's own)\n";
    return true;
  }
  CaseOutcome r;
  try {
    r = compare_training(*program, data, (dir / "init.safetensors").string(), s, bounds_for(program->precision));
  } catch (const std::exception& e) {
    r.ok = false;
    r.failure = std::string("an executor threw: ") + e.what();
  }
  // mixed_bf16 on bf16 kernels is counted, and its worst ratios kept, apart from the emulation's.
  std::string precision = enum_text(program->precision);
  if (r.fast_description.find("layers on bf16 kernels") != std::string::npos) precision += " (bf16 kernels)";
  ++t.per_precision[precision];
  t.nonfinite += r.stopped_nonfinite;
  if (!r.trajectory_unbounded.empty()) {
    ++t.unbounded;
    std::cout << fmt::format("{}: trajectory not checked: {}\n", label, r.trajectory_unbounded);
  }
  if (r.fast_description.find("by Winograd") != std::string::npos) ++t.winograd;
  for (const auto& [check, ratio] : r.worst) {
    double& w = t.worst[precision][check];
    w = std::max(w, ratio);
  }
  const std::string what =
      fmt::format("{}, {}, {}, {} thread{}, conv {}{}", precision, program->loss_text, program->optimizer_text,
                  s.threads, s.threads == 1 ? "" : "s", s.direct_conv ? "direct" : "auto", conv_algorithms(r));
  if (o.verbose) {
    const auto end = std::chrono::steady_clock::now();
    std::cout << fmt::format("{}: {} ({}; {} steps compared{}; compared in {:.2f} s){}\n", label,
                             r.ok ? "agrees" : "MISMATCH", what, r.steps_compared,
                             r.stopped_nonfinite ? ", the reference stopped being finite" : "",
                             std::chrono::duration<double>(end - compare_start).count(), join_worst(r.worst));
  }
  if (r.ok) return true;
  ++t.failures;
  t.failed.push_back(fmt::format("{}: {}", label, r.failure));
  std::cout << fmt::format("MISMATCH {} ({}):\n  {}\n  fast executor: {}\n", label, what, r.failure,
                           r.fast_description);
  if (!r.triage.empty()) std::cout << "  " << r.triage << "\n";
  if (!note.empty()) std::cout << "  (the case's note: " << note << ")\n";
  keep(r.failure, r.fast_description, r.triage);
  const fs::path shown = keep_as.empty() ? dir : keep_as;
  std::cout << fmt::format(
      "  reproducer kept in {0}\n  replay: train_difftest --case {0}\n  by hand: cd {0} && {1}\n"
      "  (and with --executor reference); add it to CI: copy the folder into tests/train_difftest/regressions/\n",
      shown.string(), pipec_command(s, "fast"));
  print_spec(dir / "spec.pipe");
  return false;
}

// Before any case: a fixed fp32 case must agree, and each change to the fast executor's results in
// `Perturbation` (a loss 1e-3 off, a gradient 1e-3 off, one weight one ulp off, an inference output 1e-3
// off) must fail it, so that
// the harness cannot pass by comparing nothing. Returns what went wrong, or "".
std::string self_check(const fs::path& work) {
  TrainCase c;
  c.spec = R"(source x_file = npy("data/x.npy") { x: f32[6, 6, 2] }
source target_file = npy("data/target.npy") { target: f32[1] }
pipeline data = zip(x_file, target_file) | batch(4, drop_remainder = true)
model net(x: f32[6, 6, 2]) -> f32[1] {
  x | conv2d(3, 3, padding = same) | relu | flatten | dense(1)
}
train t = { data = data, model = net(x), loss = mse(target), optimizer = adam(lr = 0.01), steps = 3 }
)";
  c.settings.seed = 1;
  c.settings.batch = 4;
  c.settings.steps = 3;
  c.inputs = {{"x", DType::F32, {6, 6, 2}, 1.0}};
  c.target = {"target", DType::F32, {1}, 1.0};
  const fs::path dir = work / "self-check";
  std::map<std::string, Tensor> data = draw_data(c);
  write_case_folder(dir, c.spec, c.settings, data);
  std::string error;
  std::optional<TrainProgram> p = compile_case(dir / "spec.pipe", work / "kernel-cache", error);
  if (!p) return "the self-check's spec does not compile: " + error;
  const std::string init = (dir / "init.safetensors").string();
  save_weights(p->step, init, draw_initial_weights(p->step, 1), p->name);
  using Kind = Perturbation::Kind;
  const std::vector<std::pair<Perturbation, const char*>> cases = {
      {{Kind::None, 0}, "nothing changed"},
      {{Kind::Loss, 1e-3}, "a loss 1e-3 off"},
      {{Kind::Gradient, 1e-3}, "a gradient 1e-3 off"},
      {{Kind::Update, 1}, "one weight one ulp off"},
      {{Kind::Inference, 1e-3}, "an inference output 1e-3 off"}};
  for (const auto& [perturb, what] : cases) {
    CaseOutcome r = compare_training(*p, data, init, c.settings, bounds_for(p->precision), perturb);
    if (r.ok != (perturb.kind == Kind::None))
      return fmt::format("self-check: with {} the comparison {}{} (measured / bound:{})", what,
                         r.ok ? "passed" : "failed: ", r.failure, join_worst(r.worst));
  }
  return "";
}

bool run_generated(uint64_t seed, const Options& o, Tally& t, const fs::path& work) {
  TrainCase c = generate_train_case(seed);
  c.settings.replicas = o.replicas;
  const fs::path dir = work / fmt::format("seed-{}", seed);
  std::map<std::string, Tensor> data = draw_data(c);
  write_case_folder(dir, c.spec, c.settings, data);
  // The initial weights need the compiled graph's parameter names and shapes.
  std::string error;
  std::optional<TrainProgram> p = compile_case(dir / "spec.pipe", work / "kernel-cache", error);
  if (p) save_weights(p->step, (dir / "init.safetensors").string(), draw_initial_weights(p->step, seed), p->name);
  const bool ok = run_case(fmt::format("seed {}", seed), dir, c.settings, data, p, error, o, t,
                           o.keep / fmt::format("seed-{}", seed));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return ok;
}

bool replay(const fs::path& dir, const Options& o, Tally& t, bool keep, const fs::path& work) {
  CaseFolder c;
  try {
    c = read_case_folder(dir);
  } catch (const std::exception& e) {
    ++t.cases;
    ++t.failures;
    t.failed.push_back(dir.string() + ": " + e.what());
    std::cout << "BAD CASE " << dir.string() << ": " << e.what() << "\n";
    return false;
  }
  if (o.replicas > 1) c.settings.replicas = o.replicas;
  std::string error;
  std::optional<TrainProgram> p = compile_case(dir / "spec.pipe", work / "kernel-cache", error);
  return run_case(dir.string(), dir, c.settings, c.data, p, error, o, t, keep ? o.keep / dir.filename() : fs::path(),
                  c.note);
}

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--cases") o.cases = std::stoll(value());
      else if (a == "--first") o.first = std::stoull(value());
      else if (a == "--seed") o.one_seed = std::stoull(value());
      else if (a == "--case") o.case_dirs.push_back(value());
      else if (a == "--regressions") o.regressions = value();
      else if (a == "--no-regressions") o.replay_regressions = false;
      else if (a == "--regressions-only") o.generated = false;
      else if (a == "--keep") o.keep = value();
      else if (a == "-v" || a == "--verbose") o.verbose = true;
      else if (a == "--replicas") o.replicas = std::max(1, std::stoi(value()));
      else throw std::invalid_argument("unknown option " + a);
    } catch (const std::exception& e) {
      std::cerr << "train_difftest: " << e.what() << "\n";
      return false;
    }
  }
  if (o.one_seed || !o.case_dirs.empty()) o.replay_regressions = false;
  if (!o.case_dirs.empty() && !o.one_seed) o.generated = false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // As `pipec run`: idle OpenMP threads sleep instead of spinning on the cores the other thread needs.
  prefer_passive_openmp_waits(argv);
  Options o;
  if (!parse_args(argc, argv, o)) return 2;
  const auto start = std::chrono::steady_clock::now();
  std::cout << fmt::format("train_difftest: oneDNN {} on {}, {} cores\n", train::CpuKernels::version(),
                           train::CpuKernels::isa(), std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const fs::path work = fs::temp_directory_path() / fmt::format("pipec-train-difftest-{}", ::getpid());
  fs::create_directories(work);
  if (std::string problem = self_check(work); !problem.empty()) {
    std::cout << "train_difftest: " << problem << "\n";
    return 1;
  }
  Tally t;
  bool ok = true;
  if (o.generated) {
    const uint64_t first = o.one_seed ? *o.one_seed : o.first;
    const int64_t count = o.one_seed ? 1 : o.cases;
    for (int64_t i = 0; i < count; ++i) ok = run_generated(first + static_cast<uint64_t>(i), o, t, work) && ok;
  }
  for (const fs::path& d : o.case_dirs) ok = replay(d, o, t, false, work) && ok;
  if (o.replay_regressions && fs::is_directory(o.regressions)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(o.regressions))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) ok = replay(d, o, t, true, work) && ok;
    std::cout << fmt::format("train_difftest: {} regression case{} replayed from {}\n", dirs.size(),
                             dirs.size() == 1 ? "" : "s", o.regressions.string());
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string precisions;
  for (const auto& [p, n] : t.per_precision) precisions += fmt::format(" {} {}", p, n);
  std::cout << fmt::format(
      "train_difftest: {} cases in {:.1f} s ({}), {} with conv2d by Winograd, {} stopped early where the reference "
      "stopped being finite (a loss, as `pipec run` stops, an overflowed weight or statistic, a loss or gradient "
      "past 2^64), {} with an unbounded trajectory (a witness's run stopped being finite: rounding alone ends it); {} "
      "failed ({} did not compile){}\n",
      t.cases, secs, precisions.empty() ? "none compiled" : precisions.substr(1), t.winograd, t.nonfinite, t.unbounded,
      t.failures, t.check_failures,
      o.replicas > 1 ? fmt::format("; the executor under test: {} data-parallel replicas, {} cases with batch_norm "
                                   "not compared (its statistics are each replica's own)",
                                   o.replicas, t.per_replica)
                     : std::string());
  std::cout << "train_difftest: the largest measured / bound per check:\n";
  for (const auto& [p, w] : t.worst) std::cout << fmt::format("  {}:{}\n", p, join_worst(w));
  for (const std::string& f : t.failed) std::cout << "  FAILED " << f << "\n";
  return ok ? 0 : 1;
}
