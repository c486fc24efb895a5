// ExampleParser on hand-built Examples: layouts, encodings, defaults, protobuf merge rules, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/example_parser.h"
#include "runtime/io/example_writer.h"
#include "tests/unit_runtime/protobuf_encoding.h"

namespace pipec {
namespace {

using K = FeatureKind;

// ---- hand encoding, independent of ExampleWriter ----

using testing::field;
using testing::varint;
std::string entry(std::string_view name, std::string_view feature) {
  return field(1, field(1, name) + field(2, feature));
}
std::string example(const std::string& entries) { return field(1, entries); }

std::vector<ParsedColumn> parse(const std::vector<FeatureSpec>& specs, const std::vector<std::string>& records) {
  ExampleParser parser(specs);
  std::vector<std::string_view> views(records.begin(), records.end());
  std::vector<ParsedColumn> out;
  parser.parse_batch(views, out);
  return out;
}

template <class Fn>
DataError expect_error(Fn&& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a DataError";
  return DataError(DataError::Kind::Io, "none");
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

TEST(ExampleParser, HandEncodedBytesMatchTheWriter) {
  // Example{features{feature{key:"a" value{int64_list{value:[1,2]}}}}}, byte by byte.
  const std::string expected(
      "\x0a\x0d\x0a\x0b\x0a\x01"
      "a"
      "\x12\x06\x1a\x04\x0a\x02\x01\x02",
      15);
  ExampleWriter w;
  w.add_int64("a", {1, 2});
  EXPECT_EQ(w.serialize(), expected);
  auto cols = parse({FeatureSpec::fixed("a", K::Int64, {2})}, {expected});
  EXPECT_EQ(values_of<int64_t>(cols[0].values), (std::vector<int64_t>{1, 2}));
}

TEST(ExampleParser, ScalarFixedAndVariableLayouts) {
  ExampleWriter w;
  std::vector<std::string> recs;
  for (int i = 0; i < 3; ++i) {
    w.clear();
    w.add_int64("id", {i});
    w.add_float("xy", {float(i), float(i) + 0.5f});
    std::vector<int64_t> tags(static_cast<size_t>(i), 7 * i);
    w.add_int64("tags", tags);
    w.add_bytes("name", {"n" + std::to_string(i)});
    std::vector<std::string_view> words{"w", "ww", "www"};
    w.add_bytes("words", std::span<const std::string_view>(words.data(), static_cast<size_t>(i)));
    w.add_float("unused", {1, 2, 3});
    recs.push_back(w.serialize());
  }
  auto cols = parse({FeatureSpec::scalar("id", K::Int64), FeatureSpec::fixed("xy", K::Float, {2}),
                     FeatureSpec::var_len("tags", K::Int64), FeatureSpec::scalar("name", K::Bytes),
                     FeatureSpec::var_len("words", K::Bytes)},
                    recs);
  ASSERT_EQ(cols.size(), 5u);

  EXPECT_FALSE(cols[0].ragged);
  EXPECT_EQ(cols[0].values.dtype(), DType::I64);
  EXPECT_EQ(cols[0].values.shape(), (Shape{3}));
  EXPECT_EQ(values_of<int64_t>(cols[0].values), (std::vector<int64_t>{0, 1, 2}));

  EXPECT_EQ(cols[1].values.dtype(), DType::F32);
  EXPECT_EQ(cols[1].values.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(cols[1].values), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));

  EXPECT_TRUE(cols[2].ragged);
  EXPECT_EQ(values_of<int64_t>(cols[2].values), (std::vector<int64_t>{7, 14, 14}));
  EXPECT_EQ(cols[2].row_splits.dtype(), DType::I64);
  EXPECT_EQ(values_of<int64_t>(cols[2].row_splits), (std::vector<int64_t>{0, 0, 1, 3}));

  EXPECT_EQ(cols[3].values.dtype(), DType::Bytes);
  EXPECT_EQ(cols[3].values.shape(), (Shape{3}));
  EXPECT_EQ(cols[3].values.str(2), "n2");

  EXPECT_TRUE(cols[4].ragged);
  EXPECT_EQ(cols[4].values.shape(), (Shape{3}));
  EXPECT_EQ(cols[4].values.str(0), "w");
  EXPECT_EQ(cols[4].values.str(2), "ww");
  EXPECT_EQ(values_of<int64_t>(cols[4].row_splits), (std::vector<int64_t>{0, 0, 1, 3}));
}

TEST(ExampleParser, PackedAndUnpackedEncodingsAgree) {
  std::vector<int64_t> ints{0,
                            1,
                            -1,
                            127,
                            128,
                            300,
                            std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(),
                            -1234567890123};
  std::vector<float> floats{
      0.f, -0.f, 1.5f, -3.25e10f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
      7.f, 8.f,  9.f};
  std::vector<std::string> recs;
  for (bool packed : {true, false}) {
    ExampleWriter w;
    w.add_int64("i", ints, packed).add_float("f", floats, packed);
    recs.push_back(w.serialize());
  }
  EXPECT_NE(recs[0], recs[1]);
  for (bool fixed : {true, false}) {
    SCOPED_TRACE(fixed ? "fixed" : "variable");
    auto cols = parse({fixed ? FeatureSpec::fixed("i", K::Int64, {9}) : FeatureSpec::var_len("i", K::Int64),
                       fixed ? FeatureSpec::fixed("f", K::Float, {3, 3}) : FeatureSpec::var_len("f", K::Float)},
                      recs);
    std::vector<int64_t> want_i = ints;
    want_i.insert(want_i.end(), ints.begin(), ints.end());
    EXPECT_EQ(values_of<int64_t>(cols[0].values), want_i);
    std::vector<float> got_f = values_of<float>(cols[1].values);
    ASSERT_EQ(got_f.size(), 18u);
    for (size_t k = 0; k < 18; ++k) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got_f[k]), std::bit_cast<uint32_t>(floats[k % 9]))
          << k;  // -0 and denormals kept
    }
    if (fixed) {
      EXPECT_EQ(cols[1].values.shape(), (Shape{2, 3, 3}));
    }
  }
}

TEST(ExampleParser, NaNSurvives) {
  ExampleWriter w;
  w.add_float("f", {std::numeric_limits<float>::quiet_NaN()});
  auto cols = parse({FeatureSpec::scalar("f", K::Float)}, {w.serialize()});
  EXPECT_TRUE(std::isnan(cols[0].values.data<float>()[0]));
}

TEST(ExampleParser, FixedByteLengthGivesU8) {
  // The chess pipeline's shape: a 194-byte board `d` and an int64 score `s`.
  std::vector<std::string> recs;
  ExampleWriter w;
  for (int i = 0; i < 50; ++i) {
    std::string board(194, '\0');
    for (size_t k = 0; k < board.size(); ++k) board[k] = static_cast<char>((i * 31 + k) & 0xff);
    w.clear();
    w.add_bytes("d", {board}).add_int64("s", {i - 25});
    recs.push_back(w.serialize());
  }
  auto cols = parse({FeatureSpec::fixed_bytes("d", 194), FeatureSpec::scalar("s", K::Int64)}, recs);
  EXPECT_EQ(cols[0].values.dtype(), DType::U8);
  EXPECT_EQ(cols[0].values.shape(), (Shape{50, 194}));
  const uint8_t* d = cols[0].values.data<uint8_t>();
  for (int i = 0; i < 50; ++i)
    for (int k = 0; k < 194; ++k) ASSERT_EQ(d[i * 194 + k], static_cast<uint8_t>((i * 31 + k) & 0xff));
  EXPECT_EQ(cols[1].values.data<int64_t>()[49], 24);

  // Several fixed-length values per record: U8 [batch, 2, 4].
  w.clear();
  w.add_bytes("p", {"abcd", "efgh"});
  auto two = parse({FeatureSpec::fixed_bytes("p", 4, {2})}, {w.serialize()});
  EXPECT_EQ(two[0].values.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(two[0].values.raw()), 8), "abcdefgh");
}

TEST(ExampleParser, FixedByteLengthMismatchIsAnError) {
  ExampleWriter w;
  w.add_bytes("d", {std::string(193, 'x')});
  DataError e = expect_error([&] { parse({FeatureSpec::fixed_bytes("d", 194)}, {w.serialize()}); });
  EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
  EXPECT_STREQ(e.what(), "record 0: feature 'd' has a value of 193 bytes, expected 194");
}

TEST(ExampleParser, MissingFeature) {
  ExampleWriter w;
  std::vector<std::string> recs;
  for (int i = 0; i < 20; ++i) {
    w.clear();
    if (i != 17) w.add_int64("s", {i});
    w.add_int64("other", {1});
    recs.push_back(w.serialize());
  }
  DataError e = expect_error([&] { parse({FeatureSpec::scalar("s", K::Int64)}, recs); });
  EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
  EXPECT_STREQ(e.what(), "record 17: feature 's' is missing and has no default");
  EXPECT_EQ(e.location().record, 17);
  EXPECT_EQ(e.reason(), "feature 's' is missing and has no default");

  auto cols = parse({FeatureSpec::scalar("s", K::Int64).with_default(std::vector<int64_t>{-1})}, recs);
  EXPECT_EQ(cols[0].values.data<int64_t>()[16], 16);
  EXPECT_EQ(cols[0].values.data<int64_t>()[17], -1);

  // Variable length: the default is the whole row (empty here, like tf.io.VarLenFeature).
  auto var = parse({FeatureSpec::var_len("s", K::Int64).with_default(std::vector<int64_t>{})}, recs);
  EXPECT_EQ(var[0].row_splits.data<int64_t>()[17], 17);
  EXPECT_EQ(var[0].row_splits.data<int64_t>()[18], 17);
  EXPECT_THROW(parse({FeatureSpec::var_len("s", K::Int64)}, recs), DataError);
}

TEST(ExampleParser, DefaultsFillShapes) {
  ExampleWriter w;
  w.add_int64("present", {5});
  std::string rec = w.serialize();
  auto cols = parse({FeatureSpec::fixed("f", K::Float, {3}).with_default(std::vector<float>{2.5f}),
                     FeatureSpec::fixed("g", K::Float, {2}).with_default(std::vector<float>{1, 2}),
                     FeatureSpec::fixed("b", K::Bytes, {2}).with_default(std::vector<std::string>{"x", "yz"}),
                     FeatureSpec::fixed_bytes("u", 3).with_default(std::vector<std::string>{"abc"}),
                     FeatureSpec::var_len("v", K::Bytes).with_default(std::vector<std::string>{"p", "q"})},
                    {rec, rec});
  EXPECT_EQ(values_of<float>(cols[0].values), (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(values_of<float>(cols[1].values), (std::vector<float>{1, 2, 1, 2}));
  EXPECT_EQ(cols[2].values.shape(), (Shape{2, 2}));
  EXPECT_EQ(cols[2].values.str(3), "yz");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(cols[3].values.raw()), 6), "abcabc");
  EXPECT_EQ(cols[4].values.num_elements(), 4);
  EXPECT_EQ(values_of<int64_t>(cols[4].row_splits), (std::vector<int64_t>{0, 2, 4}));
}

TEST(ExampleParser, EmptyFeatureWithNoKind) {
  ExampleWriter w;
  w.add_empty("tract").add_int64("n", {});
  std::string rec = w.serialize();
  // Fixed shape: counts as missing.
  DataError e = expect_error([&] { parse({FeatureSpec::scalar("tract", K::Int64)}, {rec}); });
  EXPECT_NE(e.reason().find("feature 'tract' is missing"), std::string::npos) << e.what();
  auto d = parse({FeatureSpec::scalar("tract", K::Int64).with_default(std::vector<int64_t>{0})}, {rec});
  EXPECT_EQ(d[0].values.data<int64_t>()[0], 0);
  // Variable length: an empty row, whatever the spec's kind.
  for (K k : {K::Int64, K::Float, K::Bytes}) {
    auto v = parse({FeatureSpec::var_len("tract", k)}, {rec, rec});
    EXPECT_EQ(v[0].values.num_elements(), 0);
    EXPECT_EQ(values_of<int64_t>(v[0].row_splits), (std::vector<int64_t>{0, 0, 0}));
  }
  // An int64_list with no values: empty row for variable length, "0 values" for fixed.
  auto n = parse({FeatureSpec::var_len("n", K::Int64)}, {rec});
  EXPECT_EQ(n[0].values.num_elements(), 0);
  DataError e2 = expect_error([&] { parse({FeatureSpec::scalar("n", K::Int64)}, {rec}); });
  EXPECT_EQ(e2.reason(), "feature 'n' has 0 values, expected 1");
  // A list that is present but empty is an error even with a default, as in tf.io.parse_example
  // (fixture tests/conformance/fixtures/parse_error_empty_list_with_default).
  DataError e3 =
      expect_error([&] { parse({FeatureSpec::scalar("n", K::Int64).with_default(std::vector<int64_t>{9})}, {rec}); });
  EXPECT_EQ(e3.reason(), "feature 'n' has 0 values, expected 1");
}

TEST(ExampleParser, WrongKind) {
  ExampleWriter w;
  w.add_bytes("s", {"text"});
  std::string bad = w.serialize();
  w.clear();
  w.add_int64("s", {1});
  std::string good = w.serialize();
  DataError e = expect_error([&] { parse({FeatureSpec::scalar("s", K::Int64)}, {good, good, bad}); });
  EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
  EXPECT_STREQ(e.what(), "record 2: feature 's' is bytes_list but the spec says int64");
  DataError e2 = expect_error([&] { parse({FeatureSpec::var_len("s", K::Float)}, {good}); });
  EXPECT_EQ(e2.reason(), "feature 's' is int64_list but the spec says float");
}

TEST(ExampleParser, WrongLength) {
  ExampleWriter w;
  w.add_float("x", {1, 2, 3, 4, 5, 6, 7});
  std::string seven = w.serialize();
  DataError e = expect_error([&] { parse({FeatureSpec::fixed("x", K::Float, {10})}, {seven}); });
  EXPECT_STREQ(e.what(), "record 0: feature 'x' has 7 values, expected 10");
  // Too many values, of each kind (the extra values must not be written past the row).
  DataError e2 = expect_error([&] { parse({FeatureSpec::fixed("x", K::Float, {2})}, {seven, seven}); });
  EXPECT_EQ(e2.reason(), "feature 'x' has 7 values, expected 2");
  w.clear();
  w.add_int64("i", {1, 2, 3}, false).add_bytes("b", {"a", "b", "c"});
  std::string three = w.serialize();
  EXPECT_EQ(expect_error([&] { parse({FeatureSpec::scalar("i", K::Int64)}, {three}); }).reason(),
            "feature 'i' has 3 values, expected 1");
  EXPECT_EQ(expect_error([&] { parse({FeatureSpec::fixed("b", K::Bytes, {2})}, {three}); }).reason(),
            "feature 'b' has 3 values, expected 2");
  EXPECT_EQ(expect_error([&] { parse({FeatureSpec::fixed_bytes("b", 1, {4})}, {three}); }).reason(),
            "feature 'b' has 3 values, expected 4");
}

TEST(ExampleParser, ProtobufMergeRules) {
  // A key given twice: the last map entry wins.
  std::string rec = example(entry("k", field(3, field(1, varint(1)))) + entry("k", field(3, field(1, varint(2)))));
  EXPECT_EQ(parse({FeatureSpec::scalar("k", K::Int64)}, {rec})[0].values.data<int64_t>()[0], 2);
  // Example.features twice: merged.
  std::string two =
      field(1, entry("a", field(3, field(1, varint(1))))) + field(1, entry("b", field(3, field(1, varint(2)))));
  auto cols = parse({FeatureSpec::scalar("a", K::Int64), FeatureSpec::scalar("b", K::Int64)}, {two});
  EXPECT_EQ(cols[1].values.data<int64_t>()[0], 2);
  // The same list twice in one Feature: the lists concatenate.
  std::string feature = field(3, field(1, varint(1) + varint(2))) + field(3, field(1, varint(3)));
  auto merged = parse({FeatureSpec::var_len("m", K::Int64)}, {example(entry("m", feature))});
  EXPECT_EQ(values_of<int64_t>(merged[0].values), (std::vector<int64_t>{1, 2, 3}));
  // Two kinds: the last one set wins (a oneof).
  std::string flip = field(3, field(1, varint(1))) + field(2, field(1, std::string("\0\0\x80\x3f", 4)));
  auto f = parse({FeatureSpec::scalar("m", K::Float)}, {example(entry("m", flip))});
  EXPECT_EQ(f[0].values.data<float>()[0], 1.0f);
  std::string flop = flip + field(3, field(1, varint(5)));
  auto i = parse({FeatureSpec::scalar("m", K::Int64)}, {example(entry("m", flop))});
  EXPECT_EQ(i[0].values.data<int64_t>()[0], 5);
  // Value before key inside the map entry.
  std::string swapped = field(1, field(2, field(3, field(1, varint(8)))) + field(1, "z"));
  EXPECT_EQ(parse({FeatureSpec::scalar("z", K::Int64)}, {example(swapped)})[0].values.data<int64_t>()[0], 8);
}

TEST(ExampleParser, UnknownFieldsAreSkipped) {
  std::string unknown_varint = varint(5 << 3 | 0) + varint(300);
  std::string unknown_fixed64 = varint(6 << 3 | 1) + std::string(8, '\x7f');
  std::string unknown_fixed32 = varint(7 << 3 | 5) + std::string(4, '\x01');
  std::string list = unknown_varint + field(1, varint(42)) + unknown_fixed32;
  std::string feature = unknown_fixed64 + field(3, list) + field(9, "junk");
  std::string rec = unknown_varint + example(entry("x", feature) + unknown_fixed32) + field(2, "feature_lists");
  auto cols = parse({FeatureSpec::scalar("x", K::Int64)}, {rec});
  EXPECT_EQ(cols[0].values.data<int64_t>()[0], 42);
}

TEST(ExampleParser, ManyFeaturesUseTheHashTable) {
  ExampleWriter w;
  std::vector<FeatureSpec> specs;
  for (int i = 0; i < 100; ++i) {
    w.add_int64("feature/" + std::to_string(i), {i * i});
    if (i % 3 == 0) specs.push_back(FeatureSpec::scalar("feature/" + std::to_string(i), K::Int64));
  }
  ExampleParser parser(specs);
  EXPECT_EQ(parser.find("feature/99"), 33);
  EXPECT_EQ(parser.find("feature/98"), -1);
  std::string rec = w.serialize();
  std::vector<std::string_view> views{rec};
  std::vector<ParsedColumn> out;
  parser.parse_batch(views, out);
  for (size_t k = 0; k < specs.size(); ++k) EXPECT_EQ(out[k].values.data<int64_t>()[0], int64_t(9 * k * k));
}

TEST(ExampleParser, EmptyBatch) {
  auto cols = parse(
      {FeatureSpec::fixed("a", K::Float, {4}), FeatureSpec::var_len("b", K::Bytes), FeatureSpec::fixed_bytes("c", 8)},
      {});
  EXPECT_EQ(cols[0].values.shape(), (Shape{0, 4}));
  EXPECT_EQ(values_of<int64_t>(cols[1].row_splits), std::vector<int64_t>{0});
  EXPECT_EQ(cols[2].values.shape(), (Shape{0, 8}));
}

TEST(ExampleParser, OutputVectorIsReusable) {
  ExampleParser parser({FeatureSpec::var_len("v", K::Int64)});
  ExampleWriter w;
  w.add_int64("v", {1, 2});
  std::string rec = w.serialize();
  std::vector<ParsedColumn> out;
  std::vector<std::string_view> one{rec}, three{rec, rec, rec};
  parser.parse_batch(three, out);
  parser.parse_batch(one, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_of<int64_t>(out[0].row_splits), (std::vector<int64_t>{0, 2}));
}

TEST(ExampleParser, MalformedProtobufIsDataLossNeverACrash) {
  ExampleWriter w;
  w.add_int64("i", {1, 300, -5}).add_float("f", {1.5f, 2.5f}).add_bytes("b", {"hello", "world"});
  w.add_int64("skipped", {7, 8, 9});
  const std::string good = w.serialize();
  std::vector<FeatureSpec> specs{FeatureSpec::var_len("i", K::Int64), FeatureSpec::var_len("f", K::Float),
                                 FeatureSpec::var_len("b", K::Bytes)};
  ExampleParser parser(specs);
  std::vector<ParsedColumn> out;
  // Every strict prefix is malformed: the outer field's length runs past the end. (The empty
  // prefix is a valid empty Example, whose features are then missing.)
  for (size_t cut = 1; cut < good.size(); ++cut) {
    std::string rec = good.substr(0, cut);
    std::vector<std::string_view> batch{good, rec};
    DataError e = expect_error([&] { parser.parse_batch(batch, out); });
    EXPECT_EQ(e.kind(), DataError::Kind::DataLoss) << "cut " << cut << ": " << e.what();
    EXPECT_EQ(e.location().record, 1);
    EXPECT_EQ(std::string(e.what()).rfind("record 1: malformed Example: ", 0), 0u) << e.what();
  }
  // Random corruption: either it parses or it is a DataError; nothing else.
  std::mt19937_64 rng(7);
  int errors = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string rec = good;
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips)
      rec[rng() % rec.size()] = static_cast<char>(rng());
    std::vector<std::string_view> batch{rec};
    try {
      parser.parse_batch(batch, out);
    } catch (const DataError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(ExampleParser, SpecificMalformations) {
  ExampleParser parser({FeatureSpec::var_len("x", K::Int64).with_default(std::vector<int64_t>{}),
                        FeatureSpec::var_len("y", K::Float).with_default(std::vector<float>{})});
  std::vector<ParsedColumn> out;
  auto reason = [&](const std::string& rec) {
    std::vector<std::string_view> b{rec};
    return expect_error([&] { parser.parse_batch(b, out); }).reason();
  };
  // A varint that never ends.
  EXPECT_NE(reason(std::string("\x0a\x03\xff\xff\xff", 5)).find("varint runs past the end"), std::string::npos);
  // An 11-byte varint.
  std::string eleven = std::string(1, '\x10') + std::string(10, '\xff') + std::string(1, '\x01');
  EXPECT_NE(reason(eleven).find("varint longer than 10 bytes"), std::string::npos);
  // A length past the end, inside a feature's packed list.
  std::string bad_list = example(entry("x", field(3, std::string("\x0a\x05\x01", 3))));
  std::string r = reason(bad_list);
  EXPECT_NE(r.find("in feature 'x': length runs past the end"), std::string::npos) << r;
  // A packed float list whose length is not a multiple of 4.
  EXPECT_NE(reason(example(entry("y", field(2, field(1, "abcde"))))).find("multiple of 4"), std::string::npos);
  // Groups and invalid wire types.
  EXPECT_NE(reason(std::string("\x13", 1)).find("groups"), std::string::npos);
  EXPECT_NE(reason(std::string("\x16", 1)).find("invalid wire type"), std::string::npos);
  EXPECT_NE(reason(std::string("\x00", 1)).find("field number 0"), std::string::npos);
  // Example.features with a non-length-delimited wire type.
  EXPECT_NE(reason(std::string("\x08\x01", 2)).find("wrong wire type"), std::string::npos);
}

TEST(ExampleParser, InvalidSpecsAreRejected) {
  auto invalid = [](std::vector<FeatureSpec> specs) {
    DataError e = expect_error([&] { ExampleParser p(std::move(specs)); });
    EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
    return e.reason();
  };
  EXPECT_NE(invalid({FeatureSpec::scalar("a", K::Int64), FeatureSpec::scalar("a", K::Float)}).find("twice"),
            std::string::npos);
  EXPECT_NE(invalid({FeatureSpec::scalar("", K::Int64)}).find("empty"), std::string::npos);
  invalid({FeatureSpec::fixed("a", K::Int64, {3, -1})});
  invalid({FeatureSpec::fixed("a", K::Int64, {-2})});
  invalid({FeatureSpec::scalar("a", K::Int64).with_default(std::vector<float>{1})});
  invalid({FeatureSpec::fixed("a", K::Int64, {3}).with_default(std::vector<int64_t>{1, 2})});
  invalid({FeatureSpec::fixed_bytes("a", 4).with_default(std::vector<std::string>{"abc"})});
  FeatureSpec int_with_length = FeatureSpec::scalar("a", K::Int64);
  int_with_length.byte_length = 4;
  invalid({int_with_length});
  FeatureSpec var_with_length = FeatureSpec::var_len("a", K::Bytes);
  var_with_length.byte_length = 4;
  invalid({var_with_length});
}

TEST(ExampleParser, ErrorsCanBeRelocatedByTheCaller) {
  ExampleWriter w;
  w.add_int64("t", {1});
  std::string rec = w.serialize();
  DataError e = expect_error([&] { parse({FeatureSpec::scalar("s", K::Int64)}, {rec, rec, rec, rec}); });
  ASSERT_EQ(e.location().record, 0);
  // What a dataset does: the batch started at record 1000 of data/x.tfrecord.
  DataLocation where = e.location();
  where.file = "data/x.tfrecord";
  where.record += 1000;
  DataError located = e.with_location(where);
  EXPECT_STREQ(located.what(), "data/x.tfrecord: record 1000: feature 's' is missing and has no default");
  EXPECT_EQ(located.kind(), e.kind());
}

}  // namespace
}  // namespace pipec
