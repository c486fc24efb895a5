// Lowering bugs found while building the differential tests, each pinned by running the pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "runtime/exec/pipeline_run.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

// Checks and runs pipeline `name` of `text`; returns every element's field `field`.
std::vector<Tensor> run_field(const std::string& text, const std::string& name, const std::string& field) {
  Plan plan = testing::compiled_plan(text, name, testing::lowered_only(), "regression.pipe");
  if (plan.stages.empty()) return {};
  const auto& fields = plan.stages.back().element.fields;
  size_t k = 0;
  while (k < fields.size() && fields[k].name != field) ++k;
  EXPECT_LT(k, fields.size());
  RunOptions ro;
  ro.threads = 1;
  PipelineRun run(plan, ro);
  std::vector<Tensor> out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r) out.push_back(column_row(c.columns[k], r));
  return out;
}

std::vector<double> as_doubles(const std::vector<Tensor>& ts) {
  std::vector<double> v;
  for (const Tensor& t : ts)
    for (int64_t i = 0; i < t.num_elements(); ++i)
      v.push_back(t.dtype() == DType::F32 ? t.data<float>()[i] : static_cast<double>(t.data<int64_t>()[i]));
  return v;
}

// `x[-1]` on a dimension whose size is only known at run time (a batch without drop_remainder) is the
// last row, not an empty slice.
TEST(LowerRegression, NegativeIndexOnUnknownDimension) {
  auto last = run_field("pipeline p = range(10) | batch(4) | map(r => { last: r.value[-1], first: r.value[0] })\n", "p",
                        "last");
  EXPECT_EQ(as_doubles(last), (std::vector<double>{3, 7, 9}));
  auto second_last = run_field("pipeline p = range(10) | batch(4) | map(r => { x: r.value[-2] })\n", "p", "x");
  EXPECT_EQ(as_doubles(second_last), (std::vector<double>{2, 6, 8}));
}

// `random_uniform(shape, hi = 5.0)` gives only `hi`: `lo` keeps its default 0.0 (it was read as lo = 5).
TEST(LowerRegression, RandomUniformWithOnlyHi) {
  const char* spec =
      "pipeline a = range(20) | map(r => { x: random_uniform([8], hi = 5.0, seed = 3) })\n"
      "pipeline b = range(20) | map(r => { x: random_uniform([8], 0.0, 5.0, seed = 3) })\n";
  auto a = as_doubles(run_field(spec, "a", "x"));
  auto b = as_doubles(run_field(spec, "b", "x"));
  ASSERT_EQ(a.size(), 160u);
  EXPECT_EQ(a, b);
  double lo = *std::min_element(a.begin(), a.end()), hi = *std::max_element(a.begin(), a.end());
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(lo, 1.0);  // 160 draws from [0, 5): one below 1 is all but certain, and impossible if lo were 5
  EXPECT_LT(hi, 5.0);
}

// `random_normal(shape, std = 3.0)` keeps mean 0.0.
TEST(LowerRegression, RandomNormalWithOnlyStd) {
  const char* spec =
      "pipeline a = range(20) | map(r => { x: random_normal([8], std = 3.0, seed = 4) })\n"
      "pipeline b = range(20) | map(r => { x: random_normal([8], 0.0, 3.0, seed = 4) })\n"
      "pipeline c = range(20) | map(r => { x: random_normal([8], seed = 4) })\n";
  auto a = as_doubles(run_field(spec, "a", "x"));
  auto b = as_doubles(run_field(spec, "b", "x"));
  auto c = as_doubles(run_field(spec, "c", "x"));
  ASSERT_EQ(a.size(), 160u);
  EXPECT_EQ(a, b);
  // Same stream, three times the spread: a = 3 * c exactly up to float rounding.
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], 3.0 * c[i], 1e-5 * (1 + std::abs(a[i])));
}

}  // namespace
}  // namespace pipec
