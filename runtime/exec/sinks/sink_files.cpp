// write(files("data/{field}/{index}.jpg")): every byte-string field of every element becomes one file,
// its path the pattern with {field} replaced by the field name and {index} by the element's index,
// zero-padded to 6 digits so that files(...) lists them in order. This is how a spec writes images
// (encode_png / encode_jpeg give the bytes). Each file is written to a temporary name and renamed.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "runtime/core/chunk.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

class WriteFiles : public ChunkIterator {
 public:
  WriteFiles(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    const Value* f = s.arg("format");
    for (size_t i = 1; f && i < f->items.size(); ++i)
      if (f->items[i].items.size() >= 2 && f->items[i].items[0].s == "path")
        pattern_ = ctx.resolve_path(f->items[i].items[1].s);
    if (pattern_.find("{index}") == std::string::npos) throw StageError(s, "files(...) needs `{index}` in its path");
    for (const Field& fl : s.element.fields) names_.push_back(fl.name);
    if (names_.size() > 1 && pattern_.find("{field}") == std::string::npos)
      throw StageError(s, "files(...) needs `{field}` in its path when the element has several fields");
  }

  void save(StateWriter&) const override {
    throw CheckpointError("checkpoints of pipelines that write files are not supported; rerun the write instead");
  }
  void restore(StateReader&) override {
    throw CheckpointError("checkpoints of pipelines that write files are not supported");
  }

 protected:
  bool produce(Chunk& out) override {
    if (!pull(*input_, out)) return false;
    for (int64_t r = 0; r < out.rows; ++r)
      for (size_t k = 0; k < out.columns.size(); ++k) write_one(names_[k], written_ + r, column_row(out.columns[k], r));
    written_ += out.rows;
    return true;
  }

 private:
  void write_one(const std::string& field, int64_t index, const Tensor& value) {
    if (value.dtype() != DType::Bytes || value.num_elements() != 1)
      throw StageError(spec(), fmt::format("files(...) writes byte strings; field `{}` is not one", field));
    std::string path = replace_all(replace_all(pattern_, "{field}", field), "{index}", fmt::format("{:06d}", index));
    std::filesystem::path p(path);
    std::error_code ec;
    if (!p.parent_path().empty()) std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      throw StageError(spec(), fmt::format("cannot create the folder {}: {}", p.parent_path().string(), ec.message()));
    const std::string tmp = path + ".tmp";
    {
      std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
      std::string_view v = value.str(0);
      o.write(v.data(), static_cast<std::streamsize>(v.size()));
      if (!o) throw StageError(spec(), fmt::format("cannot write {}", tmp));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw StageError(spec(), fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  }

  IteratorPtr input_;
  std::string pattern_;
  std::vector<std::string> names_;
  int64_t written_ = 0;
};

}  // namespace

IteratorPtr make_write_files(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<WriteFiles>(ctx, stage, std::move(input));
}

}  // namespace pipec
