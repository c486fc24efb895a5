// Specs that once broke the LLVM back end, found by differential testing: each must compile every map to
// a kernel and give the interpreter's bits.
#include <gtest/gtest.h>

#include "compiler/codegen/llvm/jit.h"
#include "tests/unit/codegen_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

// Runs the lowered plan of `spec` on the interpreter and again with every map and filter compiled by the
// JIT (each one must compile), and expects the same elements bit for bit.
void expect_kernels_match_interpreter(const std::string& spec) {
  Plan reference = testing::compiled_plan(spec);
  ASSERT_FALSE(reference.stages.empty());
  Plan jit = testing::copy_plan(reference);
  codegen::JitOptions opts;
  opts.use_cache = false;
  codegen::JitReport rep = codegen::attach_native_kernels(jit, opts);
  int compiled = 0;
  for (const auto& st : rep.stages) {
    EXPECT_TRUE(st.native) << "stage " << st.stage << ": " << st.why_not;
    compiled += st.native ? 1 : 0;
  }
  ASSERT_GT(compiled, 0);
  std::vector<Tensor> want = testing::run_tensors(reference, 7, 1);
  std::vector<Tensor> got = testing::run_tensors(jit, 7, 1);
  ASSERT_EQ(want.size(), got.size());
  ASSERT_FALSE(want.empty());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(testing::same_bits(want[i], got[i], fmt::format("tensor {}", i)));
}

// LLVM 14 rewrote the vectorized pow(2.0, f32(bool)) into ldexp(1.0, zext <8 x i1> to i32), invalid IR
// that aborted instruction selection ("Cannot select: zero_extend", exit code 134). Libm calls are now
// `nobuiltin`, so LLVM leaves them alone.
TEST(CodegenSpecRegression, PowOfTwoToABoolVectorCompiles) {
  expect_kernels_match_interpreter(
      "pipeline p = range(8)\n"
      "  | map(r => {\n"
      "      x0 = bool(unpack_bits(u8([1, 0, 3, 0, 7, 100])))\n"
      "      { x2: pow(clip(sqrt(x0), 2, 1000), ((x0 / x0) == (~random_int([48], -50, 50, seed = 587)))) }\n"
      "    })\n");
}

// The scalar form of the same rewrite, pow(2.0, float(narrow int)) -> ldexp(1.0, int), left the kernel
// calling ldexp, which the JIT does not provide ("Symbols not found: ldexpf"); and pow(x, 0.5),
// pow(10, x), pow(x, 2) and pow(x, -1) were rewritten to sqrt, exp10, x * x and 1 / x, which need not
// give libm's bits. The exponents and bases cover each rewrite, in f32 and f64, per row and constant.
TEST(CodegenSpecRegression, PowIsNeverRewrittenByLlvm) {
  expect_kernels_match_interpreter(
      "pipeline p = range(300)\n"
      "  | map(r => {\n"
      "      x = f32(r.value) * 0.37 - 30.0\n"
      "      d = f64(r.value) * 0.0123 - 1.2\n"
      "      { a: pow(2.0, f32(u8(r.value))), b: pow(2.0, f64(i16(r.value - 150))), c: pow(2.0, f32(i8([1, -2, 3, "
      "r.value]))),\n"
      "        e: pow(x, 0.5), f: pow(10.0, x * 0.01), g: pow(x, 2.0), h: pow(x, -1.0),\n"
      "        k: pow(d, 0.5), m: pow(10.0, d), n: pow(d, 2.0), q: pow(d, -1.0), s: pow(2.0, f32(r.value > 4)) }\n"
      "    })\n");
}

}  // namespace
}  // namespace pipec
