// The binary record codec shared by pipec's serialized IR: plans (runtime/plan/plan_serialize.h, what a
// built pipeline library embeds) and model graphs (runtime/model/model_serialize.h, what a built model
// library embeds). A blob is framed as
//   [0,8)      an 8-byte magic naming the format ("PIPEPLAN", "PIPEMODL")
//   [8,12)     u32 format version
//   [12,20)    u64 payload size n
//   [20,20+n)  payload
//   [20+n,+4)  u32 CRC32 (zlib polynomial) of every byte before it
// Inside a payload every record (stage, node, value, type, instruction, ...) starts with a one-byte tag
// (BlobTag, one list for every format so no two records share a tag), so a reader that disagrees with
// the writer's layout stops at the first record with the offset and what it expected, instead of
// reading garbage. Primitives: u8/u32/i32/u64/i64 fixed width, little-endian; f64 as its IEEE-754
// bits; strings as a u64 length then the bytes; lists as a u64 count then the items. Ops, stages and
// enums travel by name where their enum's order may change between versions.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runtime/core/le_codec.h"
#include "runtime/plan/expr_function.h"
#include "runtime/plan/native_kernel.h"
#include "runtime/plan/type.h"
#include "runtime/plan/value.h"

namespace pipec {

/// A blob that is truncated, corrupt, of another format version or not of the expected format. The
/// message starts with the source's name and says what was wrong and at which byte offset.
class BlobDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Record tags: the first byte of every record, checked by the reader.
enum BlobTag : uint8_t {
  // plans
  kTagStage = 'S',
  kTagSchema = 'C',
  // model graphs
  kTagGraphValue = 'G',
  kTagGraphNode = 'O',
  kTagAttrs = 'A',
  // shared
  kTagValue = 'V',
  kTagType = 'T',
  kTagElement = 'E',
  kTagFunction = 'F',
  kTagInstr = 'I',
  kTagNative = 'N',
  kTagLoc = 'L',
  kTagEnd = 'Z',
};

// Types nest (records of records); a corrupt blob must not recurse without bound.
constexpr int kMaxTypeDepth = 64;

/// `payload` framed as above.
std::string frame_blob(const char (&magic)[8], uint32_t version, const std::string& payload);

/// The payload of a framed blob, after checking its magic, version, length and CRC. `noun` names the
/// format in errors ("plan"). Throws BlobDecodeError.
std::string_view unframe_blob(std::string_view blob, const char (&magic)[8], uint32_t version,
                              const std::string& source, const char* noun);

/// Appends records to `out`.
class BlobWriter {
 public:
  std::string out;

  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { append_le32(out, v); }
  void i32(int32_t v) { append_le32(out, static_cast<uint32_t>(v)); }
  void u64(uint64_t v) { append_le64(out, v); }
  void i64(int64_t v) { append_le64(out, static_cast<uint64_t>(v)); }
  void f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    out += s;
  }

  void loc(const SpecLoc& l) {
    u8(kTagLoc);
    str(l.file);
    u32(l.line);
    u32(l.col);
  }

  void value(const Value& v) {
    u8(kTagValue);
    u8(static_cast<uint8_t>(v.kind));
    u8(static_cast<uint8_t>(v.dtype));
    i64(v.i);
    f64(v.f);
    u8(v.b ? 1 : 0);
    str(v.s);
    u64(v.items.size());
    for (const Value& item : v.items) value(item);
  }

  void fields(const std::vector<Field>& fs) {
    u64(fs.size());
    for (const Field& f : fs) {
      str(f.name);
      u8(f.type ? 1 : 0);
      if (f.type) type(*f.type);
    }
  }

  void element(const ElementInfo& e) {
    u8(kTagElement);
    fields(e.fields);
    i32(e.batch_rank);
    u8((e.infinite ? 1 : 0) | (e.is_sink ? 2 : 0) | (e.on_gpu ? 4 : 0));
  }

  void type(const Type& t) {
    u8(kTagType);
    u8(static_cast<uint8_t>(t.kind));
    u8(static_cast<uint8_t>(t.dtype));
    u64(t.shape.size());
    for (int64_t d : t.shape) i64(d);
    str(t.name);
    u8(t.weak ? 1 : 0);
    u8(t.fields ? 1 : 0);
    if (t.fields) fields(*t.fields);
    u8(t.element ? 1 : 0);
    if (t.element) element(*t.element);
  }

  void function(const ExprFunction& fn) {
    u8(kTagFunction);
    str(fn.name);
    u64(fn.body.size());
    for (const Instr& in : fn.body) {
      u8(kTagInstr);
      str(std::string(op_name(in.op)));  // by name: the enum's order may change between versions
      u64(in.operands.size());
      for (int o : in.operands) i32(o);
      u64(in.attrs.size());
      for (const auto& [name, v] : in.attrs) {
        str(name);
        value(v);
      }
      type(in.type);
      loc(in.loc);
    }
    u64(fn.results.size());
    for (const auto& [name, id] : fn.results) {
      str(name);
      i32(id);
    }
  }

  void native(const NativeKernel& k) {
    u8(kTagNative);
    str(k.symbol);
    str(k.backend);
    u64(k.input_fields.size());
    for (int f : k.input_fields) i32(f);
  }
};

/// Reads records from a payload; every method names what it reads, for the error when it is not there.
class BlobReader {
 public:
  /// `source` names the blob in errors ("the embedded plan"), `noun` what it holds ("plan", "model").
  BlobReader(const uint8_t* data, size_t size, std::string source, std::string noun)
      : p_(data), end_(data + size), source_(std::move(source)), noun_(std::move(noun)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw BlobDecodeError(fmt::format("{}: corrupt {} at payload offset {}: {}", source_, noun_, pos(), what));
  }
  size_t pos() const { return static_cast<size_t>(p_ - begin_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  void set_begin() { begin_ = p_; }

  const uint8_t* take(size_t n, const char* what) {
    if (n > left()) fail(fmt::format("reading {} needs {} bytes, {} left", what, n, left()));
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  uint8_t u8(const char* what = "u8") { return *take(1, what); }
  bool flag(const char* what) {
    uint8_t v = u8(what);
    if (v > 1) fail(fmt::format("{} is {}, not 0 or 1", what, v));
    return v == 1;
  }
  uint32_t u32(const char* what = "u32") { return load_le32(take(4, what)); }
  int32_t i32(const char* what = "i32") { return static_cast<int32_t>(u32(what)); }
  uint64_t u64(const char* what = "u64") { return load_le64(take(8, what)); }
  int64_t i64(const char* what = "i64") { return static_cast<int64_t>(u64(what)); }
  double f64(const char* what = "f64") { return std::bit_cast<double>(u64(what)); }
  // A list length; every item takes at least `min_item` bytes, so a corrupt count cannot make the
  // decoder allocate more than the blob could hold.
  uint64_t count(size_t min_item, const char* what) {
    uint64_t n = u64(what);
    if (n > left() / min_item) fail(fmt::format("{} count {} is larger than the {} bytes left", what, n, left()));
    return n;
  }
  std::string str(const char* what = "string") {
    uint64_t n = count(1, what);
    const uint8_t* at = take(n, what);
    return std::string(reinterpret_cast<const char*>(at), n);
  }
  void tag(BlobTag expected, const char* what) {
    uint8_t t = u8(what);
    if (t != expected)
      fail(fmt::format("expected a {} record (tag '{}'), found tag 0x{:02x}", what, static_cast<char>(expected), t));
  }
  DType dtype() {
    uint8_t d = u8("dtype");
    if (d > static_cast<uint8_t>(DType::Bytes)) fail(fmt::format("unknown dtype code {}", d));
    return static_cast<DType>(d);
  }

  SpecLoc loc() {
    tag(kTagLoc, "location");
    SpecLoc l;
    l.file = str("location file");
    l.line = u32("location line");
    l.col = u32("location column");
    return l;
  }

  Value value(int depth = 0) {
    if (depth > kMaxTypeDepth) fail("values nested too deeply");
    tag(kTagValue, "value");
    Value v;
    uint8_t kind = u8("value kind");
    if (kind > Value::Symbol) fail(fmt::format("unknown value kind {}", kind));
    v.kind = static_cast<Value::Kind>(kind);
    v.dtype = dtype();
    v.i = i64("int value");
    v.f = f64("float value");
    v.b = flag("bool value");
    v.s = str("string value");
    uint64_t n = count(2, "list items");
    v.items.reserve(n);
    for (uint64_t k = 0; k < n; ++k) v.items.push_back(value(depth + 1));
    return v;
  }

  std::vector<Field> fields(int depth) {
    uint64_t n = count(10, "fields");
    std::vector<Field> fs;
    fs.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      Field f;
      f.name = str("field name");
      if (flag("field has a type")) f.type = std::make_shared<const Type>(type(depth + 1));
      fs.push_back(std::move(f));
    }
    return fs;
  }

  ElementInfo element(int depth = 0) {
    if (depth > kMaxTypeDepth) fail("types nested too deeply");
    tag(kTagElement, "element");
    ElementInfo e;
    e.fields = fields(depth);
    e.batch_rank = i32("batch rank");
    if (e.batch_rank < 0) fail(fmt::format("negative batch rank {}", e.batch_rank));
    uint8_t bits = u8("element flags");
    if (bits > 7) fail(fmt::format("unknown element flags 0x{:02x}", bits));
    e.infinite = bits & 1;
    e.is_sink = bits & 2;
    e.on_gpu = bits & 4;
    return e;
  }

  Type type(int depth = 0) {
    if (depth > kMaxTypeDepth) fail("types nested too deeply");
    tag(kTagType, "type");
    Type t;
    uint8_t kind = u8("type kind");
    if (kind > static_cast<uint8_t>(TypeKind::Opaque)) fail(fmt::format("unknown type kind {}", kind));
    t.kind = static_cast<TypeKind>(kind);
    t.dtype = dtype();
    uint64_t rank = count(8, "shape");
    for (uint64_t k = 0; k < rank; ++k) {
      int64_t d = i64("dimension");
      if (d < kUnknownDim) fail(fmt::format("bad dimension {}", d));
      t.shape.push_back(d);
    }
    t.name = str("type name");
    t.weak = flag("weak flag");
    if (flag("record fields present")) t.fields = std::make_shared<const std::vector<Field>>(fields(depth + 1));
    if (flag("element present")) t.element = std::make_shared<const ElementInfo>(element(depth + 1));
    return t;
  }

  std::shared_ptr<ExprFunction> function() {
    tag(kTagFunction, "function");
    auto fn = std::make_shared<ExprFunction>();
    fn->name = str("function name");
    uint64_t n = count(20, "instructions");
    fn->body.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      tag(kTagInstr, "instruction");
      Instr in;
      const std::string op = str("instruction op");
      if (auto kind = op_from_name(op)) in.op = *kind;
      else fail(fmt::format("unknown instruction op `{}`", op));
      uint64_t nops = count(4, "operands");
      for (uint64_t o = 0; o < nops; ++o) {
        int32_t id = i32("operand");
        // SSA: operands name earlier instructions only.
        if (id < 0 || static_cast<uint64_t>(id) >= k)
          fail(fmt::format("instruction %{} uses %{}, not an earlier instruction", k, id));
        in.operands.push_back(id);
      }
      uint64_t nattrs = count(10, "attributes");
      for (uint64_t a = 0; a < nattrs; ++a) {
        std::string name = str("attribute name");
        Value v = value();
        if (!in.attrs.emplace(std::move(name), std::move(v)).second) fail("duplicate attribute");
      }
      in.type = type();
      in.loc = loc();
      fn->body.push_back(std::move(in));
    }
    uint64_t nres = count(12, "results");
    for (uint64_t r = 0; r < nres; ++r) {
      std::string name = str("result name");
      int32_t id = i32("result id");
      if (id < 0 || static_cast<uint64_t>(id) >= fn->body.size())
        fail(fmt::format("result `{}` names %{}, not an instruction", name, id));
      fn->results.emplace_back(std::move(name), id);
    }
    return fn;
  }

  std::shared_ptr<const NativeKernel> native() {
    tag(kTagNative, "native kernel");
    auto k = std::make_shared<NativeKernel>();
    k->symbol = str("kernel symbol");
    k->backend = str("kernel backend");
    uint64_t n = count(4, "kernel inputs");
    for (uint64_t i = 0; i < n; ++i) {
      int32_t f = i32("kernel input field");
      if (f < 0) fail(fmt::format("negative kernel input field {}", f));
      k->input_fields.push_back(f);
    }
    return k;
  }

 private:
  const uint8_t* p_;
  const uint8_t* begin_ = nullptr;
  const uint8_t* end_;
  std::string source_;
  std::string noun_;
};

}  // namespace pipec
