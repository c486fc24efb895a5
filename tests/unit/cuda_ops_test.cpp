// The CUDA printer op by op: the cases of codegen_op_cases.h (every op the LLVM JIT compiles, on every
// dtype it is defined for, with broadcasting, structural ops, reductions and random ops) printed as
// CUDA, compiled by NVRTC for sm_80 and sm_90, and compiled as host C++ and run on random inputs
// with edge values (NaN, +-inf, -0.0, integer min/max, zero divisors, big shift counts): the results
// must equal the interpreter's bit for bit, as the JIT's do.
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/codegen/cuda/cuda_printer.h"
#include "compiler/codegen/loop_nest.h"
#include "runtime/ops/kernel.h"
#include "tests/unit/codegen_op_cases.h"
#include "tests/unit/cuda_host_util.h"

namespace pipec {
namespace {

using testing::FnBuilder;
using testing::HostCase;

// The cases with their kernels, entries named after the cases.
std::vector<HostCase> op_kernels() {
  std::vector<HostCase> out;
  for (const testing::OpCase& c : testing::all_op_cases()) {
    Plan plan = testing::one_map_plan(c.fn);
    const Stage& s = plan.stages[1];
    std::vector<std::string> names;
    for (const Field& f : plan.stages[0].element.fields) names.push_back(f.name);
    auto r = cuda_codegen::emit_cuda_map(*s.fn, names, "pipec_" + c.name);
    EXPECT_TRUE(r.kernel) << c.name << ": " << r.error;
    if (!r.kernel) continue;
    HostCase h;
    h.what = c.name;
    h.fn = s.fn;
    h.input = plan.stages[0].element.fields;
    h.kernel = r.kernel;
    out.push_back(std::move(h));
  }
  return out;
}

TEST(CudaOps, NvrtcCompilesEveryOpCase) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  if (!nvrtc) return;
  std::vector<HostCase> cases = op_kernels();
  std::vector<const GpuKernel*> ks;
  std::vector<std::string> entries;
  for (const HostCase& c : cases) {
    ks.push_back(c.kernel.get());
    entries.push_back(c.kernel->entry);
  }
  ASSERT_GT(ks.size(), 40u);
  // One program with every case (each in a namespace of its own), and one case alone as the runtime
  // compiles it.
  testing::expect_nvrtc_compiles(*nvrtc, testing::batch_source(ks), entries, "every op case");
  testing::expect_nvrtc_compiles(*nvrtc, cases[0].kernel->source, {cases[0].kernel->entry}, cases[0].what);
}

TEST(CudaOpsHost, EveryOpCaseMatchesTheInterpreterBitForBit) {
  std::vector<HostCase> cases = op_kernels();
  testing::HostKernels host;
  for (HostCase& c : cases) {
    auto [ins, outs] = testing::kernel_dtypes(*c.fn, *c.kernel, c.input);
    c.index = host.add(*c.kernel, ins, outs);
  }
  ASSERT_TRUE(host.build());
  const std::vector<testing::OpCase> specs = testing::all_op_cases();
  ASSERT_EQ(specs.size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    std::mt19937_64 rng(specs[k].seed);
    Chunk in = testing::random_chunk(*cases[k].fn, cases[k].input, specs[k].rows, rng);
    in.first_index = 1000;  // random streams are keyed by element index and epoch
    in.epoch = 2;
    EXPECT_TRUE(testing::host_kernel_matches(cases[k], host.entry(cases[k].index), in, 42));
  }
}

// The element-wise ops straight from the interpreter's registry (runtime/ops/elementwise_*.cpp), so an
// op added there and to the loop nests is checked here without a new case: for every op and dtype the
// JIT's lowering accepts, the CUDA kernel exists and equals the interpreter on the host.
TEST(CudaOpsHost, EveryElementwiseOpTheLoopNestsLowerMatchesTheInterpreter) {
  KernelTable binary, unary;
  register_elementwise_binary(binary);
  register_elementwise_unary(unary);
  std::vector<DType> dts = testing::cast_dtypes();
  testing::HostKernels host;
  std::vector<HostCase> cases;
  int lowered = 0;
  for (const KernelTable* table : {&unary, &binary}) {
    const int arity = table == &binary ? 2 : 1;
    for (DType dt : dts) {
      FnBuilder b;
      int x = b.param("x", dt, {3, 4});
      int y = b.param("y", dt, {4});
      std::vector<std::string> names;
      for (OpKind k : all_op_kinds)
        if (table->get(k)) names.push_back(std::string(op_name(k)));
      std::sort(names.begin(), names.end());
      for (const std::string& op : names) {
        // The result dtype is what the interpreter's kernel gives (bool for comparisons and logic).
        FnBuilder probe;
        int px = probe.param("x", dt, {3, 4}), py = probe.param("y", dt, {4});
        std::vector<int> operands = arity == 2 ? std::vector<int>{px, py} : std::vector<int>{px};
        int id = probe.op(op, operands, dt, {3, 4});
        KernelArgs args{
            probe.fn.body[static_cast<size_t>(id)], {Tensor::zeros(dt, {3, 4}), Tensor::zeros(dt, {4})}, 0, 1, 0, 0, 0};
        if (arity == 1) args.in.pop_back();
        DType rt;
        try {
          rt = find_kernel(*op_from_name(op))->fn(args).dtype();
        } catch (const std::exception&) {
          continue;  // not defined for dt
        }
        probe.fn.body[static_cast<size_t>(id)].type = Type::tensor(rt, {3, 4});
        probe.result(op, id);
        codegen::LoopNest nest;
        std::string why;
        if (!codegen::lower_to_loop_nest(probe.fn, {"x", "y"}, nest, why)) continue;  // the JIT refuses it too
        ++lowered;
        b.result(op, b.op(op, arity == 2 ? std::vector<int>{x, y} : std::vector<int>{x}, rt, {3, 4}));
      }
      if (b.fn.results.empty()) continue;
      Plan plan = testing::one_map_plan(b);
      auto r = cuda_codegen::emit_cuda_map(*plan.stages[1].fn, {"x", "y"},
                                           fmt::format("pipec_ew{}_{}", arity, dtype_name(dt)));
      ASSERT_TRUE(r.kernel) << r.error;
      HostCase h{fmt::format("{}-ary ops on {}", arity, dtype_name(dt)), plan.stages[1].fn,
                 plan.stages[0].element.fields, r.kernel};
      auto [ins, outs] = testing::kernel_dtypes(*h.fn, *h.kernel, h.input);
      h.index = host.add(*h.kernel, ins, outs);
      cases.push_back(std::move(h));
    }
  }
  EXPECT_GT(lowered, 300);  // about 40 ops on up to 11 dtypes
  ASSERT_TRUE(host.build());
  std::mt19937_64 rng(31);
  for (const HostCase& c : cases) {
    Chunk in = testing::random_chunk(*c.fn, c.input, 45, rng);
    EXPECT_TRUE(testing::host_kernel_matches(c, host.entry(c.index), in, 0));
  }
}

// A Reduce whose operand does not depend on an enclosing reduction's variable is printed before that
// reduction's loop, so it runs once per element, not once per iteration.
TEST(CudaOps, InvariantReductionsAreHoistedOutOfEnclosingLoops) {
  FnBuilder b = testing::nested_reductions_case();
  Plan plan = testing::one_map_plan(b);
  auto r = cuda_codegen::emit_cuda_map(*plan.stages[1].fn, {"x", "y"}, "k");
  ASSERT_TRUE(r.kernel) << r.error;
  const std::string& src = r.kernel->source;
  // result 1 = mean(y - sum(y)): the sum's loop closes before the mean's loop opens.
  const size_t fn = src.find("result1(");
  ASSERT_NE(fn, std::string::npos);
  const size_t first_loop = src.find("for (i64 v", fn);
  const size_t first_close = src.find("  }\n", first_loop);
  const size_t second_loop = src.find("for (i64 v", first_loop + 1);
  ASSERT_NE(second_loop, std::string::npos);
  EXPECT_LT(first_close, second_loop) << src.substr(fn, 1500);
}

TEST(CudaOps, HugeConstantTablesStayOnTheCpuWithAReason) {
  FnBuilder b;
  std::vector<int64_t> big(static_cast<size_t>(cuda_codegen::kMaxCudaTableElements) + 1);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int64_t>(i * 7 % 1000);
  const int64_t n = static_cast<int64_t>(big.size());
  int x = b.param("x", DType::I32, {});
  int t = b.constant(testing::int_list(big), DType::I32, {n});
  b.result("y", b.op("add", {t, x}, DType::I32, {n}));
  auto r = cuda_codegen::emit_cuda_map(b.fn, {"x"}, "k");
  EXPECT_FALSE(r.kernel);
  EXPECT_NE(r.error.find(fmt::format("constant tables hold {} elements", n)), std::string::npos) << r.error;
}

TEST(CudaOps, NonFiniteFloatTablesAreStoredAsBits) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {});
  Value list;
  list.kind = Value::List;
  for (double v : {1.5, static_cast<double>(INFINITY), static_cast<double>(NAN), -0.0})
    list.items.push_back(Value::make_float(v));
  int t = b.constant(list, DType::F32, {4});
  b.result("y", b.op("mul", {t, x}, DType::F32, {4}));
  Plan plan = testing::one_map_plan(b);
  auto r = cuda_codegen::emit_cuda_map(*plan.stages[1].fn, {"x"}, "pipec_bits_table");
  ASSERT_TRUE(r.kernel) << r.error;
  EXPECT_NE(r.kernel->source.find("PIPEC_TABLE u32 table0[4] = {\n  0x3fc00000u, 0x7f800000u"), std::string::npos)
      << testing::kernel_body(*r.kernel);
  HostCase h{"bits_table", plan.stages[1].fn, plan.stages[0].element.fields, r.kernel};
  testing::HostKernels host;
  auto [ins, outs] = testing::kernel_dtypes(*h.fn, *h.kernel, h.input);
  h.index = host.add(*h.kernel, ins, outs);
  ASSERT_TRUE(host.build());
  std::mt19937_64 rng(1);
  EXPECT_TRUE(testing::host_kernel_matches(h, host.entry(h.index), testing::random_chunk(*h.fn, h.input, 9, rng), 0));
  if (const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail())
    testing::expect_nvrtc_compiles(*nvrtc, r.kernel->source, {"pipec_bits_table"}, "bits table");
}

}  // namespace
}  // namespace pipec
