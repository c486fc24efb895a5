// `pipec run SPEC`: check, lower and run a pipeline on the CPU, with a progress line, a summary of
// where the time went, NumPy output for inspection, and iterator checkpoints.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/cuda/attach_gpu_kernels.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/pick_pipeline.h"
#include "compiler/driver/spec_options.h"
#include "compiler/lower/lower.h"
#include "runtime/core/buffer_pool.h"
#include "runtime/threads/cancellation.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/io/errors.h"
#include "runtime/io/npy.h"

namespace pipec {

namespace fs = std::filesystem;

static const char* kRunUsage =
    "usage: pipec run [options] SPEC\n"
    "\n"
    "Runs a pipeline of SPEC and reports its throughput. On a terminal a progress line shows batches,\n"
    "examples/s, MB/s, elapsed time and the ETA when known; at the end a summary shows where the time went.\n"
    "The optimized plan runs by default (`pipec explain SPEC` shows it); -O0 runs the plan as lowered.\n"
    "\n"
    "options:\n"
    "  --pipeline NAME        the pipeline to run (default: the only one, or the one a train block uses)\n"
    "  --take N               stop after N output elements (batches, when the pipeline batches)\n"
    "  --output DIR           write every output element as NumPy files DIR/NNNNNN/<field>.npy\n"
    "  --seed S               the run seed for shuffles and random ops without their own (default 0)\n"
    "  --threads N            worker threads (default: one per core)\n"
    "  --checkpoint DIR       save the iterator state in DIR/state.ckpt\n"
    "  --checkpoint-every N   ... every N output elements (default 100)\n"
    "  --resume               continue from DIR/state.ckpt\n"
    "  --stats-json FILE      write the summary as JSON\n"
    "  --no-jit               run map/filter bodies on the interpreter instead of compiling them with LLVM\n"
    "  --device auto|cpu|gpu  where the maps after to(gpu) run: the GPU when there is one (auto, the\n"
    "                         default), always the CPU, or the GPU with an error when there is none\n"
    "  -q, --quiet            no progress line and no summary\n"
    "  -I DIR                 also search DIR for `import name`\n";

namespace {

struct RunArgs {
  std::string spec;
  std::string pipeline;
  std::optional<int64_t> take;
  std::string output;
  uint64_t seed = 0;
  int threads = 0;
  std::string checkpoint;
  int64_t checkpoint_every = 100;
  bool resume = false;
  std::string stats_json;
  bool no_jit = false;
  DevicePolicy device = DevicePolicy::Auto;
};

bool parse_int(const std::string& flag, const std::string& text, int64_t& out) {
  try {
    size_t pos = 0;
    long long v = std::stoll(text, &pos);
    if (pos != text.size()) throw std::invalid_argument(text);
    out = v;
    return true;
  } catch (...) {
    std::cerr << "pipec run: " << flag << " needs an integer, not `" << text << "`\n";
    return false;
  }
}

bool parse_run_args(const std::vector<std::string>& rest, RunArgs& a) {
  for (size_t i = 0; i < rest.size(); ++i) {
    std::string flag = rest[i];
    std::string value;
    bool has_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    auto need = [&](std::string& out) {
      if (has_value) {
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
    int64_t n = 0;
    std::string v;
    if (flag == "--pipeline") {
      if (!need(a.pipeline)) return false;
    } else if (flag == "--take") {
      if (!need(v) || !parse_int(flag, v, n)) return false;
      if (n < 0) {
        std::cerr << "pipec run: --take must be 0 or more\n";
        return false;
      }
      a.take = n;
    } else if (flag == "--output") {
      if (!need(a.output)) return false;
    } else if (flag == "--seed") {
      if (!need(v) || !parse_int(flag, v, n)) return false;
      a.seed = static_cast<uint64_t>(n);
    } else if (flag == "--threads") {
      if (!need(v) || !parse_int(flag, v, n)) return false;
      if (n < 1 || n > 1024) {
        std::cerr << "pipec run: --threads must be between 1 and 1024\n";
        return false;
      }
      a.threads = static_cast<int>(n);
    } else if (flag == "--checkpoint") {
      if (!need(a.checkpoint)) return false;
    } else if (flag == "--checkpoint-every") {
      if (!need(v) || !parse_int(flag, v, n)) return false;
      if (n < 1) {
        std::cerr << "pipec run: --checkpoint-every must be at least 1\n";
        return false;
      }
      a.checkpoint_every = n;
    } else if (flag == "--no-jit") {
      a.no_jit = true;
    } else if (flag == "--resume") {
      a.resume = true;
    } else if (flag == "--stats-json") {
      if (!need(a.stats_json)) return false;
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
    std::cerr << "pipec run: no spec file\n" << kRunUsage;
    return false;
  }
  if (a.resume && a.checkpoint.empty()) {
    std::cerr << "pipec run: --resume needs --checkpoint DIR\n";
    return false;
  }
  return true;
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
  for (size_t k = 0; k < fields.size(); ++k) write_npy((folder / (fields[k].name + ".npy")).string(), column_row(c.columns[k], r));
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

void print_summary(std::ostream& out, const PipelineRun& run, const std::string& name, const Summary& s, bool batched,
                   const codegen::JitReport* jit) {
  const Plan& plan = run.plan();
  const RunContext& ctx = run.context();
  double secs = std::max(s.seconds, 1e-9);
  out << fmt::format("pipeline {}: {} {} ({} examples) in {:.2f} s\n", name, format_thousands(s.elements),
                     batched ? "batches" : "elements", format_thousands(s.examples), s.seconds);
  out << fmt::format("  examples/s  {}\n", format_thousands(static_cast<uint64_t>(s.examples / secs)));
  out << fmt::format("  output      {}\n", format_byte_rate(s.bytes / secs));
  out << fmt::format("  peak RSS    {:.1f} MB\n", peak_rss_bytes() / 1e6);
  if (jit) out << fmt::format("  kernels     {}\n", jit->summary());
  BufferPoolStats pool = BufferPool::global().stats();
  out << fmt::format("  buffers     {} fresh ({:.1f} MB), {} reused\n", format_thousands(pool.fresh_count),
                     pool.fresh_bytes / 1e6, format_thousands(pool.reused_count));
  const JpegIndexCache::Stats jpeg = JpegIndexCache::process().stats();
  if (jpeg.indexed + jpeg.unindexable > 0)
    out << fmt::format("  jpeg index  {} files ({:.1f} of {:.0f} MB{}), {} windows cut from it{}\n", format_thousands(jpeg.indexed),
                       jpeg.bytes / 1e6, jpeg.budget / 1e6, jpeg.full ? ", full: later files decode the usual way" : "",
                       format_thousands(jpeg.hits),
                       jpeg.unindexable ? fmt::format(", {} not indexable", format_thousands(jpeg.unindexable)) : std::string());
  uint64_t total_busy = 0;
  for (const auto& st : ctx.stats) total_busy += st->snapshot().busy_ns;
  out << fmt::format("  {:<4} {:<16} {:>14} {:>10} {:>7}  {}\n", "", "stage", "elements out", "busy", "share", "device");
  size_t worst = 0;
  uint64_t worst_ns = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    double share = total_busy ? 100.0 * snap.busy_ns / total_busy : 0;
    if (snap.busy_ns > worst_ns) {
      worst_ns = snap.busy_ns;
      worst = i;
    }
    std::string extra;
    if (int64_t d = ctx.dropped[i]->load()) extra = fmt::format("  ({} dropped by ignore_errors)", format_thousands(d));
    if (std::string b = stage_backend(plan.stages[i]); !b.empty()) extra += "  [" + b + "]";
    out << fmt::format("  #{:<3} {:<16} {:>14} {:>9.2f}s {:>6.1f}%  {}{}\n", i, stage_name(plan.stages[i].kind),
                       format_thousands(snap.elements_out), snap.busy_ns / 1e9, share, ctx.stage_device.at(i), extra);
  }
  if (total_busy)
    out << fmt::format("  bottleneck: #{} {} ({:.0f}% of the pipeline's work)\n", worst, stage_name(plan.stages[worst].kind),
                       100.0 * worst_ns / total_busy);
}

void write_stats_json(const std::string& path, const PipelineRun& run, const std::string& name, const Summary& s,
                      const codegen::JitReport* jit) {
  const RunContext& ctx = run.context();
  std::ofstream o(path);
  o << "{\n";
  o << fmt::format("  \"pipeline\": \"{}\",\n  \"elements\": {},\n  \"examples\": {},\n  \"bytes\": {},\n", name, s.elements,
                   s.examples, s.bytes);
  o << fmt::format("  \"seconds\": {:.6f},\n  \"examples_per_second\": {:.3f},\n  \"peak_rss_bytes\": {},\n", s.seconds,
                   s.examples / std::max(s.seconds, 1e-9), peak_rss_bytes());
  if (jit)
    o << fmt::format("  \"jit\": {{\"compiled\": {}, \"cached\": {}, \"compile_ms\": {:.3f}}},\n", jit->compiled, jit->cached,
                     jit->compile_ms);
  BufferPoolStats pool = BufferPool::global().stats();
  o << fmt::format("  \"buffer_pool\": {{\"fresh_count\": {}, \"fresh_bytes\": {}, \"reused_count\": {}, \"reused_bytes\": {}}},\n",
                   pool.fresh_count, pool.fresh_bytes, pool.reused_count, pool.reused_bytes);
  const JpegIndexCache::Stats jpeg = JpegIndexCache::process().stats();
  o << fmt::format("  \"jpeg_index\": {{\"indexed\": {}, \"unindexable\": {}, \"bytes\": {}, \"budget\": {}, \"hits\": {}, \"full\": {}}},\n",
                   jpeg.indexed, jpeg.unindexable, jpeg.bytes, jpeg.budget, jpeg.hits, jpeg.full);
  o << "  \"stages\": [\n";
  for (size_t i = 0; i < run.plan().stages.size(); ++i) {
    StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    o << fmt::format("    {{\"index\": {}, \"op\": \"{}\", \"elements_out\": {}, \"busy_seconds\": {:.6f}, \"bytes_out\": {}, "
                     "\"dropped\": {}, \"backend\": \"{}\", \"device\": \"{}\"}}{}\n",
                     i, stage_name(run.plan().stages[i].kind), snap.elements_out, snap.busy_ns / 1e9, snap.bytes, ctx.dropped[i]->load(),
                     stage_backend(run.plan().stages[i]), ctx.stage_device.at(i),
                     i + 1 < run.plan().stages.size() ? "," : "");
  }
  o << "  ]\n}\n";
}

}  // namespace

int cmd_run(const Args& args) {
  if (wants_help(args)) {
    std::cout << kRunUsage << kOptFlagsHelp;
    return 0;
  }
  SpecOptions opts;
  std::vector<std::string> rest;
  std::vector<std::string> extra = {"--pipeline",         "--take",   "--output",     "--seed",   "--threads", "--checkpoint",
                                    "--checkpoint-every", "--resume", "--stats-json", "--no-jit", "--device"};
  extra.insert(extra.end(), opt_flag_names().begin(), opt_flag_names().end());
  if (!parse_spec_options(args, opts, rest, "run", extra)) return 2;
  PassOptions passes;
  if (!take_opt_flags(rest, passes, "run")) return 2;
  RunArgs a;
  if (!parse_run_args(rest, a)) return 2;

  auto program = check_file(a.spec, opts.check);
  if (!program->io_error.empty()) {
    std::cerr << "pipec run: " << program->io_error << "\n";
    return 2;
  }
  program->diags.print(std::cerr, opts.color);
  if (program->diags.has_errors()) return 1;
  std::string error;
  const Decl* decl = pick_pipeline(*program, a.pipeline, error);
  if (!decl) {
    std::cerr << "pipec run: " << error << "\n";
    return 2;
  }
  Plan plan = lower_pipeline(*program, *decl);
  if (auto problems = verify_plan(plan); !problems.empty()) {
    std::cerr << "pipec run: internal error: the plan does not verify:\n";
    for (auto& p : problems) std::cerr << "  " << p << "\n";
    return 2;
  }
  try {
    run_passes(plan, passes);
  } catch (const PassError& e) {
    std::cerr << "pipec run: " << e.what();
    return 2;
  }
  // The GPU generator sees the final (optimized) map stages.
  if (a.device != DevicePolicy::Cpu) cuda_codegen::attach_gpu_kernels(plan);
  // -O0 is the reference: the lowered plan on the interpreter, no native code.
  std::optional<codegen::JitReport> jit;
  if (!a.no_jit && passes.opt_level > 0) jit = codegen::attach_native_kernels(plan);
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
  ro.device = a.device;
  ro.threads = a.threads;
  // Absolute, so that paths a source resolved (files(...)) and paths the data holds (a csv column read
  // by read_file) are not resolved twice.
  ro.spec_dir = fs::absolute(fs::path(a.spec)).parent_path().string();
  ro.cancel = &cancel;
  bool tty = isatty(STDERR_FILENO) && !opts.quiet;
  Summary sum;
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
      if (!opts.quiet) std::cerr << "resumed at element " << run.delivered() << "\n";
    }
    for (const std::string& w : run.context().warnings) std::cerr << w << "\n";
    auto start = std::chrono::steady_clock::now();
    auto last_print = start;
    int64_t next_checkpoint = run.delivered() + a.checkpoint_every;
    Chunk c;
    std::optional<uint64_t> total;
    while (!(a.take && sum.elements >= *a.take)) {
      int64_t first = run.delivered();
      if (!run.next(c)) break;
      int64_t rows = c.rows;
      if (a.take) rows = std::min<int64_t>(rows, *a.take - sum.elements);
      if (rows < c.rows) c = slice_rows(c, 0, rows);
      if (!a.output.empty())
        for (int64_t r = 0; r < rows; ++r) write_element(a.output, first + r, out_elem.fields, c, r);
      sum.elements += rows;
      sum.examples += examples_in(c, out_elem.batch_rank);
      sum.bytes += static_cast<int64_t>(chunk_bytes(c));
      if (!ckpt.empty() && run.delivered() >= next_checkpoint) {
        run.save_checkpoint(ckpt);
        next_checkpoint = run.delivered() + a.checkpoint_every;
      }
      auto now = std::chrono::steady_clock::now();
      if (tty && now - last_print > std::chrono::milliseconds(250)) {
        last_print = now;
        ProgressLine pl;
        pl.batches = static_cast<uint64_t>(sum.elements);
        pl.examples = static_cast<uint64_t>(sum.examples);
        pl.bytes = static_cast<uint64_t>(sum.bytes);
        pl.elapsed_seconds = std::chrono::duration<double>(now - start).count();
        if (a.take && sum.elements > 0) pl.total_examples = static_cast<uint64_t>(*a.take * sum.examples / sum.elements);
        std::cerr << "\r" << pl.format() << "\033[K" << std::flush;
      }
    }
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) std::cerr << "\r\033[K";
    if (!ckpt.empty()) run.save_checkpoint(ckpt);
    if (!opts.quiet) print_summary(std::cerr, run, decl->name, sum, batched, jit ? &*jit : nullptr);
    if (!a.stats_json.empty()) write_stats_json(a.stats_json, run, decl->name, sum, jit ? &*jit : nullptr);
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
