// The stage table (runtime/plan/stages.def) against the builtins and the runtime:
//  - every source, stage and sink builtin lowers to a stage kind of the same name and nature, and every
//    kind not made by the optimizer has its builtin;
//  - every kind runs: a small spec whose optimized plan holds it goes through build_iterator and is
//    read to the end. Each kind has its spec below: a kind added to the table without one fails to
//    compile (-Wswitch) and fails here.
#include <gtest/gtest.h>

#include <set>

#include "compiler/lower/lower.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/sema/builtins.h"
#include "compiler/sema/program.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/npy.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::write_file;

// Files for the sources: two TFRecord files of Examples {x: int64}, text files, a CSV, an .npy array.
void write_data(const fs::path& d) {
  for (int f = 0; f < 2; ++f) {
    TFRecordWriter w((d / ("r" + std::to_string(f) + ".tfrecord")).string(), TFRecordWriterOptions{});
    for (int64_t i = 0; i < 5; ++i) {
      ExampleWriter ex;
      int64_t v = f * 10 + i;
      ex.add_int64("x", std::span<const int64_t>(&v, 1));
      w.write(ex.serialize());
    }
    w.close();
  }
  write_file(d / "a.txt", "a");
  write_file(d / "b.txt", "b");
  write_file(d / "d.csv", "a\n1\n2\n3\n");
  write_file(d / "lines.text", "one\ntwo\r\n\nthree");
  write_file(d / "r.bin", "hhAAAABBBBf");
  Tensor x = Tensor::zeros(DType::F32, {4, 3});
  write_npy((d / "x.npy").string(), x);
}

// A spec whose pipeline `p`, optimized, holds a stage of kind `k`.
std::string spec_of(StageKind k, const fs::path& d) {
  const std::string dir = d.string();
  const std::string records = "source s = tfrecord(\"" + dir + "/r*.tfrecord\") { x: i64 }\n";
  switch (k) {
    case StageKind::Tfrecord: return records + "pipeline p = s\n";
    case StageKind::Files: return "pipeline p = files(\"" + dir + "/*.txt\")\n";
    case StageKind::ListFiles: return "pipeline p = list_files(\"" + dir + "/*.txt\")\n";
    case StageKind::Range: return "pipeline p = range(5)\n";
    case StageKind::Csv: return "source s = csv(\"" + dir + "/d.csv\") { a: i64 }\npipeline p = s\n";
    case StageKind::Npy: return "source s = npy(\"" + dir + "/x.npy\") { x: f32[3] }\npipeline p = s\n";
    case StageKind::Zip:
      return "source a = range(3)\nsource b = range(4) | map(r => { w: r.value })\npipeline p = zip(a, b)\n";
    case StageKind::Concatenate: return "pipeline p = concatenate(range(3), range(4))\n";
    case StageKind::ChooseFrom:
      return "pipeline p = choose_from([range(3), range(10, 14)], range(6) | map(r => { i: r.value % 2 }))\n";
    case StageKind::SampleFrom:
      return "pipeline p = sample_from([range(3), range(10, 14)], weights = [0.3, 0.7], seed = 4)\n";
    case StageKind::Window: return "pipeline p = range(7) | window(3, shift = 2)\n";
    case StageKind::BucketByLength:
      return "pipeline p = range(9) | bucket_by_length(length = r => r.value % 4, boundaries = [2], batch_sizes = [2, "
             "3])\n";
    case StageKind::GroupByWindow:
      return "pipeline p = range(9) | group_by_window(key = r => r.value % 2, window_size = 3, reduce = w => w | "
             "batch(2))\n";
    case StageKind::RejectionResample:
      return "pipeline p = range(40) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.5, 0.3, 0.2], "
             "seed = 2)\n";
    case StageKind::Pack:
      return "pipeline p = range(6) | map(r => { t: [1, 2, 3, 4][0:r.value % 4] }) | pack(length = 5, fields = "
             "[\"t\"], rows_open = 2)\n";
    case StageKind::Rebatch: return "pipeline p = range(7) | batch(3) | rebatch(2)\n";
    case StageKind::Scan:
      return "pipeline p = range(5) | scan({ total: 0 }, (s, r) => { total: s.total + r.value, value: r.value })\n";
    case StageKind::TextLines: return "pipeline p = text_lines(\"" + dir + "/*.text\")\n";
    case StageKind::FixedLengthRecords:
      return "pipeline p = fixed_length_records(\"" + dir +
             "/*.bin\", record_bytes = 4, header_bytes = 2, "
             "footer_bytes = 1)\n";
    case StageKind::Enumerate: return "pipeline p = range(5) | enumerate(start = 2)\n";
    case StageKind::Map: return "pipeline p = range(5) | map(r => { y: r.value * 2 })\n";
    case StageKind::Filter: return "pipeline p = range(5) | filter(r => r.value % 2 == 0)\n";
    case StageKind::Batch: return "pipeline p = range(5) | batch(2)\n";
    case StageKind::PaddedBatch: return "pipeline p = range(5) | padded_batch(2)\n";
    case StageKind::Unbatch: return "pipeline p = range(6) | batch(2) | unbatch()\n";
    case StageKind::Shuffle: return "pipeline p = range(5) | shuffle(4, seed = 1)\n";
    case StageKind::Repeat: return "pipeline p = range(3) | repeat(2)\n";
    case StageKind::Take: return "pipeline p = range(5) | take(2)\n";
    case StageKind::Skip: return "pipeline p = range(5) | skip(2)\n";
    case StageKind::Shard: return "pipeline p = range(5) | shard(2, 1)\n";
    case StageKind::Cache: return "pipeline p = range(5) | cache()\n";
    case StageKind::Prefetch: return "pipeline p = range(5) | prefetch(2)\n";
    case StageKind::IgnoreErrors: return "pipeline p = range(5) | ignore_errors()\n";
    case StageKind::Interleave: return records + "pipeline p = s | interleave(cycle_length = 2)\n";
    case StageKind::FlatMap:
      return "pipeline p = files(\"" + dir + "/*.text\") | interleave(f => text_lines(f.path), cycle_length = 2)\n";
    case StageKind::To: return "pipeline p = range(5) | to(gpu)\n";
    case StageKind::Write: return "pipeline p = range(5) | write(tfrecord(\"" + dir + "/out/part-*.tfrecord\"))\n";
    case StageKind::MapFilter: return "pipeline p = range(5) | map(r => { y: r.value }) | filter(r => r.y > 1)\n";
    case StageKind::MapBatch:
      // Random draws after a repeat keep the map per element (no vectorizing), so it fuses with the batch.
      return "pipeline p = range(3) | repeat(2) | map(r => { y: random_uniform([2], seed = 1) }) | batch(2)\n";
    case StageKind::ShuffleRepeat: return "pipeline p = range(5) | shuffle(4, seed = 1) | repeat(2)\n";
  }
  return "";
}

// The optimized plan of pipeline `p` in `text`.
Plan optimized(const std::string& text) {
  auto program = check_text("stage.pipe", text);
  std::ostringstream diags;
  program->diags.print(diags, false);
  EXPECT_FALSE(program->diags.has_errors()) << diags.str();
  for (const auto& decl : program->main().decls)
    if (decl->kind == DeclKind::Pipeline && decl->name == "p") {
      Plan plan = lower_pipeline(*program, *decl);
      run_passes(plan, PassOptions{});
      return plan;
    }
  ADD_FAILURE() << "no pipeline p in\n" << text;
  return {};
}

TEST(StageTable, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> names;
  for (StageKind k : all_stage_kinds) {
    EXPECT_TRUE(names.insert(stage_name(k)).second) << stage_name(k);
    ASSERT_TRUE(stage_from_name(stage_name(k)).has_value()) << stage_name(k);
    EXPECT_EQ(*stage_from_name(stage_name(k)), k);
  }
  EXPECT_EQ(names.size(), kNumStageKinds);
  EXPECT_FALSE(stage_from_name("no_such_stage").has_value());
}

// Every source, stage and sink the checker accepts lowers to the kind of the same name, a source to a
// Source and a sink to a Sink; every kind but the optimizer's fused ones has its builtin.
TEST(StageTable, BuiltinsAndKindsMatch) {
  std::set<StageKind> with_builtin;
  for (const Builtin& b : all_builtins()) {
    const bool dataset = b.kind == BuiltinKind::Source || b.kind == BuiltinKind::Stage || b.kind == BuiltinKind::Sink;
    std::optional<StageKind> k = stage_of_builtin(b);
    if (!dataset) {
      EXPECT_FALSE(k.has_value()) << b.name;
      continue;
    }
    ASSERT_TRUE(k.has_value()) << "builtin `" << b.name << "` has no stage in runtime/plan/stages.def";
    with_builtin.insert(*k);
    EXPECT_EQ(stage_has(*k, StageFlag::Source), b.kind == BuiltinKind::Source) << b.name;
    EXPECT_EQ(stage_has(*k, StageFlag::Sink), b.kind == BuiltinKind::Sink) << b.name;
    EXPECT_FALSE(stage_has(*k, StageFlag::Fused)) << b.name << ": a builtin, not a fused stage";
  }
  for (StageKind k : all_stage_kinds)
    EXPECT_EQ(with_builtin.count(k) == 1, !stage_has(k, StageFlag::Fused))
        << "`" << stage_name(k) << "`: every stage a spec can write has a builtin; fused ones have none";
}

// Every kind runs through build_iterator: a spec holding it is read to the end (to(gpu) on the CPU).
TEST(StageTable, EveryKindRuns) {
  ScratchDir d;
  write_data(d.path());
  for (StageKind k : all_stage_kinds) {
    SCOPED_TRACE(std::string(stage_name(k)));
    const std::string text = spec_of(k, d.path());
    ASSERT_FALSE(text.empty());
    Plan plan = optimized(text);
    bool holds = false;
    for (const Stage& s : plan.stages) holds = holds || s.kind == k;
    ASSERT_TRUE(holds) << "the sample's plan has no `" << stage_name(k) << "` stage:\n" << print_plan(plan);
    RunOptions o;
    o.device = DevicePolicy::Cpu;
    o.threads = 2;
    int64_t rows = 0;
    try {
      PipelineRun run(plan, o);
      Chunk c;
      while (run.next(c)) rows += c.rows;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "running `" << stage_name(k) << "` failed: " << e.what();
    }
    EXPECT_GT(rows, 0);
  }
  EXPECT_TRUE(fs::exists(d.path() / "out") && !fs::is_empty(d.path() / "out")) << "write wrote nothing";
}

}  // namespace
}  // namespace pipec
