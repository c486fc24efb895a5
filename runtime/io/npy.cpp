#include "runtime/io/npy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "runtime/io/errors.h"

namespace pipec {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
// numpy.save leaves room for the growth axis' length to reach this many digits.
constexpr size_t kGrowthAxisMaxDigits = 21;

[[noreturn]] void fail(const std::string& name, DataError::Kind kind, std::string reason) {
  throw DataError(kind, std::move(reason), DataLocation{.file = name});
}
[[noreturn]] void bad(const std::string& name, std::string reason) {
  fail(name, DataError::Kind::DataLoss, std::move(reason));
}

struct DescrEntry {
  DType dtype;
  char kind;  // numpy kind letter
  int size;
};

constexpr DescrEntry kDescrs[] = {
    {DType::Bool, 'b', 1}, {DType::U8, 'u', 1},  {DType::I8, 'i', 1},  {DType::U16, 'u', 2},
    {DType::I16, 'i', 2},  {DType::U32, 'u', 4}, {DType::I32, 'i', 4}, {DType::U64, 'u', 8},
    {DType::I64, 'i', 8},  {DType::F16, 'f', 2}, {DType::F32, 'f', 4}, {DType::F64, 'f', 8},
};

int64_t longest_string(const Tensor& t) {
  int64_t n = 0;
  const auto& off = t.offsets();
  for (size_t i = 0; i + 1 < off.size(); ++i) n = std::max(n, off[i + 1] - off[i]);
  return n;
}

std::string shape_repr(const Shape& shape) {
  if (shape.empty()) return "()";
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + ")";
}

// ---- header parsing: a Python dict literal with string keys and str / bool / tuple-of-int values.

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  struct Value {
    enum Kind { Str, Bool, Tuple } kind = Str;
    std::string str;
    bool boolean = false;
    Shape tuple;
  };

  // Calls on_entry(key, value) for each entry.
  template <class F>
  void parse(F&& on_entry) {
    ws();
    expect('{');
    ws();
    while (!at('}')) {
      std::string key = string_lit();
      ws();
      expect(':');
      ws();
      Value v = value();
      on_entry(key, v);
      ws();
      if (at(',')) {
        ++i_;
        ws();
      } else if (!at('}')) {
        error("expected ',' or '}'");
      }
    }
    ++i_;
    ws();
    if (i_ != s_.size()) error("unexpected text after the dictionary");
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    bad(name_, fmt::format("malformed .npy header: {} at character {} of \"{}\"", what, i_, printable()));
  }
  std::string printable() const {
    std::string out;
    for (char c : s_) {
      if (c == '\n') out += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) out += '?';
      else out += c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (!at(c)) error(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string string_lit() {
    if (!at('\'') && !at('"')) error("expected a quoted string");
    char q = s_[i_++];
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') error("escapes are not supported in header strings");
      out += s_[i_++];
    }
    if (i_ >= s_.size()) error("unterminated string");
    ++i_;
    return out;
  }
  Value value() {
    Value v;
    if (at('\'') || at('"')) {
      v.kind = Value::Str;
      v.str = string_lit();
    } else if (s_.substr(i_, 4) == "True") {
      v.kind = Value::Bool;
      v.boolean = true;
      i_ += 4;
    } else if (s_.substr(i_, 5) == "False") {
      v.kind = Value::Bool;
      v.boolean = false;
      i_ += 5;
    } else if (at('(') || at('[')) {
      char close = at('(') ? ')' : ']';
      ++i_;
      v.kind = Value::Tuple;
      ws();
      while (!at(close)) {
        v.tuple.push_back(integer());
        ws();
        if (at(',')) {
          ++i_;
          ws();
        } else if (!at(close)) {
          error(fmt::format("expected ',' or '{}'", close));
        }
      }
      ++i_;
    } else {
      error("expected a string, True, False or a tuple");
    }
    return v;
  }
  int64_t integer() {
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') error("expected a non-negative integer");
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      int d = s_[i_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) error("dimension too large");
      v = v * 10 + d;
    }
    if (at('L')) ++i_;  // Python 2 long suffix
    return v;
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

// Maps a descr string to (dtype, item size); throws for what pipec cannot hold.
[[noreturn]] void unsupported_dtype(const std::string& name, const std::string& descr, const std::string& why) {
  fail(name, DataError::Kind::InvalidArgument, fmt::format("unsupported .npy dtype '{}': {}", descr, why));
}

void resolve_descr(const std::string& descr, const std::string& name, NpyHeader& h) {
  if (descr.size() < 2) unsupported_dtype(name, descr, "not a NumPy type string");
  char order = descr[0];
  std::string_view rest(descr);
  if (order == '<' || order == '>' || order == '|' || order == '=') rest.remove_prefix(1);
  else order = '=';
  if (rest.empty()) unsupported_dtype(name, descr, "not a NumPy type string");
  char kind = rest[0];
  std::string_view digits = rest.substr(1);
  switch (kind) {
    case 'O': unsupported_dtype(name, descr, "object arrays are stored pickled, which pipec does not read");
    case 'U': unsupported_dtype(name, descr, "unicode strings are not supported; store byte strings (|S<n>)");
    case 'c': unsupported_dtype(name, descr, "complex numbers are not supported");
    case 'V': unsupported_dtype(name, descr, "raw void / structured records are not supported");
    case 'M':
    case 'm': unsupported_dtype(name, descr, "datetimes are not supported");
    default: break;
  }
  int64_t size = 0;
  if (digits.empty()) {
    if (kind != 'S') unsupported_dtype(name, descr, "no item size");
  }
  for (char c : digits) {
    if (c < '0' || c > '9') unsupported_dtype(name, descr, "not a NumPy type string");
    size = size * 10 + (c - '0');
    if (size > (int64_t{1} << 40)) unsupported_dtype(name, descr, "item size too large");
  }
  if (kind == 'S') {
    h.dtype = DType::Bytes;
    h.item_size = size;
    return;
  }
  for (const DescrEntry& e : kDescrs) {
    if (e.kind == kind && e.size == size) {
      if (size > 1 && order == '>')
        unsupported_dtype(name, descr, "big-endian data is not supported; save it little-endian ('<')");
      if (size > 1 && order == '|') unsupported_dtype(name, descr, "a multi-byte type needs a byte order");
      h.dtype = e.dtype;
      h.item_size = size;
      return;
    }
  }
  unsupported_dtype(name, descr, "pipec reads bool, (u)int8/16/32/64, float16/32/64 and byte strings");
}

}  // namespace

std::string npy_descr(DType dtype, int64_t string_item_size) {
  if (dtype == DType::Bytes) return fmt::format("|S{}", std::max<int64_t>(1, string_item_size));
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) return fmt::format("{}{}{}", e.size == 1 ? '|' : '<', e.kind, e.size);
  throw DataError(DataError::Kind::InvalidArgument,
                  fmt::format("{} has no NumPy dtype and cannot be written as .npy", dtype_name(dtype)));
}

std::string npy_descr(const Tensor& t) {
  return npy_descr(t.dtype(), t.dtype() == DType::Bytes ? longest_string(t) : 1);
}

std::string encode_npy(const Tensor& t) {
  std::string descr = npy_descr(t);
  const Shape& shape = t.shape();
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_repr(shape));
  if (!shape.empty()) {
    size_t digits = fmt::format("{}", shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  size_t hlen = dict.size() + 1;  // + '\n'
  bool v2 = false;
  size_t prefix = kMagicLen + 2 + 2;
  size_t pad = kAlign - ((prefix + hlen) % kAlign);
  if (hlen + pad > 0xffff) {
    v2 = true;
    prefix = kMagicLen + 2 + 4;
    pad = kAlign - ((prefix + hlen) % kAlign);
  }
  size_t header_len = hlen + pad;

  int64_t n = t.num_elements();
  int64_t item = t.dtype() == DType::Bytes ? std::max<int64_t>(1, longest_string(t)) : int64_t(dtype_size(t.dtype()));
  std::string out;
  out.reserve(prefix + header_len + static_cast<size_t>(n * item));
  out.append(kMagic, kMagicLen);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xff));
  out += dict;
  out.append(pad, ' ');
  out.push_back('\n');

  if (t.dtype() == DType::Bytes) {
    size_t start = out.size();
    out.append(static_cast<size_t>(n * item), '\0');
    for (int64_t i = 0; i < n; ++i) {
      std::string_view s = t.str(i);
      std::memcpy(out.data() + start + static_cast<size_t>(i * item), s.data(), s.size());
    }
  } else {
    out.append(reinterpret_cast<const char*>(t.raw()), t.byte_size());
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string bytes;
  try {
    bytes = encode_npy(t);
  } catch (const DataError& e) {
    throw e.with_location(DataLocation{.file = path});
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, DataError::Kind::Io, fmt::format("cannot create file: {}", std::strerror(errno)));
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int err = written == bytes.size() ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  if (err != 0 || written != bytes.size()) {
    std::remove(path.c_str());
    fail(path, DataError::Kind::Io, fmt::format("write failed: {}", std::strerror(err ? err : EIO)));
  }
}

NpyHeader parse_npy_header(std::string_view bytes, const std::string& name) {
  NpyHeader h;
  if (bytes.size() < kMagicLen || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) {
    if (bytes.size() < kMagicLen && std::memcmp(bytes.data(), kMagic, bytes.size()) == 0)
      bad(name, fmt::format("truncated .npy file: {} bytes, shorter than the magic string", bytes.size()));
    bad(name, "not a .npy file: wrong magic (expected \"\\x93NUMPY\")");
  }
  if (bytes.size() < kMagicLen + 2) bad(name, "truncated .npy file: ends inside the version bytes");
  h.version_major = static_cast<unsigned char>(bytes[6]);
  h.version_minor = static_cast<unsigned char>(bytes[7]);
  if (h.version_major < 1 || h.version_major > 3 || h.version_minor != 0)
    bad(name, fmt::format("unsupported .npy format version {}.{}", h.version_major, h.version_minor));
  size_t len_bytes = h.version_major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) bad(name, "truncated .npy file: ends inside the header length");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    header_len |= uint64_t(static_cast<unsigned char>(bytes[kMagicLen + 2 + i])) << (8 * i);
  if (bytes.size() - prefix < header_len)
    bad(name, fmt::format("truncated .npy file: the header says it is {} bytes but only {} follow", header_len,
                          bytes.size() - prefix));
  std::string_view text = bytes.substr(prefix, header_len);
  h.data_offset = prefix + header_len;

  bool have_descr = false, have_order = false, have_shape = false;
  HeaderParser parser(text, name);
  parser.parse([&](const std::string& key, const HeaderParser::Value& v) {
    if (key == "descr") {
      if (v.kind != HeaderParser::Value::Str)
        fail(name, DataError::Kind::InvalidArgument,
             "unsupported .npy dtype: 'descr' is not a simple type string (structured arrays are not supported)");
      h.descr = v.str;
      have_descr = true;
    } else if (key == "fortran_order") {
      if (v.kind != HeaderParser::Value::Bool) bad(name, "malformed .npy header: 'fortran_order' is not True or False");
      h.fortran_order = v.boolean;
      have_order = true;
    } else if (key == "shape") {
      if (v.kind != HeaderParser::Value::Tuple) bad(name, "malformed .npy header: 'shape' is not a tuple");
      h.shape = v.tuple;
      have_shape = true;
    } else {
      bad(name, fmt::format("malformed .npy header: unexpected key '{}'", key));
    }
  });
  if (!have_descr || !have_order || !have_shape)
    bad(name, fmt::format("malformed .npy header: missing key '{}'", !have_descr   ? "descr"
                                                                     : !have_order ? "fortran_order"
                                                                                   : "shape"));
  resolve_descr(h.descr, name, h);
  if (h.fortran_order) {
    // A 0-d or 1-d array has the same layout either way, but numpy never writes those as Fortran order;
    // refuse them all rather than guess.
    fail(name, DataError::Kind::InvalidArgument,
         "fortran_order True (column-major) arrays are not supported; save a C-ordered array "
         "(numpy.ascontiguousarray)");
  }
  return h;
}

Tensor decode_npy(std::string_view bytes, const std::string& name, NpyHeader* header_out) {
  NpyHeader h = parse_npy_header(bytes, name);
  // Element count, guarding against overflow from absurd shapes.
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : h.shape) {
    if (d == 0) zero = true;
    else if (!zero && n > std::numeric_limits<int64_t>::max() / d)
      bad(name, fmt::format("malformed .npy header: shape {} is too large", shape_to_string(h.shape)));
    else if (!zero) n *= d;
  }
  if (zero) n = 0;
  size_t avail = bytes.size() - h.data_offset;
  if (h.item_size > 0 && n > 0 && static_cast<uint64_t>(n) > avail / static_cast<uint64_t>(h.item_size))
    bad(name,
        fmt::format("truncated .npy file: shape {} of '{}' needs {} data bytes but only {} follow the header",
                    shape_to_string(h.shape), h.descr,
                    static_cast<unsigned long long>(static_cast<uint64_t>(n) * static_cast<uint64_t>(h.item_size)),
                    avail));
  const char* data = bytes.data() + h.data_offset;
  Tensor t;
  if (h.dtype == DType::Bytes) {
    std::string blob;
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<size_t>(n) + 1);
    offsets.push_back(0);
    for (int64_t i = 0; i < n; ++i) {
      const char* item = data + static_cast<size_t>(i * h.item_size);
      size_t len = static_cast<size_t>(h.item_size);
      while (len > 0 && item[len - 1] == '\0') --len;  // numpy strips trailing NULs from S items
      blob.append(item, len);
      offsets.push_back(static_cast<int64_t>(blob.size()));
    }
    t = Tensor::empty(DType::Bytes, h.shape);
    t.set_strings(std::move(blob), std::move(offsets));
  } else {
    t = Tensor::empty(h.dtype, h.shape);
    if (n > 0) std::memcpy(t.raw(), data, static_cast<size_t>(n * h.item_size));
  }
  if (header_out) *header_out = std::move(h);
  return t;
}

Tensor read_npy(const std::string& path, NpyHeader* header) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    int err = errno;
    fail(path, err == ENOENT ? DataError::Kind::NotFound : DataError::Kind::Io,
         fmt::format("cannot open file: {}", std::strerror(err)));
  }
  std::string bytes;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, got);
  bool error = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (error) fail(path, DataError::Kind::Io, fmt::format("read failed: {}", std::strerror(err)));
  return decode_npy(bytes, path, header);
}

}  // namespace pipec
