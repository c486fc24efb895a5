// The byte-string kernels (strip, split, to_number) against tf.strings' behaviour, case by case (the
// strings_* conformance fixtures check the same against TensorFlow itself): whitespace is ASCII's six
// characters, split keeps empty pieces only with a separator, to_number reads what TensorFlow reads
// and names the string, its position and the element when it cannot.
#include <cmath>
#include <functional>
#include <limits>

#include "ops_test_util.h"
#include "runtime/ops/kernel_error.h"

namespace pipec {
namespace {

using namespace ops_test;

Tensor strings(std::vector<std::string> s, Shape shape) { return Tensor::from_strings(s, std::move(shape)); }
Tensor one(const std::string& s) { return Tensor::from_strings({s}, {}); }

std::vector<std::string> texts(const Tensor& t) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.emplace_back(t.str(i));
  return out;
}

using Pieces = std::vector<std::string>;

Pieces split(const std::string& s) { return texts(call("split", {one(s)}, DType::Bytes, {kUnknownDim})); }
Pieces split(const std::string& s, const std::string& sep) {
  return texts(call("split", {one(s)}, DType::Bytes, {kUnknownDim}, {{"sep", Value::make_string(sep)}}));
}

Tensor number(const std::string& s, DType dt) { return call("to_number", {one(s)}, dt); }

TEST(OpsStrings, StripRemovesAsciiWhitespaceOnlyAndKeepsTheShape) {
  Tensor got = call(
      "strip", {strings({" a b ", "\t\va\f\r\n", "", "   ", std::string("x\x00 ", 3), "\xc2\xa0y\xc2\xa0"}, {2, 3})},
      DType::Bytes, {2, 3});
  EXPECT_EQ(got.shape(), (Shape{2, 3}));
  // Inner spaces stay; a NUL is not whitespace, nor is UTF-8's no-break space.
  EXPECT_EQ(texts(got), (Pieces{"a b", "a", "", "", std::string("x\x00", 2), "\xc2\xa0y\xc2\xa0"}));
}

TEST(OpsStrings, SplitWithoutASeparatorSplitsAtRunsOfWhitespaceAndDropsEmptyPieces) {
  EXPECT_EQ(split(" a  b "), (Pieces{"a", "b"}));
  EXPECT_EQ(split("12 7\t301\n4"), (Pieces{"12", "7", "301", "4"}));
  EXPECT_EQ(split("a\vb\fc\xc2\x85"
                  "d"),
            (Pieces{"a", "b",
                    "c\xc2\x85"
                    "d"}));
  EXPECT_EQ(split(""), Pieces{});
  EXPECT_EQ(split(" \t "), Pieces{});
  // An empty separator is no separator, as in TensorFlow.
  EXPECT_EQ(split("a\tb", ""), (Pieces{"a", "b"}));
}

TEST(OpsStrings, SplitWithASeparatorKeepsEmptyPieces) {
  EXPECT_EQ(split(" a  b ", " "), (Pieces{"", "a", "", "b", ""}));
  EXPECT_EQ(split("a,,b,", ","), (Pieces{"a", "", "b", ""}));
  EXPECT_EQ(split("", ","), Pieces{""});
  EXPECT_EQ(split("a<>b<><>c", "<>"), (Pieces{"a", "b", "", "c"}));
  EXPECT_EQ(split("aaa", "aa"), (Pieces{"", "a"}));  // left to right, not overlapping
  EXPECT_EQ(split("abc", "abcd"), Pieces{"abc"});
  const Tensor t = call("split", {one("a,b")}, DType::Bytes, {kUnknownDim}, {{"sep", Value::make_string(",")}});
  EXPECT_EQ(t.shape(), (Shape{2}));
  EXPECT_EQ(error_of([] {
              call("split", {strings({"a", "b"}, {2})}, DType::Bytes, {kUnknownDim});
            }),
            "split takes one string, not [2] of them");
}

TEST(OpsStrings, ToNumberReadsFloatsAsTensorFlowDoes) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<std::pair<std::string, double>> f32 = {
      {"1", 1},        {" 12 ", 12},  {"-3", -3},     {"+4", 4},         {"1e3", 1000}, {"1.5E-3", 0.0015f},
      {"\t7\n", 7},    {"1.", 1},     {".5", 0.5},    {"0x10", 16},      {"0X1A", 26},  {"0x1.8", 1.5},
      {"0x1p3", 8},    {"inf", inf},  {"-Inf", -inf}, {"Infinity", inf}, {"nan", nan},  {"NaN", nan},
      {"nan(1)", nan}, {"1e40", inf}, {"1e-50", 0},   {"-0", -0.0},      {"0.1", 0.1f}, {"\v5\f", 5}};
  for (const auto& [s, want] : f32) {
    SCOPED_TRACE(s);
    expect_values(number(s, DType::F32), {want}, true);
  }
  expect_values(number("1e40", DType::F64), {1e40});
  expect_values(number("0.1", DType::F64), {0.1});
  expect_values(number("1.8e308", DType::F64), {inf});
  expect_values(number("4e-320", DType::F64), {4e-320});
  for (const char* bad : {"", "  ", "abc", "1e", "e5", "1.5e", "0x", "00x1", "0x-1", "1 2", "- 1", "+-1", "1,5", ".",
                          "1d", "1f", "infinit", "1_0"}) {
    SCOPED_TRACE(bad);
    EXPECT_NE(error_of([&] { number(bad, DType::F32); }).find("is not a number of type f32"), std::string::npos);
    EXPECT_NE(error_of([&] { number(bad, DType::F64); }).find("is not a number of type f64"), std::string::npos);
  }
  // An inner NUL ends nothing: the whole string must be the number.
  EXPECT_EQ(error_of([] { number(std::string("5\x00", 2), DType::F32); }), "\"5\\x00\" is not a number of type f32");
}

TEST(OpsStrings, ToNumberReadsIntegersAsTensorFlowDoesAndRefusesValuesOutOfRange) {
  EXPECT_EQ(ints(number(" -2147483648 ", DType::I32)), (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(ints(number("+2147483647", DType::I32)), (std::vector<int64_t>{INT32_MAX}));
  EXPECT_EQ(ints(number("-9223372036854775808", DType::I64)), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(ints(number("9223372036854775807", DType::I64)), (std::vector<int64_t>{INT64_MAX}));
  EXPECT_EQ(ints(number("00000000000000000000000000000000000000000042", DType::I64)), (std::vector<int64_t>{42}));
  EXPECT_EQ(ints(number("-0", DType::I32)), (std::vector<int64_t>{0}));
  EXPECT_EQ(number("7", DType::I32).dtype(), DType::I32);
  EXPECT_EQ(error_of([] { number("2147483648", DType::I32); }), "\"2147483648\" is outside the range of i32");
  EXPECT_EQ(error_of([] { number("-2147483649", DType::I32); }), "\"-2147483649\" is outside the range of i32");
  EXPECT_EQ(error_of([] { number("9223372036854775808", DType::I64); }),
            "\"9223372036854775808\" is outside the range of i64");
  // Digits past the range, then a letter: not a number at all.
  EXPECT_EQ(error_of([] { number("99999999999x", DType::I32); }), "\"99999999999x\" is not a number of type i32");
  for (const char* bad : {"", "1e3", "1.5", "1.", ".5", "0x10", "inf", "nan", "+", "-", "+-1", "1 2", "3.0"}) {
    SCOPED_TRACE(bad);
    EXPECT_NE(error_of([&] { number(bad, DType::I64); }).find("is not a number of type i64"), std::string::npos);
  }
}

TEST(OpsStrings, ToNumberKeepsTheShapeAndAnErrorNamesThePositionAndTheElement) {
  Tensor got = call("to_number", {strings({"1", "-2", " 3", "4 "}, {2, 2})}, DType::I64, {2, 2});
  EXPECT_EQ(got.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints(got), (std::vector<int64_t>{1, -2, 3, 4}));
  EXPECT_EQ(error_of([] {
              call("to_number", {strings({"1", "2", "x\"y\t", "4"}, {2, 2})}, DType::F32, {2, 2});
            }),
            "string [1, 0] \"x\\\"y\\t\" is not a number of type f32");
  // A long string is cut in the message.
  const std::string msg = error_of([] { number(std::string(100, 'z'), DType::I64); });
  EXPECT_NE(msg.find("(the first 64 of 100 bytes)"), std::string::npos) << msg;
  // Through the interpreter: the rows are elements 20.., each split and read as i64 tokens.
  FnBuilder b;
  int line = b.param("line", Type::tensor(DType::Bytes, {}));
  int tokens = b.op("split", {line}, Type::tensor(DType::Bytes, {kUnknownDim}));
  b.result("ids", b.op("to_number", {tokens}, Type::tensor(DType::I64, {kUnknownDim})));
  EvalContext ec;
  std::vector<Column> out = run_function(b.fn, {"line"}, chunk(2, {dense(strings({"12 7 301", " 4 "}, {2}))}, 20), ec);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].ragged);
  EXPECT_EQ(ints(out[0].rows.at(0)), (std::vector<int64_t>{12, 7, 301}));
  EXPECT_EQ(ints(out[0].rows.at(1)), (std::vector<int64_t>{4}));
  EXPECT_EQ(error_of([&] {
              run_function(b.fn, {"line"}, chunk(2, {dense(strings({"1 2", "3 4b"}, {2}))}, 20), ec);
            }),
            "test.pipe:1:1: to_number: element 21: string [1] \"4b\" is not a number of type i64");
}

}  // namespace
}  // namespace pipec
