// The repeated_jpeg_index pass (compiler/passes/repeated_jpeg_index.h): which cropping decodes it
// marks, and that a marked pipeline gives exactly the elements of the unoptimized one over several
// epochs, with windows cut from the index from the second epoch on, from files and from bytes, and
// after a file changes between runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "compiler/passes/crop_pushdown.h"
#include "compiler/passes/repeated_jpeg_index.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/plan/plan.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

std::string jpeg_dir() { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/jpeg"; }

int indexed_decodes(const Plan& p) {
  int n = 0;
  for (const Stage& s : p.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body)
        n += in.op == OpKind::DecodeJpeg && in.attrs.count("index") && in.attrs.at("index").b;
  return n;
}

// Crop pushdown, then the pass; the number of decodes it marked.
int marked(const std::string& text) {
  Plan p = testing::plan_of(text);
  crop_pushdown(p);
  repeated_jpeg_index(p);
  EXPECT_TRUE(verify_plan(p).empty());
  return indexed_decodes(p);
}

TEST(RepeatedJpegIndex, MarksCroppingDecodesThatARepeatRunsAgain) {
  const std::string files = "files(\"" + jpeg_dir() + "/*.jpg\")";
  const std::string crop = "map(r => { img: random_crop(decode_jpeg(read_file(r.path)), 8, 8) })";
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat(3) | " + crop + "\n"), 1);
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat() | " + crop + "\n"), 1);
  EXPECT_EQ(marked("pipeline p = " + files + " | shuffle(8) | repeat(50) | " + crop + "\n"), 1) << "shuffle_repeat";
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + " | repeat(5)\n"), 1)
      << "a repeat after the map runs it again too";
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + " | batch(2) | repeat()\n"), 1);
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat(2) | " + crop + " | repeat(2)\n"), 1) << "2 x 2 passes";
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat(2) | " + crop + "\n"), 1) << "two passes are enough";
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + " | repeat(2)\n"), 1);
  // Each file once, or too few passes to win back the first one.
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + "\n"), 0);
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat(1) | " + crop + "\n"), 0);
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + " | repeat(1)\n"), 0);
  // A cache between the map and the repeat replays the first pass: the map runs once.
  EXPECT_EQ(marked("pipeline p = " + files + " | " + crop + " | cache() | repeat()\n"), 0);
  // Not a cropping decode: the whole image is decoded anyway.
  EXPECT_EQ(marked("pipeline p = " + files + " | repeat() | map(r => { img: decode_jpeg(read_file(r.path)) })\n"), 0);
  Plan p = testing::plan_of("pipeline p = " + files + " | repeat(4) | " + crop + "\n");
  crop_pushdown(p);
  EXPECT_TRUE(repeated_jpeg_index(p));
  EXPECT_FALSE(repeated_jpeg_index(p)) << "a second run has nothing left to do";
}

// Marks every cropping decode, as the pass does under enough repeats.
int mark_all(Plan& p) {
  int n = 0;
  for (Stage& s : p.stages)
    if (s.fn)
      for (Instr& in : s.fn->body)
        if (in.op == OpKind::DecodeJpeg && in.attrs.count("crop")) {
          in.attrs["index"] = Value::make_bool(true);
          ++n;
        }
  return n;
}

// The JPEGs that decode in full (a file truncated below the window decodes with pushdown and fails
// without it).
void copy_good_files(const fs::path& dir) {
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "libjpeg-turbo_testimgint.jpg", "libjpeg-turbo_testimgari.jpg",
                           "wuffs_bricks-color.jpeg", "wuffs_bricks-gray.jpeg", "wuffs_peacock.default.jpeg",
                           "wuffs_peacock.progressive.jpeg", "wuffs_peacock.grayscale.jpeg",
                           "wuffs_mona-lisa.21x32.q50.jpeg", "wuffs_hippopotamus-bad-comment-length.jpeg"})
    fs::copy_file(jpeg_dir() + "/" + name, dir / name, fs::copy_options::overwrite_existing);
}

// The unoptimized plan and the one with crop pushdown and the index give the same elements, epoch
// after epoch; from the second epoch on the windows come from the index (the plans are marked by
// hand, as the pass marks them under repeat(3)).
void expect_same_as_unoptimized(const std::string& text, size_t elements) {
  Plan p = testing::plan_of(text);
  Plan q = testing::copy_plan(p);
  ASSERT_TRUE(crop_pushdown(q));
  ASSERT_EQ(mark_all(q), 1);
  for (int threads : {1, 2}) {
    const uint64_t seed = static_cast<uint64_t>(threads);
    const int64_t hits_before = JpegIndexCache::process().stats().hits;
    // One thread: the map on the thread that pulls from it (with pool tasks, a thread waiting for one
    // may run the next beside the worker: ThreadPool::wait_helping).
    std::vector<Tensor> a = testing::run_tensors(p, seed, 1),
                        b = testing::run_tensors(q, seed, threads, threads == 1 ? 1 : 0);
    ASSERT_EQ(a.size(), elements);
    ASSERT_EQ(b.size(), elements);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equals(b[i])) << "element " << i << " seed " << seed;
    // 10 files x 3 epochs, all indexable: on one thread the last two epochs read the index (on two,
    // an epoch's first file may be decoded while the previous epoch's copy is still being indexed).
    EXPECT_GE(JpegIndexCache::process().stats().hits - hits_before, threads == 1 ? 20 : 1);
  }
}

TEST(RepeatedJpegIndex, SameElementsAsUnoptimizedOverEpochs) {
  testing::ScratchDir dir;
  copy_good_files(dir.path());
  const std::string files = "files(\"" + dir.path().string() + "/*.jp*g\")";
  for (const char* body : {"{ img: random_crop(decode_jpeg(read_file(r.path)), 17, 13) }",
                           "{ img: random_crop(decode_jpeg(read_file(r.path), channels = 1), 21, 21) }",
                           "{ img: central_crop(decode_jpeg(read_file(r.path)), 0.4) }",
                           "{ img: flip_left_right(random_crop(decode_jpeg(read_file(r.path)), 9, 20)) }"}) {
    SCOPED_TRACE(body);
    expect_same_as_unoptimized("pipeline p = " + files + " | repeat(3) | map(r => " + std::string(body) + ")\n", 30);
  }
  // The file's bytes come into the map (read_file is used twice, so the decoder does not read the
  // file itself): keyed by a hash of the bytes.
  SCOPED_TRACE("bytes");
  expect_same_as_unoptimized(
      "pipeline p = " + files +
          " | repeat(3) | map(r => { b = read_file(r.path); { img: random_crop(decode_jpeg(b), 8, 8), raw: b } })\n",
      60);
}

TEST(RepeatedJpegIndex, AFileThatChangesIsIndexedAgain) {
  testing::ScratchDir dir;
  const fs::path a = dir.path() / "a.jpg";
  const std::string text =
      "pipeline p = files(\"" + dir.path().string() +
      "/*.jpg\") | repeat(2) | map(r => { img: random_crop(decode_jpeg(read_file(r.path)), 16, 16) })\n";
  Plan p = testing::plan_of(text);
  Plan q = testing::copy_plan(p);
  crop_pushdown(q);
  ASSERT_EQ(mark_all(q), 1);
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "wuffs_bricks-color.jpeg"}) {
    fs::copy_file(jpeg_dir() + "/" + name, a, fs::copy_options::overwrite_existing);
    std::vector<Tensor> want = testing::run_tensors(p, 5, 1), got = testing::run_tensors(q, 5, 1);
    ASSERT_EQ(want.size(), 2u);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(want[i].equals(got[i])) << name << " element " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
  }
}

}  // namespace
}  // namespace pipec
