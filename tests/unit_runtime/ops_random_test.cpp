// Random ops: values are a function of (seed, op_id, element index, epoch), so running the same rows
// as one chunk or as several chunks gives the same numbers; they follow the documented formulas.
#include "ops_test_util.h"
#include "runtime/core/philox.h"

namespace pipec {
namespace {

using namespace ops_test;

// x: i64 per row (only to carry rows); u = uniform(lo = 2, hi = 4) [3]; n = normal(mean 1, std 0.5) [2];
// k = random_int(0, 10) [4] with its own seed; b = uniform f64 [2].
ExprFunction random_fn() {
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::I64));
  int lo = b.constant(Value::make_float(2.0, DType::F32), Type::tensor(DType::F32));
  int hi = b.constant(Value::make_float(4.0, DType::F32), Type::tensor(DType::F32));
  int u = b.op("random_uniform", {lo, hi}, Type::tensor(DType::F32, {3}),
               {{"shape", ints_value({3})}, {"op_id", Value::make_int(0)}});
  int mean = b.constant(Value::make_float(1.0), Type::tensor(DType::F64));
  int sd = b.constant(Value::make_float(0.5), Type::tensor(DType::F64));
  int n = b.op("random_normal", {mean, sd}, Type::tensor(DType::F32, {2}),
               {{"shape", ints_value({2})}, {"op_id", Value::make_int(1)}});
  int l0 = b.constant(Value::make_int(0), Type::tensor(DType::I64));
  int l1 = b.constant(Value::make_int(10), Type::tensor(DType::I64));
  int k = b.op("random_int", {l0, l1}, Type::tensor(DType::I64, {4}),
               {{"shape", ints_value({4})}, {"op_id", Value::make_int(2)}, {"seed", Value::make_int(99)}});
  int d = b.op("random_uniform", {}, Type::tensor(DType::F64, {2}),
               {{"shape", ints_value({2})}, {"op_id", Value::make_int(3)}});
  int y = b.op("add", {x, x}, Type::tensor(DType::I64));
  b.result("u", u);
  b.result("n", n);
  b.result("k", k);
  b.result("d", d);
  b.result("y", y);
  return b.fn;
}

std::vector<Column> run_rows(int64_t first, int64_t rows, int64_t epoch, uint64_t seed) {
  std::vector<int64_t> xs;
  for (int64_t r = 0; r < rows; ++r) xs.push_back(first + r);
  EvalContext ctx;
  ctx.seed = seed;
  return run_function(random_fn(), {"x"}, chunk(rows, {dense(make_i64({rows}, xs))}, first, epoch), ctx);
}

TEST(OpsRandom, IndependentOfChunking) {
  std::vector<Column> whole = run_rows(100, 10, 3, 7);
  ASSERT_EQ(whole.size(), 5u);
  std::vector<std::vector<double>> parts(4);
  for (auto [first, rows] : std::vector<std::pair<int64_t, int64_t>>{{100, 3}, {103, 3}, {106, 4}}) {
    std::vector<Column> c = run_rows(first, rows, 3, 7);
    for (int k = 0; k < 4; ++k) {
      std::vector<double> v = vals(c[k].dense);
      parts[k].insert(parts[k].end(), v.begin(), v.end());
    }
  }
  for (int k = 0; k < 4; ++k) EXPECT_EQ(vals(whole[k].dense), parts[k]) << "result " << k;
  // single-row chunks too
  std::vector<Column> one = run_rows(105, 1, 3, 7);
  std::vector<double> u5 = vals(whole[0].dense);
  EXPECT_EQ(vals(one[0].dense), std::vector<double>(u5.begin() + 15, u5.begin() + 18));
}

TEST(OpsRandom, MatchesTheDocumentedFormulas) {
  std::vector<Column> c = run_rows(100, 4, 3, 7);
  EXPECT_EQ(c[0].dense.shape(), (Shape{4, 3}));
  EXPECT_EQ(c[0].dense.dtype(), DType::F32);
  for (int64_t r = 0; r < 4; ++r) {
    RandomStream su(7, 0, static_cast<uint64_t>(100 + r), 3);
    for (int j = 0; j < 3; ++j) {
      float want = 2.0f + (4.0f - 2.0f) * su.uniform_float();
      EXPECT_EQ(c[0].dense.data<float>()[r * 3 + j], want);
      EXPECT_GE(want, 2.0f);
      EXPECT_LT(want, 4.0f);
    }
    RandomStream sn(7, 1, static_cast<uint64_t>(100 + r), 3);
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(c[1].dense.data<float>()[r * 2 + j], static_cast<float>(1.0 + 0.5 * sn.normal()));
    RandomStream sk(99, 2, static_cast<uint64_t>(100 + r), 3);  // its own seed attribute
    for (int j = 0; j < 4; ++j) {
      int64_t v = c[2].dense.data<int64_t>()[r * 4 + j];
      EXPECT_EQ(v, sk.uniform_int(0, 9));
      EXPECT_GE(v, 0);
      EXPECT_LT(v, 10);
    }
    RandomStream sd(7, 3, static_cast<uint64_t>(100 + r), 3);
    for (int j = 0; j < 2; ++j) EXPECT_EQ(c[3].dense.data<double>()[r * 2 + j], sd.uniform_double());
  }
}

TEST(OpsRandom, EpochSeedAndOpChangeTheStream) {
  std::vector<Column> a = run_rows(0, 4, 0, 7);
  std::vector<Column> b = run_rows(0, 4, 1, 7);
  std::vector<Column> c = run_rows(0, 4, 0, 8);
  EXPECT_NE(vals(a[0].dense), vals(b[0].dense));
  EXPECT_NE(vals(a[0].dense), vals(c[0].dense));
  EXPECT_EQ(vals(a[2].dense), vals(c[2].dense));  // random_int has its own seed: the run seed does not matter
  EXPECT_NE(vals(a[2].dense), vals(b[2].dense));
}

TEST(OpsRandom, PerRowBoundsAndErrors) {
  // random_int with per-row bounds [lo, lo + 1): always lo.
  FnBuilder b;
  int lo = b.param("lo", Type::tensor(DType::I32));
  int one = b.constant(Value::make_int(1, DType::I32), Type::tensor(DType::I32));
  int hi = b.op("add", {lo, one}, Type::tensor(DType::I32));
  int k = b.op("random_int", {lo, hi}, Type::tensor(DType::I32, {2}),
               {{"shape", ints_value({2})}, {"op_id", Value::make_int(0)}});
  b.result("k", k);
  std::vector<Column> out = run_function(b.fn, {"lo"}, chunk(3, {dense(make(DType::I32, {3}, {-5, 0, 40}))}), {});
  EXPECT_EQ(ints(out[0].dense), (std::vector<int64_t>{-5, -5, 0, 0, 40, 40}));
  // hi <= lo is bad data
  FnBuilder e;
  int l = e.param("lo", Type::tensor(DType::I32));
  int r = e.op("random_int", {l, l}, Type::tensor(DType::I32, {1}),
               {{"shape", ints_value({1})}, {"op_id", Value::make_int(0)}});
  e.result("r", r);
  EXPECT_THROW(run_function(e.fn, {"lo"}, chunk(1, {dense(make(DType::I32, {1}, {3}))}), {}), KernelError);
}

}  // namespace
}  // namespace pipec
