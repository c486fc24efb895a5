// The code generators' plumbing: functions that stay on the interpreter and why, the disk cache of
// kernel objects (hits skip LLVM, corrupt files are recompiled and rewritten), the AOT object file
// and its symbols, and `pipec run` / `pipec explain` reporting.
#include <gtest/gtest.h>

#include <cstdlib>

#include <llvm/Object/ObjectFile.h>

#include "compiler/codegen/llvm/aot.h"
#include "compiler/codegen/stage_kernel.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/codegen_util.h"

namespace pipec {
namespace {

using testing::FnBuilder;
using testing::one_map_plan;
using testing::ScratchDir;
namespace fs = std::filesystem;

FnBuilder simple_fn() {
  FnBuilder b;
  int x = b.param("x", DType::F32, {8});
  int y = b.param("y", DType::F32, {8});
  b.result("z", b.op("mul", {b.op("add", {x, y}, DType::F32, {8}), y}, DType::F32, {8}));
  return b;
}

std::string why_not(const FnBuilder& b) {
  Plan p = one_map_plan(b);
  codegen::LoopNest nest;
  std::string why;
  EXPECT_FALSE(codegen::stage_loop_nest(p, 1, nest, why));
  codegen::JitOptions opts;
  opts.use_cache = false;
  codegen::JitReport rep = codegen::attach_native_kernels(p, opts);
  EXPECT_EQ(rep.compiled, 0);
  EXPECT_EQ(p.stages[1].native, nullptr);
  EXPECT_EQ(rep.stages.at(0).why_not, why);
  return why;
}

TEST(CodegenFallback, UnsupportedFunctionsStayOnTheInterpreterWithAReason) {
  {
    FnBuilder b;
    int x = b.param("x", DType::F32, {4});
    int u = b.op("argmax", {x}, DType::I64, {});
    b.result("y", b.op("add", {u, u}, DType::I64, {}));
    std::string why = why_not(b);
    EXPECT_NE(why.find("argmax"), std::string::npos) << why;
    EXPECT_NE(why.find("test.pipe:1:"), std::string::npos) << why;  // names where
  }
  {
    FnBuilder b;
    int x = b.param("x", DType::F32, {kUnknownDim});
    b.result("y", b.op("neg", {x}, DType::F32, {kUnknownDim}));
    EXPECT_NE(why_not(b).find("known shape"), std::string::npos);
  }
  {
    FnBuilder b;
    int x = b.param("x", DType::F16, {2});
    b.result("y", b.op("neg", {x}, DType::F16, {2}));
    EXPECT_NE(why_not(b).find("f16"), std::string::npos);
  }
  {
    FnBuilder b;
    int x = b.param("x", DType::F32, {3, 2});
    b.result("y", b.op("size", {x}, DType::I64, {}));
    EXPECT_NE(why_not(b).find("`size`"), std::string::npos);
  }
}

TEST(CodegenFallback, MismatchedChunkRunsTheInterpreter) {
  FnBuilder b = simple_fn();
  Plan p = one_map_plan(b);
  codegen::JitOptions opts;
  opts.use_cache = false;
  ASSERT_EQ(codegen::attach_native_kernels(p, opts).compiled, 1);
  Chunk in;
  in.rows = 2;
  Column x, y;
  x.dense = Tensor::zeros(DType::F64, {2, 8});  // not the f32 the kernel expects
  y.dense = Tensor::zeros(DType::F32, {2, 8});
  in.columns = {x, y};
  std::vector<Column> out;
  EXPECT_FALSE(run_native(p.stages[1], {"x", "y"}, in, 0, out));
  x.ragged = true;
  x.rows = {Tensor::zeros(DType::F32, {8}), Tensor::zeros(DType::F32, {8})};
  in.columns = {x, y};
  EXPECT_FALSE(run_native(p.stages[1], {"x", "y"}, in, 0, out));
}

size_t files_in(const fs::path& d) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(d)) n += e.path().extension() == ".o";
  return n;
}

TEST(CodegenCache, SecondAttachLoadsTheObjectInsteadOfCompiling) {
  ScratchDir d;
  codegen::JitOptions opts;
  opts.cache_dir = (d.path() / "cache").string();
  Plan p1 = one_map_plan(simple_fn());
  codegen::JitReport r1 = codegen::attach_native_kernels(p1, opts);
  EXPECT_EQ(r1.compiled, 1);
  EXPECT_EQ(r1.cached, 0);
  EXPECT_GT(r1.stages[0].compile_ms, 0);
  ASSERT_EQ(files_in(opts.cache_dir), 1u);
  Plan p2 = one_map_plan(simple_fn());
  codegen::JitReport r2 = codegen::attach_native_kernels(p2, opts);
  EXPECT_EQ(r2.compiled, 0);
  EXPECT_EQ(r2.cached, 1);
  EXPECT_TRUE(r2.stages[0].from_cache);
  EXPECT_EQ(r2.stages[0].compile_ms, 0);
  EXPECT_EQ(r2.summary(), "1 kernel from cache");
  // The cached kernel computes the same thing.
  testing::expect_jit_matches(simple_fn());
  Chunk in;
  in.rows = 1;
  Column x, y;
  x.dense = Tensor::empty(DType::F32, {1, 8});
  y.dense = Tensor::empty(DType::F32, {1, 8});
  for (int i = 0; i < 8; ++i) x.dense.data<float>()[i] = static_cast<float>(i), y.dense.data<float>()[i] = 2;
  in.columns = {x, y};
  std::vector<Column> out;
  ASSERT_TRUE(run_native(p2.stages[1], {"x", "y"}, in, 0, out));
  EXPECT_EQ(out[0].dense.data<float>()[3], (3.0f + 2.0f) * 2.0f);
  // A different function is a different key.
  FnBuilder other;
  int a = other.param("x", DType::F32, {8});
  other.result("z", other.op("neg", {a}, DType::F32, {8}));
  Plan p3 = one_map_plan(other);
  EXPECT_EQ(codegen::attach_native_kernels(p3, opts).compiled, 1);
  EXPECT_EQ(files_in(opts.cache_dir), 2u);
}

TEST(CodegenCache, CorruptOrTruncatedCacheFilesAreRecompiledAndRewritten) {
  ScratchDir d;
  codegen::JitOptions opts;
  opts.cache_dir = (d.path() / "cache").string();
  Plan p1 = one_map_plan(simple_fn());
  ASSERT_EQ(codegen::attach_native_kernels(p1, opts).compiled, 1);
  fs::path file = fs::directory_iterator(opts.cache_dir)->path();
  const std::string good = testing::read_all(file);
  for (int mode = 0; mode < 3; ++mode) {
    std::string bad = good;
    if (mode == 0) bad[bad.size() / 2] ^= 0x5a;  // a flipped byte in the object
    if (mode == 1) bad.resize(bad.size() / 3);   // truncated
    if (mode == 2) bad = "not a kernel object";  // garbage
    testing::write_file(file, bad);
    Plan p = one_map_plan(simple_fn());
    codegen::JitReport r = codegen::attach_native_kernels(p, opts);
    EXPECT_EQ(r.compiled, 1) << "mode " << mode;
    EXPECT_EQ(r.cached, 0) << "mode " << mode;
    ASSERT_NE(p.stages[1].native, nullptr);
    EXPECT_EQ(testing::read_all(file), good) << "mode " << mode << ": the file is rewritten";
    Plan again = one_map_plan(simple_fn());
    EXPECT_EQ(codegen::attach_native_kernels(again, opts).cached, 1) << "mode " << mode;
  }
}

TEST(CodegenAot, ObjectFileExportsOneSymbolPerCompilableStage) {
  ScratchDir d;
  Plan p = one_map_plan(simple_fn());
  // A second map that cannot be compiled (a reduction) stays without a kernel.
  FnBuilder r;
  int x = r.param("z", DType::F32, {8});
  r.result("w", r.op("argmax", {x}, DType::I64, {}));
  Stage m2;
  m2.kind = StageKind::Map;
  m2.inputs = {1};
  m2.fn = std::make_shared<ExprFunction>(r.fn);
  p.stages[1].element.fields.push_back(Field{"z", std::make_shared<Type>(Type::tensor(DType::F32, {8}))});
  p.stages.push_back(m2);
  const std::string path = (d.path() / "kernels.o").string();
  EXPECT_EQ(codegen::emit_kernels_object(p, path), 1);
  ASSERT_NE(p.stages[1].native, nullptr);
  EXPECT_EQ(p.stages[1].native->symbol, "pipec_kernel_1");
  EXPECT_EQ(p.stages[1].native->fn, nullptr);
  EXPECT_EQ(p.stages[1].native->backend, "aot");
  EXPECT_EQ(p.stages[1].native->input_fields, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.stages[2].native, nullptr);
  auto obj = llvm::object::ObjectFile::createObjectFile(path);
  ASSERT_TRUE(static_cast<bool>(obj)) << llvm::toString(obj.takeError());
  bool found = false;
  for (const auto& sym : obj->getBinary()->symbols()) {
    auto name = sym.getName();
    ASSERT_TRUE(static_cast<bool>(name));
    auto flags = sym.getFlags();
    ASSERT_TRUE(static_cast<bool>(flags));
    if (*name == "pipec_kernel_1") {
      found = true;
      EXPECT_TRUE(*flags & llvm::object::SymbolRef::SF_Global);
      EXPECT_FALSE(*flags & llvm::object::SymbolRef::SF_Undefined);
    }
    EXPECT_NE(*name, "pipec_kernel_2");
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(obj->getBinary()->isRelocatableObject());
}

TEST(CodegenCli, RunReportsKernelsAndExplainSaysWhatCompiles) {
  ScratchDir d;
  setenv("PIPEC_CACHE_DIR", (d.path() / "cache").c_str(), 1);
  testing::write_file(d / "p.pipe",
                      "pipeline p = range(100) | map(r => { y: f32(r.value) * 2.0 }) | batch(10)\n"
                      "pipeline q = range(10) | map(r => { y: argmax([r.value, r.value]) })\n");
  auto r1 =
      testing::run_pipec({"run", (d / "p.pipe").string(), "--pipeline", "p", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r1.err.find("compiled 1 kernel in"), std::string::npos) << r1.err;
  EXPECT_NE(r1.err.find("[llvm-jit]"), std::string::npos) << r1.err;
  EXPECT_NE(testing::read_all(d / "s.json").find("\"backend\": \"llvm-jit\""), std::string::npos);
  auto r2 = testing::run_pipec({"run", (d / "p.pipe").string(), "--pipeline", "p"});
  EXPECT_NE(r2.err.find("1 kernel from cache"), std::string::npos) << r2.err;
  auto r3 = testing::run_pipec({"run", (d / "p.pipe").string(), "--pipeline", "p", "--no-jit"});
  EXPECT_NE(r3.err.find("[interpreter]"), std::string::npos) << r3.err;
  EXPECT_EQ(r3.err.find("kernels "), std::string::npos) << r3.err;
  auto e = testing::run_pipec({"explain", (d / "p.pipe").string(), "--loops"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // In p the optimizer moves the map after the batch (stage #2); q's map stays at #1.
  EXPECT_NE(e.out.find("#2 map: compiled (pipec_kernel_2)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("loops map@1"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("#1 map: interpreter: "), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("`argmax`"), std::string::npos) << e.out;
  auto l = testing::run_pipec({"explain", (d / "p.pipe").string(), "--pipeline", "p", "--llvm"});
  EXPECT_NE(l.out.find("define i32 @pipec_kernel_2"), std::string::npos) << l.out;
  unsetenv("PIPEC_CACHE_DIR");
}

TEST(CodegenCli, FilterAndMapOutputsEqualTheInterpreters) {
  ScratchDir d;
  setenv("PIPEC_CACHE_DIR", (d.path() / "cache").c_str(), 1);
  testing::write_file(d / "p.pipe",
                      "pipeline p = range(1000)\n"
                      "  | map(r => { x: r.value, u: random_uniform([3], -1.0, 1.0), n: random_normal([2]) })\n"
                      "  | filter(r => r.x % 3 != 1 && r.u[0] < 0.5)\n"
                      "  | map(r => { y: f32(r.x) * 0.5 + r.u, z: sum(r.n) })\n"
                      "  | batch(7)\n");
  auto jit = testing::run_pipec({"run", (d / "p.pipe").string(), "--seed", "5", "--output", (d / "jit").string()});
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  EXPECT_EQ(jit.err.find("[interpreter]"), std::string::npos) << jit.err;  // all three bodies compiled
  auto ref =
      testing::run_pipec({"run", (d / "p.pipe").string(), "--seed", "5", "--no-jit", "--output", (d / "ref").string()});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "ref")) {
    if (!e.is_regular_file()) continue;
    ++files;
    fs::path other = d / "jit" / fs::relative(e.path(), d / "ref");
    EXPECT_EQ(testing::read_all(e.path()), testing::read_all(other)) << other;
  }
  EXPECT_GT(files, 100u);
  unsetenv("PIPEC_CACHE_DIR");
}

}  // namespace
}  // namespace pipec
