// Checkpoints over a long run, for every kind of stage the runtime has (the fused ones included):
// saving after every output chunk changes nothing the run produces; after every save each stage holds
// no more than its buffer bound (ChunkIterator::buffered), so the saved state does not grow with the
// run's length; a run resumed from any of those states continues exactly; and `pipec run` saving after
// every element keeps about the memory of a run that never saves.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include "compiler/passes/pass_pipeline.h"
#include "runtime/exec/footprint.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/npy.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::plan_of;
using testing::ScratchDir;
using testing::write_file;

// Every stage kind build_iterator() makes an iterator for, sinks aside (they refuse checkpoints).
// Every stage kind of the table but the sinks (they hold nothing between elements).
std::set<std::string> stage_kinds() {
  std::set<std::string> out;
  for (StageKind k : all_stage_kinds)
    if (!stage_has(k, StageFlag::Sink)) out.insert(std::string(stage_name(k)));
  return out;
}

// The data the cases read: two tfrecord files with fixed, ragged and byte-string features, an .npy
// array, a CSV file and a folder of files.
void write_data(const fs::path& dir) {
  for (int file = 0; file < 2; ++file) {
    TFRecordWriter w((dir / fmt::format("x-{}.tfrecord", file)).string(), TFRecordWriterOptions{});
    for (int i = 0; i < 150; ++i) {
      ExampleWriter ex;
      int64_t a = file * 1000 + i;
      std::vector<float> v(64);
      for (int k = 0; k < 64; ++k) v[k] = static_cast<float>(a) + 0.25f * static_cast<float>(k);
      std::vector<int64_t> ids(static_cast<size_t>(i % 4), a);
      std::string name = "r" + std::to_string(a);
      std::string_view nv = name;
      ex.add_int64("a", std::span<const int64_t>(&a, 1));
      ex.add_float("v", std::span<const float>(v));
      ex.add_int64("ids", std::span<const int64_t>(ids));
      ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
      w.write(ex.serialize());
    }
    w.close();
  }
  Tensor x = Tensor::empty(DType::F32, {200, 64});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i) * 0.5f;
  write_npy((dir / "x.npy").string(), x);
  std::string csv = "a,b,s\n";
  for (int i = 0; i < 300; ++i) csv += fmt::format("{},{},w{}\n", i, i * 0.5, i);
  write_file(dir / "x.csv", csv);
  for (int i = 0; i < 40; ++i)
    write_file(dir / "f" / fmt::format("{:03d}.txt", i), std::string(static_cast<size_t>(i), 'z'));
  for (int file = 0; file < 2; ++file) {
    std::string lines, records = "head";
    for (int i = 0; i < 150; ++i) {
      lines += fmt::format("line {} of file {}\n", i, file);
      records += fmt::format("{:016d}", file * 1000 + i);
    }
    write_file(dir / fmt::format("lines-{}.txt", file), lines);
    write_file(dir / fmt::format("records-{}.bin", file), records + "foot");
  }
}

const std::string kSources =
    "source t = tfrecord(\"x-*.tfrecord\") { a: i64\n v: f32[64]\n ids: i64[?]\n name: bytes }\n"
    "source t2 = tfrecord(\"x-*.tfrecord\", parallel_reads = 2) { a: i64\n v: f32[64] }\n"
    "source n = npy(\"x.npy\") { x: f32[64] }\n"
    "source c = csv(\"x.csv\") { a: i64\n b: f32\n s: bytes }\n";

struct Case {
  std::string name;
  std::string pipeline;  // `pipeline p = ...`, after kSources
};

// Each pipeline is infinite (a repeat) or long, so a run of kChunks output chunks crosses epochs,
// refills and windows many times.
const std::vector<Case> kCases = {
    {"map_batch", "range(1000) | repeat() | map(r => { x: random_uniform([256]) + f32(r.value) }) | batch(13)"},
    {"map", "range(1000) | repeat() | map(r => { x: random_uniform([64]) + f32(r.value) })"},
    {"filter", "range(1000) | repeat() | filter(r => random_uniform([], seed = 3) < 0.6)"},
    {"map_filter",
     "range(1000) | repeat() | map(r => { v: r.value, u: random_uniform([16]) }) | filter(r => r.v % 3 != 0)"},
    {"batch_then_map", "range(997) | repeat() | map(r => { v: r.value * 3, w: f32(r.value) / 7.0 }) | batch(5)"},
    {"padded_batch", "t | repeat() | padded_batch(4)"},
    {"unbatch", "n | repeat() | batch(7) | unbatch()"},
    {"shuffle", "range(1000000) | map(r => { x: random_uniform([32]) }) | shuffle(300, seed = 2)"},
    {"shuffle_repeat", "t | shuffle(64, seed = 2) | repeat() | map(r => { a: r.a, name: r.name, n: size(r.ids) })"},
    {"take_skip_shard", "range(10000000) | skip(5) | shard(3, 1) | take(5000000) | batch(9)"},
    {"cache", "range(500) | map(r => { x: f32(r.value) * 2.0, y: random_uniform([8]) }) | cache() | repeat()"},
    {"prefetch", "t2 | repeat() | prefetch(3) | map(r => { y: r.v * 2.0 }) | prefetch(2)"},
    {"interleave",
     "t | interleave(cycle_length = 2, block_length = 3) | repeat() | map(r => { a: r.a, v: r.v }) | batch(2, "
     "drop_remainder = true)"},
    {"zip", "zip(c | repeat(), range(100000000)) | ignore_errors()"},
    {"concatenate_enumerate",
     "concatenate(c | map(r => { a: r.a, s: r.s }), c | take(37) | map(r => { s: r.s, a: r.a + 1 })) | repeat() | "
     "enumerate(start = 5)"},
    {"choose_from",
     "choose_from([n, n | map(r => { x: r.x + 1.0 }) | repeat()], range(100000000) | map(r => { i: r.value * 7 % 5 % "
     "2 }), stop_on_empty = false)"},
    {"sample_from",
     "sample_from([n, n | map(r => { x: r.x + 1.0 }) | repeat(), n | take(10)], weights = [0.3, 0.6, 0.1], seed = 4)"},
    {"window", "t | repeat() | map(r => { a: r.a, v: r.v }) | window(5, shift = 3, stride = 2)"},
    {"rebatch", "c | repeat() | batch(7) | rebatch(5)"},
    {"bucket_by_length",
     "t | repeat() | bucket_by_length(length = r => size(r.ids), boundaries = [1, 3], batch_sizes = [5, 3, 2], "
     "padding_value = -1)"},
    {"group_by_window",
     "c | repeat() | group_by_window(key = r => r.a % 3, window_size = 4, reduce = w => w | padded_batch(3))"},
    {"rejection_resample",
     "c | repeat() | rejection_resample(class_fn = r => r.a % 3, target_dist = [0.5, 0.3, 0.2], seed = 6) | batch(5)"},
    {"rejection_resample_initial",
     "range(1000) | repeat() | map(r => { v: r.value, u: random_uniform([4]) }) | rejection_resample(class_fn = r => "
     "r.v % 2, target_dist = [0.9, 0.1], initial_dist = [0.5, 0.5], seed = 2)"},
    {"pack",
     "t | repeat() | map(r => { ids: r.ids, b: f32(r.ids) }) | pack(length = 7, fields = [\"ids\", \"b\"], "
     "rows_open = 3)"},
    {"scan", "c | repeat() | scan({ total: 0 }, (s, r) => { total: s.total + r.a, a: r.a, b: r.b })"},
    {"text_lines", "text_lines(\"lines-*.txt\") | repeat() | batch(4)"},
    {"fixed_length_records",
     "fixed_length_records(\"records-*.bin\", record_bytes = 16, header_bytes = 4, footer_bytes = 4) | repeat()"},
    {"files", "files(\"f/*.txt\") | repeat() | to(cpu) | batch(4)"},
    {"list_files", "list_files(\"f/*.txt\", shuffle = true, seed = 3) | repeat() | batch(4)"},
    {"flat_map", "range(1000) | map(r => { n: r.value % 7 }) | repeat() | flat_map(r => range(r.n) | batch(2))"},
    {"interleave_fn",
     "list_files(\"lines-*.txt\") | repeat() | interleave(f => text_lines(f.path) | batch(3) | map(b => { n: "
     "size(b.line) }), cycle_length = 3, block_length = 5)"},
};

constexpr int kThreads = 3;
constexpr int64_t kChunkRows = 16;
constexpr size_t kChunks = 120;

using Element = std::vector<Tensor>;

void append_elements(const Chunk& c, std::vector<Element>& out) {
  for (int64_t r = 0; r < c.rows; ++r) {
    Element e;
    for (const Column& col : c.columns) e.push_back(column_row(col, r));
    out.push_back(std::move(e));
  }
}

RunOptions options(const fs::path& dir) {
  RunOptions o;
  o.seed = 7;
  o.threads = kThreads;
  o.chunk_rows = kChunkRows;
  o.spec_dir = dir.string();
  return o;
}

// Every stage's buffer after a save is within its bound (the first stage that is not is reported);
// adds the stage kinds it saw to `ops`.
bool expect_within_bounds(const ChunkIterator& it, const Plan& plan, const std::string& where,
                          std::set<std::string>& ops) {
  const std::string op(stage_name(plan.stages.at(it.stage()).kind));
  ops.insert(op);
  ChunkIterator::Buffered b = it.buffered();
  if (b.bound != ChunkIterator::kUnbounded && b.rows > b.bound) {
    ADD_FAILURE() << where << ": stage #" << it.stage() << " " << op << " holds " << b.rows
                  << " rows, more than its bound of " << b.bound;
    return false;
  }
  for (const ChunkIterator* in : it.inputs())
    if (!expect_within_bounds(*in, plan, where, ops)) return false;
  return true;
}

void expect_same_elements(const std::vector<Element>& got, const std::vector<Element>& want, size_t first,
                          const std::string& what) {
  ASSERT_LE(first + got.size(), want.size()) << what;
  for (size_t e = 0; e < got.size(); ++e) {
    ASSERT_EQ(got[e].size(), want[first + e].size()) << what;
    for (size_t f = 0; f < got[e].size(); ++f)
      ASSERT_TRUE(got[e][f].equals(want[first + e][f])) << what << ": element " << first + e << " field " << f;
  }
}

class CheckpointBounds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    write_data(dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static Plan optimized(const Case& c) {
    Plan plan = plan_of(kSources + "pipeline p = " + c.pipeline + "\n");
    if (plan.stages.empty()) throw std::runtime_error("the case does not check");
    run_passes(plan, PassOptions{});
    return plan;
  }
  static void check_case(const Case& c);
  static ScratchDir* dir_;
};
ScratchDir* CheckpointBounds::dir_ = nullptr;

// The cases between them run every stage kind, so a new kind without a case fails here.
TEST_F(CheckpointBounds, CasesCoverEveryStageKind) {
  std::set<std::string> seen;
  for (const Case& c : kCases) {
    Plan plan = optimized(c);
    for (const Stage& s : plan.stages) seen.insert(std::string(stage_name(s.kind)));
  }
  for (const std::string& kind : stage_kinds())
    EXPECT_TRUE(seen.count(kind)) << "no case runs a `" << kind << "` stage";
}

// Saving after every chunk of a long run: the stream is the one of a run that never saves, every stage
// stays within its bound after every save (a state saves exactly those rows, so its size is bounded
// whatever the run's length), and resuming from early, middle and late states yields exactly the rest
// of the stream, again within the bounds.
void CheckpointBounds::check_case(const Case& c) {
  {
    Plan plan = optimized(c);
    std::vector<Element> want;
    {
      PipelineRun run(plan, options(dir_->path()));
      Chunk chunk;
      for (size_t k = 0; k < kChunks + 40 && run.next(chunk); ++k) append_elements(chunk, want);
    }
    std::vector<Element> got;
    size_t saves = 0;
    std::vector<std::pair<size_t, std::string>> states;  // elements delivered before the save, the state
    std::set<std::string> ops;
    // An interleave is run by its source's iterator, so it never shows in the tree.
    auto unseen = [&] {
      std::vector<std::string> out;
      for (const Stage& s : plan.stages)
        if (s.kind != StageKind::Interleave && !ops.count(std::string(stage_name(s.kind))))
          out.emplace_back(stage_name(s.kind));
      return out;
    };
    {
      PipelineRun run(plan, options(dir_->path()));
      Chunk chunk;
      for (size_t k = 0; k < kChunks && run.next(chunk); ++k) {
        append_elements(chunk, got);
        std::string state = run.save_state();
        ++saves;
        if (!expect_within_bounds(run.root(), plan, fmt::format("after save {}", k), ops)) break;
        if (k == 2 || k == kChunks / 2 || k == kChunks - 3) states.emplace_back(got.size(), std::move(state));
      }
      // Where the tree stands at a save depends on how far the worker threads have run ahead: a stage
      // open for a short part of each epoch (the second input of a concatenate) may have been missed by
      // every save so far. Go on saving, with the bounds checked, until every stage has been seen; one
      // that never is was never built.
      for (size_t k = kChunks; k < 20 * kChunks && !unseen().empty() && run.next(chunk); ++k) {
        run.save_state();
        if (!expect_within_bounds(run.root(), plan, fmt::format("after save {}", k), ops)) break;
      }
    }
    ASSERT_EQ(saves, kChunks);
    expect_same_elements(got, want, 0, "the run that saved after every chunk");
    for (const std::string& op : unseen()) ADD_FAILURE() << op << " was never built";

    // Resume from each kept state, saving after every chunk again: exact, and within the bounds.
    for (auto& [delivered, state] : states) {
      PipelineRun resumed(plan, options(dir_->path()));
      resumed.restore_state(state, "test");
      expect_within_bounds(resumed.root(), plan, "right after the restore", ops);
      std::vector<Element> rest;
      Chunk chunk;
      for (size_t k = 0; k < 30 && resumed.next(chunk); ++k) {
        append_elements(chunk, rest);
        resumed.save_state();
        if (!expect_within_bounds(resumed.root(), plan, fmt::format("resumed at {}, save {}", delivered, k), ops))
          break;
      }
      if (rest.size() > want.size() - delivered) rest.resize(want.size() - delivered);
      ASSERT_FALSE(rest.empty());
      expect_same_elements(rest, want, delivered, fmt::format("resumed after element {}", delivered));
    }
  }
}

TEST_F(CheckpointBounds, SavingEveryChunkStaysBoundedAndResumesExactly) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name + ": " + c.pipeline);
    check_case(c);
  }
}

// A stage whose autotuner had widened it (a deeper prefetch, a map with more chunks in flight) saves
// more chunks than a fresh run's starting value holds: restored, they are within its bound (the
// deepest it has been counts the saving run's), and the stream goes on exactly. `starting` is the
// most rows the stage holds at its starting value, given the rows of a chunk.
void check_restored_from_a_wider_run(const Plan& plan, const fs::path& dir, KnobKind kind,
                                     const std::function<int64_t(int64_t)>& starting) {
  std::vector<Element> want;
  {
    PipelineRun run(plan, options(dir));
    Chunk chunk;
    for (int k = 0; k < 60 && run.next(chunk); ++k) append_elements(chunk, want);
  }
  RunOptions wide = options(dir);
  wide.auto_values = {{kind, 24}};
  // The prefetch's thread pulls from the first chunk on (a run starts inline, and this consumer, which
  // only waits, would keep it so), filling the stages before it while the test waits.
  wide.prefetch_inline_when_idle = false;
  std::string state;
  std::vector<Element> got;
  // A producer thread is given time to fill its queue well past the starting value before the save
  // stops it; a slow machine gets longer.
  int64_t starting_rows = 0, saved_rows = 0;
  for (int wait_ms = 20; wait_ms <= 2560 && saved_rows <= starting_rows; wait_ms *= 2) {
    PipelineRun run(plan, wide);
    Chunk chunk;
    ASSERT_TRUE(run.next(chunk));
    got.clear();
    append_elements(chunk, got);
    starting_rows = starting(chunk.rows);  // every chunk is as big
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    state = run.save_state();
    saved_rows = run.root().buffered().rows;
  }
  ASSERT_GT(saved_rows, starting_rows) << "the wide run never held more than a fresh one may";
  PipelineRun resumed(plan, options(dir));
  resumed.restore_state(state, "test");
  std::set<std::string> ops;
  EXPECT_TRUE(expect_within_bounds(resumed.root(), plan, "right after the restore", ops));
  Chunk chunk;
  std::vector<Element> rest;
  for (int k = 0; k < 40 && resumed.next(chunk); ++k) append_elements(chunk, rest);
  expect_same_elements(rest, want, got.size(), "resumed from the wide run");
}

TEST_F(CheckpointBounds, APrefetchRestoredFromADeeperRunStaysWithinItsBound) {
  // Its queue and the chunk its producer held.
  check_restored_from_a_wider_run(optimized({"prefetch_auto", "range(100000) | batch(4) | prefetch(auto)"}),
                                  dir_->path(), KnobKind::PrefetchDepth,
                                  [](int64_t rows) { return (prefetch_starting_depth(kThreads) + 1) * rows; });
}

TEST_F(CheckpointBounds, AMapRestoredFromAWiderRunStaysWithinItsBound) {
  // A save finishes the chunks in flight: the window's results.
  check_restored_from_a_wider_run(
      optimized({"map_auto", "range(1000000) | map(r => { x: r.value * 3 }, parallel = auto)"}), dir_->path(),
      KnobKind::MapParallelism, [](int64_t rows) { return map_starting_window(kThreads) * rows; });
}

// The peak memory (maximum resident set) of a `pipec` process, and its exit code.
struct Peak {
  int exit_code = -1;
  long max_rss_kb = 0;
};
Peak run_measured(const std::vector<std::string>& args) {
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer freed memory waits in a quarantine (256 MB) before it is reused. The run that
  // saves after every element frees enough to fill it and the other does not, so the peak would measure
  // the quarantine, not what pipec keeps: the child runs without one (its other checks stay on).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved_asan = asan ? asan : "";
  setenv("ASAN_OPTIONS", (saved_asan + ":quarantine_size_mb=0").c_str(), 1);
#endif
  std::fflush(nullptr);  // or the child's freopen writes this process's buffered output once more
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::string> copy = args;
    std::string bin = PIPEC_BINARY;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
#if defined(__SANITIZE_ADDRESS__)
  if (asan) setenv("ASAN_OPTIONS", saved_asan.c_str(), 1);
  else unsetenv("ASAN_OPTIONS");
#endif
  Peak p;
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) != pid) return p;
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.max_rss_kb = ru.ru_maxrss;
  return p;
}

// `pipec run --checkpoint-every 1` over a hundred elements: the process's peak memory stays near that
// of the same run saving once at the end, and the last state is no bigger than that run's.
TEST_F(CheckpointBounds, PipecRunSavingEveryElementKeepsItsMemory) {
  const std::vector<std::string> pipelines = {
      // 13 rows of 784 floats per batch: the fused map_batch, whose open batches once grew with each save.
      "range(1000) | repeat() | map(r => { x: random_uniform([784], 0.0, 1.0, seed = 5) + f32(r.value) }) | batch(13)",
      "t | shuffle(64, seed = 2) | repeat() | map(r => { v: r.v * 2.0 + random_uniform([64]), ids: r.ids, name: r.name "
      "})"
      " | padded_batch(8) | prefetch(4)",
  };
  for (const std::string& p : pipelines) {
    SCOPED_TRACE(p);
    fs::path spec = dir_->path() / "rss.pipe";
    write_file(spec, kSources + "pipeline p = " + p + "\n");
    fs::path once = dir_->path() / "ck-once", every = dir_->path() / "ck-every";
    fs::remove_all(once);
    fs::remove_all(every);
    const std::vector<std::string> common = {"run", spec.string(), "--quiet", "--threads", "2", "--take", "100"};
    std::vector<std::string> a = common, b = common;
    a.insert(a.end(), {"--checkpoint", once.string(), "--checkpoint-every", "1000000"});
    b.insert(b.end(), {"--checkpoint", every.string(), "--checkpoint-every", "1"});
    Peak quiet = run_measured(a);
    Peak saving = run_measured(b);
    ASSERT_EQ(quiet.exit_code, 0);
    ASSERT_EQ(saving.exit_code, 0);
    // A save builds the state in memory (twice its size, briefly); anything that piles up per save is
    // a hundred times more.
    uintmax_t bounded = fs::file_size(once / "state.ckpt");
    EXPECT_LE(saving.max_rss_kb, quiet.max_rss_kb + static_cast<long>(3 * bounded / 1024) + 32 * 1024)
        << "peak memory " << saving.max_rss_kb << " KB saving every element, " << quiet.max_rss_kb << " KB saving once";
    EXPECT_LE(fs::file_size(every / "state.ckpt"), 2 * bounded + 65536);
    std::cout << fmt::format("[ peak    ] {} KB saving every element, {} KB saving once; states {} and {} bytes\n",
                             saving.max_rss_kb, quiet.max_rss_kb, fs::file_size(every / "state.ckpt"), bounded);
  }
}

}  // namespace
}  // namespace pipec
