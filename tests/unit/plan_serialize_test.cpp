// Plan serialization: every plan the examples and golden tests lower to survives encode -> decode, and
// damaged blobs are refused with a message saying what is wrong.
#include <gtest/gtest.h>

#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "runtime/plan/plan_serialize.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

// Every plan that a spec under `dir` (recursively, skipping fail_*) lowers to.
std::vector<std::pair<std::string, Plan>> plans_under(const fs::path& dir) {
  std::vector<std::pair<std::string, Plan>> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".pipe" && e.path().filename().string().rfind("fail_", 0) != 0)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    CompileRequest request;
    request.path = f.string();
    request.target = CompileTarget::EveryPipeline;
    request.options = testing::lowered_only();
    CompileResult r = compile(request);
    for (CompiledPipeline& p : r.pipelines) out.emplace_back(f.string() + ":" + p.decl->name, std::move(p.plan));
  }
  return out;
}

void expect_round_trip(const std::string& what, const Plan& plan) {
  std::string blob = encode_plan(plan);
  Plan back = decode_plan(blob, what);
  EXPECT_EQ(print_plan(back), print_plan(plan)) << what;
  // print_plan shortens long constant lists, so compare the encodings too: they cover every field.
  EXPECT_EQ(encode_plan(back), blob) << what;
  EXPECT_TRUE(verify_plan(back).empty()) << what;
}

TEST(PlanSerialize, RoundTripsEveryExampleAndGoldenPlan) {
  size_t n = 0;
  for (const char* dir : {"examples", "tests/lang"}) {
    for (const auto& [what, plan] : plans_under(fs::path(PIPEC_SOURCE_DIR) / dir)) {
      expect_round_trip(what, plan);
      ++n;
    }
  }
  // The examples alone hold several pipelines and tests/lang dozens: a broken walk must not pass.
  EXPECT_GT(n, 30u);
}

Plan small_plan() {
  return testing::compiled_plan(
      "source s = tfrecord(\"d/*.tfrecord\") {\n  x: f32[3]\n  y: i64 = 5\n}\n"
      "pipeline p = s | map(r => { z: r.x * 2.0 + 0.25, w: r.y }) | batch(4)\n",
      "p");
}

TEST(PlanSerialize, KeepsNativeKernelSymbolsButNotPointers) {
  Plan plan = small_plan();
  int map_stage = -1;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].kind == StageKind::Map) map_stage = static_cast<int>(i);
  ASSERT_GE(map_stage, 0);
  auto k = std::make_shared<NativeKernel>();
  k->symbol = "pipec_kernel_1";
  k->input_fields = {0, 1};
  k->backend = "aot";
  k->fn = [](const PipecKernelArgs*) -> int32_t { return 0; };
  plan.stages[map_stage].native = k;
  Plan back = decode_plan(encode_plan(plan));
  ASSERT_TRUE(back.stages[map_stage].native);
  EXPECT_EQ(back.stages[map_stage].native->symbol, "pipec_kernel_1");
  EXPECT_EQ(back.stages[map_stage].native->input_fields, (std::vector<int>{0, 1}));
  EXPECT_EQ(back.stages[map_stage].native->backend, "aot");
  EXPECT_EQ(back.stages[map_stage].native->fn, nullptr);
  // Exact float constants: 0.25 and friends must not go through text.
  EXPECT_EQ(encode_plan(back), encode_plan(plan));
}

std::string decode_error(std::string_view blob) {
  try {
    decode_plan(blob, "lib.so");
  } catch (const PlanDecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(PlanSerialize, RefusesDamagedBlobs) {
  std::string blob = encode_plan(small_plan());
  EXPECT_NE(decode_error("hello").find("lib.so: not a pipec plan"), std::string::npos);
  EXPECT_NE(decode_error(blob.substr(0, blob.size() - 9)).find("truncated plan"), std::string::npos);
  EXPECT_NE(decode_error(blob.substr(0, 12)).find("truncated plan"), std::string::npos);
  std::string flipped = blob;
  flipped[40] ^= 0x20;
  EXPECT_NE(decode_error(flipped).find("CRC32 mismatch"), std::string::npos);
  std::string other_version = blob;
  other_version[8] = 99;
  EXPECT_NE(decode_error(other_version).find("version 99 is not supported"), std::string::npos);
  // Every strict prefix fails cleanly (never a crash or a garbage plan).
  for (size_t n = 0; n < blob.size(); n += 7) EXPECT_FALSE(decode_error(blob.substr(0, n)).empty()) << n;
}

TEST(PlanSerialize, LayoutMismatchNamesTheOffset) {
  // A payload with a valid frame but a wrong record tag: the decoder says where and what it expected.
  std::string blob = encode_plan(small_plan());
  size_t stage_tag = 20 + 8 + small_plan().name.size() + 8;  // header, name, stage count
  ASSERT_EQ(blob[stage_tag], 'S');
  blob[stage_tag] = 'Q';
  // Recompute the CRC so only the layout check can catch it.
  std::string body = blob.substr(0, blob.size() - 4);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
  for (int i = 0; i < 4; ++i) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  std::string e = decode_error(body);
  EXPECT_NE(e.find("payload offset"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a stage record"), std::string::npos) << e;
}

// `blob` with the length-prefixed string `from` replaced by `to` (same length) and the CRC made right
// again, so only the decoder's own checks can refuse it.
std::string renamed(std::string blob, const std::string& from, const std::string& to) {
  std::string prefix(8, '\0');
  prefix[0] = static_cast<char>(from.size());
  size_t at = blob.find(prefix + from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return blob;
  blob.replace(at + 8, from.size(), to);
  std::string body = blob.substr(0, blob.size() - 4);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
  for (int i = 0; i < 4; ++i) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return body;
}

// Ops and stages travel by name (runtime/plan/ops.def, stages.def): a name the table lacks is refused.
TEST(PlanSerialize, UnknownOpOrStageNamesAreRefused) {
  const std::string blob = encode_plan(small_plan());
  std::string e = decode_error(renamed(blob, "mul", "mux"));
  EXPECT_NE(e.find("unknown instruction op `mux`"), std::string::npos) << e;
  EXPECT_NE(e.find("payload offset"), std::string::npos) << e;
  e = decode_error(renamed(blob, "batch", "batcx"));
  EXPECT_NE(e.find("unknown stage `batcx`"), std::string::npos) << e;
  // The same blob with the names intact decodes.
  EXPECT_EQ(decode_error(renamed(blob, "mul", "mul")), "");
}

// Corruption that keeps a valid frame (the CRC recomputed) must still give an error or a plan the
// verifier can judge, never a crash, a hang or a huge allocation.
TEST(PlanSerialize, MutatedPayloadsFailCleanly) {
  std::string blob = encode_plan(small_plan());
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto rnd = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string m = blob;
    size_t at = 20 + rnd() % (blob.size() - 24);
    int nbytes = 1 + static_cast<int>(rnd() % 3);
    for (int k = 0; k < nbytes && at + k < m.size() - 4; ++k) m[at + k] = static_cast<char>(rnd());
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(m.data()), static_cast<uInt>(m.size() - 4));
    for (int i = 0; i < 4; ++i) m[m.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    try {
      Plan p = decode_plan(m, "mutated");
      (void)verify_plan(p);
    } catch (const PlanDecodeError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);  // most mutations break the layout and are named as such
}

}  // namespace
}  // namespace pipec
