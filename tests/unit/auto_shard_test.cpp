// multi_worker's automatic sharding (runtime/exec/auto_shard.h): every worker of N runs its plan over
// TFRecord files written here, and the workers' outputs together are checked against the input: every
// example at most once, all of them in all, each worker's files its own, zipped sources aligned, the
// batch divided.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/exec/auto_shard.h"
#include "runtime/exec/file_shard.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::write_file;

// Writes one TFRecord file of Examples {x, y = 7 * x} for x = first, first + 1, ...; returns the x's.
std::vector<int64_t> write_examples(const fs::path& path, int64_t first, int64_t count) {
  fs::create_directories(path.parent_path());
  TFRecordWriter w(path.string(), TFRecordWriterOptions{});
  std::vector<int64_t> xs;
  for (int64_t x = first; x < first + count; ++x) {
    const int64_t y = 7 * x;
    ExampleWriter ex;
    ex.add_int64("x", std::span<const int64_t>(&x, 1));
    ex.add_int64("y", std::span<const int64_t>(&y, 1));
    w.write(ex.serialize());
    xs.push_back(x);
  }
  w.close();
  return xs;
}

// Files data/<prefix>-00K.tfrecord holding `counts[K]` examples each; file K's x's are K * 100 + r.
std::vector<int64_t> write_files(const fs::path& dir, const std::string& prefix, const std::vector<int>& counts) {
  std::vector<int64_t> all;
  for (size_t k = 0; k < counts.size(); ++k) {
    auto xs = write_examples(dir / fmt::format("data/{}-{:03}.tfrecord", prefix, k), static_cast<int64_t>(k) * 100,
                             counts[k]);
    all.insert(all.end(), xs.begin(), xs.end());
  }
  return all;
}

// The spec at dir/spec.pipe compiled for worker `index` of `workers` (workers 0: not sharded).
CompileResult compile_for(const fs::path& dir, const std::string& spec, int64_t workers, int64_t index,
                          int opt_level = 0) {
  CompileOptions o;
  o.passes.opt_level = opt_level;
  o.data_dir = dir.string();
  if (workers > 0) o.shard = CompileOptions::WorkerShard{workers, index};
  return compile_text((dir / "spec.pipe").string(), spec, "", o);
}

// What a run yields: the i64 fields x and y of every element (a batch's rows in order), and each
// batch's size when the output is batched.
struct Output {
  std::vector<int64_t> x, y;
  std::vector<int64_t> batch_sizes;
};

int field_index(const Plan& plan, const std::string& name) {
  const auto& fields = plan.stages.back().element.fields;
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == name) return static_cast<int>(i);
  return -1;
}

Output run_plan(const Plan& plan, const fs::path& dir, uint64_t seed = 1) {
  RunOptions o;
  o.spec_dir = dir.string();
  o.seed = seed;
  o.threads = 2;
  o.chunk_rows = 3;  // several chunks per file: shard and batch see chunk edges
  PipelineRun run(plan, o);
  const int xi = field_index(plan, "x"), yi = field_index(plan, "y");
  const bool batched = plan.stages.back().element.batch_rank > 0;
  Output out;
  Chunk c;
  while (run.next(c)) {
    for (int64_t r = 0; r < c.rows; ++r)
      for (int k : {xi, yi}) {
        if (k < 0) continue;
        const Tensor t = column_row(c.columns[static_cast<size_t>(k)], r);  // one element: a batch when batched
        const int64_t* v = t.data<int64_t>();
        std::vector<int64_t>& to = k == xi ? out.x : out.y;
        to.insert(to.end(), v, v + t.num_elements());
        if (k == xi && batched) out.batch_sizes.push_back(t.shape().at(0));
      }
  }
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Seven files of uneven sizes, shuffled per worker with a seed of its own: worker i reads exactly the
// files i, i+N, ... (never another's), and the workers together read every example once. At -O0 and
// with the optimizer, which runs after the sharding.
TEST(AutoShard, ByFilesEachWorkerReadsOnlyItsFilesAndAllTogetherReadEverything) {
  ScratchDir d;
  const std::vector<int64_t> all = write_files(d.path(), "part", {3, 5, 1, 4, 2, 6, 2});
  const std::string spec =
      "source s = tfrecord(\"data/part-*.tfrecord\", shuffle_files = true) { x: i64  y: i64 }\n"
      "pipeline p = s | interleave(cycle_length = 2) | batch(12)\n";
  for (int opt : {0, 1})
    for (int64_t n : {2, 3, 4}) {
      SCOPED_TRACE(fmt::format("-O{}, {} workers", opt, n));
      std::vector<int64_t> seen;
      for (int64_t i = 0; i < n; ++i) {
        CompileResult r = compile_for(d.path(), spec, n, i, opt);
        ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
        const ShardReport& report = *r.pipelines[0].shard;
        EXPECT_EQ(report.policy, ShardPolicy::ByFiles) << report.description;
        EXPECT_EQ(report.files, 7);
        EXPECT_EQ(report.worker_files, files_in_share(7, n, i));
        EXPECT_EQ(report.worker_batch, 12 / n);
        Output out = run_plan(r.pipelines[0].plan, d.path(), /*seed=*/100 + static_cast<uint64_t>(i));
        for (int64_t x : out.x) EXPECT_EQ(x / 100 % n, i) << "worker " << i << " read x = " << x;
        for (size_t b = 0; b < out.batch_sizes.size(); ++b) {
          EXPECT_LE(out.batch_sizes[b], 12 / n);
          if (b + 1 < out.batch_sizes.size()) {
            EXPECT_EQ(out.batch_sizes[b], 12 / n);
          }
        }
        seen.insert(seen.end(), out.x.begin(), out.x.end());
      }
      EXPECT_EQ(sorted(seen), all);  // at most once each (no duplicates) and every one
    }
}

// Worker i's elements are the unsharded pipeline's elements i, i+N, ..., in their order: one file, or
// fewer files than workers, go by elements.
TEST(AutoShard, ByElementsWhenFewerFilesThanWorkersInTheUnshardedOrder) {
  ScratchDir d;
  write_files(d.path(), "one", {23});
  write_files(d.path(), "three", {4, 9, 5});
  for (const std::string pattern : {"data/one-*.tfrecord", "data/three-*.tfrecord"}) {
    const std::string spec = "source s = tfrecord(\"" + pattern +
                             "\") { x: i64  y: i64 }\n"
                             "pipeline p = s | map(r => { x: r.x, y: r.y + 1 }) | batch(24)\n";
    CompileResult whole = compile_for(d.path(), spec, 0, 0);
    ASSERT_TRUE(whole.ok()) << testing::compile_problems(whole);
    const Output reference = run_plan(whole.pipelines[0].plan, d.path());
    const int64_t files = pattern.find("one") != std::string::npos ? 1 : 3;
    for (int64_t n : {2, 3, 4}) {
      if (n <= files) continue;
      SCOPED_TRACE(fmt::format("{}, {} workers", pattern, n));
      std::vector<int64_t> seen;
      for (int64_t i = 0; i < n; ++i) {
        CompileResult r = compile_for(d.path(), spec, n, i);
        ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
        EXPECT_EQ(r.pipelines[0].shard->policy, ShardPolicy::ByElements);
        Output out = run_plan(r.pipelines[0].plan, d.path());
        std::vector<int64_t> want_x, want_y;
        for (size_t k = static_cast<size_t>(i); k < reference.x.size(); k += static_cast<size_t>(n)) {
          want_x.push_back(reference.x[k]);
          want_y.push_back(reference.y[k]);
        }
        EXPECT_EQ(out.x, want_x);
        EXPECT_EQ(out.y, want_y);
        seen.insert(seen.end(), out.x.begin(), out.x.end());
      }
      EXPECT_EQ(sorted(seen), sorted(reference.x));
    }
  }
  CompileResult r = compile_for(d.path(),
                                "source s = tfrecord(\"data/three-*.tfrecord\") { x: i64 }\n"
                                "pipeline p = s | batch(8)\n",
                                4, 1);
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  EXPECT_EQ(r.pipelines[0].shard->description,
            "sharded by elements (\"data/three-*.tfrecord\" matches 3 files, fewer than 4 workers): every 4th element "
            "from 1; batch 8 is 2 per worker");
  EXPECT_EQ(r.pipelines[0].shard->files, 3);
}

// Two tfrecord sources holding the same examples split differently among their files: sharding them by
// files would pair x's with other examples' y's, so a zip of them goes by elements and stays aligned.
TEST(AutoShard, ZippedTfrecordSourcesGoByElementsAndStayAligned) {
  ScratchDir d;
  int64_t x = 0;
  std::vector<int64_t> all;
  for (int k = 0; k < 4; ++k) {
    const int count = std::vector<int>{2, 3, 4, 1}[static_cast<size_t>(k)];
    auto xs = write_examples(d / fmt::format("data/a-{}.tfrecord", k), x, count);
    all.insert(all.end(), xs.begin(), xs.end());
    x += count;
  }
  x = 0;
  for (int k = 0; k < 4; ++k) {
    const int count = std::vector<int>{5, 1, 1, 3}[static_cast<size_t>(k)];
    write_examples(d / fmt::format("data/b-{}.tfrecord", k), x, count);
    x += count;
  }
  const std::string spec =
      "source a = tfrecord(\"data/a-*.tfrecord\") { x: i64 }\n"
      "source b = tfrecord(\"data/b-*.tfrecord\") { y: i64 }\n"
      "pipeline p = zip(a, b) | batch(12)\n";
  for (int64_t n : {2, 3, 4}) {
    SCOPED_TRACE(fmt::format("{} workers", n));
    std::vector<int64_t> seen;
    for (int64_t i = 0; i < n; ++i) {
      CompileResult r = compile_for(d.path(), spec, n, i, 1);
      ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
      EXPECT_EQ(r.pipelines[0].shard->policy, ShardPolicy::ByElements);
      EXPECT_NE(r.pipelines[0].shard->description.find("a zip joins tfrecord records"), std::string::npos);
      Output out = run_plan(r.pipelines[0].plan, d.path());
      ASSERT_EQ(out.x.size(), out.y.size());
      for (size_t k = 0; k < out.x.size(); ++k) EXPECT_EQ(out.y[k], 7 * out.x[k]) << "row " << k;
      seen.insert(seen.end(), out.x.begin(), out.x.end());
    }
    EXPECT_EQ(sorted(seen), all);
  }
}

// files() sources are lists of files: zipped, they go by files (file k of each to worker k % N), and
// each pair stays the same file name. Shuffled, a worker's share is the same files in another order.
TEST(AutoShard, ZippedFileListsGoByFilesAndStayPaired) {
  ScratchDir d;
  for (int k = 0; k < 5; ++k) {
    write_file(d / fmt::format("a/{}.bin", k), "a");
    write_file(d / fmt::format("b/{}.bin", k), "b");
  }
  for (bool shuffle : {false, true})
    for (int64_t n : {2, 3, 4}) {
      SCOPED_TRACE(fmt::format("{} workers, shuffle {}", n, shuffle));
      const std::string spec = fmt::format(
          "pipeline p = zip(files(\"a/*.bin\") | map(r => {{ a: r.path }}), files(\"b/*.bin\", shuffle = {}) | "
          "map(r => {{ b: r.path }}))\n",
          shuffle);
      std::vector<std::string> seen;
      for (int64_t i = 0; i < n; ++i) {
        CompileResult r = compile_for(d.path(), spec, n, i);
        ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
        EXPECT_EQ(r.pipelines[0].shard->policy, ShardPolicy::ByFiles);
        EXPECT_EQ(r.pipelines[0].shard->files, 10);
        RunOptions o;
        o.spec_dir = d.path().string();
        PipelineRun run(r.pipelines[0].plan, o);
        EXPECT_EQ(run.pass_elements(0), files_in_share(5, n, i));  // what progress and footprints count
        std::vector<std::string> as, bs;
        Chunk c;
        while (run.next(c))
          for (int64_t row = 0; row < c.rows; ++row) {
            as.push_back(fs::path(c.columns[0].dense.str(row)).filename().string());
            bs.push_back(fs::path(c.columns[1].dense.str(row)).filename().string());
          }
        EXPECT_EQ(as.size(), static_cast<size_t>(files_in_share(5, n, i)));
        if (!shuffle) {
          EXPECT_EQ(bs, as);
        }
        // The shuffle reorders only worker i's own share: b's names are a's, in some order.
        std::sort(bs.begin(), bs.end());
        EXPECT_EQ(bs, as);
        for (const std::string& a : as) EXPECT_EQ((a[0] - '0') % n, i) << a;
        seen.insert(seen.end(), as.begin(), as.end());
      }
      std::sort(seen.begin(), seen.end());
      EXPECT_EQ(seen, (std::vector<std::string>{"0.bin", "1.bin", "2.bin", "3.bin", "4.bin"}));
    }
}

// A file cache holds one worker's share: each worker writes and replays a file of its own.
TEST(AutoShard, EachWorkerCachesItsShareInAFileOfItsOwn) {
  ScratchDir d;
  const std::vector<int64_t> all = write_files(d.path(), "c", {5, 2, 4});
  const std::string spec =
      "source s = tfrecord(\"data/c-*.tfrecord\") { x: i64  y: i64 }\n"
      "pipeline p = s | cache(\"cached\") | batch(2)\n";
  for (int pass = 0; pass < 2; ++pass) {  // the second pass replays the files the first wrote
    std::vector<int64_t> seen;
    for (int64_t i = 0; i < 2; ++i) {
      CompileResult r = compile_for(d.path(), spec, 2, i);
      ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
      Output out = run_plan(r.pipelines[0].plan, d.path());
      EXPECT_TRUE(fs::exists(d / fmt::format("cached.worker-{}-of-2", i)));
      for (int64_t x : out.x) EXPECT_EQ(x / 100 % 2, i) << "pass " << pass << ": worker " << i << " read x = " << x;
      seen.insert(seen.end(), out.x.begin(), out.x.end());
    }
    EXPECT_EQ(sorted(seen), all);
  }
  EXPECT_FALSE(fs::exists(d / "cached"));
}

TEST(AutoShard, SourcesWithoutFileListsGoByElements) {
  ScratchDir d;
  CompileResult r = compile_for(d.path(), "pipeline p = range(10) | batch(2)\n", 2, 0);
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  EXPECT_EQ(r.pipelines[0].shard->description,
            "sharded by elements (range reads no files): every 2nd element from 0; batch 2 is 1 per worker");
  r = compile_for(d.path(),
                  "pipeline p = choose_from([range(4), range(4, 8)], range(8) | map(r => { i: r.value % 2 }))\n", 3, 2);
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  EXPECT_EQ(r.pipelines[0].shard->policy, ShardPolicy::ByElements);
  EXPECT_NE(r.pipelines[0].shard->description.find("(a choose_from picks among its datasets by position)"),
            std::string::npos)
      << r.pipelines[0].shard->description;
  EXPECT_NE(r.pipelines[0].shard->description.find("every 3rd element from 2"), std::string::npos);
  EXPECT_EQ(r.pipelines[0].shard->global_batch, 0);
}

// sample_from chooses by position too: the shard comes after it, and the workers' shares together are
// the unsharded output, each element once.
TEST(AutoShard, SampleFromIsShardedAfterItself) {
  ScratchDir d;
  const std::string spec =
      "pipeline p = sample_from([range(20), range(100, 130)], weights = [1, 2], seed = 3) | map(r => { x: r.value })\n";
  CompileResult whole = compile_for(d.path(), spec, 1, 0);
  ASSERT_TRUE(whole.ok()) << testing::compile_problems(whole);
  const std::vector<int64_t> all = run_plan(whole.pipelines[0].plan, d.path()).x;
  ASSERT_EQ(all.size(), 50u);
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < 3; ++i) {
    CompileResult r = compile_for(d.path(), spec, 3, i);
    ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
    EXPECT_NE(r.pipelines[0].shard->description.find("(a sample_from picks among its datasets by position)"),
              std::string::npos)
        << r.pipelines[0].shard->description;
    const std::vector<int64_t> share = run_plan(r.pipelines[0].plan, d.path()).x;
    for (size_t k = 0; k < share.size(); ++k) EXPECT_EQ(share[k], all.at(k * 3 + static_cast<size_t>(i)));
    seen.insert(seen.end(), share.begin(), share.end());
  }
  EXPECT_EQ(sorted(seen), sorted(all));
}

// text_lines reads a list of files: each worker reads its share of them.
TEST(AutoShard, TextLinesGoByFiles) {
  ScratchDir d;
  std::vector<int64_t> all;
  for (int f = 0; f < 4; ++f) {
    std::string text;
    for (int i = 0; i <= f; ++i) {
      text += std::string(static_cast<size_t>(10 * f + i), 'a') + "\n";
      all.push_back(10 * f + i);
    }
    testing::write_file(d / fmt::format("t-{}.txt", f), text);
  }
  const std::string spec = "pipeline p = text_lines(\"t-*.txt\") | map(r => { x: size(r.line) })\n";
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < 2; ++i) {
    CompileResult r = compile_for(d.path(), spec, 2, i);
    ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
    EXPECT_EQ(r.pipelines[0].shard->policy, ShardPolicy::ByFiles) << r.pipelines[0].shard->description;
    const std::vector<int64_t> share = run_plan(r.pipelines[0].plan, d.path()).x;
    for (int64_t x : share) EXPECT_EQ(x / 10 % 2, i) << "worker " << i << " read a line of another's file";
    seen.insert(seen.end(), share.begin(), share.end());
  }
  EXPECT_EQ(sorted(seen), sorted(all));
}

// A batch of fixed size: its size and the leading dimension of every element type after it become
// B / N, the plan verifies (compile() checks it) and every batch a worker makes has B / N rows.
TEST(AutoShard, FixedBatchAndTheTypesAfterItAreDivided) {
  ScratchDir d;
  const std::string spec = "pipeline p = range(48) | batch(12, drop_remainder = true) | repeat(2) | prefetch(auto)\n";
  for (int64_t n : {2, 3, 4}) {
    std::vector<int64_t> seen;
    for (int64_t i = 0; i < n; ++i) {
      for (int opt : {0, 1}) {
        CompileResult r = compile_for(d.path(), spec, n, i, opt);
        ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
        if (opt == 1) continue;
        const Plan& plan = r.pipelines[0].plan;
        bool after = false;
        for (const Stage& s : plan.stages) {
          after = after || s.kind == StageKind::Batch;
          if (s.kind == StageKind::Batch) {
            EXPECT_EQ(s.arg("size")->i, 12 / n);
          }
          if (after) {
            EXPECT_EQ(s.element.fields.at(0).type->shape, (Shape{12 / n})) << print_plan(plan);
          }
        }
        RunOptions o;
        PipelineRun run(plan, o);
        Chunk c;
        int64_t elements = 0;
        while (run.next(c)) {
          EXPECT_EQ(c.columns[0].dense.shape()[1], 12 / n);
          const int64_t* v = c.columns[0].dense.data<int64_t>();
          for (int64_t k = 0; k < c.columns[0].dense.num_elements(); ++k, ++elements)
            if (elements < 48 / n) seen.push_back(v[k]);  // the first of the two epochs
        }
        EXPECT_EQ(elements, 2 * 48 / n);
      }
    }
    EXPECT_EQ(sorted(seen), sorted([] {
                std::vector<int64_t> v(48);
                std::iota(v.begin(), v.end(), 0);
                return v;
              }()));
  }
}

TEST(AutoShard, ABatchTheWorkersDoNotDivideIsAnErrorAtIt) {
  ScratchDir d;
  const std::string spec = "pipeline p = range(30)\n  | batch(10)\n";
  CompileResult r = compile_for(d.path(), spec, 3, 0);
  EXPECT_EQ(r.status, CompileStatus::ShardError);
  EXPECT_EQ(r.error, (d / "spec.pipe").string() +
                         ":2:5: error: the batch size 10 does not divide among 3 workers: under multi_worker each "
                         "worker batches the global batch / 3; make it a multiple of 3");
  // The same from the function itself, with the place apart.
  Plan plan = testing::compiled_plan(spec, "", testing::lowered_only(), "spec.pipe");
  try {
    auto_shard(plan, 4, 0);
    ADD_FAILURE() << "batch(10) was divided among 4 workers";
  } catch (const ShardError& e) {
    EXPECT_EQ(e.loc().to_string(), "spec.pipe:2:5");
    EXPECT_NE(std::string(e.what()).find("batch size 10 does not divide among 4 workers"), std::string::npos);
  }
  EXPECT_NO_THROW(auto_shard(plan, 5, 4));
}

// A map after a fixed-size batch was typed (and would be compiled) for B rows: an error at the map. After
// a batch of unknown size it runs as written.
TEST(AutoShard, AMapAfterAFixedBatchIsAnErrorAtTheMap) {
  ScratchDir d;
  CompileResult r = compile_for(d.path(),
                                "pipeline p = range(16) | batch(4, drop_remainder = true)\n"
                                "  | map(r => { x: r.value * 2 })\n",
                                2, 1);
  EXPECT_EQ(r.status, CompileStatus::ShardError);
  EXPECT_NE(r.error.find("spec.pipe:2:5: error: the map at 2:5 reads batches of exactly 4 elements (the batch at "
                         "1:26), but each of 2 workers batches 2: write it before the batch"),
            std::string::npos)
      << r.error;
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < 2; ++i) {
    r = compile_for(d.path(), "pipeline p = range(16) | batch(4) | map(r => { x: r.value * 2 })\n", 2, i);
    ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
    Output out = run_plan(r.pipelines[0].plan, d.path());
    for (size_t b = 0; b < out.batch_sizes.size(); ++b) EXPECT_EQ(out.batch_sizes[b], 2);
    seen.insert(seen.end(), out.x.begin(), out.x.end());
  }
  EXPECT_EQ(sorted(seen), (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}));
}

TEST(AutoShard, FileShareArgument) {
  Stage s;
  s.kind = StageKind::Files;
  const std::vector<std::string> files = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(files_of_shard(files, s), files);
  s.args.emplace_back(kFileShardArg, file_shard_value(3, 1));
  EXPECT_EQ(files_of_shard(files, s), (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(files_in_share(5, 3, 1), 2);
  EXPECT_EQ(files_in_share(5, 3, 2), 1);
  EXPECT_EQ(files_in_share(2, 3, 2), 0);
  s.args.back().second = file_shard_value(3, 3);
  EXPECT_THROW(files_of_shard(files, s), std::invalid_argument);
  s.args.back().second = Value::make_int(3);
  EXPECT_THROW(files_of_shard(files, s), std::invalid_argument);
}

TEST(AutoShard, OneWorkerLeavesThePlanAsItWas) {
  Plan plan = testing::compiled_plan("pipeline p = range(10) | batch(3)\n");
  AutoShard one = auto_shard(plan, 1, 0);
  EXPECT_EQ(print_plan(one.plan), print_plan(plan));
  EXPECT_EQ(one.report.policy, ShardPolicy::Unsharded);
  EXPECT_EQ(one.report.description, "one worker: not sharded");
  EXPECT_THROW(auto_shard(plan, 1, 1), std::invalid_argument);
  EXPECT_THROW(auto_shard(plan, 2, 2), std::invalid_argument);
  EXPECT_THROW(auto_shard(plan, 2, -1), std::invalid_argument);
}

// A train block: its data is sharded (with the repeat its length adds), its validation data is not.
TEST(AutoShard, TrainDataIsShardedAndValidationDataIsNot) {
  ScratchDir d;
  write_files(d.path(), "t", {4, 4, 4, 4});
  const std::string spec =
      "source s = tfrecord(\"data/t-*.tfrecord\") { x: i64  y: i64 }\n"
      "pipeline data = s | map(r => { a: f32([r.x]), b: f32([r.y]) }) | batch(4, drop_remainder = true)\n"
      "pipeline held = range(8) | map(r => { a: f32([r.value]), b: f32([r.value]) }) | batch(4)\n"
      "model net(a: f32[1]) -> f32[1] { a | dense(1) }\n"
      "train t = { data = data, model = net(a), loss = mse(b), optimizer = sgd(), steps = 3, validation = held }\n";
  write_file(d / "spec.pipe", spec);
  CompileRequest request;
  request.path = (d / "spec.pipe").string();
  request.target = CompileTarget::Train;
  request.options.data_dir = d.path().string();
  request.options.shard = CompileOptions::WorkerShard{2, 1};
  CompileResult r = compile(request);
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  ASSERT_EQ(r.pipelines.size(), 2u);
  ASSERT_TRUE(r.pipelines[0].shard);
  EXPECT_EQ(r.pipelines[0].shard->description,
            "sharded by files: 4 files over 2 workers, worker 1 reads 2; batch 4 is 2 per worker");
  EXPECT_FALSE(r.pipelines[1].shard);
}

}  // namespace
}  // namespace pipec
