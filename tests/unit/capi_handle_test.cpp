// The run behind the C ABI, without a built library: elements handed out as DLPack tensors one at a
// time from multi-row chunks, save/restore in the middle of a chunk, sharding and kernel binding.
#include <gtest/gtest.h>

#include "runtime/capi/dlpack_export.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "runtime/plan/shard_plan.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

Plan lower_text(const std::string& text, const std::string& name) { return testing::compiled_plan(text, name); }

pipe_options defaults() {
  pipe_options o;
  pipe_options_init(&o);
  o.threads = 2;
  return o;
}

// Reads every element's first field as int64 scalars (range values), releasing the tensors.
std::vector<int64_t> drain(PipeHandle& h, int64_t limit = 1 << 30) {
  std::vector<int64_t> out;
  std::vector<DLManagedTensor*> f(h.fields().size());
  while (static_cast<int64_t>(out.size()) < limit && h.next(f.data())) {
    const DLTensor& t = f[0]->dl_tensor;
    EXPECT_EQ(t.ndim, 0);
    out.push_back(*static_cast<const int64_t*>(t.data));
    for (DLManagedTensor* m : f) m->deleter(m);
  }
  return out;
}

TEST(CapiHandle, HandsOutOneElementAtATimeAndResumesInsideAChunk) {
  // range produces chunks of many rows; the handle hands them out row by row without copying.
  PipeLibrary lib{lower_text("pipeline p = range(3000) | map(r => { v: r.value * 2 })\n", "p"), "", {}};
  PipeHandle h(lib, defaults());
  std::vector<int64_t> first = drain(h, 1500);  // stops in the middle of the second chunk
  ASSERT_EQ(first.size(), 1500u);
  EXPECT_EQ(first[1499], 2998);
  std::string state = h.save_state();
  std::vector<int64_t> rest = drain(h);
  ASSERT_EQ(rest.size(), 1500u);
  EXPECT_EQ(rest[0], 3000);
  h.restore_state(state);
  EXPECT_EQ(drain(h), rest);
  PipeHandle fresh(lib, defaults());
  fresh.restore_state(state);
  EXPECT_EQ(drain(fresh), rest);
  EXPECT_EQ(live_exported_tensors(), 0);
}

TEST(CapiHandle, ShardsSplitSourcesAndKeepZipsAligned) {
  Plan plan = lower_text(
      "pipeline p = zip(range(10), range(10) | map(r => { w: r.value * 7 })) | map(r => { v: r.value, w: r.w }) | "
      "batch(2)\n",
      "p");
  Plan sharded = shard_after_sources(plan, 2, 1);
  EXPECT_TRUE(verify_plan(sharded).empty()) << print_plan(sharded);
  int shards = 0;
  for (const Stage& s : sharded.stages) shards += s.kind == StageKind::Shard;
  EXPECT_EQ(shards, 2) << print_plan(sharded);
  std::vector<int64_t> vs, ws;
  for (int i = 0; i < 2; ++i) {
    pipe_options o = defaults();
    o.shard_count = 2;
    o.shard_index = i;
    PipeHandle h(PipeLibrary{plan, "", {}}, o);
    std::vector<DLManagedTensor*> f(2);
    while (h.next(f.data())) {
      for (int64_t r = 0; r < f[0]->dl_tensor.shape[0]; ++r) {
        int64_t v = static_cast<const int64_t*>(f[0]->dl_tensor.data)[r];
        int64_t w = static_cast<const int64_t*>(f[1]->dl_tensor.data)[r];
        EXPECT_EQ(v % 2, i);
        EXPECT_EQ(w, v * 7);  // zipped sources stay aligned
        vs.push_back(v);
      }
      for (DLManagedTensor* m : f) m->deleter(m);
    }
  }
  std::sort(vs.begin(), vs.end());
  EXPECT_EQ(vs, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_THROW(shard_after_sources(plan, 2, 2), std::invalid_argument);
}

// choose_from is sharded after itself (sharding its datasets and index apart would not split it):
// the shards together are its output, each element once.
TEST(CapiHandle, ShardsAChooseFromAfterIt) {
  Plan plan = lower_text(
      "pipeline p = choose_from([range(10, 20), range(20, 30)], range(12) | map(r => { i: r.value % 3 % 2 }))\n", "p");
  Plan sharded = shard_after_sources(plan, 3, 0);
  EXPECT_TRUE(verify_plan(sharded).empty()) << print_plan(sharded);
  int shards = 0;
  for (const Stage& s : sharded.stages) shards += s.kind == StageKind::Shard;
  EXPECT_EQ(shards, 1) << print_plan(sharded);
  std::vector<int64_t> all;
  for (int i = 0; i < 3; ++i) {
    pipe_options o = defaults();
    o.shard_count = 3;
    o.shard_index = i;
    PipeHandle h(PipeLibrary{plan, "", {}}, o);
    for (int64_t v : drain(h)) all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 23}));
}

TEST(CapiHandle, VariableLengthFieldsComeOutWithTheirOwnShapes) {
  // A variable-length feature is a ragged column: each element is its own tensor, handed out as is.
  testing::ScratchDir d;
  {
    TFRecordWriter w((d / "r.tfrecord").string(), TFRecordWriterOptions{});
    for (int i = 0; i < 5; ++i) {
      std::vector<int64_t> ids(static_cast<size_t>(i), i);
      ExampleWriter ex;
      ex.add_int64("ids", std::span<const int64_t>(ids.data(), ids.size()));
      w.write(ex.serialize());
    }
    w.close();
  }
  Plan plan = lower_text("source s = tfrecord(\"r.tfrecord\") {\n  ids: i64[?]\n}\npipeline p = s\n", "p");
  PipeHandle h(PipeLibrary{plan, d.path().string(), {}}, defaults());
  DLManagedTensor* f[1];
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(h.next(f));
    const DLTensor& t = f[0]->dl_tensor;
    ASSERT_EQ(t.ndim, 1);
    EXPECT_EQ(t.shape[0], i);
    for (int k = 0; k < i; ++k) EXPECT_EQ(static_cast<const int64_t*>(t.data)[k], i);
    f[0]->deleter(f[0]);
  }
  EXPECT_FALSE(h.next(f));
  EXPECT_EQ(live_exported_tensors(), 0);
}

int32_t fake_kernel(const PipecKernelArgs*) { return 0; }

TEST(CapiHandle, BindsKernelSymbolsAndRefusesMissingOnes) {
  Plan plan = lower_text("pipeline p = range(4) | map(r => { v: r.value + 1 })\n", "p");
  auto k = std::make_shared<NativeKernel>();
  k->symbol = "pipec_kernel_1";
  k->input_fields = {0};
  plan.stages[1].native = k;
  try {
    PipeHandle h(PipeLibrary{plan, "", {}}, defaults());
    FAIL() << "a missing kernel symbol was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("kernel `pipec_kernel_1` is not in this library"), std::string::npos)
        << e.what();
  }
  PipeHandle h(PipeLibrary{plan, "", {{"pipec_kernel_1", &fake_kernel}}}, defaults());
  EXPECT_EQ(h.fields().size(), 1u);
  EXPECT_EQ(h.compiled_kernels(), 1);
}

TEST(CapiHandle, RefusesElementsDLPackCannotCarry) {
  Plan plan = lower_text("pipeline p = range(2) | map(r => { s: \"x\" })\n", "p");
  EXPECT_NE(capi_element_problem(plan.stages.back().element).find("byte string"), std::string::npos);
  EXPECT_THROW(PipeHandle(PipeLibrary{plan, "", {}}, defaults()), std::runtime_error);
}

TEST(CapiHandle, RefusesBadOptions) {
  Plan plan = lower_text("pipeline p = range(2)\n", "p");
  pipe_options o = defaults();
  o.threads = -1;
  EXPECT_THROW(PipeHandle(PipeLibrary{plan, "", {}}, o), std::invalid_argument);
  o.threads = 5000;
  EXPECT_THROW(PipeHandle(PipeLibrary{plan, "", {}}, o), std::invalid_argument);
  o = defaults();
  o.shard_count = 4;
  o.shard_index = -1;
  EXPECT_THROW(PipeHandle(PipeLibrary{plan, "", {}}, o), std::invalid_argument);
}

}  // namespace
}  // namespace pipec
