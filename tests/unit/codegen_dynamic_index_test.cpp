// dynamic_index in the loop nests and the LLVM kernels: in-range indices give the interpreter's bits
// (every integer dtype, negative ones, inner axes, constant tables, indices computed from a reduction);
// an index out of range for any row makes the kernel return kPipecKernelIndexOutOfRange before it
// writes anything, even when no result reads the indexed value, so the runtime hands the chunk to the
// interpreter, which reports it; the CUDA emitter refuses such maps by name.
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/codegen/loop_nest.h"
#include "compiler/compile/compile.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/kernel_error.h"
#include "tests/unit/codegen_util.h"

namespace pipec {
namespace {

using testing::FnBuilder;
using testing::one_map_plan;

Value axis(int64_t a) { return Value::make_int(a); }

// A chunk of `rows` rows: each field of `b` from `fill(field, row, k)` for element k of the row.
Chunk chunk_of(const FnBuilder& b, int64_t rows,
               const std::function<int64_t(const std::string&, int64_t, int64_t)>& fill) {
  Chunk in;
  in.rows = rows;
  in.first_index = 50;
  for (const auto& [name, t] : b.fields) {
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    Tensor i64 = Tensor::empty(DType::I64, shape);
    const int64_t per_row = t.num_elements();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < per_row; ++k) i64.data<int64_t>()[r * per_row + k] = fill(name, r, k);
    Column c;
    c.dense = cast_tensor(i64, t.dtype);
    in.columns.push_back(c);
  }
  return in;
}

std::vector<std::string> names_of(const FnBuilder& b) {
  std::vector<std::string> names;
  for (const auto& [name, t] : b.fields) names.push_back(name);
  return names;
}

// Compiles `b` (it must compile) and runs its kernel on `in`: true when the kernel succeeded, and then
// its results are the interpreter's bits.
bool kernel_runs(const FnBuilder& b, const Chunk& in) {
  Plan plan = one_map_plan(b);
  codegen::JitOptions opts;
  opts.use_cache = false;
  codegen::JitReport rep = codegen::attach_native_kernels(plan, opts);
  EXPECT_TRUE(rep.stages.at(0).native) << rep.stages.at(0).why_not;
  if (!rep.stages.at(0).native) return false;
  std::vector<Column> got;
  if (!run_native(plan.stages[1], names_of(b), in, 7, got)) return false;
  EvalContext ec;
  ec.seed = 7;
  std::vector<Column> want = run_function(*plan.stages[1].fn, names_of(b), in, ec);
  EXPECT_EQ(want.size(), got.size());
  for (size_t j = 0; j < want.size() && j < got.size(); ++j)
    EXPECT_TRUE(testing::same_bits(want[j].dense, got[j].dense, b.fn.results[j].first));
  return true;
}

// The interpreter's error on `in`.
std::string interpreter_error(const FnBuilder& b, const Chunk& in) {
  try {
    EvalContext ec;
    run_function(b.fn, names_of(b), in, ec);
  } catch (const KernelError& e) {
    return e.what();
  }
  return "(no error)";
}

// y = x[i] of x: f32[5, 3] along `ax`, the index of dtype `it`.
FnBuilder index_fn(DType it, int64_t ax) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {5, 3});
  int i = b.param("i", it, {});
  b.result("y", b.op("dynamic_index", {x, i}, DType::F32, {ax == 0 ? 3 : 5}, {{"axis", axis(ax)}}));
  return b;
}

TEST(CodegenDynamicIndex, InRangeIndicesOfEveryDtypeGiveTheInterpretersBits) {
  for (DType it : {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32, DType::U64, DType::I64}) {
    for (int64_t ax : {0, 1}) {
      SCOPED_TRACE(fmt::format("{} axis {}", dtype_name(it), ax));
      const int64_t n = ax == 0 ? 5 : 3;
      FnBuilder b = index_fn(it, ax);
      // Rows walk every valid index; signed dtypes also the negative ones.
      const int64_t lo = is_signed_int(it) ? -n : 0;
      Chunk in = chunk_of(b, 2 * n, [&](const std::string& f, int64_t r, int64_t k) {
        return f == "x" ? r * 100 + k : lo + r % (n - lo);
      });
      EXPECT_TRUE(kernel_runs(b, in));
    }
  }
}

TEST(CodegenDynamicIndex, ConstantTablesComputedIndicesAndInnerAxes) {
  FnBuilder b;
  int v = b.param("v", DType::I32, {4});
  int table = b.constant(testing::int_list({10, 20, 30, 40, 50, 60}), DType::I64, {2, 3});
  // i = sum(v) - 6 computed per row; table[1, i] and v[-1 - (i mod 4)] via a cast to u16.
  int s = b.op("sum", {v}, DType::I32, {});
  int i = b.op("sub", {s, b.constant(Value::make_int(6), DType::I32, {})}, DType::I32, {});
  int row = b.op("dynamic_index", {table, b.constant(Value::make_int(1), DType::I64, {})}, DType::I64, {3},
                 {{"axis", axis(0)}});
  b.result("t", b.op("dynamic_index", {row, i}, DType::I64, {}, {{"axis", axis(0)}}));
  int j =
      b.op("cast", {b.op("mod", {i, b.constant(Value::make_int(4), DType::I32, {})}, DType::I32, {})}, DType::U16, {});
  b.result("w", b.op("dynamic_index", {v, j}, DType::I32, {}, {{"axis", axis(0)}}));
  Chunk in =
      chunk_of(b, 6, [](const std::string&, int64_t r, int64_t k) { return k == 0 ? r + 1 : 1; });  // sum 4..9: i -2..3
  // i = 3 is past the table's 3 columns: that row fails; the others alone run.
  EXPECT_FALSE(kernel_runs(b, in));
  Chunk ok = chunk_of(b, 5, [](const std::string&, int64_t r, int64_t k) { return k == 0 ? r : 1; });  // i -3..1
  EXPECT_TRUE(kernel_runs(b, ok));
}

TEST(CodegenDynamicIndex, AnIndexOutOfRangeFailsTheKernelAndTheInterpreterNamesIt) {
  FnBuilder b = index_fn(DType::I64, 0);
  Chunk in = chunk_of(b, 4, [](const std::string& f, int64_t r, int64_t k) { return f == "x" ? k : r == 2 ? 5 : r; });
  EXPECT_FALSE(kernel_runs(b, in));
  EXPECT_EQ(interpreter_error(b, in),
            "test.pipe:1:3: dynamic_index: element 52: index 5 is out of range for a dimension of size 5");
  Chunk negative = chunk_of(b, 4, [](const std::string& f, int64_t r, int64_t k) {
    return f == "x" ? k : r == 3 ? -6 : -r;
  });
  EXPECT_FALSE(kernel_runs(b, negative));
  // A u64 above i64's range is out of range, not a negative index counting from the end.
  FnBuilder u = index_fn(DType::U64, 1);
  Chunk huge = chunk_of(u, 3, [](const std::string& f, int64_t r, int64_t k) {
    return f == "x" ? k : r == 1 ? -1 : 2;
  });
  EXPECT_FALSE(kernel_runs(u, huge));
  EXPECT_EQ(
      interpreter_error(u, huge),
      "test.pipe:1:3: dynamic_index: element 51: index 18446744073709551615 is out of range for a dimension of size 3");
}

TEST(CodegenDynamicIndex, TheCheckRunsEvenWhenNoResultReadsTheValue) {
  // y = x[i][0:0]: the result is empty, so no output loop reads x[i]; the interpreter still fails.
  FnBuilder b;
  int x = b.param("x", DType::F32, {4});
  int i = b.param("i", DType::I64, {});
  b.result("k", b.param("k", DType::I64, {}));
  int picked = b.op("dynamic_index", {x, i}, DType::F32, {}, {{"axis", axis(0)}});
  int one = b.op("expand_dims", {picked}, DType::F32, {1}, {{"axis", axis(0)}});
  b.result(
      "y",
      b.op("slice", {one}, DType::F32, {0},
           {{"starts", testing::int_list({0})}, {"stops", testing::int_list({0})}, {"steps", testing::int_list({1})}}));
  Chunk in = chunk_of(b, 3, [](const std::string& f, int64_t r, int64_t) { return f == "i" && r == 1 ? 4 : 0; });
  EXPECT_NE(interpreter_error(b, in).find("index 4 is out of range"), std::string::npos);
  EXPECT_FALSE(kernel_runs(b, in));
}

TEST(CodegenDynamicIndex, ChecksAreListedAndCudaRefusesThem) {
  FnBuilder b = index_fn(DType::I32, 0);
  codegen::LoopNest nest;
  std::string why;
  ASSERT_TRUE(codegen::lower_to_loop_nest(b.fn, names_of(b), nest, why)) << why;
  ASSERT_EQ(nest.checks.size(), 1u);
  EXPECT_EQ(nest.checks[0].name, "%2 = dynamic_index at test.pipe:1:3: index in range");
  EXPECT_NE(codegen::print_loop_nest(nest).find("check %2 = dynamic_index at test.pipe:1:3: index in range = n"),
            std::string::npos);
  cuda_codegen::CudaEmitResult r = cuda_codegen::emit_cuda_map(b.fn, names_of(b), "k");
  EXPECT_FALSE(r.kernel);
  EXPECT_EQ(r.error,
            "%2 = dynamic_index at test.pipe:1:3: index in range: an index computed at run time needs a check the CUDA "
            "kernels do not make");
  // Without a run-time index there is no check.
  FnBuilder plain;
  plain.result("y", plain.op("neg", {plain.param("x", DType::F32, {3})}, DType::F32, {3}));
  ASSERT_TRUE(codegen::lower_to_loop_nest(plain.fn, names_of(plain), nest, why)) << why;
  EXPECT_TRUE(nest.checks.empty());
}

// After to(gpu) such a map gets no CUDA kernel (the reason says why) and runs on the CPU with the JIT.
TEST(CodegenDynamicIndex, AfterToGpuTheMapKeepsItsJitKernel) {
  CompileOptions o;
  o.device = DevicePolicy::Auto;
  o.cpu_kernels = CpuKernels::Jit;
  o.jit.use_cache = false;
  CompileResult r =
      compile_text("gpu.pipe", "pipeline p = range(9) | to(gpu) | map(r => { w: [1, 2, 3][r.value % 3] })\n", "p", o);
  ASSERT_TRUE(r.ok()) << r.error;
  const CompiledPipeline& p = r.pipelines.at(0);
  EXPECT_EQ(p.gpu_kernels, 0);
  bool seen = false;
  for (const Stage& s : p.plan.stages) {
    if (s.kind != StageKind::Map) continue;
    seen = true;
    ASSERT_TRUE(s.gpu);
    EXPECT_NE(s.gpu->unsupported.find("dynamic_index"), std::string::npos) << s.gpu->unsupported;
    EXPECT_NE(s.native, nullptr);
  }
  EXPECT_TRUE(seen);
}

TEST(CodegenDynamicIndex, ADimensionOfSizeZeroIsLeftToTheInterpreter) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {0, 2});
  int i = b.param("i", DType::I64, {});
  b.result("y", b.op("dynamic_index", {x, i}, DType::F32, {2}, {{"axis", axis(0)}}));
  codegen::LoopNest nest;
  std::string why;
  EXPECT_FALSE(codegen::lower_to_loop_nest(b.fn, names_of(b), nest, why));
  EXPECT_NE(why.find("dynamic_index"), std::string::npos) << why;
  EXPECT_NE(why.find("size 0"), std::string::npos) << why;
}

}  // namespace
}  // namespace pipec
