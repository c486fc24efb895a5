#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/npy.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using testing::read_file;
using testing::ScratchDir;
using testing::write_file;

// A .npy file written by real NumPy (tests/conformance/make_npy_fixtures.py).
std::string fixture(const std::string& name) {
  return std::string(PIPEC_SOURCE_DIR) + "/tests/conformance/fixtures/npy/" + name;
}

template <class T>
Tensor make(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  EXPECT_EQ(sizeof(T), dtype_size(dtype));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
  return t;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), t.raw(), out.size() * sizeof(T));
  return out;
}

// The header text between the length field and the data.
std::string header_text(const std::string& file) {
  size_t len = static_cast<unsigned char>(file[8]) | (static_cast<unsigned char>(file[9]) << 8);
  return file.substr(10, len);
}

// Runs `fn`, expects a DataError, and returns its message.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a DataError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a DataError, got none";
  return "";
}

// ---- Round trips

TEST(Npy, RoundTripEveryNumericDtype) {
  ScratchDir dir;
  const std::vector<std::pair<DType, std::string>> cases = {
      {DType::Bool, "|b1"}, {DType::U8, "|u1"},  {DType::I8, "|i1"},  {DType::U16, "<u2"},
      {DType::I16, "<i2"},  {DType::U32, "<u4"}, {DType::I32, "<i4"}, {DType::U64, "<u8"},
      {DType::I64, "<i8"},  {DType::F16, "<f2"}, {DType::F32, "<f4"}, {DType::F64, "<f8"},
  };
  for (const auto& [dtype, descr] : cases) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Tensor t = Tensor::empty(dtype, {2, 3, 5});
    for (size_t i = 0; i < t.byte_size(); ++i) t.raw()[i] = static_cast<uint8_t>(i * 37 + 11);
    if (dtype == DType::Bool)
      for (size_t i = 0; i < t.byte_size(); ++i) t.raw()[i] &= 1;
    EXPECT_EQ(npy_descr(t), descr);
    std::string path = dir.file(std::string(dtype_name(dtype)) + ".npy");
    write_npy(path, t);
    NpyHeader h;
    Tensor back = read_npy(path, &h);
    EXPECT_TRUE(back.equals(t));
    EXPECT_EQ(h.descr, descr);
    EXPECT_EQ(h.dtype, dtype);
    EXPECT_EQ(h.shape, (Shape{2, 3, 5}));
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.data_offset % 64, 0u);
  }
}

TEST(Npy, RoundTripScalarsAndEmptyShapes) {
  for (Shape shape : {Shape{}, Shape{0}, Shape{0, 3}, Shape{4, 0, 2}, Shape{1}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Tensor t = Tensor::zeros(DType::F32, shape);
    if (t.num_elements() > 0) t.data<float>()[0] = 2.5f;
    Tensor back = decode_npy(encode_npy(t), "mem.npy");
    EXPECT_TRUE(back.equals(t));
  }
}

TEST(Npy, RoundTripBytesAsFixedWidth) {
  Tensor t = Tensor::from_strings({"ab", "", "hello", "x"}, {2, 2});
  EXPECT_EQ(npy_descr(t), "|S5");
  std::string file = encode_npy(t);
  NpyHeader h;
  Tensor back = decode_npy(file, "mem.npy", &h);
  EXPECT_EQ(h.dtype, DType::Bytes);
  EXPECT_EQ(h.item_size, 5);
  EXPECT_TRUE(back.equals(t));
  // Null-padded to 5 bytes each.
  EXPECT_EQ(file.substr(h.data_offset), std::string("ab\0\0\0\0\0\0\0\0hellox\0\0\0\0", 20));
}

TEST(Npy, AllEmptyStringsAreS1AsNumpyWritesThem) {
  Tensor t = Tensor::from_strings({"", ""}, {2});
  EXPECT_EQ(npy_descr(t), "|S1");
  Tensor back = decode_npy(encode_npy(t), "mem.npy");
  EXPECT_TRUE(back.equals(t));
}

TEST(Npy, TrailingNulsOfAValueAreStrippedOnRead) {
  // numpy's |S items drop trailing NULs; NULs inside a value survive.
  Tensor t = Tensor::from_strings({std::string("a\0b", 3), std::string("c\0\0", 3)}, {2});
  Tensor back = decode_npy(encode_npy(t), "mem.npy");
  EXPECT_EQ(back.str(0), std::string_view("a\0b", 3));
  EXPECT_EQ(back.str(1), "c");
}

TEST(Npy, HeaderIsAlignedTo64LikeNumpy) {
  for (Shape shape : {Shape{}, Shape{7}, Shape{123456789, 0}, Shape{1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 3}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Tensor t = Tensor::zeros(DType::U8, shape);
    std::string file = encode_npy(t);
    std::string text = header_text(file);
    EXPECT_EQ((10 + text.size()) % 64, 0u);
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(text.rfind("{'descr': '|u1', 'fortran_order': False, 'shape': ", 0), 0u);
    EXPECT_EQ(file.size(), 10 + text.size() + static_cast<size_t>(t.num_elements()));
  }
}

TEST(Npy, Bf16HasNoNumpyDtype) {
  ScratchDir dir;
  std::string msg = error_of([&] { write_npy(dir.file("x.npy"), Tensor::zeros(DType::BF16, {2})); });
  EXPECT_NE(msg.find("x.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
}

TEST(Npy, WriteToMissingDirectoryIsIoError) {
  ScratchDir dir;
  std::string path = dir.file("no/such/dir/x.npy");
  try {
    write_npy(path, Tensor::zeros(DType::I32, {1}));
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::Io);
    EXPECT_EQ(e.location().file, path);
  }
}

// ---- Files written by real NumPy

TEST(NpyNumpyFiles, IntegerDtypes) {
  auto check = [](const char* name, DType dtype, auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(name);
    Tensor t = read_npy(fixture(name));
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.shape(), Shape{4});
    std::vector<T> want = {0, 1, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
    EXPECT_EQ(values_of<T>(t), want);
  };
  check("dtype_u1.npy", DType::U8, uint8_t{});
  check("dtype_i1.npy", DType::I8, int8_t{});
  check("dtype_u2.npy", DType::U16, uint16_t{});
  check("dtype_i2.npy", DType::I16, int16_t{});
  check("dtype_u4.npy", DType::U32, uint32_t{});
  check("dtype_i4.npy", DType::I32, int32_t{});
  check("dtype_u8.npy", DType::U64, uint64_t{});
  check("dtype_i8.npy", DType::I64, int64_t{});
}

TEST(NpyNumpyFiles, BoolAndFloats) {
  Tensor b = read_npy(fixture("dtype_b1.npy"));
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(values_of<uint8_t>(b), (std::vector<uint8_t>{0, 1, 1, 0}));

  Tensor f4 = read_npy(fixture("dtype_f4.npy"));
  EXPECT_EQ(f4.dtype(), DType::F32);
  EXPECT_EQ(values_of<float>(f4), (std::vector<float>{0.0f, -1.5f, std::numeric_limits<float>::infinity(),
                                                      std::numeric_limits<float>::max()}));
  Tensor f8 = read_npy(fixture("dtype_f8.npy"));
  EXPECT_EQ(f8.dtype(), DType::F64);
  EXPECT_EQ(values_of<double>(f8), (std::vector<double>{0.0, -1.5, std::numeric_limits<double>::infinity(),
                                                        std::numeric_limits<double>::max()}));
  // float16 bit patterns: 0, -1.5, +inf, 65504.
  Tensor f2 = read_npy(fixture("dtype_f2.npy"));
  EXPECT_EQ(f2.dtype(), DType::F16);
  EXPECT_EQ(values_of<uint16_t>(f2), (std::vector<uint16_t>{0x0000, 0xBE00, 0x7C00, 0x7BFF}));
}

TEST(NpyNumpyFiles, ShapesScalarsAndEmpty) {
  Tensor m = read_npy(fixture("f32_2x3.npy"));
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(m), (std::vector<float>{-1.0f, -0.75f, -0.5f, -0.25f, 0.0f, 0.25f}));

  Tensor s = read_npy(fixture("i64_scalar.npy"));
  EXPECT_EQ(s.dtype(), DType::I64);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(values_of<int64_t>(s), (std::vector<int64_t>{-1234567890123}));

  Tensor u = read_npy(fixture("u16_2x3x4.npy"));
  EXPECT_EQ(u.shape(), (Shape{2, 3, 4}));
  std::vector<uint16_t> want;
  for (int i = 0; i < 24; ++i) want.push_back(static_cast<uint16_t>(i * 1000));
  EXPECT_EQ(values_of<uint16_t>(u), want);

  Tensor e = read_npy(fixture("f32_0x3.npy"));
  EXPECT_EQ(e.dtype(), DType::F32);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
}

TEST(NpyNumpyFiles, ByteStrings) {
  NpyHeader h;
  Tensor t = read_npy(fixture("bytes_2x2.npy"), &h);
  EXPECT_EQ(h.descr, "|S5");
  EXPECT_EQ(t.dtype(), DType::Bytes);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.str(0), "ab");
  EXPECT_EQ(t.str(1), "");
  EXPECT_EQ(t.str(2), "hello");
  EXPECT_EQ(t.str(3), std::string_view("x\0y", 3));

  Tensor e = read_npy(fixture("bytes_empty_strings.npy"), &h);
  EXPECT_EQ(h.descr, "|S1");
  EXPECT_EQ(e.shape(), Shape{3});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(e.str(i), "");
}

TEST(NpyNumpyFiles, FormatVersion2) {
  NpyHeader h;
  Tensor t = read_npy(fixture("i32_v2.npy"), &h);
  EXPECT_EQ(h.version_major, 2);
  EXPECT_EQ(values_of<int32_t>(t), (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(NpyNumpyFiles, PipecWritesTheSameBytesAsNumpy) {
  // Every v1.0 file numpy wrote, decoded and re-encoded, is byte-identical.
  for (const char* name :
       {"dtype_u1.npy", "dtype_i1.npy", "dtype_u2.npy", "dtype_i2.npy", "dtype_u4.npy", "dtype_i4.npy", "dtype_u8.npy",
        "dtype_i8.npy", "dtype_b1.npy", "dtype_f2.npy", "dtype_f4.npy", "dtype_f8.npy", "f32_2x3.npy", "i64_scalar.npy",
        "u16_2x3x4.npy", "bytes_2x2.npy", "bytes_empty_strings.npy", "f32_0x3.npy"}) {
    SCOPED_TRACE(name);
    std::string file = read_file(fixture(name));
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(encode_npy(decode_npy(file, name)), file);
  }
}

// ---- Bad files

struct BadCase {
  const char* file;
  const char* reason;
};

TEST(NpyNumpyFiles, UnsupportedFilesAreRefusedWithTheReason) {
  for (BadCase c : {BadCase{"bad_fortran.npy", "fortran_order True"}, BadCase{"bad_big_endian.npy", "big-endian"},
                    BadCase{"bad_unicode.npy", "unicode"}, BadCase{"bad_complex.npy", "complex"},
                    BadCase{"bad_object.npy", "object arrays"}}) {
    SCOPED_TRACE(c.file);
    std::string msg = error_of([&] { read_npy(fixture(c.file)); });
    EXPECT_NE(msg.find(fixture(c.file)), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.reason), std::string::npos) << msg;
  }
}

TEST(Npy, TruncatedFilesAreDataLoss) {
  ScratchDir dir;
  std::string good = read_file(fixture("f32_2x3.npy"));
  ASSERT_EQ(good.size(), 128u + 24u);
  struct Cut {
    size_t size;
    const char* reason;
  };
  for (Cut c : {Cut{0, "shorter than the magic"}, Cut{4, "shorter than the magic"}, Cut{7, "version"},
                Cut{9, "header length"}, Cut{60, "header says it is 118 bytes"},
                Cut{128, "needs 24 data bytes but only 0"}, Cut{151, "needs 24 data bytes but only 23"}}) {
    SCOPED_TRACE(c.size);
    std::string path = dir.file("cut.npy");
    write_file(path, good.substr(0, c.size));
    try {
      read_npy(path);
      ADD_FAILURE() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
      EXPECT_EQ(e.location().file, path);
      EXPECT_NE(std::string(e.what()).find(c.reason), std::string::npos) << e.what();
    }
  }
}

TEST(Npy, WrongMagicAndVersion) {
  std::string good = read_file(fixture("dtype_u1.npy"));
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  EXPECT_NE(error_of([&] { decode_npy(bad_magic, "m.npy"); }).find("m.npy: not a .npy file: wrong magic"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_npy("PK\x03\x04 a zip file, not npy", "z.npy"); }).find("wrong magic"),
            std::string::npos);
  std::string bad_version = good;
  bad_version[6] = 9;
  EXPECT_NE(error_of([&] { decode_npy(bad_version, "v.npy"); }).find("unsupported .npy format version 9.0"),
            std::string::npos);
}

TEST(Npy, MalformedHeaders) {
  auto with_header = [](std::string dict) {
    std::string h = dict + "\n";
    std::string out = std::string("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(h.size() & 0xff));
    out.push_back(static_cast<char>(h.size() >> 8));
    return out + h + std::string(64, '\0');
  };
  // Accepted variations: key order, double quotes, no trailing comma, Python 2 longs, native order.
  Tensor t = decode_npy(with_header("{\"shape\": (2L, 3), \"fortran_order\": False, \"descr\": \"=i2\"}"), "ok.npy");
  EXPECT_EQ(t.dtype(), DType::I16);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));

  struct Bad {
    std::string dict;
    std::string reason;
  };
  for (const Bad& b : std::vector<Bad>{
           {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
           {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "expected a string, True, False"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 'y'}", "unexpected key 'x'"},
           {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "expected a string, True, False"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integer"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': 3}", "expected a string, True, False or a tuple"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "dimension too large"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", "too large"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (100,)}", "needs 400 data bytes but only 64"},
           {"{'descr': '<f3', 'fortran_order': False, 'shape': (1,)}", "unsupported .npy dtype '<f3'"},
           {"{'descr': '<i16', 'fortran_order': False, 'shape': (1,)}", "unsupported .npy dtype '<i16'"},
           {"{'descr': '|i4', 'fortran_order': False, 'shape': (1,)}", "needs a byte order"},
           {"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}", "malformed .npy header"},
           {"[1, 2]", "expected '{'"},
       }) {
    SCOPED_TRACE(b.dict);
    std::string msg = error_of([&] { decode_npy(with_header(b.dict), "h.npy"); });
    EXPECT_NE(msg.find("h.npy: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.reason), std::string::npos) << msg;
  }
}

TEST(Npy, MissingFileIsNotFound) {
  try {
    read_npy("/nonexistent/dir/x.npy");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.npy"), std::string::npos);
  }
}

}  // namespace
}  // namespace pipec
