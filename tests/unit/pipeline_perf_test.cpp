// The fast path of the input pipeline, in process: steady state allocates no tensor buffers, parallel
// reads keep tf.data's deterministic interleave order (errors included) and survive a checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "runtime/core/buffer_pool.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/position_records.h"

namespace pipec {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

using testing::write_positions;

struct Compiled {
  Plan plan;  // the spec's last pipeline, as lowered
};

Compiled compile_spec(const fs::path& spec) {
  std::vector<Plan> plans = testing::compiled_plans_of_file(spec.string());
  if (plans.empty()) throw std::runtime_error("no plan for " + spec.string());
  return {std::move(plans.back())};
}

RunOptions options(const fs::path& spec, int threads) {
  RunOptions o;
  o.threads = threads;
  o.spec_dir = spec.parent_path().string();
  return o;
}

// The `s` column of the whole output, element by element.
std::vector<int64_t> run_ids(const fs::path& spec, int threads) {
  Compiled c = compile_spec(spec);
  PipelineRun run(c.plan, options(spec, threads));
  std::vector<int64_t> ids;
  Chunk chunk;
  while (run.next(chunk)) {
    const Tensor& s = chunk.columns.at(1).dense;
    for (int64_t i = 0; i < s.num_elements(); ++i) ids.push_back(s.data<int64_t>()[i]);
  }
  return ids;
}

void write_spec(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Buffers a new peak of simultaneously alive batches may still add after the warm-up (see below).
constexpr uint64_t kPeakSlack = 4;

TEST(PipelineSteadyState, ManyBatchesAllocateNoFreshTensorBuffersAfterWarmUp) {
  ScratchDir d;
  for (int f = 0; f < 3; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 1000, 700);
  write_spec(d / "p.pipe",
             "source positions = tfrecord(\"pos-*.tfrecord\") {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = positions\n"
             "  | shuffle(500, seed = 7)\n"
             "  | map(r => { d: r.d, s: r.s * 2 })\n"
             "  | batch(64, drop_remainder = true)\n"
             "  | repeat()\n"
             "  | prefetch(2)\n");
  Compiled c = compile_spec(d / "p.pipe");
  // One worker thread: the map computes one chunk at a time, or two while the thread that pulls from it
  // runs a spare task (ThreadPool::wait_helping), so how many buffers are alive at once depends mostly
  // on how full the queues are.
  PipelineRun run(c.plan, options(d / "p.pipe", 1));
  Chunk chunk;
  // Warm-up: four epochs (32 batches each) with a pause after every batch, so the prefetch queue and
  // the map's window are full at every point of an epoch (its boundaries included): every buffer the
  // steady state can hold at once has then been made. Then two epochs at full speed.
  for (int i = 0; i < 130; ++i) {
    ASSERT_TRUE(run.next(chunk));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(run.next(chunk));
  BufferPoolStats before = BufferPool::global().stats();
  int64_t checksum = 0;
  for (int i = 0; i < 400; ++i) {  // more than twelve epochs: new source, shuffle buffer and batches each time
    ASSERT_TRUE(run.next(chunk));
    ASSERT_EQ(chunk.columns.at(0).dense.shape(), (Shape{1, 64, 194}));
    checksum += chunk.columns.at(1).dense.data<int64_t>()[0];
  }
  BufferPoolStats after = BufferPool::global().stats();
  // How many batches are alive at once (the prefetch queue, the thread blocked on it, the map's
  // window, the batch being built, the consumer's) depends on timing: about one run in five at full
  // speed met a moment with one or two buffers more in use than any moment of the warm-up, and the
  // pool then made them (and keeps them). Allocating per batch would make at least one buffer for
  // each of the 400 batches; a handful bounds what a new peak can add.
  const uint64_t fresh = after.fresh_count - before.fresh_count;
  EXPECT_LE(fresh, kPeakSlack) << "fresh tensor buffers in steady state: " << fresh;
  EXPECT_GT(after.reused_count, before.reused_count + 400);  // the batches did take buffers, from the pool
  EXPECT_GT(checksum, 0);
}

TEST(ParallelReads, OrderIsTheInterleaveOfNFilesWhateverTheThreads) {
  ScratchDir d;
  // Files of different lengths, so the cycle refills slots at different times.
  int lengths[] = {50, 7, 130, 1, 64};
  for (int f = 0; f < 5; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 1000, lengths[f]);
  for (int n : {2, 3, 5}) {
    write_spec(d / "par.pipe", fmt::format("source s = tfrecord(\"pos-*.tfrecord\", parallel_reads = {}) {{\n"
                                           "  d: bytes[194]\n  s: i64\n}}\npipeline p = s | batch(10)\n",
                                           n));
    write_spec(d / "seq.pipe",
               fmt::format("source s = tfrecord(\"pos-*.tfrecord\") {{\n  d: bytes[194]\n  s: i64\n}}\n"
                           "pipeline p = s | interleave(cycle_length = {}, block_length = 1) | batch(10)\n",
                           n));
    std::vector<int64_t> expected = run_ids(d / "seq.pipe", 1);  // one thread: no read-ahead
    ASSERT_EQ(expected.size(), 252u);
    EXPECT_EQ(expected[0], 0);
    EXPECT_EQ(expected[1], 1000);  // one record from each file in turn
    for (int threads : {1, 2, 4}) EXPECT_EQ(run_ids(d / "par.pipe", threads), expected) << n << " reads, " << threads;
  }
}

TEST(ParallelReads, ACorruptFileFailsAtTheSameRecordAsSequentialReading) {
  ScratchDir d;
  for (int f = 0; f < 3; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 1000, 400);
  // Flip a byte in the middle of file 1's data: a data CRC error partway through.
  {
    std::fstream io(d / "pos-1.tfrecord", std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(40000);
    io.put('\x5a');
  }
  write_spec(d / "par.pipe",
             "source s = tfrecord(\"pos-*.tfrecord\", parallel_reads = 3) {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = s\n");
  write_spec(d / "seq.pipe",
             "source s = tfrecord(\"pos-*.tfrecord\") {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = s | interleave(cycle_length = 3)\n");
  auto collect = [&](const fs::path& spec, int threads, std::string& error) {
    Compiled c = compile_spec(spec);
    PipelineRun run(c.plan, options(spec, threads));
    std::vector<int64_t> ids;
    Chunk chunk;
    try {
      while (run.next(chunk))
        for (int64_t i = 0; i < chunk.rows; ++i) ids.push_back(chunk.columns.at(1).dense.data<int64_t>()[i]);
    } catch (const std::exception& e) {
      error = e.what();
    }
    return ids;
  };
  std::string seq_error, par_error;
  // The source hands out whole chunks, so compare what was delivered before the error and the error.
  std::vector<int64_t> seq = collect(d / "seq.pipe", 1, seq_error);
  std::vector<int64_t> par = collect(d / "par.pipe", 2, par_error);
  EXPECT_NE(seq_error.find("CRC"), std::string::npos) << seq_error;
  // The same file, record, offset and reason (the spec file names differ).
  auto located = [](const std::string& e) { return e.substr(std::min(e.size(), e.find("tfrecord: "))); };
  EXPECT_EQ(located(par_error), located(seq_error));
  EXPECT_NE(located(seq_error).find("pos-1.tfrecord: record "), std::string::npos) << seq_error;
  EXPECT_EQ(par, seq);
}

TEST(ParallelReads, CheckpointAndRestoreContinueExactly) {
  ScratchDir d;
  for (int f = 0; f < 4; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 1000, 300 + 17 * f);
  write_spec(d / "p.pipe",
             "source s = tfrecord(\"pos-*.tfrecord\", parallel_reads = 3) {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = s | shuffle(100, seed = 1) | batch(32) | prefetch(2)\n");
  std::vector<int64_t> all = run_ids(d / "p.pipe", 2);
  ASSERT_EQ(all.size(), 4u * 300 + 17 * 6);
  Compiled c = compile_spec(d / "p.pipe");
  std::vector<int64_t> resumed;
  {
    PipelineRun run(c.plan, options(d / "p.pipe", 2));
    Chunk chunk;
    for (int i = 0; i < 11; ++i) {
      ASSERT_TRUE(run.next(chunk));
      const Tensor& s = chunk.columns.at(1).dense;
      for (int64_t k = 0; k < s.num_elements(); ++k) resumed.push_back(s.data<int64_t>()[k]);
    }
    run.save_checkpoint(d / "state.ckpt");
  }
  PipelineRun run(c.plan, options(d / "p.pipe", 2));
  run.restore_checkpoint(d / "state.ckpt");
  Chunk chunk;
  while (run.next(chunk)) {
    const Tensor& s = chunk.columns.at(1).dense;
    for (int64_t k = 0; k < s.num_elements(); ++k) resumed.push_back(s.data<int64_t>()[k]);
  }
  EXPECT_EQ(resumed, all);
}

TEST(ShuffleBuffer, ByteStringsOfAnyLengthStayWithTheirRowAndSurviveACheckpoint) {
  ScratchDir d;
  {
    TFRecordWriterOptions o;
    o.sync = false;
    TFRecordWriter w((d / "names.tfrecord").string(), o);
    for (int64_t i = 0; i < 3000; ++i) {
      std::string name = "n" + std::string(static_cast<size_t>(i % 13), 'x') + std::to_string(i);
      std::string_view nv = name;
      ExampleWriter ex;
      ex.add_int64("x", std::span<const int64_t>(&i, 1));
      ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
      w.write(ex.serialize());
    }
    w.close();
  }
  write_spec(d / "p.pipe",
             "source s = tfrecord(\"names.tfrecord\") {\n  x: i64\n  name: bytes\n}\n"
             "pipeline p = s | shuffle(1000, seed = 5) | batch(7)\n");
  Compiled c = compile_spec(d / "p.pipe");
  auto consume = [](PipelineRun& run, int max_batches, std::vector<int64_t>& ids) {
    Chunk chunk;
    for (int b = 0; b < max_batches && run.next(chunk); ++b) {
      const Tensor& x = chunk.columns.at(0).dense;
      const Tensor& name = chunk.columns.at(1).dense;
      ASSERT_FALSE(chunk.columns.at(1).ragged);
      ASSERT_EQ(name.dtype(), DType::Bytes);
      for (int64_t k = 0; k < x.num_elements(); ++k) {
        int64_t i = x.data<int64_t>()[k];
        ASSERT_EQ(name.str(k), "n" + std::string(static_cast<size_t>(i % 13), 'x') + std::to_string(i));
        ids.push_back(i);
      }
    }
  };
  std::vector<int64_t> all;
  {
    PipelineRun run(c.plan, options(d / "p.pipe", 2));
    consume(run, 1 << 30, all);
  }
  ASSERT_EQ(all.size(), 3000u);
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 3000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_NE(all, sorted);
  std::vector<int64_t> resumed;
  {
    PipelineRun run(c.plan, options(d / "p.pipe", 2));
    consume(run, 50, resumed);
    run.save_checkpoint(d / "state.ckpt");
  }
  PipelineRun run(c.plan, options(d / "p.pipe", 2));
  run.restore_checkpoint(d / "state.ckpt");
  consume(run, 1 << 30, resumed);
  EXPECT_EQ(resumed, all);
}

}  // namespace
}  // namespace pipec
