// `pipec run SPEC` on a spec with a train block: the training half of the command. compile() has built
// the step graph and the plan of the block's data (compiler/compile/compile_train.cpp); this trains it on
// the CPU with the fast executor (the reference one with -O0 or --executor reference), reading batches
// from that plan, with a progress line, a summary of where the time went, --stats-json and training
// checkpoints (--checkpoint DIR, --resume: runtime/train/persist/train_checkpoint.h), Keras-style epoch
// lines and TensorBoard event files (--logdir: runtime/train/loop/train_event_log.h).
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/driver/run_args.h"
#include "compiler/driver/run_report.h"
#include "compiler/driver/train_device.h"
#include "compiler/driver/worker_group.h"
#include "runtime/dist/mpi_communicator.h"
#include "runtime/dist/thread_communicator.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/exec/stage_stats.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/io/errors.h"
#include "runtime/model/step_memory.h"
#include "runtime/threads/cancellation.h"
#include "runtime/trace/trace.h"
#include "runtime/train/loop/strategy.h"
#include "runtime/train/loop/train_event_log.h"
#include "runtime/train/loop/train_loop.h"
#include "runtime/train/parallel/data_parallel_executor.h"
#include "runtime/train/persist/train_checkpoint.h"
#include "runtime/train/reference/reference_executor.h"

namespace pipec {

namespace fs = std::filesystem;

namespace {

constexpr double kMaxBucketMb = 1024;

// The reference executor, for replicas when the device choice leaves the executor to the loop's default.
DataParallelExecutor::MakeReplica reference_maker() {
  return [](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
    return std::make_unique<ReferenceExecutor<float>>(g, seed);
  };
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string percent(double part, double whole) {
  return fmt::format("{:.1f}%", whole > 0 ? 100.0 * part / whole : 0.0);
}

// "loss 0.41, accuracy 0.87, mae 0.2" of one evaluation on the validation data.
std::string eval_text(const EvalResult& e) {
  std::string out = fmt::format("loss {:.4g}", e.loss);
  for (const auto& [name, value] : e.metrics) out += fmt::format(", {} {:.4g}", name, value);
  return out;
}

// The summary's line on a mixed precision: what the device did, and the loss scale where there is one.
// `executor` is the executor's description: on the CPU it says whether mixed_bf16's layers multiplied
// on bf16 kernels.
std::string precision_text(const TrainProgram& t, const TrainProgress& p, const std::string& executor) {
  const bool on_gpu = executor.rfind("gpu", 0) == 0;
  const bool bf16_kernels = executor.find("layers on bf16 kernels") != std::string::npos;
  std::string line = fmt::format(
      "  precision   {}: operands rounded to {} where a GPU casts, {}", enum_text(t.precision),
      t.precision == Precision::MixedBf16 ? "bf16" : "fp16",
      on_gpu ? "computed in f32 on the GPU"
      : bf16_kernels
          ? "conv2d, conv2d_transpose and dense multiplied in bf16 on the CPU's bf16 kernels, the rest in f32"
          : "computed in f32 on the CPU");
  if (p.loss_scale)
    line += fmt::format("; loss scale {:g} at the end, {} step{} skipped", *p.loss_scale, p.skipped_steps,
                        p.skipped_steps == 1 ? "" : "s");
  return line + "\n";
}

std::string progress_line(const TrainProgress& p) {
  std::string steps = p.total_steps ? fmt::format("{}/{}", format_thousands(p.step), format_thousands(*p.total_steps))
                                    : format_thousands(p.step);
  double rate = p.elapsed > 0 ? p.examples / p.elapsed : 0;
  std::string line = fmt::format("step {}  loss {:.4g}  {} ex/s  input {}  elapsed {}", steps, p.smoothed_loss,
                                 format_thousands(static_cast<uint64_t>(rate)), percent(p.input_wait, p.elapsed),
                                 format_duration(p.elapsed));
  if (p.loss_scale) line += fmt::format("  scale {:g}", *p.loss_scale);
  const int64_t done = p.step - p.resumed_from;  // steps this run took
  if (p.total_steps && done > 0) line += "  ETA " + format_duration(p.elapsed / done * (*p.total_steps - p.step));
  if (p.eval) line += fmt::format("  val {} (step {})", eval_text(*p.eval), format_thousands(p.eval->step));
  return line;
}

// Keras' line at the end of an epoch of model.fit(): "Epoch 3/15  loss 0.2143  val_loss 0.4801
// val_accuracy 0.872  1.2 s".
std::string epoch_line(const EpochEnd& e) {
  std::string line = fmt::format("Epoch {}/{}  loss {:.4g}", e.epoch, e.epochs, e.loss);
  if (e.eval) {
    line += fmt::format("  val_loss {:.4g}", e.eval->loss);
    for (const auto& [name, value] : e.eval->metrics) line += fmt::format("  val_{} {:.4g}", name, value);
  }
  return line + fmt::format("  {:.1f} s", e.seconds);
}

// What the data pipeline did while training: its memory, its bottleneck, the thread split with the
// compute, the advice (the input wait first), and what each `auto` got. Written while the pipeline's
// run exists (TrainOptions::inspect_pipeline).
struct PipelineReport {
  std::string text;
  std::vector<Advice> advice;
  nlohmann::ordered_json json;
};

PipelineReport pipeline_report(const PipelineRun& run, const TrainProgress& p, bool all_passes, bool explain_autotune) {
  PipelineReport r;
  RunFacts facts = run_facts(run, all_passes);
  facts.training = RunFacts::Training{p.step, p.elapsed, p.input_wait};
  r.advice = advise(facts);
  std::ostringstream out;
  print_memory_line(out, run);
  print_bottleneck_line(out, run);
  print_advice(out, r.advice);
  print_autotune(out, run, explain_autotune);
  // Indented under the summary's "input pipeline:" line.
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) r.text += "  " + line + "\n";
  add_autotune_json(r.json, run, r.advice);
  return r;
}

// The summary's memory line: the plan checked before step 1, and the resident peak beside it.
std::string memory_text(const TrainSummary& s) {
  std::string line = "planned " + s.memory.text();
  if (s.peak_resident_bytes >= 0) {
    const double off = 100.0 * static_cast<double>(s.peak_resident_bytes - s.memory.total()) /
                       static_cast<double>(std::max<int64_t>(s.memory.total(), 1));
    line += fmt::format("; peak resident {} ({:+.1f}% of the plan)", bytes_text(s.peak_resident_bytes), off);
  }
  return line;
}

// The memory plan as JSON: its parts in bytes, the kernels' by name, and the resident peak.
nlohmann::ordered_json memory_json(const TrainSummary& s) {
  const TrainMemoryPlan& m = s.memory;
  nlohmann::ordered_json kernels = nlohmann::ordered_json::object();
  for (const auto& [name, bytes] : m.kernels) kernels[name] = bytes;
  nlohmann::ordered_json j;
  j["rows"] = m.rows;
  j["planned_bytes"] = m.total();
  j["parts"] = {{"process", m.process},
                {"weights_and_optimizer", m.flat},
                {"activations_and_gradients", m.values},
                {"kernels", m.kernel_bytes()},
                {"batch", m.batch},
                {"input_pipeline", m.input_pipeline},
                {"evaluation", m.evaluation}};
  j["kernels"] = kernels;
  j["not_counted"] = m.unknown;
  j["peak_resident_bytes"] = s.peak_resident_bytes;
  return j;
}

// The summary's words on a checkpoint of another number of processes: " (written by 2 ranks; epoch 2
// restarted from its first example)".
std::string restart_summary(const EpochRestart& r) {
  const std::string by = r.writers == 1 ? std::string("one process") : fmt::format("{} ranks", r.writers);
  if (r.finished) return fmt::format(" (written by {}; its run had ended)", by);
  if (r.epoch)
    return fmt::format(" (written by {}; epoch {} restarted from its first example)", by, r.pass.value_or(0) + 1);
  if (r.pass) return fmt::format(" (written by {}; the data restarted from its pass {})", by, *r.pass + 1);
  return fmt::format(" (written by {}; the data restarted from its beginning)", by);
}

void print_summary(std::ostream& out, const TrainProgram& t, const TrainSummary& s, const RunArgs& r,
                   const TrainArgs& a, const PipelineReport& pipeline) {
  const TrainProgress& p = s.last;
  // A resumed run that had nothing left trained no step.
  const std::string steps =
      !p.resumed_from ? fmt::format("{} steps", format_thousands(p.step))
      : p.step > p.resumed_from
          ? fmt::format("steps {} to {}", format_thousands(p.resumed_from + 1), format_thousands(p.step))
          : fmt::format("no step after step {}", format_thousands(p.step));
  out << fmt::format("train {}: {} ({} examples) in {:.2f} s, {} examples/s\n", t.name, steps,
                     format_thousands(p.examples), p.elapsed,
                     format_thousands(static_cast<uint64_t>(p.elapsed > 0 ? p.examples / p.elapsed : 0)));
  out << fmt::format("  loss        {:.6g} at the last step, {:.6g} smoothed, {:.6g} at the first\n", p.loss,
                     p.smoothed_loss, s.first_loss);
  const double total = std::max(p.elapsed, 1e-9);
  out << fmt::format(
      "  time        input wait {:.2f} s ({}), forward {:.2f} s ({}), loss {:.2f} s ({}), backward {:.2f} s ({}), "
      "optimizer {:.2f} s ({})\n",
      p.input_wait, percent(p.input_wait, total), s.phases[0], percent(s.phases[0], total), s.phases[1],
      percent(s.phases[1], total), s.phases[2], percent(s.phases[2], total), s.phases[3], percent(s.phases[3], total));
  if (!s.evals.empty()) {
    const EvalResult& e = s.evals.back();
    out << fmt::format("  validation  {} on {} examples after step {} (inference mode; {} evaluation{})\n",
                       eval_text(e), format_thousands(e.examples), format_thousands(e.step), s.evals.size(),
                       s.evals.size() == 1 ? "" : "s");
  }
  out << "  executor    " << s.executor << "\n";
  out << "  threads     " << s.thread_split << "\n";
  if (s.memory.rows > 0) out << "  memory      " << memory_text(s) << "\n";
  out << "  input pipeline:\n" << pipeline.text;
  if (t.precision != Precision::Fp32) out << precision_text(t, p, s.executor);
  if (!a.init.empty()) out << fmt::format("  weights     started from {}\n", a.init);
  if (p.resumed_from)
    out << fmt::format("  resumed     from {} at step {}{}\n", train_checkpoint_file(r.checkpoint).string(),
                       p.resumed_from, s.epoch_restart ? restart_summary(*s.epoch_restart) : std::string());
  if (s.checkpoints)
    out << fmt::format("  checkpoint  {} saved {} time{}, the last after step {}\n", r.checkpoint, s.checkpoints,
                       s.checkpoints == 1 ? "" : "s", p.step);
  else if (!r.checkpoint.empty()) out << fmt::format("  checkpoint  {} already holds step {}\n", r.checkpoint, p.step);
  if (!a.save.empty())
    out << fmt::format("  weights     saved to {} ({} tensors, {:.2f} MB)\n", a.save, s.saved_tensors,
                       s.saved_bytes / 1e6);
}

// The summary as JSON (`--stats-json`), with every step's loss.
nlohmann::ordered_json stats_json(const std::string& spec, const TrainProgram& t, const TrainSummary& s,
                                  const PipelineReport& pipeline) {
  const TrainProgress& p = s.last;
  nlohmann::ordered_json j;
  j["spec"] = spec;
  j["train"] = t.name;
  j["steps"] = p.step;
  if (p.resumed_from) j["resumed_from_step"] = p.resumed_from;
  if (const std::optional<EpochRestart>& r = s.epoch_restart) {
    // The pass and the epoch count from 1, as the note and the epoch lines do; null: from the data's beginning.
    nlohmann::ordered_json x;
    x["written_by_processes"] = r->writers;
    x["processes"] = r->processes;
    x["step"] = r->step;
    x["finished"] = r->finished;
    x["epoch_restarted"] = r->epoch;
    x["pass"] = r->pass ? nlohmann::ordered_json(*r->pass + 1) : nlohmann::ordered_json();
    x["note"] = r->note;
    j["epoch_restart"] = x;
  }
  j["examples"] = p.examples;
  j["seconds"] = p.elapsed;
  j["examples_per_second"] = p.elapsed > 0 ? p.examples / p.elapsed : 0.0;
  j["first_loss"] = s.first_loss;
  j["final_loss"] = p.loss;
  j["smoothed_loss"] = p.smoothed_loss;
  j["input_wait_seconds"] = p.input_wait;
  j["forward_seconds"] = s.phases[0];
  j["loss_seconds"] = s.phases[1];
  j["backward_seconds"] = s.phases[2];
  j["optimizer_seconds"] = s.phases[3];
  j["precision"] = enum_text(t.precision);
  j["executor"] = s.executor;
  if (p.loss_scale) {
    j["loss_scale"] = *p.loss_scale;
    j["skipped_steps"] = p.skipped_steps;
  }
  j["threads"] = {{"workers", s.threads},
                  {"compute", s.compute_threads},
                  {"changes", s.thread_split_changes},
                  {"reason", s.thread_split}};
  j["input_pipeline"] = pipeline.json;
  if (s.memory.rows > 0) j["memory"] = memory_json(s);
  j["losses"] = s.losses;
  if (!s.evals.empty()) {
    nlohmann::ordered_json evals = nlohmann::ordered_json::array();
    for (const EvalResult& e : s.evals) {
      nlohmann::ordered_json x;
      x["step"] = e.step;
      x["examples"] = e.examples;
      x["loss"] = e.loss;
      for (const auto& [name, value] : e.metrics) x[name] = value;
      evals.push_back(x);
    }
    j["validation"] = evals;
  }
  if (!s.epochs.empty()) {
    nlohmann::ordered_json epochs = nlohmann::ordered_json::array();
    for (const EpochEnd& e : s.epochs) {
      nlohmann::ordered_json x;
      x["epoch"] = e.epoch;
      x["steps"] = e.steps;
      x["step"] = e.step;
      x["loss"] = e.loss;
      x["lr"] = e.lr;
      x["seconds"] = e.seconds;
      if (e.eval) {
        x["val_loss"] = e.eval->loss;
        for (const auto& [name, value] : e.eval->metrics) x["val_" + name] = value;
      }
      epochs.push_back(x);
    }
    j["epochs"] = epochs;
  }
  return j;
}

// --bucket-mb: more than 0 (a bucket smaller than a parameter holds that one parameter), at most 1 GiB
// (a bucket as large as the whole gradient buffer already leaves nothing to overlap).
CLI::Validator bucket_mb_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          size_t end = 0;
          const double mb = std::stod(text, &end);
          if (end != text.size() || (mb > 0 && mb <= kMaxBucketMb)) return "";
        } catch (const std::exception&) {
          return "";  // not a number: the conversion to double says so
        }
        return fmt::format("must be more than 0 and at most {}, not {}", kMaxBucketMb, text);
      },
      "more than 0, at most 1024");
}

}  // namespace

TrainFlags add_train_flags(CLI::App& app, TrainArgs& into) {
  const std::string group = "training (a spec with a train block)";
  TrainFlags f;
  f.block = app.add_option("--train", into.block, "the train block to run (default: the only one)")
                ->type_name("NAME")
                ->group(group);
  f.steps = app.add_option("--steps", into.steps, "train N steps (replaces the block's steps and epochs)")
                ->type_name("N")
                ->check(in_range(1, INT64_MAX))
                ->group(group);
  f.epochs =
      app.add_option("--epochs", into.epochs, "train N passes over the data (with --steps: N x steps, steps per epoch)")
          ->type_name("N")
          ->check(in_range(1, INT64_MAX))
          ->group(group);
  f.init = app.add_option("--init", into.init, "start from the weights in FILE (safetensors, as --save writes them)")
               ->type_name("FILE")
               ->group(group);
  f.save = app.add_option("--save", into.save, "write the trained weights to FILE (safetensors)")
               ->type_name("FILE")
               ->group(group);
  f.metrics = app.add_option("--metrics", into.metrics,
                             "write one JSON line per step to FILE: step, loss, lr, loss_scale, examples_per_second, "
                             "input_wait_seconds")
                  ->type_name("FILE")
                  ->group(group);
  f.executor = app.add_option("--executor", into.executor,
                              "fast: the layers on oneDNN (default); reference: plain loops on one thread, the oracle\n"
                              "the fast executor is tested against (-O0 picks it too)")
                   ->type_name("fast|reference")
                   ->check(one_of({"fast", "reference"}))
                   ->capture_default_str()
                   ->group(group);
  f.allow_tf32 = app.add_flag("--allow-tf32", into.allow_tf32,
                              "on a GPU, let fp32 convolutions and matmuls use TF32 tensor cores: faster, about\n"
                              "3 decimal digits less exact (fp32 stays fp32 without it)")
                     ->group(group);
  f.collective_timeout =
      app.add_option("--collective-timeout", into.collective_timeout,
                     "data-parallel training: a collective (a gradient all-reduce, the step's agreement) that has\n"
                     "not completed after SECONDS ends the run, naming the replicas that did not answer")
          ->type_name("SECONDS")
          ->check(CLI::PositiveNumber)
          ->capture_default_str()
          ->group(group);
  f.bucket_mb =
      app.add_option("--bucket-mb", into.bucket_mb,
                     "data-parallel training: the gradients are all-reduced in buckets of about MB MiB, each\n"
                     "as soon as the backward pass has finished it (a parameter is never split), so that the\n"
                     "sums overlap the rest of the pass; the size changes when the sums run, not their bits")
          ->type_name("MB")
          ->check(bucket_mb_range())
          ->capture_default_str()
          ->group(group);
  f.conv = app.add_option("--conv", into.conv,
                          "conv2d's algorithm on the fast executor: auto takes Winograd's F(4x4, 3x3) where oneDNN\n"
                          "has it (3x3 windows at stride 1, AVX-512), about twice as fast, within ~1e-6 of direct")
               ->type_name("auto|direct")
               ->check(one_of({"auto", "direct"}))
               ->capture_default_str()
               ->group(group);
  f.cpu_bf16 =
      app.add_option("--cpu-bf16", into.cpu_bf16,
                     "precision = mixed_bf16 on the CPU: native multiplies conv2d, conv2d_transpose and dense\n"
                     "in bf16 on oneDNN's bf16 kernels (CPUs with AVX512_BF16 or AMX), emulated rounds to bf16\n"
                     "and multiplies in f32 (as fast as fp32); auto takes native where the CPU has it")
          ->type_name("auto|native|emulated")
          ->check(one_of({"auto", "native", "emulated"}))
          ->capture_default_str()
          ->group(group);
  return f;
}

int run_compiled_training(const CompileResult& compiled, const RunArgs& run_args, const TrainArgs& train_args,
                          bool quiet, bool all_passes) {
  const CompiledTrain& train = compiled.trains.at(0);
  const TrainProgram& t = train.program;
  const Plan& data = compiled.pipelines.at(0).plan;
  RunArgs a = run_args;
  TrainArgs ta = train_args;

  // multi_worker under mpirun: this process is one rank of the run. Rank 0 alone prints and writes
  // (progress, summary, --metrics, --logdir, --save, checkpoints); the others train quietly beside it.
  const MpiLaunch launch = mpi_launch_from_environment();
  std::optional<WorkerGroup> workers;
  if (launch.under_mpirun && launch.size > 1) {
    const std::string where = t.strategy_loc.valid() ? t.strategy_loc.to_string() + ": " : std::string();
    if (t.strategy != StrategyKind::MultiWorker) {
      std::cerr << fmt::format(
          "pipec run: error: {}started by mpirun as rank {} of {}, but train `{}` has strategy {}: write "
          "`strategy = multi_worker()` to train the ranks together\n",
          where, launch.rank, launch.size, t.name, strategy_kind_name(t.strategy));
      return 2;
    }
    workers =
        // The seed and the thread count too: going by elements, they decide the order the shards count in
        // (shuffle_files without a seed of its own, interleave(cycle_length = auto)). And what decides the
        // collectives each rank calls: the gradient buckets, the checkpoints, the resume and the sync
        // before --save (rank 0 alone writes the files, so their names may differ).
        join_workers(
            fmt::format("{}\n{}\n{} {} {} {} {}\n{} {} {} {} {}", read_file_text(a.spec), t.name,
                        train.length.steps.value_or(-1), train.length.epochs.value_or(-1), a.seed, a.threads, ta.init,
                        ta.bucket_mb, !a.checkpoint.empty(), a.checkpoint_every, a.resume, !ta.save.empty()),
            ta.collective_timeout);
    if (!workers->error.empty()) {
      std::cerr << "pipec run: error: " << workers->error << "\n";
      return 2;
    }
    if (workers->rank == 0 && !quiet) {
      const std::optional<ShardReport>& shard = compiled.pipelines.at(0).shard;
      std::cerr << fmt::format("pipec run: multi_worker: {} ranks; {}\n", workers->size,
                               shard ? shard->description : std::string("the data is not sharded"));
    }
    // The other ranks take part in checkpoints and in the sync before --save, which rank 0 writes
    // (TrainOptions::ranks).
    if (workers->rank != 0) {
      quiet = true;
      ta.metrics.clear();
      a.logdir.clear();
      a.stats_json.clear();
      a.trace.clear();
    }
  }

  // As for a pipeline run: keep glibc from handing big blocks back to the OS between batches.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  install_signal_cancellation();
  CancellationToken cancel = CancellationToken::child_of(process_cancellation_token());
  TrainOptions to;
  to.seed = a.seed;
  to.threads = a.threads;
  to.spec_dir = fs::absolute(fs::path(a.spec)).parent_path().string();
  to.cancel = &cancel;
  to.length = train.length;
  to.init_path = ta.init;
  to.save_path = ta.save;
  to.checkpoint_dir = a.checkpoint;
  to.checkpoint_every = a.checkpoint_every;
  to.resume = a.resume;
  // A checkpoint of another number of processes: said once, before the first step (rank 0 alone speaks).
  to.on_epoch_restart = [quiet](const EpochRestart& r) {
    if (!quiet) std::cerr << "pipec run: note: " << r.note << "\n" << std::flush;
  };
  if (workers) to.ranks = workers->comm;
  // Under multi_worker the checkpoint is rank 0's to read (the others may have no copy): a missing one
  // is its error, which stops every rank.
  if (a.resume && !workers && !fs::exists(train_checkpoint_file(a.checkpoint))) {
    std::cerr << "pipec run: no training checkpoint to resume from at " << train_checkpoint_file(a.checkpoint).string()
              << "\n";
    return 2;
  }
  to.memory_budget = a.memory_budget.empty() ? 0 : static_cast<uint64_t>(parse_memory_size(a.memory_budget));
  to.autotune = !a.no_autotune;
  to.auto_values = parse_auto_values(a.auto_values);
  PipelineReport pipeline;
  to.inspect_pipeline = [&](const PipelineRun& run, const TrainProgress& p) {
    pipeline = pipeline_report(run, p, all_passes, a.explain_autotune);
  };
  if (t.eval && compiled.pipelines.size() > 1) to.validation = &compiled.pipelines.at(1).plan;
  TrainDeviceRequest dr;
  dr.device = a.device;
  dr.executor = ta.executor;
  dr.executor_given = ta.executor_given;
  dr.direct_conv = ta.conv == "direct";
  dr.cpu_bf16 = ta.cpu_bf16;
  dr.allow_tf32 = ta.allow_tf32;
  dr.threads = a.threads;
  TrainDeviceChoice device = choose_train_device(dr);
  if (!device.error.empty()) {
    std::cerr << "pipec run: error: " << device.error << "\n";
    return device.exit_code;
  }
  if (!device.note.empty() && !quiet) std::cerr << device.note << "\n";
  to.make_executor = device.make;
  to.make_eval_executor = device.make_eval;
  // The strategy, said once before the first step: replicas on threads for mirrored on the CPU.
  if (t.strategy != StrategyKind::Single) {
    std::string no_gpu;
    if (!device.gpu) no_gpu = device.note.empty() ? "training runs on the CPU" : device.note;
    int64_t batch = 0;  // the data's batch size: its last batch stage's
    for (const Stage& st : data.stages)
      if (st.kind == StageKind::Batch)
        if (const Value* v = st.arg("size"); v && v->kind == Value::Int) batch = v->i;
    StrategyChoice choice = choose_strategy(t, no_gpu, batch, workers ? workers->size : 1);
    if (!choice.error.empty()) {
      std::cerr << choice.error << "\n";
      return 2;
    }
    if (!choice.warning.empty()) std::cerr << choice.warning << "\n";
    if (!choice.note.empty() && !quiet) std::cerr << choice.note << "\n";
    // The replicas all-reduce their host gradient buffers: a GPU executor keeps its gradients on the
    // device, and replicas of it are not built yet (NCCL).
    if (choice.mpi && device.gpu) {
      std::cerr << "pipec run: error: " << (t.strategy_loc.valid() ? t.strategy_loc.to_string() + ": " : "")
                << "multi_worker ranks training on GPUs are not built yet: run with --device cpu\n";
      return 2;
    }
    DataParallelOptions dpo;
    dpo.bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(ta.bucket_mb * (1 << 20)));
    if (choice.mpi) {
      // One replica in this process, the others in the other ranks; the ranks agree before each step
      // whether all have a batch.
      auto dp = std::make_shared<DataParallelExecutor*>(nullptr);
      std::shared_ptr<Communicator> comm = workers->comm;
      const DataParallelExecutor::MakeReplica make = device.make ? device.make : reference_maker();
      to.make_executor = [comm, make, dp, dpo](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
        auto ex = std::make_unique<DataParallelExecutor>(g, seed, std::vector<std::shared_ptr<Communicator>>{comm},
                                                         make, dpo);
        *dp = ex.get();
        return ex;
      };
      to.all_have_batch = [dp](bool have) { return (*dp)->all_have_batch(have); };
      to.step_examples = [dp](int64_t) { return (*dp)->step_rows(); };
    }
    if (choice.replicas > 1) {
      // Each replica a share of the threads.
      const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
      dr.threads = std::max(1, threads / choice.replicas);
      const TrainDeviceChoice per_replica = choose_train_device(dr);
      const DataParallelExecutor::MakeReplica make_replica = per_replica.make ? per_replica.make : reference_maker();
      CollectiveOptions co;
      co.timeout_seconds = ta.collective_timeout;
      const int replicas = choice.replicas;
      to.make_executor = [make_replica, replicas, co, dpo](const ModelGraph& g,
                                                           uint64_t seed) -> std::unique_ptr<StepExecutor> {
        return std::make_unique<DataParallelExecutor>(
            g, seed, shared_communicators(make_thread_communicators(replicas, co)), make_replica, dpo);
      };
    }
  }
  bool tty = isatty(STDERR_FILENO) && !quiet;
  auto last_print = std::chrono::steady_clock::now();
  std::ofstream metrics;
  if (!ta.metrics.empty()) {
    metrics.open(ta.metrics);
    if (!metrics) {
      std::cerr << "pipec run: error: cannot write " << ta.metrics << "\n";
      return 2;
    }
  }
  // --save writes at the end of the run: a directory that is missing or read-only is said now, not
  // after the training it would have kept.
  if (!ta.save.empty() && (!workers || workers->rank == 0)) {
    const fs::path dir = fs::absolute(fs::path(ta.save)).parent_path();
    std::error_code ec;
    const char* why = !fs::is_directory(dir, ec)       ? "no such directory"
                      : access(dir.c_str(), W_OK) != 0 ? "the directory is not writable"
                                                       : nullptr;
    if (why) {
      std::cerr << fmt::format("pipec run: error: --save: cannot write {}: {} ({})\n", ta.save, why, dir.string());
      return 2;
    }
  }
  // --logdir: TensorBoard event files. A write that fails later (a full disk) stops the files, not the run.
  std::optional<TrainEventLog> events;
  if (!a.logdir.empty()) {
    try {
      events.emplace(a.logdir);
    } catch (const DataError& e) {
      std::cerr << "pipec run: error: --logdir: " << e.what() << "\n";
      return 2;
    }
  }
  auto log_event = [&](const std::function<void(TrainEventLog&)>& write) {
    if (!events) return;
    try {
      write(*events);
    } catch (const DataError& e) {
      std::cerr << (tty ? "\r\033[K" : "") << "pipec run: warning: --logdir: " << e.what()
                << "; no more TensorBoard events are written\n";
      events.reset();
    }
  };
  to.on_evaluation = [&](const EvalResult& e) { log_event([&](TrainEventLog& l) { l.evaluation(e); }); };
  to.on_epoch_end = [&](const EpochEnd& e) {
    log_event([&](TrainEventLog& l) { l.epoch(e); });
    // Above the progress line, which the next step draws again.
    if (!quiet) std::cerr << (tty ? "\r\033[K" : "") << epoch_line(e) << "\n" << std::flush;
  };
  auto on_step = [&](const TrainProgress& p) {
    log_event([&](TrainEventLog& l) { l.step(p); });
    if (metrics.is_open()) {
      // One line per step, flushed, so that a reader following the file sees every step as it ends.
      nlohmann::ordered_json j;
      j["step"] = p.step;
      j["loss"] = p.loss;
      j["lr"] = p.lr;
      j["loss_scale"] = p.loss_scale.value_or(1);
      j["examples_per_second"] = p.elapsed > 0 ? static_cast<double>(p.examples) / p.elapsed : 0.0;
      j["input_wait_seconds"] = p.input_wait;
      j["examples"] = p.examples;  // since the run started (or resumed)
      j["seconds"] = p.elapsed;    // likewise: with `examples`, the rate between any two steps
      metrics << j.dump() << "\n" << std::flush;
    }
    auto now = std::chrono::steady_clock::now();
    if (!tty || now - last_print < std::chrono::milliseconds(250)) return;
    last_print = now;
    std::cerr << "\r" << progress_line(p) << "\033[K" << std::flush;
  };
  auto clear_line = [&] {
    if (tty) std::cerr << "\r\033[K";
  };
  // An error: said with the rank under multi_worker, which then stops every other rank (MPI_Abort ends
  // the job) instead of leaving them waiting for this one.
  auto fail = [&](const std::string& message, int code) {
    if (!workers) {
      std::cerr << "pipec run: error: " << message << "\n";
      return code;
    }
    const std::string text = fmt::format("rank {} of {}: {}", workers->rank, workers->size, message);
    std::cerr << "pipec run: error: " << text << "\n" << std::flush;
    workers->comm->abort(text);
    return code;
  };
  if (!a.trace.empty()) {
    trace::start("pipec run " + fs::path(a.spec).filename().string());
    trace::set_thread_name("main (trainer)");
  }
  try {
    TrainSummary s = run_training(t, data, to, on_step);
    clear_line();
    log_event([](TrainEventLog& l) { l.close(); });
    if (!write_run_trace(a.trace)) return 2;
    if (!quiet) print_summary(std::cerr, t, s, a, ta, pipeline);
    if (s.left_by_others > 0 && workers)
      std::cerr << fmt::format(
          "pipec run: note: rank {}: {} examples of its shard were left untrained when another "
          "rank's shard ended (each example is trained at most once per pass)\n",
          workers->rank, s.left_by_others);
    if (!a.stats_json.empty()) {
      std::ofstream o(a.stats_json);
      o << stats_json(a.spec, t, s, pipeline).dump(2) << "\n";
      if (!o.flush()) {
        std::cerr << "pipec run: cannot write " << a.stats_json << "\n";
        return 2;
      }
    }
  } catch (const CancelledError&) {
    clear_line();
    std::cerr << "pipec run: interrupted\n";
    return 130;
  } catch (const CheckpointError& e) {
    clear_line();
    return fail(e.what(), 1);
  } catch (const WeightsFileError& e) {
    clear_line();
    return fail(e.what(), 2);
  } catch (const GpuUnavailableError& e) {
    clear_line();
    return fail(e.what(), 3);
  } catch (const std::exception& e) {
    clear_line();
    return fail("train `" + t.name + "`: " + e.what(), 1);
  }
  return 0;
}

}  // namespace pipec
