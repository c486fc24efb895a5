// `pipec run` end to end: values written with --output, take, bad input of every kind, ignore_errors,
// Ctrl-C, and a run killed with SIGKILL and resumed from its checkpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <random>
#include <thread>

#include "runtime/io/example_writer.h"
#include "runtime/io/npy.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.data<int64_t>()[i]);
  return v;
}

// Writes n Examples {x: int64 i, name: bytes "r<i>"} to `path`.
void write_records(const fs::path& path, int n, Compression c = Compression::None) {
  TFRecordWriterOptions o;
  o.compression = c;
  TFRecordWriter w(path.string(), o);
  for (int i = 0; i < n; ++i) {
    ExampleWriter ex;
    int64_t v = i;
    std::string name = "r" + std::to_string(i);
    std::string_view nv = name;
    ex.add_int64("x", std::span<const int64_t>(&v, 1));
    ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
    w.write(ex.serialize());
  }
  w.close();
}

TEST(Run, RangeBatchWritesNumpyElements) {
  ScratchDir d;
  write_file(d / "p.pipe", "pipeline p = range(10) | batch(4)\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ints(read_npy((d / "out/000000/value.npy").string())), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ints(read_npy((d / "out/000002/value.npy").string())), (std::vector<int64_t>{8, 9}));
  EXPECT_FALSE(fs::exists(d / "out/000003"));
}

TEST(Run, MapComputesTypedFields) {
  ScratchDir d;
  write_file(
      d / "p.pipe",
      "pipeline p = range(5) | map(r => { twice: r.value * 2, half: f32(r.value) / 2.0, odd: r.value % 2 == 1 })\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "out").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Tensor twice = read_npy((d / "out/000003/twice.npy").string());
  Tensor half = read_npy((d / "out/000003/half.npy").string());
  Tensor odd = read_npy((d / "out/000003/odd.npy").string());
  EXPECT_EQ(twice.data<int64_t>()[0], 6);
  EXPECT_EQ(half.dtype(), DType::F32);
  EXPECT_FLOAT_EQ(half.data<float>()[0], 1.5f);
  EXPECT_EQ(odd.dtype(), DType::Bool);
  EXPECT_EQ(odd.data<uint8_t>()[0], 1);
}

TEST(Run, TakeStopsEarlyAndSummaryNamesStages) {
  ScratchDir d;
  write_file(d / "p.pipe", "pipeline p = range(1000) | repeat() | batch(10)\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--take", "7", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("7 batches (70 examples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bottleneck"), std::string::npos) << r.err;
  std::string json = testing::read_all(d / "s.json");
  EXPECT_NE(json.find("\"examples\": 70"), std::string::npos) << json;
}

TEST(Run, TfrecordFieldsRoundTripThroughWrite) {
  ScratchDir d;
  write_records(d / "in.tfrecord", 6);
  write_file(d / "p.pipe",
             "source s = tfrecord(\"in.tfrecord\") { x: i64  name: bytes }\n"
             "pipeline copy = s | map(r => { x: r.x * 10, name: r.name }) | write(tfrecord(\"out/part-*.tfrecord\", "
             "shards = 2))\n"
             "source back = tfrecord(\"out/part-*.tfrecord\") { x: i64  name: bytes }\n"
             "pipeline check = back | batch(6)\n");
  auto w = run_pipec({"run", (d / "p.pipe").string(), "--pipeline", "copy", "--quiet"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_TRUE(fs::exists(d / "out/part-00000-of-00002.tfrecord"));
  auto r =
      run_pipec({"run", (d / "p.pipe").string(), "--pipeline", "check", "--output", (d / "o").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<int64_t> xs = ints(read_npy((d / "o/000000/x.npy").string()));
  std::sort(xs.begin(), xs.end());
  EXPECT_EQ(xs, (std::vector<int64_t>{0, 10, 20, 30, 40, 50}));
}

TEST(RunBadInput, RealCorruptFileIsDataLossAtOffsetZero) {
  ScratchDir d;
  std::string corrupt = std::string(PIPEC_SHARED_DIR) + "/testdata/external/tfrecord/pets_examples_corrupt.record";
  write_file(d / "p.pipe", "source s = tfrecord(\"" + corrupt + "\") { x: i64 = 0 }\npipeline p = s\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pets_examples_corrupt.record"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p.pipe:1:"), std::string::npos)
      << "the error should name the stage's place in the spec: " << r.err;
}

TEST(RunBadInput, IgnoreErrorsDropsAndCounts) {
  ScratchDir d;
  std::string corrupt = std::string(PIPEC_SHARED_DIR) + "/testdata/external/tfrecord/pets_examples_corrupt.record";
  write_records(d / "good.tfrecord", 3);
  write_file(d / "p.pipe", "source s = tfrecord(\"*.record*\") { x: i64 = 0 }\npipeline p = s | ignore_errors()\n");
  fs::copy_file(corrupt, d / "bad.record");
  fs::copy_file(d / "good.tfrecord", d / "good.record");
  auto r = run_pipec({"run", (d / "p.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("3 elements"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dropped by ignore_errors"), std::string::npos) << r.err;
}

TEST(RunBadInput, MissingFilesNameThePattern) {
  ScratchDir d;
  write_file(d / "p.pipe", "source s = tfrecord(\"nowhere/*.tfrecord\") { x: i64 }\npipeline p = s\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nowhere/*.tfrecord"), std::string::npos) << r.err;
}

TEST(RunBadInput, TruncatedFileWrongCrcGzipCutAndWrongKind) {
  ScratchDir d;
  write_records(d / "ok.tfrecord", 20);
  std::string bytes = testing::read_all(d / "ok.tfrecord");
  // Cut in the middle of a record.
  write_file(d / "trunc/a.tfrecord", bytes.substr(0, bytes.size() - 7));
  // One flipped byte inside the data of the third record.
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  write_file(d / "crc/a.tfrecord", flipped);
  // A GZIP stream cut short.
  write_records(d / "gz.tfrecord.gz", 200, Compression::Gzip);
  std::string gz = testing::read_all(d / "gz.tfrecord.gz");
  write_file(d / "gzcut/a.tfrecord.gz", gz.substr(0, gz.size() / 2));
  struct Case {
    std::string spec;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"source s = tfrecord(\"trunc/*.tfrecord\") { x: i64 }\npipeline p = s\n", "trunc/a.tfrecord"},
      {"source s = tfrecord(\"crc/*.tfrecord\") { x: i64 }\npipeline p = s\n", "crc"},
      {"source s = tfrecord(\"gzcut/*.gz\", compression = gzip) { x: i64 }\npipeline p = s\n", "gzcut/a.tfrecord.gz"},
      {"source s = tfrecord(\"ok.tfrecord\") { x: f32 }\npipeline p = s\n", "int64"},
      {"source s = tfrecord(\"ok.tfrecord\") { x: i64  missing: i64 }\npipeline p = s\n", "missing"},
  };
  for (const Case& c : cases) {
    write_file(d / "p.pipe", c.spec);
    auto r = run_pipec({"run", (d / "p.pipe").string(), "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << c.spec << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.spec << "\n" << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
  }
}

TEST(RunSignals, CtrlCStopsWithinASecondAndLeavesNoHalfWrittenFile) {
  ScratchDir d;
  write_file(d / "p.pipe",
             "pipeline p = range(1000) | repeat() | map(r => { x: r.value * 3 }) | take(100_000_000)"
             " | write(tfrecord(\"out/data-*.tfrecord\", shards = 2))\n");
  pid_t pid = testing::spawn_pipec({"run", (d / "p.pipe").string()});
  // Signal once the run is writing (its handler is installed by then), not after a fixed sleep that a
  // loaded machine can outlast; a run that never starts writing still gets the signal after 10 s.
  auto writing = [&] { return fs::exists(d / "out") && !fs::is_empty(d / "out"); };
  for (int i = 0; i < 1000 && !writing(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  for (int i = 0; i < 300 && waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (waitpid(pid, &status, WNOHANG) == 0 && !WIFEXITED(status)) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "pipec did not stop within 3 s of SIGINT";
  }
  // A second is the promise; the margin is for a 2-core CI machine running other tests beside this one.
  EXPECT_LT(secs, 1.5);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  // Nothing half-written: neither final nor temporary files remain.
  if (fs::exists(d / "out"))
    for (auto& e : fs::directory_iterator(d / "out")) ADD_FAILURE() << "left behind: " << e.path();
}

// The equivalence the checkpoint promises: a run killed at a random moment and resumed delivers, joined
// with what it delivered before its last checkpoint, exactly the stream of an uninterrupted run.
TEST(RunCheckpoint, KilledAndResumedRunEqualsUninterruptedRun) {
  ScratchDir d;
  write_file(d / "p.pipe",
             "pipeline p = range(60_000)\n"
             "  | shuffle(2_000, seed = 3)\n"
             "  | map(r => { v: r.value, noise: random_uniform([4]) })\n"
             "  | batch(50)\n"
             "  | prefetch(3)\n");
  auto ref = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "ref").string(), "--quiet"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  int ref_count = 0;
  for (auto& e : fs::directory_iterator(d / "ref")) ref_count += e.is_directory();
  ASSERT_EQ(ref_count, 1200);

  std::mt19937 rng(12345);
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::path out = d / ("run" + std::to_string(attempt));
    fs::path ck = d / ("ck" + std::to_string(attempt));
    std::vector<std::string> args = {"run",       (d / "p.pipe").string(), "--output", out.string(), "--checkpoint",
                                     ck.string(), "--checkpoint-every",    "37",       "--quiet"};
    pid_t pid = testing::spawn_pipec(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 600));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    std::vector<std::string> resume = args;
    if (fs::exists(ck / "state.ckpt")) resume.push_back("--resume");
    auto r = run_pipec(resume);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int n = 0;
    for (auto& e : fs::directory_iterator(out)) {
      if (!e.is_directory()) continue;
      ++n;
      for (const char* f : {"v.npy", "noise.npy"}) {
        fs::path a = e.path() / f;
        fs::path b = d / "ref" / e.path().filename() / f;
        ASSERT_EQ(testing::read_all(a), testing::read_all(b)) << a;
      }
    }
    EXPECT_EQ(n, ref_count);
  }
}

// --take N with --checkpoint stops inside a chunk (an unbatched map yields chunks of many elements):
// the checkpoint holds the chunk's other elements, so runs of --take 7, --take 7 and the rest deliver
// exactly the uninterrupted run, each element once.
TEST(RunCheckpoint, TakeThenResumeContinuesAtTheNextElement) {
  ScratchDir d;
  write_file(d / "p.pipe", "pipeline p = range(40) | shuffle(16, seed = 5) | map(r => { v: r.value * 3 })\n");
  auto ref = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "ref").string(), "--quiet"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const std::vector<std::string> base = {"run",          (d / "p.pipe").string(), "--output", (d / "out").string(),
                                         "--checkpoint", (d / "ck").string(),     "--quiet"};
  std::vector<std::string> first = base;
  first.insert(first.end(), {"--take", "7"});
  ASSERT_EQ(run_pipec(first).exit_code, 0);
  std::vector<std::string> second = first;
  second.push_back("--resume");
  ASSERT_EQ(run_pipec(second).exit_code, 0);
  std::vector<std::string> rest = base;
  rest.push_back("--resume");
  ASSERT_EQ(run_pipec(rest).exit_code, 0);
  int n = 0;
  for (auto& e : fs::directory_iterator(d / "out")) {
    ++n;
    const fs::path a = e.path() / "v.npy";
    EXPECT_EQ(testing::read_all(a), testing::read_all(d / "ref" / e.path().filename() / "v.npy")) << a;
  }
  EXPECT_EQ(n, 40);
}

TEST(RunCheckpoint, RefusesACheckpointOfAnotherPipeline) {
  ScratchDir d;
  write_file(d / "a.pipe", "pipeline p = range(100) | batch(10)\n");
  write_file(d / "b.pipe", "pipeline p = range(100) | batch(20)\n");
  auto a = run_pipec({"run", (d / "a.pipe").string(), "--checkpoint", (d / "ck").string(), "--take", "3", "--quiet"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = run_pipec({"run", (d / "b.pipe").string(), "--checkpoint", (d / "ck").string(), "--resume", "--quiet"});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("different pipeline"), std::string::npos) << b.err;
}

}  // namespace
}  // namespace pipec
