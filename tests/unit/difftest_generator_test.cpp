// The difftest generator draws indices and slice bounds computed at run time (tests/difftest/
// expr_generator.cpp, shape ops 11 and 12), and the specs holding them pass the checker, so the
// difftest compares them across every variant (interpreter, JIT, built library, chunkings).
#include <gtest/gtest.h>

#include <regex>

#include "compiler/compile/compile.h"
#include "tests/difftest/spec_generator.h"

namespace pipec {
namespace {

TEST(DifftestGenerator, DrawsRunTimeIndicesAndSlicesThatTheCheckerAccepts) {
  // x[..., i64((i64(r.s) % 6) - 3)] and x[((i64(r.s) % 13) - 6):...] as the generator writes them.
  const std::regex run_time_index(R"(\[(:, )*(i64|i32|i8|u8|u64)\(\(?i64\()");
  const std::regex run_time_slice(R"((\[|:)-?\(\(?i64\()");
  int indices = 0, slices = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const difftest::GeneratedCase c = difftest::generate_case(seed);
    const bool index = std::regex_search(c.spec, run_time_index), slice = std::regex_search(c.spec, run_time_slice);
    if (!index && !slice) continue;
    indices += index;
    slices += slice;
    CompileRequest req;
    req.path = "case.pipe";
    req.text = c.spec;
    req.target = CompileTarget::CheckOnly;
    CompileResult r = compile(req);
    std::ostringstream diags;
    r.program->diags.print(diags, false);
    EXPECT_FALSE(r.program->diags.has_errors()) << "seed " << seed << ":\n" << c.spec << diags.str();
  }
  EXPECT_GE(indices, 10);
  EXPECT_GE(slices, 10);
}

}  // namespace
}  // namespace pipec
