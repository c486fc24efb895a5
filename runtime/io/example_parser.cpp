#include "runtime/io/example_parser.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "runtime/io/errors.h"
#include "runtime/io/protobuf_wire.h"

namespace pipec {
namespace {

using wire::WireError;
using wire::WireReader;

// Feature's oneof field numbers; 0 = no kind set.
constexpr uint32_t kNoKind = 0;
constexpr uint32_t kBytesList = 1;
constexpr uint32_t kFloatList = 2;
constexpr uint32_t kInt64List = 3;

constexpr size_t kLinearLookupMax = 8;

uint32_t field_of(FeatureKind k) {
  switch (k) {
    case FeatureKind::Bytes: return kBytesList;
    case FeatureKind::Float: return kFloatList;
    case FeatureKind::Int64: return kInt64List;
  }
  return kNoKind;
}

std::string_view list_name_of_field(uint32_t field) {
  return field == kBytesList ? "bytes_list" : field == kFloatList ? "float_list" : "int64_list";
}

uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: names are short, so this is a few cycles
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// Thrown inside the per-record loop, turned into a located DataError by parse_batch.
struct FeatureError {
  DataError::Kind kind;
  std::string reason;
};

// ---- where the values of one feature go ----------------------------------------------------------

// Fixed shape, numeric: straight into the record's row of the dense output. Values beyond the
// expected count are counted (for the error message) but not stored.
template <class T>
struct DenseSink {
  T* row;
  int64_t capacity;
  int64_t n = 0;
  void add(T v) {
    if (n < capacity) row[n] = v;
    ++n;
  }
  void add_raw_floats(const char* p, int64_t m) {
    if constexpr (std::is_same_v<T, float> && std::endian::native == std::endian::little) {
      if (m == 0) return;  // as in VectorSink: `row` is null for a row of no values
      if (n + m <= capacity) {
        std::memcpy(row + n, p, static_cast<size_t>(m) * 4);
        n += m;
        return;
      }
    }
    for (int64_t i = 0; i < m; ++i) add(load_float(p + 4 * i));
  }
  static float load_float(const char* p) { return std::bit_cast<float>(load_le32(p)); }
};

// Variable length, numeric: appended to the batch's value vector.
template <class T>
struct VectorSink {
  std::vector<T>* values;
  int64_t n = 0;
  void add(T v) {
    values->push_back(v);
    ++n;
  }
  void add_raw_floats(const char* p, int64_t m) {
    if constexpr (std::is_same_v<T, float> && std::endian::native == std::endian::little) {
      if (m == 0) return;  // an empty list: values->data() may be null, which memcpy must not get
      size_t old = values->size();
      values->resize(old + static_cast<size_t>(m));
      std::memcpy(values->data() + old, p, static_cast<size_t>(m) * 4);
      n += m;
    } else {
      for (int64_t i = 0; i < m; ++i) add(DenseSink<float>::load_float(p + 4 * i));
    }
  }
};

// Bytes (fixed count or variable): appended to the batch's blob + offsets.
struct StringSink {
  std::string* blob;
  std::vector<int64_t>* offsets;
  int64_t capacity;  // -1 = unbounded
  int64_t n = 0;
  void add(std::string_view s) {
    if (capacity < 0 || n < capacity) {
      blob->append(s);
      offsets->push_back(static_cast<int64_t>(blob->size()));
    }
    ++n;
  }
};

// Bytes with a fixed byte length: copied into the record's row of a U8 tensor.
struct FixedBytesSink {
  uint8_t* row;
  int64_t capacity;
  int64_t byte_length;
  const std::string* name;
  int64_t n = 0;
  void add(std::string_view s) {
    if (static_cast<int64_t>(s.size()) != byte_length)
      throw FeatureError{
          DataError::Kind::InvalidArgument,
          fmt::format("feature '{}' has a value of {} bytes, expected {}", *name, s.size(), byte_length)};
    if (n < capacity) std::memcpy(row + n * byte_length, s.data(), s.size());
    ++n;
  }
};

// ---- decoding the value lists -------------------------------------------------------------------

template <class Sink>
void decode_int64_list(std::string_view list, Sink& sink) {
  WireReader r(list);
  while (!r.done()) {
    uint32_t wt;
    uint32_t field = r.tag(wt);
    if (field != 1) {
      r.skip(wt);
    } else if (wt == wire::kLengthDelimited) {  // packed (what TensorFlow writes)
      WireReader packed(r.bytes());
      while (!packed.done()) sink.add(static_cast<int64_t>(packed.varint()));
    } else if (wt == wire::kVarint) {  // unpacked: one value per tag
      sink.add(static_cast<int64_t>(r.varint()));
    } else {
      throw WireError{"an int64_list value has the wrong wire type", r.pos()};
    }
  }
}

template <class Sink>
void decode_float_list(std::string_view list, Sink& sink) {
  WireReader r(list);
  while (!r.done()) {
    uint32_t wt;
    const char* at = r.pos();
    uint32_t field = r.tag(wt);
    if (field != 1) {
      r.skip(wt);
    } else if (wt == wire::kLengthDelimited) {
      std::string_view packed = r.bytes();
      if (packed.size() % 4 != 0) throw WireError{"a packed float_list is not a multiple of 4 bytes long", at};
      sink.add_raw_floats(packed.data(), static_cast<int64_t>(packed.size() / 4));
    } else if (wt == wire::kFixed32) {
      sink.add(std::bit_cast<float>(r.fixed32()));
    } else {
      throw WireError{"a float_list value has the wrong wire type", at};
    }
  }
}

template <class Sink>
void decode_bytes_list(std::string_view list, Sink& sink) {
  WireReader r(list);
  while (!r.done()) {
    uint32_t wt;
    const char* at = r.pos();
    uint32_t field = r.tag(wt);
    if (field != 1) {
      r.skip(wt);
    } else if (wt == wire::kLengthDelimited) {
      sink.add(r.bytes());
    } else {
      throw WireError{"a bytes_list value has the wrong wire type", at};
    }
  }
}

// Which kind a Feature holds, and where its value lists are. Almost always exactly one list; the
// general case follows protobuf's rules: a oneof set several times keeps the last kind, and a
// message field repeated within it merges (the lists concatenate).
struct FeatureLists {
  uint32_t kind = kNoKind;
  std::string_view first;           // the first list of the final kind's run
  const char* run_start = nullptr;  // where that run starts in the Feature
  bool several = false;             // more than one list in the run
};

FeatureLists scan_feature(std::string_view feature) {
  FeatureLists f;
  // Fast path for what TensorFlow writes: exactly one list, "<tag> <length> <list>" and nothing
  // else. Anything else (or a length that does not fit) takes the general loop below.
  if (feature.size() >= 2) {
    uint8_t tag = static_cast<uint8_t>(feature[0]);
    uint8_t len = static_cast<uint8_t>(feature[1]);
    uint32_t field = tag >> 3;
    if ((tag & 7) == wire::kLengthDelimited && field >= kBytesList && field <= kInt64List && len < 0x80 &&
        size_t(len) + 2 == feature.size()) {
      f.kind = field;
      f.first = feature.substr(2);
      f.run_start = feature.data();
      return f;
    }
  }
  WireReader r(feature);
  while (!r.done()) {
    uint32_t wt;
    const char* at = r.pos();
    uint32_t field = r.tag(wt);
    if (field >= kBytesList && field <= kInt64List) {
      if (wt != wire::kLengthDelimited) throw WireError{"a Feature list has the wrong wire type", at};
      std::string_view list = r.bytes();
      if (field != f.kind) {
        f.kind = field;
        f.first = list;
        f.run_start = at;
        f.several = false;
      } else {
        f.several = true;
      }
    } else {
      r.skip(wt);
    }
  }
  return f;
}

template <class Fn>
void for_each_list(std::string_view feature, const FeatureLists& f, Fn&& fn) {
  if (!f.several) {
    fn(f.first);
    return;
  }
  WireReader r(std::string_view(f.run_start, feature.data() + feature.size() - f.run_start));
  while (!r.done()) {
    uint32_t wt;
    uint32_t field = r.tag(wt);
    if (field == f.kind) fn(r.bytes());  // wire type already checked by scan_feature
    else r.skip(wt);
  }
}

// Decodes every list of the Feature into `sink`; Kind is the list's field number, already checked
// to match the spec.
template <uint32_t Kind, class Sink>
void decode_lists(std::string_view feature, const FeatureLists& f, Sink& sink) {
  for_each_list(feature, f, [&](std::string_view list) {
    if constexpr (Kind == kInt64List) decode_int64_list(list, sink);
    else if constexpr (Kind == kFloatList) decode_float_list(list, sink);
    else decode_bytes_list(list, sink);
  });
}

}  // namespace

// ---- construction -------------------------------------------------------------------------------

ExampleParser::ExampleParser(std::vector<FeatureSpec> specs) : specs_(std::move(specs)) {
  size_t size = 8;
  while (size < 2 * specs_.size()) size *= 2;
  table_.assign(size, -1);
  table_mask_ = size - 1;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const FeatureSpec& s = specs_[i];
    s.validate();
    if (find_hashed(s.name) >= 0)
      throw DataError(DataError::Kind::InvalidArgument, fmt::format("feature '{}' is requested twice", s.name));
    uint64_t h = hash_name(s.name) & table_mask_;
    while (table_[h] >= 0) h = (h + 1) & table_mask_;
    table_[h] = static_cast<int32_t>(i);

    Plan p;
    p.count = s.values_per_record();
    p.byte_length = s.byte_length;
    p.dtype = s.output_dtype();
    if (p.count >= 0 && p.dtype != DType::Bytes)
      p.dense_row_bytes = static_cast<size_t>(p.count) * dtype_size(p.dtype) *
                          static_cast<size_t>(p.byte_length >= 0 ? p.byte_length : 1);
    if (s.default_value) {
      p.has_default = true;
      // A one-value default of a fixed-shape feature is repeated to fill the shape.
      auto expand = [&](const auto& values) {
        auto row = values;
        if (p.count >= 0 && row.size() == 1) row.assign(static_cast<size_t>(p.count), values[0]);
        return row;
      };
      std::visit(
          [&](const auto& values) {
            using V = std::decay_t<decltype(values)>;
            V row = expand(values);
            p.default_count = static_cast<int64_t>(row.size());
            if constexpr (std::is_same_v<V, std::vector<std::string>>) {
              if (p.byte_length >= 0) {
                for (const auto& str : row) p.default_raw += str;
              } else {
                p.default_strings = std::move(row);
              }
            } else {
              p.default_raw.assign(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(row[0]));
            }
          },
          *s.default_value);
    }
    plans_.push_back(std::move(p));
  }
}

int ExampleParser::find(std::string_view name) const {
  // With a handful of features (the common case) comparing lengths first beats hashing the key.
  if (specs_.size() <= kLinearLookupMax) {
    for (size_t i = 0; i < specs_.size(); ++i)
      if (specs_[i].name.size() == name.size() && std::memcmp(specs_[i].name.data(), name.data(), name.size()) == 0)
        return static_cast<int>(i);
    return -1;
  }
  return find_hashed(name);
}

int ExampleParser::find_hashed(std::string_view name) const {
  uint64_t h = hash_name(name) & table_mask_;
  for (;;) {
    int32_t i = table_[h];
    if (i < 0) return -1;
    if (specs_[static_cast<size_t>(i)].name == name) return i;
    h = (h + 1) & table_mask_;
  }
}

// ---- parsing ------------------------------------------------------------------------------------

namespace {

// The per-batch output being built for one feature.
struct ColumnBuilder {
  Tensor dense;                  // fixed numeric / U8
  std::string blob;              // Bytes
  std::vector<int64_t> offsets;  // Bytes
  std::vector<int64_t> ints;     // variable-length int64
  std::vector<float> floats;     // variable-length float
  Tensor row_splits;             // variable length
};

// Finds the requested features of one Example: found[i] / feature[i] for specs()[i].
template <class Find>
void scan_example(std::string_view record, const Find& find, std::vector<std::string_view>& feature,
                  std::vector<uint8_t>& found) {
  WireReader ex(record);
  while (!ex.done()) {
    uint32_t wt;
    const char* at = ex.pos();
    uint32_t field = ex.tag(wt);
    if (field != 1) {  // not Example.features (e.g. SequenceExample.feature_lists): skip
      ex.skip(wt);
      continue;
    }
    if (wt != wire::kLengthDelimited) throw WireError{"Example.features has the wrong wire type", at};
    // Example.features may appear more than once; protobuf merges them, so just keep scanning.
    WireReader features(ex.bytes());
    while (!features.done()) {
      const char* entry_at = features.pos();
      uint32_t field2 = features.tag(wt);
      if (field2 != 1) {
        features.skip(wt);
        continue;
      }
      if (wt != wire::kLengthDelimited) throw WireError{"a Features map entry has the wrong wire type", entry_at};
      // A map entry is {string key = 1; Feature value = 2;}, in any order.
      WireReader entry(features.bytes());
      std::string_view key, value;
      while (!entry.done()) {
        const char* field_at = entry.pos();
        uint32_t f = entry.tag(wt);
        if (f == 1 || f == 2) {
          if (wt != wire::kLengthDelimited)
            throw WireError{"a Features map entry field has the wrong wire type", field_at};
          (f == 1 ? key : value) = entry.bytes();
        } else {
          entry.skip(wt);
        }
      }
      int i = find(key);
      if (i >= 0) {
        // A repeated key: the last entry wins, as in protobuf maps.
        feature[static_cast<size_t>(i)] = value;
        found[static_cast<size_t>(i)] = 1;
      }
    }
  }
}

// ---- the fast path: records laid out as TensorFlow writes them ---------------------------------
//
// Nearly every record of a file comes from one writer: each map entry exactly "key, value", each
// Feature exactly one list, numbers packed, and the features in the same order in every record. The
// fast path reads such records without the general loops over wire types, and matches each key
// against the key at the same place in the previous record (one short compare per entry, a lookup
// only where the order changes). On anything else it returns false, having written nothing that the
// general path does not write again, and the general path reads the record (or feature) afresh: its
// results and its errors are the only ones there are.

// A bounds-checked varint, computed as WireReader::varint computes it; false where WireReader would
// throw (past `end`, longer than 10 bytes).
inline bool fast_varint(const char*& p, const char* end, uint64_t& v) {
  if (p != end && static_cast<uint8_t>(*p) < 0x80) {
    v = static_cast<uint8_t>(*p++);
    return true;
  }
  v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    const auto b = static_cast<uint8_t>(*p++);
    v |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) return true;
  }
  return false;
}

// Reads a length-delimited field's length and checks that the value fits before `end`.
inline bool fast_length(const char*& p, const char* end, size_t& n) {
  uint64_t v;
  if (!fast_varint(p, end, v) || v > static_cast<uint64_t>(end - p)) return false;
  n = static_cast<size_t>(v);
  return true;
}

inline bool fast_tag(const char*& p, const char* end, uint8_t tag) {
  if (p == end || static_cast<uint8_t>(*p) != tag) return false;
  ++p;
  return true;
}

// The key at one place of the previous record's map, and the spec it named (-1: none).
struct SeenKey {
  std::string_view key;
  int index = -1;
};

inline bool same_key(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)  // names are short: a loop beats a call to memcmp
    if (a[k] != b[k]) return false;
  return true;
}

constexpr uint8_t kLengthDelimitedTag1 = 1 << 3 | wire::kLengthDelimited;  // field 1
constexpr uint8_t kLengthDelimitedTag2 = 2 << 3 | wire::kLengthDelimited;  // field 2

// scan_example for a record of one Example.features whose entries are exactly {key, value}. `seen`
// holds the previous record's keys in order (views into that record, alive for the batch).
template <class Find>
bool fast_scan_example(std::string_view record, const Find& find, std::vector<SeenKey>& seen,
                       std::vector<std::string_view>& feature, std::vector<uint8_t>& found) {
  const char* p = record.data();
  const char* const end = p + record.size();
  size_t n;
  if (!fast_tag(p, end, kLengthDelimitedTag1) || !fast_length(p, end, n) || p + n != end) return false;
  for (size_t at = 0; p != end; ++at) {
    if (!fast_tag(p, end, kLengthDelimitedTag1) || !fast_length(p, end, n)) return false;
    const char* const entry_end = p + n;
    size_t key_size, value_size;
    if (!fast_tag(p, entry_end, kLengthDelimitedTag1) || !fast_length(p, entry_end, key_size)) return false;
    const std::string_view key(p, key_size);
    p += key_size;
    if (!fast_tag(p, entry_end, kLengthDelimitedTag2) || !fast_length(p, entry_end, value_size) ||
        p + value_size != entry_end)
      return false;
    const std::string_view value(p, value_size);
    p = entry_end;
    int i;
    if (at < seen.size() && same_key(seen[at].key, key)) {
      i = seen[at].index;
    } else {
      i = find(key);
      if (at < seen.size()) seen[at] = {key, i};
      else seen.push_back({key, i});
    }
    if (i >= 0) {  // a repeated key: the last entry wins, as in the general path
      feature[static_cast<size_t>(i)] = value;
      found[static_cast<size_t>(i)] = 1;
    }
  }
  return true;
}

// parse_fixed for a numeric or fixed-length-bytes feature (p.count > 0) whose Feature is exactly one
// list of the spec's kind holding exactly p.count values: packed numbers, or byte strings of
// p.byte_length bytes. Writes only the record's row of the dense column.
bool fast_parse_fixed(const ExampleParser::Plan& p, uint8_t list_tag, ColumnBuilder& col, size_t r,
                      std::string_view feature) {
  const char* q = feature.data();
  const char* const end = q + feature.size();
  size_t n;
  if (!fast_tag(q, end, list_tag) || !fast_length(q, end, n) || q + n != end) return false;
  char* row = reinterpret_cast<char*>(col.dense.raw()) + r * p.dense_row_bytes;
  if (p.dtype == DType::U8) {
    const auto b = static_cast<size_t>(p.byte_length);
    for (int64_t v = 0; v < p.count; ++v) {
      if (!fast_tag(q, end, kLengthDelimitedTag1) || !fast_length(q, end, n) || n != b) return false;
      std::memcpy(row + static_cast<size_t>(v) * b, q, b);
      q += b;
    }
    return q == end;
  }
  if (!fast_tag(q, end, kLengthDelimitedTag1) || !fast_length(q, end, n) || q + n != end) return false;
  if (p.dtype == DType::F32) {
    if constexpr (std::endian::native != std::endian::little) return false;
    if (n != p.dense_row_bytes) return false;
    std::memcpy(row, q, n);
    return true;
  }
  auto* out = reinterpret_cast<int64_t*>(row);
  for (int64_t v = 0; v < p.count; ++v) {
    uint64_t x;
    if (!fast_varint(q, end, x)) return false;
    out[v] = static_cast<int64_t>(x);
  }
  return q == end;
}

// The tag of the list a fixed feature's fast path accepts; 0 where it takes the general path.
uint8_t fast_list_tag(const FeatureSpec& s, const ExampleParser::Plan& p) {
  const bool dense = p.dtype == DType::U8 || p.dtype == DType::I64 || p.dtype == DType::F32;
  if (p.count <= 0 || !dense) return 0;
  return static_cast<uint8_t>(field_of(s.kind) << 3 | wire::kLengthDelimited);
}

[[noreturn]] void missing(const FeatureSpec& s, bool kind_unset) {
  throw FeatureError{DataError::Kind::InvalidArgument,
                     kind_unset ? fmt::format("feature '{}' is missing (present, but with no kind "
                                              "set) and has no default",
                                              s.name)
                                : fmt::format("feature '{}' is missing and has no default", s.name)};
}

[[noreturn]] void wrong_kind(const FeatureSpec& s, uint32_t kind) {
  throw FeatureError{DataError::Kind::InvalidArgument,
                     fmt::format("feature '{}' is {} but the spec says {}", s.name, list_name_of_field(kind),
                                 feature_kind_name(s.kind))};
}

[[noreturn]] void wrong_count(const FeatureSpec& s, int64_t got, int64_t want) {
  throw FeatureError{DataError::Kind::InvalidArgument,
                     fmt::format("feature '{}' has {} value{}, expected {}", s.name, got, got == 1 ? "" : "s", want)};
}

// One record's value of a fixed-shape feature.
void parse_fixed(const FeatureSpec& s, const ExampleParser::Plan& p, ColumnBuilder& col, size_t r, bool present,
                 std::string_view feature) {
  FeatureLists lists;
  if (present) lists = scan_feature(feature);
  const bool absent = !present || lists.kind == kNoKind;
  if (!absent && lists.kind != field_of(s.kind)) wrong_kind(s, lists.kind);

  int64_t got = 0;
  if (!absent) {
    if (p.dtype == DType::Bytes) {
      StringSink sink{&col.blob, &col.offsets, p.count};
      decode_lists<kBytesList>(feature, lists, sink);
      got = sink.n;
    } else {
      char* row = reinterpret_cast<char*>(col.dense.raw()) + r * p.dense_row_bytes;
      if (p.dtype == DType::U8) {
        FixedBytesSink sink{reinterpret_cast<uint8_t*>(row), p.count, p.byte_length, &s.name};
        decode_lists<kBytesList>(feature, lists, sink);
        got = sink.n;
      } else if (p.dtype == DType::F32) {
        DenseSink<float> sink{reinterpret_cast<float*>(row), p.count};
        decode_lists<kFloatList>(feature, lists, sink);
        got = sink.n;
      } else {
        DenseSink<int64_t> sink{reinterpret_cast<int64_t*>(row), p.count};
        decode_lists<kInt64List>(feature, lists, sink);
        got = sink.n;
      }
    }
    if (got == p.count) return;
  }
  // Missing: the default, if there is one. A list that is present but has the wrong number of values
  // (even none) is an error, as in tf.io.parse_example.
  if (!p.has_default) {
    if (absent) missing(s, present);
    wrong_count(s, got, p.count);
  }
  if (!absent) wrong_count(s, got, p.count);
  if (p.dtype == DType::Bytes) {
    for (const auto& v : p.default_strings) {
      col.blob += v;
      col.offsets.push_back(static_cast<int64_t>(col.blob.size()));
    }
  } else {
    std::memcpy(col.dense.raw() + r * p.dense_row_bytes, p.default_raw.data(), p.dense_row_bytes);
  }
}

// Appends values stored as raw bytes (a default row) without assuming the bytes are aligned.
template <class T>
void append_raw(std::vector<T>& values, const std::string& raw) {
  if (raw.empty()) return;  // an empty default: nothing to copy, and values.data() may be null
  size_t old = values.size();
  values.resize(old + raw.size() / sizeof(T));
  std::memcpy(values.data() + old, raw.data(), raw.size());
}

// One record's row of a variable-length feature.
void parse_variable(const FeatureSpec& s, const ExampleParser::Plan& p, ColumnBuilder& col, size_t r, bool present,
                    std::string_view feature) {
  int64_t* splits = col.row_splits.data<int64_t>();
  FeatureLists lists;
  if (present) lists = scan_feature(feature);
  if (!present) {
    if (!p.has_default) missing(s, false);
    if (p.dtype == DType::Bytes) {
      for (const auto& v : p.default_strings) {
        col.blob += v;
        col.offsets.push_back(static_cast<int64_t>(col.blob.size()));
      }
    } else if (p.dtype == DType::F32) {
      append_raw(col.floats, p.default_raw);
    } else {
      append_raw(col.ints, p.default_raw);
    }
  } else if (lists.kind != kNoKind) {  // no kind set = an empty row
    if (lists.kind != field_of(s.kind)) wrong_kind(s, lists.kind);
    if (p.dtype == DType::Bytes) {
      StringSink sink{&col.blob, &col.offsets, -1};
      decode_lists<kBytesList>(feature, lists, sink);
    } else if (p.dtype == DType::F32) {
      VectorSink<float> sink{&col.floats};
      decode_lists<kFloatList>(feature, lists, sink);
    } else {
      VectorSink<int64_t> sink{&col.ints};
      decode_lists<kInt64List>(feature, lists, sink);
    }
  }
  int64_t total = p.dtype == DType::Bytes ? static_cast<int64_t>(col.offsets.size()) - 1
                  : p.dtype == DType::F32 ? static_cast<int64_t>(col.floats.size())
                                          : static_cast<int64_t>(col.ints.size());
  splits[r + 1] = total;
}

}  // namespace

void ExampleParser::parse_batch(std::span<const std::string_view> records, std::vector<ParsedColumn>& out) const {
  const size_t n = records.size();
  const size_t nf = specs_.size();
  const int64_t batch = static_cast<int64_t>(n);

  std::vector<ColumnBuilder> cols(nf);
  for (size_t i = 0; i < nf; ++i) {
    const FeatureSpec& s = specs_[i];
    const Plan& p = plans_[i];
    ColumnBuilder& c = cols[i];
    if (p.count < 0) {
      c.row_splits = Tensor::empty(DType::I64, {batch + 1});
      c.row_splits.data<int64_t>()[0] = 0;
    }
    if (p.dtype == DType::Bytes) {
      c.offsets.reserve(p.count >= 0 ? n * static_cast<size_t>(p.count) + 1 : n + 1);
      c.offsets.push_back(0);
    } else if (p.count >= 0) {
      Shape shape{batch};
      shape.insert(shape.end(), s.shape.begin(), s.shape.end());
      if (p.byte_length >= 0) shape.push_back(p.byte_length);
      c.dense = Tensor::empty(p.dtype, std::move(shape));
    }
  }

  std::vector<std::string_view> feature(nf);
  std::vector<uint8_t> found(nf);
  std::vector<uint8_t> list_tag(nf);
  for (size_t i = 0; i < nf; ++i) list_tag[i] = fast_path_ ? fast_list_tag(specs_[i], plans_[i]) : 0;
  std::vector<SeenKey> seen;
  seen.reserve(2 * nf);
  auto find_fn = [this](std::string_view key) { return find(key); };
  for (size_t r = 0; r < n; ++r) {
    const std::string_view record = records[r];
    const FeatureSpec* current = nullptr;
    try {
      std::fill(found.begin(), found.end(), 0);
      if (!fast_path_ || !fast_scan_example(record, find_fn, seen, feature, found)) {
        std::fill(found.begin(), found.end(), 0);
        scan_example(record, find_fn, feature, found);
      }
      for (size_t i = 0; i < nf; ++i) {
        current = &specs_[i];
        if (list_tag[i] != 0 && found[i] && fast_parse_fixed(plans_[i], list_tag[i], cols[i], r, feature[i])) continue;
        if (plans_[i].count >= 0) parse_fixed(specs_[i], plans_[i], cols[i], r, found[i] != 0, feature[i]);
        else parse_variable(specs_[i], plans_[i], cols[i], r, found[i] != 0, feature[i]);
      }
    } catch (const WireError& e) {
      std::string where = current ? fmt::format("in feature '{}': ", current->name) : std::string();
      throw DataError(
          DataError::Kind::DataLoss,
          fmt::format("malformed Example: {}{} (at byte {} of {})", where, e.what, e.at - record.data(), record.size()),
          DataLocation{.file = {}, .record = static_cast<int64_t>(r)});
    } catch (const FeatureError& e) {
      throw DataError(e.kind, e.reason, DataLocation{.file = {}, .record = static_cast<int64_t>(r)});
    }
  }

  out.resize(nf);
  for (size_t i = 0; i < nf; ++i) {
    const FeatureSpec& s = specs_[i];
    const Plan& p = plans_[i];
    ColumnBuilder& c = cols[i];
    ParsedColumn& o = out[i];
    o.ragged = p.count < 0;
    o.row_splits = o.ragged ? std::move(c.row_splits) : Tensor();
    if (p.dtype == DType::Bytes) {
      Shape shape{o.ragged ? static_cast<int64_t>(c.offsets.size()) - 1 : batch};
      if (!o.ragged) shape.insert(shape.end(), s.shape.begin(), s.shape.end());
      o.values = Tensor::empty(DType::Bytes, std::move(shape));
      o.values.set_strings(std::move(c.blob), std::move(c.offsets));
    } else if (!o.ragged) {
      o.values = std::move(c.dense);
    } else if (p.dtype == DType::F32) {
      // A batch whose rows are all empty has no values: no buffer, and memcpy's pointers must not be null.
      o.values = Tensor::empty(DType::F32, {static_cast<int64_t>(c.floats.size())});
      if (!c.floats.empty()) std::memcpy(o.values.raw(), c.floats.data(), c.floats.size() * sizeof(float));
    } else {
      o.values = Tensor::empty(DType::I64, {static_cast<int64_t>(c.ints.size())});
      if (!c.ints.empty()) std::memcpy(o.values.raw(), c.ints.data(), c.ints.size() * sizeof(int64_t));
    }
  }
}

}  // namespace pipec
