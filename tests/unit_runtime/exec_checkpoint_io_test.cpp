#include "runtime/exec/checkpoint_io.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace pipec {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class CheckpointIo : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("pipec_exec_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> dir_entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

// Expects `fn` to throw CheckpointError whose message contains every string in `parts`.
template <class F>
void expect_checkpoint_error(F&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    for (const auto& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << part;
    }
  }
}

TEST_F(CheckpointIo, WriteAtomicCreatesAndReplaces) {
  const fs::path p = dir_ / "state.bin";
  write_file_atomic(p, "first");
  EXPECT_EQ(read_file(p), "first");
  write_file_atomic(p, std::string("sec\0ond", 7));
  EXPECT_EQ(read_file(p), std::string("sec\0ond", 7));
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"state.bin"});  // no temporary left behind
}

TEST_F(CheckpointIo, WriteAtomicFailureNamesPathAndCleansUp) {
  const fs::path p = dir_ / "missing_dir" / "state.bin";
  expect_checkpoint_error([&] { write_file_atomic(p, "x"); }, {p.string()});
  EXPECT_TRUE(dir_entries().empty());
}

TEST_F(CheckpointIo, WriteAtomicIntoDirectoryPathFailsAndKeepsNoTemp) {
  fs::create_directory(dir_ / "is_a_dir");
  expect_checkpoint_error([&] { write_file_atomic(dir_ / "is_a_dir", "x"); }, {"is_a_dir"});
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"is_a_dir"});
}

TEST_F(CheckpointIo, ReadFileMissingNamesPath) {
  const fs::path p = dir_ / "nope.bin";
  expect_checkpoint_error([&] { read_file(p); }, {p.string(), "No such file"});
}

TEST_F(CheckpointIo, StateRoundTrip) {
  const double nan_with_payload = std::bit_cast<double>(uint64_t{0x7ff8000000000123});
  StateWriter w(7);
  w.write_u32(0xdeadbeef);
  w.write_u64(std::numeric_limits<uint64_t>::max());
  w.write_i64(std::numeric_limits<int64_t>::min());
  w.write_i64(-1);
  w.write_f64(-0.0);
  w.write_f64(std::numeric_limits<double>::infinity());
  w.write_f64(nan_with_payload);
  w.write_f64(3.141592653589793);
  w.write_string("");
  w.write_string(std::string("a\0b", 3));
  const std::vector<uint8_t> raw{0, 1, 255};
  w.write_bytes(raw);
  w.write_vector(std::vector<uint32_t>{1, 2, 3});
  w.write_vector(std::vector<uint64_t>{});
  w.write_vector(std::vector<int64_t>{-5, 5});
  w.write_vector(std::vector<double>{0.5, -2.25});
  w.write_vector(std::vector<std::string>{"x", "", "yz"});
  const fs::path p = dir_ / "state.bin";
  w.write_to_file(p);

  StateReader r = StateReader::from_file(p);
  EXPECT_EQ(r.version(), 7u);
  EXPECT_EQ(r.source(), p.string());
  EXPECT_EQ(r.read_u32(), 0xdeadbeefu);
  EXPECT_EQ(r.read_u64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.read_i64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.read_i64(), -1);
  const double neg_zero = r.read_f64();
  EXPECT_EQ(neg_zero, 0.0);
  EXPECT_TRUE(std::signbit(neg_zero));
  EXPECT_EQ(r.read_f64(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(std::bit_cast<uint64_t>(r.read_f64()), 0x7ff8000000000123u);  // bits preserved
  EXPECT_EQ(r.read_f64(), 3.141592653589793);
  EXPECT_EQ(r.read_string(), "");
  EXPECT_EQ(r.read_string(), std::string("a\0b", 3));
  EXPECT_EQ(r.read_bytes(), raw);
  EXPECT_EQ(r.read_vector<uint32_t>(), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_TRUE(r.read_vector<uint64_t>().empty());
  EXPECT_EQ(r.read_vector<int64_t>(), (std::vector<int64_t>{-5, 5}));
  EXPECT_EQ(r.read_vector<double>(), (std::vector<double>{0.5, -2.25}));
  EXPECT_EQ(r.read_vector<std::string>(), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_NO_THROW(r.expect_end());
}

// Pins the documented byte layout, so a change to it cannot go unnoticed.
TEST_F(CheckpointIo, StateLayoutIsLittleEndianWithCrcTrailer) {
  StateWriter w(0x01020304);
  w.write_u32(0x0a0b0c0d);
  w.write_string("hi");
  const std::string got = w.finish();
  std::string want = "PCST";
  want += std::string("\x04\x03\x02\x01", 4);           // version
  want += std::string("\x0e\0\0\0\0\0\0\0", 8);         // payload size 14
  want += std::string("\x0d\x0c\x0b\x0a", 4);           // u32
  want += std::string("\x02\0\0\0\0\0\0\0", 8) + "hi";  // string
  const uLong crc =
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(want.data()), static_cast<uInt>(want.size()));
  for (int i = 0; i < 4; ++i) want.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  EXPECT_EQ(got, want);
}

TEST_F(CheckpointIo, TruncatedFileGivesClearError) {
  StateWriter w(1);
  w.write_u64(12345);
  w.write_string("some state");
  const std::string full = w.finish();
  const fs::path p = dir_ / "trunc.bin";
  for (size_t len = 0; len < full.size(); ++len) {
    write_file_atomic(p, full.substr(0, len));
    SCOPED_TRACE("length " + std::to_string(len));
    expect_checkpoint_error([&] { StateReader::from_file(p); }, {p.string(), "truncated"});
  }
}

TEST_F(CheckpointIo, CorruptedByteGivesClearError) {
  StateWriter w(3);
  w.write_u64(42);
  w.write_vector(std::vector<double>{1.5, 2.5});
  const std::string good = w.finish();
  const fs::path p = dir_ / "corrupt.bin";
  for (size_t i = 0; i < good.size(); ++i) {
    for (int mask : {0x01, 0x80}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      write_file_atomic(p, bad);
      SCOPED_TRACE("byte " + std::to_string(i) + " mask " + std::to_string(mask));
      expect_checkpoint_error([&] { StateReader::from_file(p); }, {p.string()});
    }
  }
  // And the specific diagnoses.
  std::string bad = good;
  bad[StateReader::kHeaderSize] ^= 1;  // payload byte
  expect_checkpoint_error([&] { StateReader(bad, "mem"); }, {"mem: ", "CRC32 mismatch"});
  bad = good;
  bad[0] = 'X';
  expect_checkpoint_error([&] { StateReader(bad, "mem"); }, {"bad magic"});
  expect_checkpoint_error([&] { StateReader(good + "x", "mem"); }, {"corrupt", "header says"});
}

TEST_F(CheckpointIo, ReadingPastEndNamesFile) {
  StateWriter w(2);
  w.write_u32(1);
  const fs::path p = dir_ / "short.bin";
  w.write_to_file(p);
  StateReader r = StateReader::from_file(p);
  expect_checkpoint_error([&] { r.read_u64(); }, {p.string(), "layout mismatch", "u64"});
}

TEST_F(CheckpointIo, ExpectEndDetectsUnreadFields) {
  StateWriter w(2);
  w.write_u32(1);
  w.write_u32(2);
  StateReader r(w.finish(), "mem");
  r.read_u32();
  expect_checkpoint_error([&] { r.expect_end(); }, {"mem: ", "4 unread"});
}

TEST_F(CheckpointIo, HugeLengthPrefixIsRejectedWithoutAllocating) {
  // A well-framed file whose string/vector length is absurd (e.g. written by a buggy writer).
  StateWriter w(1);
  w.write_u64(uint64_t{1} << 60);
  const std::string data = w.finish();
  StateReader r1(data, "mem");
  expect_checkpoint_error([&] { r1.read_string(); }, {"mem: ", "string length"});
  StateReader r2(data, "mem");
  expect_checkpoint_error([&] { r2.read_vector<uint64_t>(); }, {"vector length"});
  StateReader r3(data, "mem");
  expect_checkpoint_error([&] { r3.read_bytes(); }, {"bytes length"});
}

TEST_F(CheckpointIo, ErrorHelperNamesSource) {
  StateReader r(StateWriter(9).finish(), "/some/state.bin");
  const CheckpointError e = r.error("unsupported version 9");
  EXPECT_STREQ(e.what(), "/some/state.bin: unsupported version 9");
}

// Readers racing a writer see the old or the new content, never a mix, a partial file, or no file.
TEST_F(CheckpointIo, RenameIsAtomicForConcurrentReaders) {
  const fs::path p = dir_ / "racy.bin";
  const std::string a(256 * 1024, 'a'), b(256 * 1024, 'b');
  write_file_atomic(p, a);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      std::string got;
      try {
        got = read_file(p);
      } catch (const CheckpointError&) {
        ++bad;
        continue;
      }
      if (got != a && got != b) ++bad;
      ++reads;
    }
  });
  for (int i = 0; i < 40; ++i) write_file_atomic(p, i % 2 ? a : b);
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(dir_entries(), std::vector<std::string>{"racy.bin"});
}

}  // namespace
}  // namespace pipec
