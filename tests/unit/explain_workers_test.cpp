// `pipec explain --workers N [--worker I]`: the plan one worker of multi_worker runs, after a line saying
// how it was sharded (runtime/exec/auto_shard.h), at -O0 as with the optimizer.
#include <gtest/gtest.h>

#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;

// Four TFRecord files of three examples {x} each, and a spec reading them in batches of 8.
void write_spec(const ScratchDir& d) {
  fs::create_directories(d / "data");
  for (int k = 0; k < 4; ++k) {
    TFRecordWriter w((d / ("data/part-" + std::to_string(k) + ".tfrecord")).string(), TFRecordWriterOptions{});
    for (int64_t x = 0; x < 3; ++x) {
      ExampleWriter ex;
      ex.add_int64("x", std::span<const int64_t>(&x, 1));
      w.write(ex.serialize());
    }
    w.close();
  }
  write_file(d / "spec.pipe",
             "source s = tfrecord(\"data/part-*.tfrecord\") { x: i64 }\n"
             "pipeline p = s | shuffle(100)\n"
             "  | batch(8, drop_remainder = true)\n"
             "  | repeat()\n");
}

TEST(ExplainWorkers, ByFilesShowsThePolicyTheFileShareAndTheWorkersBatch) {
  ScratchDir d;
  write_spec(d);
  for (const char* opt : {"-O0", "-O1"}) {
    auto r = run_pipec({"explain", opt, (d / "spec.pipe").string(), "--workers", "2", "--worker", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("sharding (worker 1 of 2): sharded by files: 4 files over 2 workers, worker 1 reads 2; "
                         "batch 8 is 4 per worker\npipeline p\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("file_shard = [2, 1]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("size = 4, drop_remainder = true"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-> {x: i64[4]} batched(1) infinite"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("shard("), std::string::npos) << r.out;
  }
}

TEST(ExplainWorkers, MoreWorkersThanFilesShardsByElementsAfterTheSource) {
  ScratchDir d;
  write_spec(d);
  auto r = run_pipec({"explain", "-O0", (d / "spec.pipe").string(), "--workers", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sharding (worker 0 of 8): sharded by elements (\"data/part-*.tfrecord\" matches 4 files, "
                       "fewer than 8 workers): every 8th element from 0; batch 8 is 1 per worker"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#1 shard(#0, num_shards = 8, index = 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#2 shuffle(#1"), std::string::npos) << r.out;
}

TEST(ExplainWorkers, WithoutWorkersNothingIsSharded) {
  ScratchDir d;
  write_spec(d);
  auto r = run_pipec({"explain", "-O0", (d / "spec.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("sharding"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("file_shard"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("size = 8"), std::string::npos) << r.out;
}

TEST(ExplainWorkers, BadWorkerCountsAreErrors) {
  ScratchDir d;
  write_spec(d);
  const std::string spec = (d / "spec.pipe").string();
  auto r = run_pipec({"explain", spec, "--workers", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(spec + ":3:5: error: the batch size 8 does not divide among 3 workers: under multi_worker each "
                              "worker batches the global batch / 3; make it a multiple of 3"),
            std::string::npos)
      << r.err;
  r = run_pipec({"explain", spec, "--workers", "2", "--worker", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--worker 2 is not one of the 2 workers (0 to 1)"), std::string::npos) << r.err;
  r = run_pipec({"explain", spec, "--worker", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--workers"), std::string::npos) << r.err;
  r = run_pipec({"explain", spec, "--workers", "0"});
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace pipec
