// ExampleParser on Examples written by TensorFlow and other tools (shared/testdata/external/tfrecord,
// whose README documents the expected contents; sums below were computed independently from the
// raw protobufs).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/example_parser.h"
#include "runtime/io/tfrecord_reader.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using K = FeatureKind;
using testing::tfrecord_data;

std::vector<ParsedColumn> parse_file(const std::string& file, std::vector<FeatureSpec> specs,
                                     Compression c = Compression::None) {
  TFRecordReader reader(tfrecord_data(file), {.compression = c});
  RecordBatch batch;
  while (reader.next_batch(1 << 20, batch) > 0) {
  }
  ExampleParser parser(std::move(specs));
  std::vector<ParsedColumn> out;
  parser.parse_batch(batch.views(), out);
  return out;
}

template <class T>
double sum_of(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) s += static_cast<double>(t.data<T>()[i]);
  return s;
}

TEST(ExampleParserExternal, PytorchExample) {
  auto cols = parse_file("pytorch_data_example.tfrecord",
                         {FeatureSpec::fixed("x_float", K::Float, {10}), FeatureSpec::fixed("x_int", K::Int64, {10}),
                          FeatureSpec::scalar("x_byte", K::Bytes)});
  ASSERT_EQ(cols[0].values.shape(), (Shape{4, 10}));
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 10; ++k) {
      EXPECT_EQ(cols[0].values.data<float>()[i * 10 + k], static_cast<float>(10 * i + k));
      EXPECT_EQ(cols[1].values.data<int64_t>()[i * 10 + k], 10 * (10 * i + k));
    }
    EXPECT_EQ(cols[2].values.str(i), "test str");
  }
}

TEST(ExampleParserExternal, PytorchExampleAsVariableLength) {
  auto cols = parse_file("pytorch_data_example.tfrecord",
                         {FeatureSpec::var_len("x_int", K::Int64), FeatureSpec::var_len("x_byte", K::Bytes)});
  EXPECT_TRUE(cols[0].ragged);
  EXPECT_EQ(cols[0].values.shape(), (Shape{40}));
  std::vector<int64_t> splits(cols[0].row_splits.data<int64_t>(), cols[0].row_splits.data<int64_t>() + 5);
  EXPECT_EQ(splits, (std::vector<int64_t>{0, 10, 20, 30, 40}));
  EXPECT_EQ(cols[0].values.data<int64_t>()[39], 390);
  EXPECT_EQ(cols[1].values.shape(), (Shape{4}));
}

TEST(ExampleParserExternal, SequenceExampleParsesAsItsContext) {
  // SequenceExample.context is field 1, like Example.features; feature_lists (field 2) is skipped.
  auto cols = parse_file("pytorch_data_sequence_example.tfrecord",
                         {FeatureSpec::fixed("x_float", K::Float, {10}), FeatureSpec::fixed("x_int", K::Int64, {10}),
                          FeatureSpec::scalar("x_byte", K::Bytes)});
  EXPECT_EQ(cols[0].values.data<float>()[39], 39.0f);
  EXPECT_EQ(cols[1].values.data<int64_t>()[15], 150);
  EXPECT_EQ(cols[2].values.str(3), "test str");
  // The feature lists are not features of the context.
  EXPECT_THROW(parse_file("pytorch_data_sequence_example.tfrecord", {FeatureSpec::var_len("x_int_seq", K::Int64)}),
               DataError);
}

TEST(ExampleParserExternal, TfxMnist) {
  auto cols = parse_file("tfx_mnist.tfrecord", {FeatureSpec::fixed("image_floats", K::Float, {28, 28}),
                                                FeatureSpec::scalar("image_class", K::Int64)});
  ASSERT_EQ(cols[0].values.shape(), (Shape{1000, 28, 28}));
  ASSERT_EQ(cols[1].values.shape(), (Shape{1000}));
  const int64_t* cls = cols[1].values.data<int64_t>();
  EXPECT_EQ(cls[0], 9);
  EXPECT_EQ(cls[999], 9);
  EXPECT_EQ(sum_of<int64_t>(cols[1].values), 4498);
  std::vector<int> histogram(10);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_GE(cls[i], 0);
    ASSERT_LE(cls[i], 9);
    ++histogram[static_cast<size_t>(cls[i])];
  }
  EXPECT_EQ(histogram, (std::vector<int>{87, 137, 87, 90, 118, 79, 78, 107, 120, 97}));
  const float* px = cols[0].values.data<float>();
  for (int64_t i = 0; i < cols[0].values.num_elements(); ++i) {
    ASSERT_GE(px[i], -0.5f);
    ASSERT_LE(px[i], 0.5f);
  }
  EXPECT_EQ(px[0], -0.5f);
  EXPECT_NEAR(sum_of<float>(cols[0].values), -291181.686237562, 0.01);
}

TEST(ExampleParserExternal, TfxPenguinGzip) {
  auto cols =
      parse_file("tfx_penguin_eval.tfrecord.gz",
                 {FeatureSpec::scalar("species", K::Int64), FeatureSpec::scalar("culmen_depth_mm", K::Float),
                  FeatureSpec::scalar("culmen_length_mm", K::Float), FeatureSpec::scalar("body_mass_g", K::Float),
                  FeatureSpec::scalar("flipper_length_mm", K::Float)},
                 Compression::Gzip);
  ASSERT_EQ(cols[0].values.shape(), (Shape{100}));
  EXPECT_EQ(sum_of<int64_t>(cols[0].values), 84);
  EXPECT_EQ(cols[0].values.data<int64_t>()[99], 2);
  EXPECT_FLOAT_EQ(cols[1].values.data<float>()[0], 0.5595238208770752f);
  EXPECT_FLOAT_EQ(cols[3].values.data<float>()[99], 0.75f);
  EXPECT_NEAR(sum_of<float>(cols[1].values), 52.33333382755518, 1e-4);
  EXPECT_NEAR(sum_of<float>(cols[2].values), 41.34181806072593, 1e-4);
  EXPECT_NEAR(sum_of<float>(cols[3].values), 41.062500201165676, 1e-4);
  EXPECT_NEAR(sum_of<float>(cols[4].values), 47.338983088731766, 1e-4);
}

TEST(ExampleParserExternal, TfxNextPageGzipWithFileName) {
  auto cols = parse_file("tfx_next_page.tfrecord.gz",
                         {FeatureSpec::scalar("session_index", K::Int64), FeatureSpec::scalar("cur_page", K::Bytes),
                          FeatureSpec::scalar("label", K::Bytes)},
                         Compression::Gzip);
  EXPECT_EQ(sum_of<int64_t>(cols[0].values), 424);
  EXPECT_EQ(cols[1].values.str(0), "page2");
  EXPECT_EQ(cols[2].values.str(0), "page3");
  EXPECT_EQ(cols[1].values.str(99), "page3");
  EXPECT_EQ(cols[2].values.str(99), "page1");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(cols[1].values.str(i).substr(0, 4), "page");
}

TEST(ExampleParserExternal, TfxTaxiWithEmptyFeatures) {
  const char* f = "tfx_taxi_eval_00000.tfrecord.gz";
  auto cols =
      parse_file(f,
                 {FeatureSpec::var_len("company", K::Bytes), FeatureSpec::var_len("pickup_census_tract", K::Int64),
                  FeatureSpec::scalar("trip_start_timestamp", K::Int64), FeatureSpec::scalar("fare", K::Float),
                  FeatureSpec::scalar("payment_type", K::Bytes),
                  FeatureSpec::scalar("dropoff_census_tract", K::Int64).with_default(std::vector<int64_t>{0}),
                  FeatureSpec::var_len("dropoff_latitude", K::Float)},
                 Compression::Gzip);
  // company: 131 records hold Feature{} (an empty row), 293 hold one name.
  const int64_t* splits = cols[0].row_splits.data<int64_t>();
  int empty = 0;
  for (int i = 0; i < 424; ++i) {
    int64_t n = splits[i + 1] - splits[i];
    ASSERT_TRUE(n == 0 || n == 1);
    empty += n == 0;
  }
  EXPECT_EQ(empty, 131);
  EXPECT_EQ(cols[0].values.num_elements(), 293);
  EXPECT_EQ(splits[1], 0);                                        // record 0 has no company
  EXPECT_EQ(cols[0].values.str(0), "Taxi Affiliation Services");  // record 1's
  // pickup_census_tract is Feature{} in every record.
  EXPECT_EQ(cols[1].values.num_elements(), 0);
  EXPECT_EQ(cols[1].row_splits.data<int64_t>()[424], 0);
  EXPECT_EQ(sum_of<int64_t>(cols[2].values), 597584275200.0);
  EXPECT_NEAR(sum_of<float>(cols[3].values), 4946.210003376007, 1e-2);
  EXPECT_EQ(cols[4].values.str(0), "Credit Card");
  int cash = 0;
  for (int i = 0; i < 424; ++i) cash += cols[4].values.str(i) == "Cash";
  EXPECT_EQ(cash, 283);
  // dropoff_census_tract: 118 empty features replaced by the default 0.
  EXPECT_EQ(cols[5].values.data<int64_t>()[0], 17031080100);
  EXPECT_EQ(sum_of<int64_t>(cols[5].values), 5211607178887.0);
  EXPECT_EQ(cols[6].values.num_elements(), 411);

  // Without a default, the empty Feature{} of record 0 is a missing feature.
  try {
    parse_file(f, {FeatureSpec::scalar("pickup_census_tract", K::Int64)}, Compression::Gzip);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.location().record, 0);
    EXPECT_NE(e.reason().find("feature 'pickup_census_tract' is missing"), std::string::npos) << e.what();
  }
}

TEST(ExampleParserExternal, TfrecordLiteTest) {
  auto cols = parse_file("tfrecord_lite_test.tfrecord",
                         {FeatureSpec::scalar("feature0", K::Int64), FeatureSpec::scalar("feature1", K::Int64),
                          FeatureSpec::scalar("feature2", K::Bytes), FeatureSpec::scalar("feature3", K::Float)});
  EXPECT_EQ(cols[0].values.shape(), (Shape{42}));
  EXPECT_EQ(sum_of<int64_t>(cols[0].values), 25);
  EXPECT_EQ(sum_of<int64_t>(cols[1].values), 82);
  EXPECT_EQ(cols[2].values.str(0), "chicken");
  EXPECT_EQ(cols[2].values.str(41), "dog");
  EXPECT_FLOAT_EQ(cols[3].values.data<float>()[0], -1.1237505674362183f);
  EXPECT_NEAR(sum_of<float>(cols[3].values), -8.599163357168436, 1e-4);
}

TEST(ExampleParserExternal, TfrecordLiteImages) {
  auto cols = parse_file("tfrecord_lite_images.tfrecord",
                         {FeatureSpec::scalar("image_raw", K::Bytes), FeatureSpec::scalar("height", K::Int64),
                          FeatureSpec::scalar("width", K::Int64), FeatureSpec::scalar("depth", K::Int64),
                          FeatureSpec::scalar("label", K::Int64)});
  EXPECT_EQ(cols[0].values.str(0).size(), 17858u);
  EXPECT_EQ(cols[0].values.str(1).size(), 15477u);
  for (int i = 0; i < 2; ++i) {
    std::string_view jpeg = cols[0].values.str(i);
    EXPECT_EQ(jpeg.substr(0, 2), "\xff\xd8");  // JPEG start and end markers
    EXPECT_EQ(jpeg.substr(jpeg.size() - 2), "\xff\xd9");
  }
  auto ints = [&](int c) {
    return std::vector<int64_t>(cols[c].values.data<int64_t>(), cols[c].values.data<int64_t>() + 2);
  };
  EXPECT_EQ(ints(1), (std::vector<int64_t>{213, 239}));
  EXPECT_EQ(ints(2), (std::vector<int64_t>{320, 194}));
  EXPECT_EQ(ints(3), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(ints(4), (std::vector<int64_t>{0, 1}));
}

TEST(ExampleParserExternal, SpecMismatchesOnRealData) {
  try {
    parse_file("pytorch_data_example.tfrecord", {FeatureSpec::fixed("x_int", K::Float, {10})});
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "record 0: feature 'x_int' is int64_list but the spec says float");
  }
  try {
    parse_file("pytorch_data_example.tfrecord", {FeatureSpec::fixed("x_float", K::Float, {7})});
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "record 0: feature 'x_float' has 10 values, expected 7");
  }
}

}  // namespace
}  // namespace pipec
