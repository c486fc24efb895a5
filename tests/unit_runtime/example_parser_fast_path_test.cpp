// ExampleParser's fast path (records laid out as TensorFlow writes them) against its general path,
// on random batches: features in shuffled orders, unrequested features, duplicates, missing ones,
// every encoding the general path accepts, wrong kinds and counts, and corrupted bytes. The two must
// agree on every output byte and on every error, message included.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/example_parser.h"
#include "tests/unit_runtime/protobuf_encoding.h"

namespace pipec {
namespace {

using K = FeatureKind;

using testing::field;
using testing::tag;
using testing::varint;

// What a parse gave: the columns, or the error.
struct Outcome {
  std::vector<ParsedColumn> cols;
  std::optional<DataError> error;
};

Outcome parse(const ExampleParser& parser, const std::vector<std::string>& records) {
  std::vector<std::string_view> views(records.begin(), records.end());
  Outcome o;
  try {
    parser.parse_batch(views, o.cols);
  } catch (const DataError& e) {
    o.error = e;
  }
  return o;
}

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  if (a.dtype() == DType::Bytes) {
    for (int64_t i = 0; i < a.num_elements(); ++i) ASSERT_EQ(a.str(i), b.str(i)) << what << " value " << i;
    return;
  }
  ASSERT_EQ(a.byte_size(), b.byte_size()) << what;
  if (a.byte_size() > 0) {
    ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0) << what;
  }
}

class RecordMaker {
 public:
  explicit RecordMaker(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return rng_() % n; }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }

  int64_t some_int() {
    switch (below(4)) {
      case 0: return static_cast<int64_t>(below(100));
      case 1: return -static_cast<int64_t>(below(100000));  // a 10-byte varint
      case 2: return static_cast<int64_t>(rng_());
      default: return static_cast<int64_t>(below(1 << 20));
    }
  }
  std::string some_bytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }

  // A Feature holding `count` values of `kind`, mostly as TensorFlow writes it, sometimes in one of
  // the other encodings the general path accepts, sometimes wrong (count, kind, byte length).
  std::string feature(K kind, int64_t count, int64_t byte_length) {
    if (chance(1)) return "";  // no kind set
    if (chance(1)) count += chance(50) ? 1 : -1;
    if (count < 0) count = 0;
    if (chance(1)) kind = static_cast<K>((static_cast<int>(kind) + 1 + static_cast<int>(below(2))) % 3);
    const bool odd = chance(15);      // a valid encoding the fast path leaves to the general one
    std::vector<std::string> pieces;  // the fields of the list
    uint32_t list_field = 0;
    if (kind == K::Int64) {
      list_field = 3;
      std::string packed;
      for (int64_t i = 0; i < count; ++i) {
        const int64_t v = some_int();
        if (odd && i % 2 == 1) pieces.push_back(tag(1, 0) + varint(static_cast<uint64_t>(v)));  // unpacked
        else packed += varint(static_cast<uint64_t>(v));
      }
      pieces.insert(pieces.begin(), field(1, packed));
    } else if (kind == K::Float) {
      list_field = 2;
      std::string packed;
      for (int64_t i = 0; i < count; ++i) {
        const uint32_t bits = static_cast<uint32_t>(rng_());
        const std::string raw(reinterpret_cast<const char*>(&bits), 4);
        if (odd && i % 2 == 1) pieces.push_back(tag(1, 5) + raw);  // one fixed32 value
        else packed += raw;
      }
      pieces.insert(pieces.begin(), field(1, packed));
    } else {
      list_field = 1;
      const size_t len = byte_length >= 0 ? static_cast<size_t>(byte_length) : below(6);
      for (int64_t i = 0; i < count; ++i) pieces.push_back(field(1, some_bytes(chance(1) ? len + 1 : len)));
    }
    if (odd && chance(30)) pieces.push_back(field(7, "unknown"));
    // Mostly one list; odd ones sometimes in two lists, which protobuf merges.
    const size_t cut = odd && chance(30) ? pieces.size() / 2 : pieces.size();
    std::string first, second;
    for (size_t i = 0; i < pieces.size(); ++i) (i < cut ? first : second) += pieces[i];
    std::string f = field(list_field, first);
    if (cut < pieces.size() || (odd && chance(10))) f += field(list_field, second);
    return f;
  }

  std::string entry(std::string_view key, std::string_view value) {
    if (chance(3)) return field(1, field(2, value) + field(1, key));  // value first
    if (chance(2)) return field(1, field(1, key) + field(2, value) + tag(9, 0) + varint(5));
    if (chance(1)) return field(1, field(2, value));  // no key
    return field(1, field(1, key) + field(2, value));
  }

  std::string record(const std::vector<FeatureSpec>& specs, bool shuffled_order) {
    std::vector<std::string> entries;
    for (const FeatureSpec& s : specs) {
      if (chance(1)) continue;  // missing
      const int64_t count = s.values_per_record() >= 0 ? s.values_per_record() : static_cast<int64_t>(below(4));
      entries.push_back(entry(s.name, feature(s.kind, count, s.byte_length)));
      if (chance(3)) entries.push_back(entry(s.name, feature(s.kind, count, s.byte_length)));  // last wins
    }
    // Unrequested features, some with names close to the requested ones.
    static const char* const kOthers[] = {"s2", "x", "ss", "d ", "pairs", "", "S", "vecc", "dd2"};
    for (int extra = static_cast<int>(below(3)); extra > 0; --extra)
      entries.push_back(entry(kOthers[below(9)], feature(K::Int64, 1 + static_cast<int64_t>(below(3)), -1)));
    if (shuffled_order) std::shuffle(entries.begin(), entries.end(), rng_);
    // Mostly one Example.features; sometimes two, which protobuf merges.
    const size_t cut = chance(3) ? entries.size() / 2 : entries.size();
    std::string first, second;
    for (size_t i = 0; i < entries.size(); ++i) (i < cut ? first : second) += entries[i];
    std::string rec = field(1, first);
    if (cut < entries.size()) rec += field(1, second);
    if (chance(3)) rec += tag(2, 0) + varint(42);  // an unknown field of the Example
    if (chance(5)) {
      for (int flips = 1 + static_cast<int>(below(3)); flips > 0 && !rec.empty(); --flips)
        rec[below(rec.size())] = static_cast<char>(rng_());
    }
    if (chance(2) && !rec.empty()) rec.resize(below(rec.size()));
    return rec;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(ExampleParserFastPath, AgreesWithTheGeneralPath) {
  const std::vector<FeatureSpec> specs{
      FeatureSpec::scalar("s", K::Int64),
      FeatureSpec::fixed("pair", K::Int64, {2}).with_default(std::vector<int64_t>{7}),
      FeatureSpec::fixed("vec", K::Float, {3}),
      FeatureSpec::fixed_bytes("d", 5),
      FeatureSpec::fixed_bytes("dd", 3, {2}),
      FeatureSpec::var_len("v", K::Int64),
      FeatureSpec::scalar("t", K::Bytes),
  };
  ExampleParser fast(specs);
  ExampleParser general(specs);
  general.set_fast_path(false);

  RecordMaker maker(2026);
  int parsed = 0, failed = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    // Within a batch the order is mostly one writer's, as in a real file.
    const bool shuffled = maker.chance(30);
    std::vector<std::string> batch;
    for (int r = static_cast<int>(1 + maker.below(4)); r > 0; --r) batch.push_back(maker.record(specs, shuffled));
    const Outcome a = parse(fast, batch);
    const Outcome b = parse(general, batch);
    ASSERT_EQ(a.error.has_value(), b.error.has_value())
        << "trial " << trial << ": " << (a.error ? a.error->what() : b.error->what());
    if (a.error) {
      ++failed;
      EXPECT_EQ(a.error->kind(), b.error->kind()) << "trial " << trial;
      EXPECT_EQ(std::string(a.error->what()), std::string(b.error->what())) << "trial " << trial;
      continue;
    }
    ++parsed;
    ASSERT_EQ(a.cols.size(), b.cols.size());
    for (size_t i = 0; i < a.cols.size(); ++i) {
      const std::string what = "trial " + std::to_string(trial) + " feature " + specs[i].name;
      ASSERT_EQ(a.cols[i].ragged, b.cols[i].ragged) << what;
      expect_same_tensor(a.cols[i].values, b.cols[i].values, what);
      if (a.cols[i].ragged) {
        expect_same_tensor(a.cols[i].row_splits, b.cols[i].row_splits, what + " splits");
      }
    }
  }
  // Both outcomes are common, so both are compared many times.
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(failed, 1000);
  std::printf("%d batches parsed, %d failed\n", parsed, failed);
}

// The chess records' layout: TensorFlow's own encoding, with the features in the same order in every
// record, then in another order mid-batch, then with unrequested features in between.
TEST(ExampleParserFastPath, WriterLayoutWithChangingOrder) {
  const std::vector<FeatureSpec> specs{FeatureSpec::fixed_bytes("d", 4), FeatureSpec::scalar("s", K::Int64),
                                       FeatureSpec::fixed("f", K::Float, {2})};
  auto d_of = [](int i) { return field(1, field(1, std::string(4, static_cast<char>('a' + i)))); };
  auto s_of = [](int i) { return field(3, field(1, varint(static_cast<uint64_t>(int64_t{-1000} * i)))); };
  auto f_of = [](int i) {
    const float v[2] = {static_cast<float>(i), -0.5f * static_cast<float>(i)};
    return field(2, field(1, std::string(reinterpret_cast<const char*>(v), 8)));
  };
  auto ent = [](std::string_view k, std::string_view v) { return field(1, field(1, k) + field(2, v)); };
  std::vector<std::string> batch;
  for (int i = 0; i < 12; ++i) {
    std::string e;
    if (i < 4) e = ent("d", d_of(i)) + ent("s", s_of(i)) + ent("f", f_of(i));
    else if (i < 8) e = ent("f", f_of(i)) + ent("s", s_of(i)) + ent("d", d_of(i));
    else e = ent("zz", s_of(i)) + ent("s", s_of(i)) + ent("q", d_of(i)) + ent("d", d_of(i)) + ent("f", f_of(i));
    batch.push_back(field(1, e));
  }
  ExampleParser parser(specs);
  const Outcome o = parse(parser, batch);
  ASSERT_FALSE(o.error) << o.error->what();
  for (int i = 0; i < 12; ++i) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(o.cols[0].values.data<uint8_t>()[4 * i + k], 'a' + i) << i;
    EXPECT_EQ(o.cols[1].values.data<int64_t>()[i], -1000 * i);
    EXPECT_EQ(o.cols[2].values.data<float>()[2 * i], static_cast<float>(i));
    EXPECT_EQ(o.cols[2].values.data<float>()[2 * i + 1], -0.5f * static_cast<float>(i));
  }
}

}  // namespace
}  // namespace pipec
