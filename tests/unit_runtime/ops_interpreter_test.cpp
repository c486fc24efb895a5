// The interpreter end to end: the chess map body on hand-made records, per-row vs row-invariant values,
// ragged columns, byte strings, empty chunks and run-time errors.
#include <cmath>

#include "ops_test_util.h"

namespace pipec {
namespace {

using namespace ops_test;

const int kPerm[24] = {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};
constexpr int64_t kNone = INT64_MIN;

Value list_of(const std::vector<double>& xs, DType dt) {
  Value v;
  v.kind = Value::List;
  v.dtype = dt;
  for (double x : xs) v.items.push_back(Value::make_int(static_cast<int64_t>(x)));
  return v;
}

Value slice_value(std::vector<int64_t> v) { return ints_value(v); }

// The body `pipec explain examples/chess/chess.pipe` prints for map@2.
ExprFunction chess_fn() {
  FnBuilder b;
  auto f64 = Type::tensor(DType::F64);
  int d = b.param("d", Type::tensor(DType::U8, {194}));
  int s = b.param("s", Type::tensor(DType::I64));
  int bits = b.op("unpack_bits", {d}, Type::tensor(DType::U8, {1552}));
  int sl = b.op("slice", {bits}, Type::tensor(DType::U8, {1536}),
                {{"starts", slice_value({0})}, {"stops", slice_value({1536})}, {"steps", slice_value({1})}});
  int rs = b.op("reshape", {sl}, Type::tensor(DType::U8, {8, 8, 24}), {{"shape", ints_value({8, 8, 24})}});
  std::vector<int64_t> perm(kPerm, kPerm + 24);
  int g = b.op("gather", {rs}, Type::tensor(DType::U8, {8, 8, 24}),
               {{"axis", Value::make_int(2)}, {"indices", ints_value(perm)}});
  int gf = b.op("cast", {g}, Type::tensor(DType::F32, {8, 8, 24}), {{"dtype", Value::make_symbol("f32")}});
  std::vector<double> signs;
  for (int k = 0; k < 24; ++k) signs.push_back((k / 6) % 2 ? -1 : 1);
  int sg = b.constant(list_of(signs, DType::F32), Type::tensor(DType::F32, {24}));
  int board = b.op("mul", {gf, sg}, Type::tensor(DType::F32, {8, 8, 24}));
  int fl = b.op("slice", {bits}, Type::tensor(DType::U8, {10}),
                {{"starts", slice_value({1536})}, {"stops", slice_value({1546})}, {"steps", slice_value({1})}});
  int flags = b.op("cast", {fl}, Type::tensor(DType::F32, {10}), {{"dtype", Value::make_symbol("f32")}});
  int s64 = b.op("cast", {s}, f64, {{"dtype", Value::make_symbol("f64")}});
  int m1 = b.op("slice", {bits}, Type::tensor(DType::U8, {1}),
                {{"starts", slice_value({1546})}, {"stops", slice_value({1547})}, {"steps", slice_value({1})}});
  int m0 = b.op("reshape", {m1}, Type::tensor(DType::U8), {{"shape", ints_value({})}});
  int m = b.op("cast", {m0}, f64, {{"dtype", Value::make_symbol("f64")}});
  int one = b.constant(Value::make_int(1), f64);
  int t16 = b.op("sub", {one, m}, f64);
  int half = b.constant(Value::make_float(0.5), f64);
  int t18 = b.op("mul", {t16, half}, f64);
  int k400 = b.constant(Value::make_int(400), f64);
  int t20 = b.op("div", {s64, k400}, f64);
  int t21 = b.op("tanh", {t20}, f64);
  int t22 = b.op("mul", {t18, t21}, f64);
  int t23 = b.op("sign", {s64}, f64);
  int t24 = b.op("mul", {m, t23}, f64);
  int half2 = b.constant(Value::make_float(0.5), f64);
  int c = b.constant(Value::make_float(0.05555555555555555), f64);
  int zero = b.constant(Value::make_int(0), f64);
  int ten = b.constant(Value::make_int(10), f64);
  int t29 = b.op("abs", {s64}, f64);
  int t30 = b.op("sub", {ten, t29}, f64);
  int t31 = b.op("max", {zero, t30}, f64);
  int t32 = b.op("mul", {c, t31}, f64);
  int t33 = b.op("add", {half2, t32}, f64);
  int t34 = b.op("mul", {t24, t33}, f64);
  int t35 = b.op("add", {t22, t34}, f64);
  int score = b.op("cast", {t35}, Type::tensor(DType::F32), {{"dtype", Value::make_symbol("f32")}});
  b.result("board", board);
  b.result("flags", flags);
  b.result("score", score);
  return b.fn;
}

struct Record {
  std::vector<uint8_t> d;
  int64_t s;
};

std::vector<Record> chess_records() {
  std::vector<Record> recs;
  uint32_t state = 2024;
  const int64_t scores[3] = {350, -3, 12};
  for (int r = 0; r < 3; ++r) {
    Record rec;
    for (int i = 0; i < 194; ++i) {
      state = state * 1664525u + 1013904223u;
      rec.d.push_back(static_cast<uint8_t>(state >> 24));
    }
    // bit 1546 (byte 193, third bit from the top) is the mate flag: off for record 0, on for 1 and 2
    if (r == 0) rec.d[193] &= static_cast<uint8_t>(~0x20);
    else rec.d[193] |= 0x20;
    rec.s = scores[r];
    recs.push_back(rec);
  }
  return recs;
}

int bit_of(const std::vector<uint8_t>& d, int b) { return (d[b / 8] >> (7 - b % 8)) & 1; }

double combined(double s, double m) {
  auto sign = [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; };
  return (1 - m) * 0.5 * std::tanh(s / 400) + m * sign(s) * (0.5 + 0.5 / 9 * std::max(0.0, 10 - std::fabs(s)));
}

void check_chess(const std::vector<Column>& out, const std::vector<Record>& recs) {
  ASSERT_EQ(out.size(), 3u);
  const Tensor& board = out[0].dense;
  const Tensor& flags = out[1].dense;
  const Tensor& score = out[2].dense;
  ASSERT_EQ(board.shape(), (Shape{3, 8, 8, 24}));
  ASSERT_EQ(flags.shape(), (Shape{3, 10}));
  ASSERT_EQ(score.shape(), (Shape{3}));
  ASSERT_EQ(board.dtype(), DType::F32);
  for (int r = 0; r < 3; ++r) {
    const auto& d = recs[r].d;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 24; ++k) {
          float want = static_cast<float>(bit_of(d, i * 192 + j * 24 + kPerm[k])) * ((k / 6) % 2 ? -1.0f : 1.0f);
          ASSERT_EQ(board.data<float>()[((r * 8 + i) * 8 + j) * 24 + k], want) << r << " " << i << " " << j << " " << k;
        }
    for (int k = 0; k < 10; ++k) EXPECT_EQ(flags.data<float>()[r * 10 + k], static_cast<float>(bit_of(d, 1536 + k)));
    double m = bit_of(d, 1546);
    EXPECT_EQ(m, r == 0 ? 0.0 : 1.0);
    EXPECT_FLOAT_EQ(score.data<float>()[r], static_cast<float>(combined(static_cast<double>(recs[r].s), m)));
  }
  // Independent spot checks of the formula: s = -3 with mate -> -(0.5 + 0.5 / 9 * 7); s = 12 -> 0.5.
  EXPECT_FLOAT_EQ(score.data<float>()[1], static_cast<float>(-(0.5 + 0.5 / 9 * 7)));
  EXPECT_FLOAT_EQ(score.data<float>()[2], 0.5f);
  EXPECT_FLOAT_EQ(score.data<float>()[0], static_cast<float>(0.5 * std::tanh(350.0 / 400)));
}

TEST(InterpChess, MapBodyOnHandMadeRecords) {
  std::vector<Record> recs = chess_records();
  Tensor d = Tensor::empty(DType::U8, {3, 194});
  std::vector<int64_t> s;
  for (int r = 0; r < 3; ++r) {
    std::memcpy(d.data<uint8_t>() + r * 194, recs[r].d.data(), 194);
    s.push_back(recs[r].s);
  }
  ExprFunction fn = chess_fn();
  EXPECT_TRUE(verify_function(fn).empty());
  check_chess(run_function(fn, {"d", "s"}, chunk(3, {dense(d), dense(make_i64({3}, s))}), {}), recs);
}

TEST(InterpChess, FixedLengthBytesColumn) {
  // The same records with `d` as byte strings (how a tf.Example bytes feature arrives).
  std::vector<Record> recs = chess_records();
  std::vector<std::string> strings;
  std::vector<int64_t> s;
  for (const Record& r : recs) {
    strings.emplace_back(r.d.begin(), r.d.end());
    s.push_back(r.s);
  }
  check_chess(run_function(chess_fn(), {"s", "d"},
                           chunk(3, {dense(make_i64({3}, s)), dense(Tensor::from_strings(strings, {3}))}), {}),
              recs);
  strings[1].pop_back();
  EXPECT_THROW(run_function(chess_fn(), {"s", "d"},
                            chunk(3, {dense(make_i64({3}, s)), dense(Tensor::from_strings(strings, {3}))}), {}),
               KernelError);
}

TEST(InterpRows, InvariantValuesBroadcastAcrossRows) {
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::F32));
  int c = b.constant(list_of({1, 2, 3}, DType::F32), Type::tensor(DType::F32, {3}));
  int cc = b.op("mul", {c, c}, Type::tensor(DType::F32, {3}));  // row-invariant
  int y = b.op("add", {x, cc}, Type::tensor(DType::F32, {3}));  // per-row scalar + invariant [3]
  int s = b.op("sum", {cc}, Type::tensor(DType::F32));
  b.result("y", y);
  b.result("cc", cc);
  b.result("s", s);
  std::vector<Column> out = run_function(b.fn, {"x"}, chunk(2, {dense(make(DType::F32, {2}, {10, 20}))}), {});
  EXPECT_EQ(out[0].dense.shape(), (Shape{2, 3}));
  expect_values(out[0].dense, {11, 14, 19, 21, 24, 29});
  EXPECT_EQ(out[1].dense.shape(), (Shape{2, 3}));
  expect_values(out[1].dense, {1, 4, 9, 1, 4, 9});
  EXPECT_EQ(out[2].dense.shape(), (Shape{2}));
  expect_values(out[2].dense, {14, 14});
}

TEST(InterpRows, PerRowBroadcastAlignsElementShapes) {
  // x: [rows, 2, 1] and w: invariant [3] -> [rows, 2, 3]; z: per-row [3] * per-row scalar
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::I32, {2, 1}));
  int k = b.param("k", Type::tensor(DType::I32));
  int w = b.constant(list_of({1, 10, 100}, DType::I32), Type::tensor(DType::I32, {3}));
  int y = b.op("mul", {x, w}, Type::tensor(DType::I32, {2, 3}));
  int kc = b.op("cast", {k}, Type::tensor(DType::F32), {{"dtype", Value::make_symbol("f32")}});
  int st = b.op("stack", {k, k}, Type::tensor(DType::I32, {2}), {{"axis", Value::make_int(0)}});
  b.result("y", y);
  b.result("kc", kc);
  b.result("st", st);
  std::vector<Column> out = run_function(
      b.fn, {"x", "k"},
      chunk(2, {dense(make(DType::I32, {2, 2, 1}, {1, 2, 3, 4})), dense(make(DType::I32, {2}, {5, 6}))}), {});
  EXPECT_EQ(out[0].dense.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(ints(out[0].dense), (std::vector<int64_t>{1, 10, 100, 2, 20, 200, 3, 30, 300, 4, 40, 400}));
  expect_values(out[1].dense, {5, 6});
  EXPECT_EQ(ints(out[2].dense), (std::vector<int64_t>{5, 5, 6, 6}));
}

TEST(InterpRows, ConcatMixesRowsAndInvariants) {
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::U8, {2}));
  int c = b.constant(list_of({7}, DType::U8), Type::tensor(DType::U8, {1}));
  int y = b.op("concat", {x, c}, Type::tensor(DType::U8, {3}), {{"axis", Value::make_int(-1)}});
  b.result("y", y);
  std::vector<Column> out = run_function(b.fn, {"x"}, chunk(2, {dense(make(DType::U8, {2, 2}, {1, 2, 3, 4}))}), {});
  EXPECT_EQ(ints(out[0].dense), (std::vector<int64_t>{1, 2, 7, 3, 4, 7}));
}

TEST(InterpRagged, RowByRowWithRaggedResults) {
  FnBuilder b;
  Type ragged_f32 = Type::tensor(DType::F32, {-1});
  int x = b.param("x", ragged_f32);
  int k = b.param("k", Type::tensor(DType::F32));
  int two = b.constant(Value::make_float(2, DType::F32), Type::tensor(DType::F32));
  int y = b.op("mul", {x, two}, ragged_f32);
  int yk = b.op("add", {y, k}, ragged_f32);  // ragged with a dense per-row operand
  int s = b.op("sum", {x}, Type::tensor(DType::F32));
  int n = b.op("size", {x}, Type::tensor(DType::I64));
  int last =
      b.op("gather", {x}, Type::tensor(DType::F32, {1}), {{"axis", Value::make_int(0)}, {"indices", ints_value({-1})}});
  int rev = b.op("slice", {x}, ragged_f32,
                 {{"starts", ints_value({kNone})}, {"stops", ints_value({kNone})}, {"steps", ints_value({-1})}});
  int pad = b.constant(list_of({0}, DType::F32), Type::tensor(DType::F32, {1}));
  int cat = b.op("concat", {x, pad}, ragged_f32, {{"axis", Value::make_int(0)}});
  b.result("yk", yk);
  b.result("s", s);
  b.result("n", n);
  b.result("last", last);
  b.result("rev", rev);
  b.result("cat", cat);
  Column xs = ragged({make(DType::F32, {2}, {1, 2}), make(DType::F32, {3}, {3, 4, 5}), make(DType::F32, {1}, {6})});
  std::vector<Column> out =
      run_function(b.fn, {"x", "k"}, chunk(3, {xs, dense(make(DType::F32, {3}, {100, 200, 300}))}), {});
  ASSERT_TRUE(out[0].ragged);
  ASSERT_EQ(out[0].rows.size(), 3u);
  expect_values(out[0].rows[0], {102, 104});
  expect_values(out[0].rows[1], {206, 208, 210});
  expect_values(out[0].rows[2], {312});
  ASSERT_FALSE(out[1].ragged);
  expect_values(out[1].dense, {3, 12, 6});
  EXPECT_EQ(ints(out[2].dense), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(out[3].dense.shape(), (Shape{3, 1}));
  expect_values(out[3].dense, {2, 5, 6});
  ASSERT_TRUE(out[4].ragged);
  expect_values(out[4].rows[1], {5, 4, 3});
  ASSERT_TRUE(out[5].ragged);
  expect_values(out[5].rows[0], {1, 2, 0});
  expect_values(out[5].rows[2], {6, 0});
}

TEST(InterpRagged, EqualShapedRowsRunDenseButStayRaggedByType) {
  FnBuilder b;
  Type t = Type::tensor(DType::I32, {-1});
  int x = b.param("x", t);
  int y = b.op("neg", {x}, t);
  b.result("y", y);
  Column xs = ragged({make(DType::I32, {2}, {1, 2}), make(DType::I32, {2}, {3, 4})});
  std::vector<Column> out = run_function(b.fn, {"x"}, chunk(2, {xs}), {});
  ASSERT_TRUE(out[0].ragged);
  ASSERT_EQ(out[0].rows.size(), 2u);
  EXPECT_EQ(ints(out[0].rows[1]), (std::vector<int64_t>{-3, -4}));
}

TEST(InterpErrors, KernelErrorNamesLocationOpAndElement) {
  FnBuilder b;
  b.loc = SpecLoc{"chess.pipe", 21, 15};
  int x = b.param("x", Type::tensor(DType::U8, {-1}));
  int r = b.op("reshape", {x}, Type::tensor(DType::U8, {2, 3}), {{"shape", ints_value({2, 3})}});
  b.result("r", r);
  Column xs = ragged({make(DType::U8, {6}, {1, 2, 3, 4, 5, 6}), make(DType::U8, {5}, {1, 2, 3, 4, 5})});
  try {
    run_function(b.fn, {"x"}, chunk(2, {xs}, 40), {});
    FAIL() << "expected a KernelError";
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "chess.pipe:21:15: reshape: element 41: cannot reshape [5] (5 elements) to [2, 3]");
    EXPECT_EQ(e.op(), "reshape");
    EXPECT_EQ(e.loc().line, 21u);
  }
  FnBuilder g;
  g.loc = SpecLoc{"f.pipe", 3, 9};
  int gx = g.param("x", Type::tensor(DType::U8, {-1}));
  int gg =
      g.op("gather", {gx}, Type::tensor(DType::U8, {1}), {{"axis", Value::make_int(0)}, {"indices", ints_value({5})}});
  g.result("g", gg);
  try {
    run_function(g.fn, {"x"}, chunk(2, {xs}), {});
    FAIL() << "expected a KernelError";
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "f.pipe:3:9: gather: element 1: index 5 is out of range for axis 0 of size 5");
  }
  // dense rows too, without an element number
  try {
    run_function(g.fn, {"x"}, chunk(1, {dense(make(DType::U8, {1, 2}, {1, 2}))}), {});
    FAIL() << "expected a KernelError";
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "f.pipe:3:9: gather: index 5 is out of range for axis 0 of size 2");
  }
  EXPECT_THROW(run_function(g.fn, {"y", "z"},
                            chunk(1, {dense(make(DType::U8, {1, 2}, {1, 2})), dense(make(DType::U8, {1}, {1}))}), {}),
               KernelError);
}

TEST(InterpBytes, SizeEqualityAndPassThrough) {
  FnBuilder b;
  int s = b.param("s", Type::tensor(DType::Bytes));
  int n = b.op("size", {s}, Type::tensor(DType::I64));
  int c = b.constant(Value::make_string("abc"), Type::tensor(DType::Bytes));
  int eq = b.op("eq", {s, c}, Type::tensor(DType::Bool));
  int ne = b.op("ne", {c, s}, Type::tensor(DType::Bool));
  b.result("s", s);
  b.result("n", n);
  b.result("eq", eq);
  b.result("keep", ne);
  Tensor strings = Tensor::from_strings({"abc", "", "hello"}, {3});
  std::vector<Column> out = run_function(b.fn, {"s"}, chunk(3, {dense(strings)}), {});
  EXPECT_TRUE(out[0].dense.equals(strings));
  EXPECT_EQ(ints(out[1].dense), (std::vector<int64_t>{3, 0, 5}));
  EXPECT_EQ(ints(out[2].dense), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(ints(out[3].dense), (std::vector<int64_t>{0, 1, 1}));
}

TEST(InterpRows, EmptyChunkAndConstantOnlyResults) {
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::F32, {4}));
  int c = b.constant(Value::make_int(3, DType::I16), Type::tensor(DType::I16, {2}));
  b.result("x", x);
  b.result("c", c);
  std::vector<Column> none = run_function(b.fn, {"x"}, chunk(0, {dense(Tensor::empty(DType::F32, {0, 4}))}), {});
  EXPECT_EQ(none[0].dense.shape(), (Shape{0, 4}));
  EXPECT_EQ(none[1].dense.shape(), (Shape{0, 2}));
  std::vector<Column> two = run_function(b.fn, {"x"}, chunk(2, {dense(Tensor::zeros(DType::F32, {2, 4}))}), {});
  EXPECT_EQ(ints(two[1].dense), (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(two[1].dense.dtype(), DType::I16);
}

}  // namespace
}  // namespace pipec
