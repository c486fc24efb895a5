// TensorBoard event files (runtime/io/event_file_writer.h): the protobuf encoder byte by byte against the
// wire format's rules, the Event and Summary fields decoded back, the TFRecord framing checked with a
// CRC32C written here (not the runtime's), and the file readable while it is being written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/le_codec.h"
#include "runtime/io/errors.h"
#include "runtime/io/event_file_writer.h"
#include "runtime/io/proto_encoder.h"
#include "runtime/io/protobuf_wire.h"
#include "runtime/io/tf_event.h"
#include "runtime/io/tfrecord_reader.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// CRC32C bit by bit (Castagnoli, reflected polynomial 0x82F63B78), and TFRecord's mask: an oracle
// apart from the runtime's table and SSE4.2 code.
uint32_t slow_crc32c(std::string_view data) {
  uint32_t crc = 0xffffffffu;
  for (char ch : data) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
uint32_t slow_masked_crc(std::string_view data) {
  uint32_t crc = slow_crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// The records of a TFRecord file, each frame checked: 8-byte length, the masked CRC of those 8 bytes,
// the data, the masked CRC of the data; the file must end exactly after the last record.
std::vector<std::string> parse_records(const std::string& file) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_GE(file.size() - at, 12u) << "a header cut short at byte " << at;
    if (file.size() - at < 12) break;
    const uint64_t n = load_le64(file.data() + at);
    EXPECT_EQ(load_le32(file.data() + at + 8), slow_masked_crc(file.substr(at, 8))) << "length CRC at byte " << at;
    EXPECT_LE(at + 12 + n + 4, file.size()) << "a record cut short at byte " << at;
    if (at + 12 + n + 4 > file.size()) break;
    std::string data = file.substr(at + 12, n);
    EXPECT_EQ(load_le32(file.data() + at + 12 + n), slow_masked_crc(data)) << "data CRC at byte " << at;
    out.push_back(std::move(data));
    at += 12 + n + 4;
  }
  return out;
}

// An Event decoded with the wire reader: the fields TensorBoard reads for scalars.
struct DecodedEvent {
  double wall_time = -1;
  int64_t step = -1;
  std::string file_version;
  std::vector<tfevent::Scalar> scalars;
  std::vector<uint32_t> fields;  // the field numbers in the order met
};

float float_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

DecodedEvent decode_event(std::string_view msg) {
  DecodedEvent e;
  wire::WireReader r(msg);
  while (!r.done()) {
    uint32_t type = 0;
    uint32_t field = r.tag(type);
    e.fields.push_back(field);
    if (field == tfevent::kWallTime) {
      EXPECT_EQ(type, wire::kFixed64);
      uint64_t bits = r.fixed64();
      std::memcpy(&e.wall_time, &bits, 8);
    } else if (field == tfevent::kStep) {
      EXPECT_EQ(type, wire::kVarint);
      e.step = static_cast<int64_t>(r.varint());
    } else if (field == tfevent::kFileVersionField) {
      EXPECT_EQ(type, wire::kLengthDelimited);
      e.file_version = std::string(r.bytes());
    } else if (field == tfevent::kSummary) {
      EXPECT_EQ(type, wire::kLengthDelimited);
      wire::WireReader summary(r.bytes());
      while (!summary.done()) {
        uint32_t vt = 0;
        EXPECT_EQ(summary.tag(vt), tfevent::kValue);
        EXPECT_EQ(vt, wire::kLengthDelimited);
        wire::WireReader value(summary.bytes());
        tfevent::Scalar s;
        while (!value.done()) {
          uint32_t t = 0;
          uint32_t f = value.tag(t);
          if (f == tfevent::kTag) {
            EXPECT_EQ(t, wire::kLengthDelimited);
            s.tag = std::string(value.bytes());
          } else {
            EXPECT_EQ(f, tfevent::kSimpleValue);
            EXPECT_EQ(t, wire::kFixed32);
            s.value = float_of(value.fixed32());
          }
        }
        e.scalars.push_back(s);
      }
    } else {
      ADD_FAILURE() << "unexpected field " << field;
      r.skip(type);
    }
  }
  return e;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().string());
  return out;
}

TEST(ProtoEncoder, WritesEachWireTypeAsProtobufDoes) {
  // The wire format's own example: field 1, varint 150 -> 08 96 01.
  EXPECT_EQ(ProtoEncoder().add_varint(1, 150).bytes(), bytes({0x08, 0x96, 0x01}));
  // A negative int64 is its two's complement as a ten-byte varint.
  EXPECT_EQ(ProtoEncoder().add_int64(2, -1).bytes(),
            bytes({0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  // double 1.0 = 0x3FF0000000000000, field 1 wire type 1; float 0.5 = 0x3F000000, field 2 wire type 5.
  EXPECT_EQ(ProtoEncoder().add_double(1, 1.0).bytes(), bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  EXPECT_EQ(ProtoEncoder().add_float(2, 0.5f).bytes(), bytes({0x15, 0, 0, 0, 0x3f}));
  // Length-delimited: field 3 wire type 2, the length, the bytes; a length of 200 takes two bytes.
  EXPECT_EQ(ProtoEncoder().add_bytes(3, "abc").bytes(), bytes({0x1a, 0x03, 'a', 'b', 'c'}));
  const std::string long_text(200, 'x');
  EXPECT_EQ(ProtoEncoder().add_bytes(1, long_text).bytes(), bytes({0x0a, 0xc8, 0x01}) + long_text);
  // A field number past 15 takes a two-byte tag; an embedded message is its bytes, length-delimited.
  ProtoEncoder inner;
  inner.add_varint(1, 1);
  EXPECT_EQ(ProtoEncoder().add_message(16, inner).bytes(), bytes({0x82, 0x01, 0x02, 0x08, 0x01}));
}

TEST(TfEvent, FileVersionAndScalarsDecodeToTheirFields) {
  DecodedEvent v = decode_event(tfevent::file_version_event(1700000000.25));
  EXPECT_EQ(v.wall_time, 1700000000.25);
  EXPECT_EQ(v.file_version, "brain.Event:2");
  EXPECT_EQ(v.fields, (std::vector<uint32_t>{1, 3}));

  DecodedEvent e = decode_event(
      tfevent::scalars_event(1700000001.5, 123456789012, {{"batch_loss", 0.125f}, {"batch_learning_rate", 1e-3f}}));
  EXPECT_EQ(e.wall_time, 1700000001.5);
  EXPECT_EQ(e.step, 123456789012);
  EXPECT_EQ(e.fields, (std::vector<uint32_t>{1, 2, 5}));
  ASSERT_EQ(e.scalars.size(), 2u);
  EXPECT_EQ(e.scalars[0].tag, "batch_loss");
  EXPECT_EQ(e.scalars[0].value, 0.125f);
  EXPECT_EQ(e.scalars[1].tag, "batch_learning_rate");
  EXPECT_EQ(e.scalars[1].value, 1e-3f);
}

TEST(EventFile, WholeRecordsWithMaskedCrcsTheFileVersionFirst) {
  ScratchDir d;
  const std::string dir = d.file("logs/train");  // made with its parent
  std::string path;
  {
    EventFileWriter w(dir);
    path = w.path();
    for (int step = 1; step <= 3; ++step)
      w.add_scalars(step, {{"batch_loss", 1.0f / static_cast<float>(step)}, {"batch_input_wait_share", 0.5f}},
                    1000.0 + step);
    EXPECT_EQ(w.records(), 4);
    w.close();
    w.close();  // idempotent
  }
  ASSERT_EQ(event_files(dir), std::vector<std::string>{path});
  const std::string name = fs::path(path).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_NE(name.find("." + std::to_string(::getpid())), std::string::npos) << name;

  std::vector<std::string> records = parse_records(testing::read_file(path));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(decode_event(records[0]).file_version, "brain.Event:2");
  for (int step = 1; step <= 3; ++step) {
    DecodedEvent e = decode_event(records[static_cast<size_t>(step)]);
    EXPECT_EQ(e.step, step);
    EXPECT_EQ(e.wall_time, 1000.0 + step);
    ASSERT_EQ(e.scalars.size(), 2u);
    EXPECT_EQ(e.scalars[0].tag, "batch_loss");
    EXPECT_EQ(e.scalars[0].value, 1.0f / static_cast<float>(step));
    EXPECT_EQ(e.scalars[1].value, 0.5f);
  }
  // The runtime's TFRecord reader, which checks both CRCs, reads the same records.
  TFRecordReader reader(path);
  std::string_view rec;
  size_t n = 0;
  while (reader.next(rec)) {
    ASSERT_LT(n, records.size());
    EXPECT_EQ(rec, records[n++]);
  }
  EXPECT_EQ(n, 4u);
}

// A reader following the file sees each record within the flush interval, without close() or flush(),
// and the file always ends at a record boundary.
TEST(EventFile, RecordsReachTheFileWithinTheFlushInterval) {
  ScratchDir d;
  EventFileWriter w(d.path(), 0.05);
  // The file version is on disk as soon as the writer exists.
  EXPECT_EQ(parse_records(testing::read_file(w.path())).size(), 1u);
  for (int step = 1; step <= 20; ++step) {
    w.add_scalars(step, {{"batch_loss", static_cast<float>(step)}});
    std::vector<std::string> records;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      records = parse_records(testing::read_file(w.path()));
      if (records.size() == static_cast<size_t>(step) + 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(records.size(), static_cast<size_t>(step) + 1) << "step " << step << " never reached the file";
    EXPECT_EQ(decode_event(records.back()).step, step);
  }
}

TEST(EventFile, TwoWritersInOneFolderNeverShareAFile) {
  ScratchDir d;
  EventFileWriter a(d.path());
  EventFileWriter b(d.path());
  EXPECT_NE(a.path(), b.path());
  a.add_scalars(1, {{"x", 1}});
  b.add_scalars(1, {{"x", 2}});
  a.close();
  b.close();
  EXPECT_EQ(parse_records(testing::read_file(a.path())).size(), 2u);
  EXPECT_EQ(parse_records(testing::read_file(b.path())).size(), 2u);
  EXPECT_EQ(event_files(d.path()).size(), 2u);
}

TEST(EventFile, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  ScratchDir d;
  testing::write_file(d.file("plain"), "a file, not a folder");
  try {
    EventFileWriter w(d.file("plain/train"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::Io);
    EXPECT_NE(std::string(e.what()).find(d.file("plain/train")), std::string::npos) << e.what();
  }
}

TEST(EventFile, AddingAfterCloseIsAnError) {
  ScratchDir d;
  EventFileWriter w(d.path());
  w.close();
  EXPECT_THROW(w.add_scalars(1, {{"x", 1}}), DataError);
}

}  // namespace
}  // namespace pipec
