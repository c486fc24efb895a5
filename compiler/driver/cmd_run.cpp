// `pipec run SPEC`: compile a pipeline (compiler/compile) and run it, with a progress line, a summary of
// where the time went (or as JSON), NumPy output for inspection, iterator checkpoints and TensorBoard
// event files (--logdir: runtime/exec/pipeline_event_log.h). A spec with
// a train block trains instead (compiler/driver/cmd_train.cpp) unless a pipeline flag asks for the
// pipeline.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/compile/compile.h"
#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/compile_report.h"
#include "compiler/driver/openmp_waits.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/run_args.h"
#include "compiler/driver/run_report.h"
#include "compiler/driver/spec_options.h"
#include "runtime/core/buffer_pool.h"
#include "runtime/dist/mpi_communicator.h"
#include "runtime/exec/pipeline_event_log.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/io/errors.h"
#include "runtime/io/npy.h"
#include "runtime/threads/cancellation.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace fs = std::filesystem;

namespace {

DevicePolicy device_policy(const std::string& word) {
  return word == "cpu" ? DevicePolicy::Cpu : word == "gpu" ? DevicePolicy::Gpu : DevicePolicy::Auto;
}

int64_t examples_in(const Chunk& c, int batch_rank) {
  if (batch_rank == 0 || c.columns.empty()) return c.rows;
  const Column& col = c.columns[0];
  if (!col.ragged) return col.dense.rank() >= 2 ? c.rows * col.dense.shape()[1] : c.rows;
  int64_t n = 0;
  for (const Tensor& t : col.rows) n += t.rank() >= 1 ? t.shape()[0] : 1;
  return n;
}

void write_element(const std::string& dir, int64_t index, const std::vector<Field>& fields, const Chunk& c, int64_t r) {
  fs::path folder = fs::path(dir) / fmt::format("{:06d}", index);
  fs::create_directories(folder);
  for (size_t k = 0; k < fields.size(); ++k)
    write_npy((folder / (fields[k].name + ".npy")).string(), column_row(c.columns[k], r));
}

struct Summary {
  int64_t elements = 0;
  int64_t examples = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

// The backend that runs stage `i`'s body: the compiled kernel's or the interpreter ("" for other stages).
std::string stage_backend(const Stage& s) {
  if (!has_element_kernel(s)) return "";
  return s.native && s.native->fn ? s.native->backend : "interpreter";
}

// A flat_map's inner pipeline's bodies and their backends, "#1 map llvm-jit, #2 filter interpreter" (a
// nested flat_map's in brackets after it); "" when it has none.
std::string inner_backends(const Plan& inner) {
  std::string out;
  for (size_t i = 0; i < inner.stages.size(); ++i) {
    const Stage& s = inner.stages[i];
    std::string b = stage_backend(s);
    if (s.inner)
      if (std::string nested = inner_backends(*s.inner); !nested.empty()) b = "(each element: " + nested + ")";
    if (!b.empty()) out += fmt::format("{}#{} {} {}", out.empty() ? "" : ", ", i, stage_name(s.kind), b);
  }
  return out;
}

void print_summary(std::ostream& out, const PipelineRun& run, const std::string& name, const Summary& s, bool batched,
                   const codegen::JitReport* jit, bool explain_autotune, const std::vector<Advice>& advice) {
  const Plan& plan = run.plan();
  const RunContext& ctx = run.context();
  double secs = std::max(s.seconds, 1e-9);
  out << fmt::format("pipeline {}: {} {} ({} examples) in {:.2f} s\n", name, format_thousands(s.elements),
                     batched ? "batches" : "elements", format_thousands(s.examples), s.seconds);
  out << fmt::format("  examples/s  {}\n", format_thousands(static_cast<uint64_t>(s.examples / secs)));
  out << fmt::format("  output      {}\n", format_byte_rate(s.bytes / secs));
  out << fmt::format("  peak RSS    {:.1f} MB\n", peak_rss_bytes() / 1e6);
  print_memory_line(out, run);
  if (jit) out << fmt::format("  kernels     {}\n", jit->summary());
  BufferPoolStats pool = BufferPool::global().stats();
  out << fmt::format("  buffers     {} fresh ({:.1f} MB), {} reused\n", format_thousands(pool.fresh_count),
                     pool.fresh_bytes / 1e6, format_thousands(pool.reused_count));
  const JpegIndexCache::Stats jpeg = JpegIndexCache::process().stats();
  if (jpeg.indexed + jpeg.unindexable > 0)
    out << fmt::format(
        "  jpeg index  {} files ({:.1f} of {:.0f} MB{}), {} windows cut from it{}\n", format_thousands(jpeg.indexed),
        jpeg.bytes / 1e6, jpeg.budget / 1e6, jpeg.full ? ", full: later files decode the usual way" : "",
        format_thousands(jpeg.hits),
        jpeg.unindexable ? fmt::format(", {} not indexable", format_thousands(jpeg.unindexable)) : std::string());
  // `work`: the stage's own time on the thread that pulls from it and on threads of its own (a map's
  // tasks, files read ahead).
  uint64_t total_work = 0;
  for (const auto& st : ctx.stats) total_work += st->snapshot().work_ns();
  // pack's rows: how much of them is tokens rather than padding (what packing is for).
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    if (snap.packed_slots == 0) continue;
    out << fmt::format("  packing     #{} {}: {:.1f}% of {} token slots hold tokens ({} rows of {})\n", i,
                       stage_name(plan.stages[i].kind), 100.0 * snap.packing_efficiency(),
                       format_thousands(snap.packed_slots), format_thousands(snap.elements_out),
                       plan.stages[i].arg("length") ? plan.stages[i].arg("length")->i : 0);
  }
  // bucket_by_length's batches: their padding, and what padded_batch over the same input would pad.
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    if (snap.bucket_slots == 0 || snap.plain_slots == 0) continue;
    const uint64_t pad = snap.bucket_slots - snap.bucket_tokens, plain_pad = snap.plain_slots - snap.plain_tokens;
    out << fmt::format(
        "  padding     #{} {}: {:.1f}% of {} token slots are padding; padded_batch({}) would pad "
        "{:.1f}% of {}: {} padding slots saved ({:.1f}%)\n",
        i, stage_name(plan.stages[i].kind), 100.0 * pad / snap.bucket_slots, format_thousands(snap.bucket_slots),
        snap.plain_batch, 100.0 * plain_pad / snap.plain_slots, format_thousands(snap.plain_slots),
        plain_pad >= pad ? format_thousands(plain_pad - pad) : "-" + format_thousands(pad - plain_pad),
        plain_pad ? 100.0 * (static_cast<double>(plain_pad) - static_cast<double>(pad)) / plain_pad : 0.0);
  }
  out << fmt::format("  {:<4} {:<16} {:>14} {:>10} {:>7}  {}\n", "", "stage", "elements out", "work", "share",
                     "device");
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    double share = total_work ? 100.0 * snap.work_ns() / total_work : 0;
    std::string extra;
    if (int64_t d = ctx.dropped[i]->load()) extra = fmt::format("  ({} dropped by ignore_errors)", format_thousands(d));
    if (std::string b = stage_backend(plan.stages[i]); !b.empty()) extra += "  [" + b + "]";
    if (plan.stages[i].inner)
      if (std::string b = inner_backends(*plan.stages[i].inner); !b.empty()) extra += "  [each element: " + b + "]";
    out << fmt::format("  #{:<3} {:<16} {:>14} {:>9.2f}s {:>6.1f}%  {}{}\n", i, stage_name(plan.stages[i].kind),
                       format_thousands(snap.elements_out), snap.work_ns() / 1e9, share, ctx.stage_device.at(i), extra);
  }
  print_bottleneck_line(out, run);
  print_advice(out, advice);
  print_autotune(out, run, explain_autotune);
}

// The summary as JSON (`--stats-json`): the same figures as print_summary, for scripts and benches.
nlohmann::ordered_json stats_json(const std::vector<Advice>& advice, const std::string& spec, const PipelineRun& run,
                                  const std::string& name, const Summary& s, const codegen::JitReport* jit) {
  using Json = nlohmann::ordered_json;
  const RunContext& ctx = run.context();
  Json j;
  j["spec"] = spec;
  j["pipeline"] = name;
  j["elements"] = s.elements;
  j["examples"] = s.examples;
  j["bytes"] = s.bytes;
  j["seconds"] = s.seconds;
  j["examples_per_second"] = s.examples / std::max(s.seconds, 1e-9);
  j["peak_rss_bytes"] = peak_rss_bytes();
  if (jit) j["jit"] = Json{{"compiled", jit->compiled}, {"cached", jit->cached}, {"compile_ms", jit->compile_ms}};
  BufferPoolStats pool = BufferPool::global().stats();
  j["buffer_pool"] = Json{{"fresh_count", pool.fresh_count},
                          {"fresh_bytes", pool.fresh_bytes},
                          {"reused_count", pool.reused_count},
                          {"reused_bytes", pool.reused_bytes}};
  const JpegIndexCache::Stats jpeg = JpegIndexCache::process().stats();
  j["jpeg_index"] = Json{{"indexed", jpeg.indexed}, {"unindexable", jpeg.unindexable},
                         {"bytes", jpeg.bytes},     {"budget", jpeg.budget},
                         {"hits", jpeg.hits},       {"full", jpeg.full}};
  Json stages = Json::array();
  for (size_t i = 0; i < run.plan().stages.size(); ++i) {
    StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    stages.push_back(Json{{"index", i},
                          {"op", std::string(stage_name(run.plan().stages[i].kind))},
                          {"elements_out", snap.elements_out},
                          {"busy_seconds", snap.busy_ns / 1e9},
                          {"task_seconds", snap.task_ns / 1e9},
                          {"bytes_out", snap.bytes},
                          {"dropped", ctx.dropped[i]->load()},
                          {"backend", stage_backend(run.plan().stages[i])},
                          {"device", ctx.stage_device.at(i)}});
    if (run.plan().stages[i].kind == StageKind::Prefetch) stages.back()["inline_chunks"] = snap.inline_chunks;
    if (snap.packed_slots > 0)
      stages.back()["packing"] =
          Json{{"tokens", snap.packed_tokens}, {"slots", snap.packed_slots}, {"efficiency", snap.packing_efficiency()}};
    if (snap.bucket_slots > 0 && snap.plain_slots > 0)
      stages.back()["padding"] =
          Json{{"tokens", snap.bucket_tokens},
               {"slots", snap.bucket_slots},
               {"padded_batch_size", snap.plain_batch},
               {"padded_batch_tokens", snap.plain_tokens},
               {"padded_batch_slots", snap.plain_slots},
               {"slots_saved", static_cast<int64_t>(snap.plain_slots - snap.plain_tokens) -
                                   static_cast<int64_t>(snap.bucket_slots - snap.bucket_tokens)}};
  }
  j["stages"] = std::move(stages);
  add_autotune_json(j, run, advice);
  return j;
}

}  // namespace

bool parse_auto_value(const std::string& text, KnobKind* kind, int64_t* value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || !knob_kind_from_flag(std::string_view(text).substr(0, eq), kind)) return false;
  const std::string digits = text.substr(eq + 1);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  *value = std::stoll(digits);
  return *value >= (*kind == KnobKind::ReadAhead ? 0 : 1);
}

std::vector<std::pair<KnobKind, int64_t>> parse_auto_values(const std::vector<std::string>& texts) {
  std::vector<std::pair<KnobKind, int64_t>> out;
  for (const std::string& text : texts) {
    KnobKind kind;
    int64_t value = 0;
    if (parse_auto_value(text, &kind, &value)) out.emplace_back(kind, value);
  }
  return out;
}

int cmd_run(const Args& args) {
  SpecFlags flags;
  RunArgs a;
  TrainArgs t;
  CompileRequest request;
  auto app = make_command(
      "run", "SPEC",
      "Trains the spec's train block (the training options below), or runs a pipeline of SPEC and reports\n"
      "its throughput. A spec with a train block trains unless a pipeline option (--pipeline, --take,\n"
      "--output) asks for the pipeline. On a terminal a progress\n"
      "line shows batches, examples/s, MB/s, elapsed time and the ETA when known (training: steps, the smoothed\n"
      "loss, examples/s and the share of time waiting for input); at the end a summary shows where the time went.\n"
      "The optimized plan runs by default (`pipec explain SPEC` shows it); -O0 runs the plan as lowered.");
  app->add_option("SPEC", a.spec, "the spec")->required();
  std::vector<CLI::Option*> pipeline_only;
  pipeline_only.push_back(app->add_option("--pipeline", a.pipeline,
                                          "run this pipeline (default: the only one, or the one a train block uses)")
                              ->type_name("NAME"));
  pipeline_only.push_back(
      app->add_option("--take", a.take,
                      "stop after N output elements, batches when the pipeline batches; -1 takes them all")
          ->type_name("N")
          ->check(in_range(-1, INT64_MAX))
          ->capture_default_str());
  pipeline_only.push_back(
      app->add_option("--output", a.output, "write every output element as NumPy files DIR/NNNNNN/<field>.npy")
          ->type_name("DIR"));
  app->add_option("--seed", a.seed,
                  "the run seed for shuffles and random ops without their own; training: also the initial\n"
                  "weights and dropout")
      ->type_name("S")
      ->capture_default_str();
  app->add_option("--threads", a.threads, "worker threads; one per core when not given")
      ->type_name("N")
      ->check(in_range(1, 1024));
  auto* checkpoint = app->add_option("--checkpoint", a.checkpoint,
                                     "save the iterator state in DIR/state.ckpt; training: a training checkpoint\n"
                                     "(weights, optimizer slots, step, input state) in DIR/train.ckpt and\n"
                                     "DIR/weights-STEP.safetensors, also after the last step; under mpirun rank 0\n"
                                     "writes it, with every rank's input state (DIR/input-STEP-rank-K.ckpt)")
                         ->type_name("DIR");
  app->add_option("--checkpoint-every", a.checkpoint_every, "... every N output elements (training: every N steps)")
      ->type_name("N")
      ->check(in_range(1, INT64_MAX))
      ->capture_default_str();
  auto* resume = app->add_flag("--resume", a.resume,
                               "continue from DIR/state.ckpt (training: from DIR/train.ckpt; a multi_worker\n"
                               "checkpoint with the mpirun -np it was written with)")
                     ->needs(checkpoint);
  app->add_option("--stats-json", a.stats_json, "write the summary as JSON (training: with every step's loss)")
      ->type_name("FILE");
  app->add_flag("--no-jit", a.no_jit, "run map/filter bodies on the interpreter instead of compiling them with LLVM");
  app->add_option("--device", a.device,
                  "where the maps after to(gpu) run, and where a train block trains: the GPU when there is a\n"
                  "usable one (auto), always the CPU, or the GPU with an error (exit code 3) when there is none")
      ->type_name("auto|cpu|gpu")
      ->check(one_of({"auto", "cpu", "gpu"}))
      ->capture_default_str();
  app->add_option("--memory-budget", a.memory_budget,
                  "the most the stage buffers (prefetch, map windows, files read ahead, shuffle buffers, caches) may\n"
                  "hold, like 512M or 2G; half of the machine's memory when not given")
      ->type_name("SIZE")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return parse_memory_size(text) > 0 ? "" : fmt::format("must be a size like 512M or 2G, not `{}`", text);
          },
          ""));
  app->add_flag("--no-autotune", a.no_autotune, "keep every `auto` parameter at its starting value (2 per thread)");
  add_repeatable(*app, "--auto-value", a.auto_values,
                 "fix every `auto` parameter of a kind instead of tuning it: parallel=N (maps), prefetch=N,\n"
                 "read_ahead=N (files a tfrecord source reads on threads of their own); repeatable",
                 "KIND=N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            KnobKind kind;
            int64_t value = 0;
            return parse_auto_value(text, &kind, &value)
                       ? ""
                       : fmt::format("must be parallel=N, prefetch=N or read_ahead=N, not `{}`", text);
          },
          ""));
  app->add_flag("--explain-autotune", a.explain_autotune,
                "also show the autotuner's model of each stage and every change it made");
  app->add_option("--trace", a.trace,
                  "write Chrome trace events (Perfetto, chrome://tracing) to FILE; training: with each step's phases")
      ->type_name("FILE.json");
  app->add_option("--logdir", a.logdir,
                  "write TensorBoard event files under DIR, as Keras' TensorBoard callback does: training in\n"
                  "DIR/train and DIR/validation (loss, learning rate, loss scale, examples/s, input wait,\n"
                  "each validation loss and metric), a pipeline in DIR/pipeline (examples/s, each stage's share)")
      ->type_name("DIR");
  add_spec_flags(*app, flags, "no progress line, no epoch lines and no summary");
  add_opt_flags(*app, request.options.passes);
  const TrainFlags train_flags = add_train_flags(*app, t);
  const std::vector<CLI::Option*> train_only = train_flags.all();
  // A resumed run starts from the checkpoint's weights, not from a file of initial ones.
  resume->excludes(train_flags.init);
  // A pipeline flag runs the pipeline: it does not go with a training flag.
  for (CLI::Option* p : pipeline_only)
    for (CLI::Option* tr : train_only) p->excludes(tr);
  app->footer(
      "exit code: 0 success, 1 errors in the spec or its data (or a training step), 2 usage or I/O errors,\n"
      "3 --device gpu with no usable GPU, 130 interrupted");
  if (auto code = parse_command_line(*app, args)) return *code;
  // -O0 runs the reference of everything: the lowered plan on the interpreter, training on the reference
  // executor (unless --executor says otherwise).
  if (request.options.passes.opt_level == 0 && !train_flags.executor->count()) t.executor = "reference";
  t.executor_given = train_flags.executor->count() > 0 || request.options.passes.opt_level == 0;

  auto given = [](const std::vector<CLI::Option*>& opts) {
    return std::any_of(opts.begin(), opts.end(), [](const CLI::Option* o) { return o->count() > 0; });
  };
  // Only a run that may train starts OpenMP threads: one with a pipeline flag keeps this process.
  if (!given(pipeline_only)) prefer_passive_openmp_waits();
  const DevicePolicy device = device_policy(a.device);
  request.path = a.spec;
  request.target = given(pipeline_only) ? CompileTarget::OnePipeline
                   : given(train_only)  ? CompileTarget::Train
                                        : CompileTarget::TrainOrPipeline;
  request.pipeline = a.pipeline;
  request.train.block = t.block;
  if (train_flags.steps->count()) request.train.steps = t.steps;
  if (train_flags.epochs->count()) request.train.epochs = t.epochs;
  request.options.check = flags.check_options();
  request.options.cpu_kernels = a.no_jit ? CpuKernels::None : CpuKernels::Jit;
  request.options.data_dir = fs::absolute(fs::path(a.spec)).parent_path().string();
  request.options.device = device;
  // Under mpirun each rank compiles its share of the data (multi_worker(): runtime/exec/auto_shard.h).
  if (const MpiLaunch launch = mpi_launch_from_environment(); launch.under_mpirun && launch.size > 1)
    request.options.shard = CompileOptions::WorkerShard{launch.size, launch.rank};
  CompileResult compiled = compile(request);
  if (auto code = report_compile(compiled, "run", flags)) return *code;
  const bool all_passes = request.options.passes.opt_level > 0 && request.options.passes.disabled.empty();
  if (!compiled.trains.empty()) return run_compiled_training(compiled, a, t, flags.quiet, all_passes);
  const bool limited = a.take >= 0;  // --take N; -1 takes every element
  const Decl* decl = compiled.pipelines[0].decl;
  Plan& plan = compiled.pipelines[0].plan;
  const std::optional<codegen::JitReport>& jit = compiled.pipelines[0].jit;
  const ElementInfo& out_elem = plan.stages.back().element;
  bool batched = out_elem.batch_rank > 0;

  // Tensor buffers are recycled by the buffer pool; keep glibc from returning big blocks to the OS
  // and mapping them afresh (page faults on every batch) before the pool has warmed up, and for the
  // allocations that do not go through it.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  install_signal_cancellation();
  CancellationToken cancel = CancellationToken::child_of(process_cancellation_token());
  RunOptions ro;
  ro.seed = a.seed;
  ro.device = device;
  ro.threads = a.threads;
  ro.memory_budget = a.memory_budget.empty() ? 0 : static_cast<uint64_t>(parse_memory_size(a.memory_budget));
  ro.autotune = !a.no_autotune;
  ro.auto_values = parse_auto_values(a.auto_values);
  // Absolute, so that paths a source resolved (files(...)) and paths the data holds (a csv column read
  // by read_file) are not resolved twice.
  ro.spec_dir = fs::absolute(fs::path(a.spec)).parent_path().string();
  ro.cancel = &cancel;
  bool tty = isatty(STDERR_FILENO) && !flags.quiet;
  Summary sum;
  if (!a.trace.empty()) {
    trace::start("pipec run " + fs::path(a.spec).filename().string());
    trace::set_thread_name("main (consumer)");
  }
  std::optional<PipelineEventLog> events;
  if (!a.logdir.empty()) {
    try {
      events.emplace(a.logdir);
    } catch (const DataError& e) {
      std::cerr << "pipec run: error: --logdir: " << e.what() << "\n";
      return 2;
    }
  }
  try {
    PipelineRun run(plan, ro);
    fs::path ckpt = a.checkpoint.empty() ? fs::path() : fs::path(a.checkpoint) / "state.ckpt";
    if (!a.checkpoint.empty()) fs::create_directories(a.checkpoint);
    if (a.resume) {
      if (!fs::exists(ckpt)) {
        std::cerr << "pipec run: no checkpoint to resume from at " << ckpt.string() << "\n";
        return 2;
      }
      run.restore_checkpoint(ckpt);
      if (!flags.quiet) std::cerr << "resumed at element " << run.delivered() << "\n";
    }
    // Warnings: those raised while the pipeline was built, then any a stage built later raises (a
    // repeat's next epoch builds its stages again, and a map after to(gpu) says there why it runs on
    // the CPU), each once, as it comes.
    size_t warned = 0;
    auto print_new_warnings = [&] {
      if (run.context().warning_count() == warned) return;
      for (const std::string& w : run.context().warnings(warned)) {
        std::cerr << (tty ? "\r\033[K" : "") << w << "\n";
        ++warned;
      }
    };
    print_new_warnings();
    auto start = std::chrono::steady_clock::now();
    auto last_print = start;
    // A report to TensorBoard about every second and at the end; a write that fails stops the file only.
    auto last_event = start;
    auto log_event = [&](bool at_end) {
      auto now = std::chrono::steady_clock::now();
      if (!events || (!at_end && now - last_event < std::chrono::seconds(1))) return;
      last_event = now;
      try {
        events->report(run, sum.elements, sum.examples, std::chrono::duration<double>(now - start).count());
        if (at_end) events->close();
      } catch (const DataError& e) {
        std::cerr << (tty ? "\r\033[K" : "") << "pipec run: warning: --logdir: " << e.what()
                  << "; no more TensorBoard events are written\n";
        events.reset();
      }
    };
    int64_t next_checkpoint = run.delivered() + a.checkpoint_every;
    Chunk c;
    std::optional<uint64_t> total;
    while (!(limited && sum.elements >= a.take)) {
      int64_t first = run.delivered();
      // Done with the last batch before waiting for the next: its buffers go back to the pool now, so
      // the stages reuse them while they are still in the cache instead of taking colder ones (a
      // batch held through the wait kept another 3 MB in flight on chess, about a tenth of its CPU).
      c = Chunk{};
      // --take stops inside a chunk: the run holds the chunk's other rows, and the checkpoint with them.
      if (!run.next(c, limited ? a.take - sum.elements : -1)) break;
      print_new_warnings();
      const int64_t rows = c.rows;
      if (!a.output.empty())
        for (int64_t r = 0; r < rows; ++r) write_element(a.output, first + r, out_elem.fields, c, r);
      sum.elements += rows;
      sum.examples += examples_in(c, out_elem.batch_rank);
      sum.bytes += static_cast<int64_t>(chunk_bytes(c));
      if (!ckpt.empty() && run.delivered() >= next_checkpoint) {
        run.save_checkpoint(ckpt);
        next_checkpoint = run.delivered() + a.checkpoint_every;
      }
      log_event(false);
      auto now = std::chrono::steady_clock::now();
      if (tty && now - last_print > std::chrono::milliseconds(250)) {
        last_print = now;
        ProgressLine pl;
        pl.batches = static_cast<uint64_t>(sum.elements);
        pl.examples = static_cast<uint64_t>(sum.examples);
        pl.bytes = static_cast<uint64_t>(sum.bytes);
        pl.elapsed_seconds = std::chrono::duration<double>(now - start).count();
        if (limited && sum.elements > 0)
          pl.total_examples = static_cast<uint64_t>(a.take * sum.examples / sum.elements);
        std::cerr << "\r" << pl.format() << "\033[K" << std::flush;
      }
    }
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) std::cerr << "\r\033[K";
    log_event(true);
    print_new_warnings();
    if (!ckpt.empty()) run.save_checkpoint(ckpt);
    if (!write_run_trace(a.trace)) return 2;
    const std::vector<Advice> advice = advise(run_facts(run, all_passes));
    if (!flags.quiet)
      print_summary(std::cerr, run, decl->name, sum, batched, jit ? &*jit : nullptr, a.explain_autotune, advice);
    if (!a.stats_json.empty()) {
      std::ofstream o(a.stats_json);
      o << stats_json(advice, a.spec, run, decl->name, sum, jit ? &*jit : nullptr).dump(2) << "\n";
      if (!o.flush()) {
        std::cerr << "pipec run: cannot write " << a.stats_json << "\n";
        return 2;
      }
    }
  } catch (const CancelledError&) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "pipec run: interrupted after " << sum.elements << " elements\n";
    return 130;
  } catch (const GpuUnavailableError& e) {
    std::cerr << "pipec run: error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    if (tty) std::cerr << "\r\033[K";
    std::cerr << "pipec run: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace pipec
