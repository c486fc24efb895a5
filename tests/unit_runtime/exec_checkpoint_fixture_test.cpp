// A state file committed to the repository (tests/unit_runtime/fixtures/state_v7.pcst) must keep
// loading, and writing the same fields must keep giving the same bytes: checkpoints written by an
// older pipec resume with a newer one. The fixture was written by the StateWriter of before the shared
// little-endian codec (runtime/core/le_codec.h); it holds every field type a checkpoint uses, and a
// chunk with a dense and a ragged column as buffered stages save them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/exec/checkpoint_io.h"
#include "runtime/exec/iterator.h"

namespace pipec {
namespace {

constexpr uint32_t kFixtureVersion = 7;

std::string fixture_path() { return std::string(PIPEC_SOURCE_DIR) + "/tests/unit_runtime/fixtures/state_v7.pcst"; }

Chunk fixture_chunk() {
  Chunk c;
  c.rows = 2;
  c.first_index = 40;
  c.epoch = 3;
  Column dense;
  dense.dense = Tensor::empty(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) dense.dense.data<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  Column ragged;
  ragged.ragged = true;
  ragged.rows.push_back(Tensor::from_strings({"ab", "", "xyz"}, {3}));
  Tensor ints = Tensor::empty(DType::I64, {1});
  ints.data<int64_t>()[0] = -9;
  ragged.rows.push_back(ints);
  c.columns.push_back(std::move(dense));
  c.columns.push_back(std::move(ragged));
  return c;
}

// The fields of the fixture, in order. Changing this function breaks the byte-identity test below,
// which is the point: the fixture is the format.
void write_fixture_fields(StateWriter& w) {
  w.write_u32(0xdeadbeefu);
  w.write_u64(0x0123456789abcdefull);
  w.write_i64(-5);
  w.write_i64(std::numeric_limits<int64_t>::min());
  w.write_f64(-1.5);
  w.write_f64(M_PI);
  w.write_string("pipec");
  w.write_string(std::string("nul\0inside", 10));
  const std::vector<uint8_t> bytes{0, 1, 255};
  w.write_bytes(bytes);
  w.write_vector(std::vector<uint32_t>{1, 2, 0xffffffffu});
  w.write_vector(std::vector<uint64_t>{});
  w.write_vector(std::vector<int64_t>{-1, 0, 1});
  w.write_vector(std::vector<double>{0.25, -0.0});
  w.write_vector(std::vector<std::string>{"a", "bc"});
  save_chunk(w, fixture_chunk());
}

TEST(CheckpointFixture, FileWrittenByAnEarlierBuildStillLoads) {
  StateReader r = StateReader::from_file(fixture_path());
  EXPECT_EQ(r.version(), kFixtureVersion);
  EXPECT_EQ(r.read_u32(), 0xdeadbeefu);
  EXPECT_EQ(r.read_u64(), 0x0123456789abcdefull);
  EXPECT_EQ(r.read_i64(), -5);
  EXPECT_EQ(r.read_i64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.read_f64(), -1.5);
  EXPECT_EQ(r.read_f64(), M_PI);
  EXPECT_EQ(r.read_string(), "pipec");
  EXPECT_EQ(r.read_string(), std::string("nul\0inside", 10));
  EXPECT_EQ(r.read_bytes(), (std::vector<uint8_t>{0, 1, 255}));
  EXPECT_EQ(r.read_vector<uint32_t>(), (std::vector<uint32_t>{1, 2, 0xffffffffu}));
  EXPECT_TRUE(r.read_vector<uint64_t>().empty());
  EXPECT_EQ(r.read_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1}));
  const std::vector<double> d = r.read_vector<double>();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], 0.25);
  EXPECT_TRUE(d[1] == 0.0 && std::signbit(d[1]));
  EXPECT_EQ(r.read_vector<std::string>(), (std::vector<std::string>{"a", "bc"}));
  const Chunk c = restore_chunk(r);
  const Chunk want = fixture_chunk();
  EXPECT_EQ(c.rows, want.rows);
  EXPECT_EQ(c.first_index, want.first_index);
  EXPECT_EQ(c.epoch, want.epoch);
  ASSERT_EQ(c.columns.size(), 2u);
  EXPECT_FALSE(c.columns[0].ragged);
  EXPECT_TRUE(c.columns[0].dense.equals(want.columns[0].dense));
  ASSERT_TRUE(c.columns[1].ragged);
  ASSERT_EQ(c.columns[1].rows.size(), 2u);
  EXPECT_TRUE(c.columns[1].rows[0].equals(want.columns[1].rows[0]));
  EXPECT_TRUE(c.columns[1].rows[1].equals(want.columns[1].rows[1]));
  r.expect_end();
}

TEST(CheckpointFixture, WritingTheSameFieldsGivesTheSameBytes) {
  StateWriter w(kFixtureVersion);
  write_fixture_fields(w);
  const std::string fixture = read_file(fixture_path());
  const std::string now = w.finish();
  ASSERT_EQ(now.size(), fixture.size());
  for (size_t i = 0; i < now.size(); ++i) ASSERT_EQ(now[i], fixture[i]) << "first difference at byte " << i;
}

}  // namespace
}  // namespace pipec
