// write(tfrecord(path, shards, compression)): every element becomes a tf.train.Example with one
// feature per field, spread round-robin over the shards. Field encodings: u8 tensors become one bytes
// value (their raw bytes, so `bytes[N]` fields round-trip), byte strings bytes values, integers and
// bools int64 lists, floats float lists (f64 is narrowed to f32, the only float tf.Example holds).
// Files appear only when complete (written to a temporary name, then renamed); a failed or cancelled
// run leaves none behind.
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "runtime/exec/stage_factories.h"
#include "runtime/io/compression.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/sharded_tfrecord_writer.h"

namespace pipec {

namespace {

class Write : public ChunkIterator {
 public:
  Write(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    const Value* f = s.arg("format");
    // The format value is [kind, [name, value]...] (see the lowering of write).
    std::string path;
    int64_t shards = 1;
    TFRecordWriterOptions opts;
    for (size_t i = 1; f && i < f->items.size(); ++i) {
      const Value& kv = f->items[i];
      if (kv.items.size() < 2) continue;
      const std::string& key = kv.items[0].s;
      if (key == "path") path = kv.items[1].s;
      else if (key == "shards") shards = kv.items[1].i;
      else if (key == "compression") opts.compression = parse_compression(kv.items[1].s).value_or(Compression::None);
    }
    if (path.empty()) throw StageError(s, "write needs a path");
    for (const Field& fl : s.element.fields) names_.push_back(fl.name);
    std::string resolved = ctx.resolve_path(path);
    // The output folder is created as tf.io.TFRecordWriter users expect to have to, but needn't.
    std::filesystem::path parent = std::filesystem::path(resolved).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw StageError(s, "cannot create the folder " + parent.string() + ": " + ec.message());
    writer_ = std::make_unique<ShardedTFRecordWriter>(resolved, shards, opts);
  }
  ~Write() override {
    if (writer_) writer_->abort();
  }

  void save(StateWriter& w) const override {
    throw CheckpointError("checkpoints of pipelines that write files are not supported; rerun the write instead");
  }
  void restore(StateReader&) override {
    throw CheckpointError("checkpoints of pipelines that write files are not supported");
  }

 protected:
  bool produce(Chunk& out) override {
    if (!pull(*input_, out)) {
      writer_->close();
      writer_.reset();
      return false;
    }
    for (int64_t r = 0; r < out.rows; ++r) writer_->write(encode(out, r));
    return true;
  }

 private:
  const std::string& encode(const Chunk& c, int64_t r) {
    ex_.clear();
    for (size_t k = 0; k < c.columns.size(); ++k) {
      const Column& col = c.columns[k];
      Tensor row = column_row(col, r);
      add_feature(names_[k], row);
    }
    return ex_.serialize();
  }

  void add_feature(const std::string& name, const Tensor& t) {
    int64_t n = t.num_elements();
    switch (t.dtype()) {
      case DType::U8: {
        std::string_view v(reinterpret_cast<const char*>(t.raw()), static_cast<size_t>(n));
        ex_.add_bytes(name, std::span<const std::string_view>(&v, 1));
        return;
      }
      case DType::Bytes: {
        std::vector<std::string_view> v;
        for (int64_t i = 0; i < n; ++i) v.push_back(t.str(i));
        ex_.add_bytes(name, v);
        return;
      }
      case DType::F32: ex_.add_float(name, std::span<const float>(t.data<float>(), n)); return;
      case DType::F64: {
        floats_.resize(n);
        for (int64_t i = 0; i < n; ++i) floats_[i] = static_cast<float>(t.data<double>()[i]);
        ex_.add_float(name, floats_);
        return;
      }
      case DType::F16:
      case DType::BF16:
        throw StageError(spec(), fmt::format("field `{}`: convert 16-bit floats to f32 before writing", name));
      default: {
        ints_.resize(n);
        for (int64_t i = 0; i < n; ++i) ints_[i] = as_int(t, i);
        ex_.add_int64(name, ints_);
        return;
      }
    }
  }

  static int64_t as_int(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
      case DType::Bool: return t.data<uint8_t>()[i];
      case DType::I8: return t.data<int8_t>()[i];
      case DType::U16: return t.data<uint16_t>()[i];
      case DType::I16: return t.data<int16_t>()[i];
      case DType::U32: return t.data<uint32_t>()[i];
      case DType::I32: return t.data<int32_t>()[i];
      case DType::U64: return static_cast<int64_t>(t.data<uint64_t>()[i]);
      case DType::I64: return t.data<int64_t>()[i];
      default: return 0;
    }
  }

  IteratorPtr input_;
  std::vector<std::string> names_;
  std::unique_ptr<ShardedTFRecordWriter> writer_;
  ExampleWriter ex_;
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
};

}  // namespace

IteratorPtr make_write(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Write>(ctx, stage, std::move(input));
}

}  // namespace pipec
