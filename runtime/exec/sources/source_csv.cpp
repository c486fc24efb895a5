// csv(path, header, delimiter) { schema }: rows of a CSV file. With a header, schema fields are found
// by column name; without one, by position. Quoted fields may hold delimiters and doubled quotes.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"

namespace pipec {

namespace {

// Splits one CSV record starting at `pos`; advances `pos` past its line end. Returns false at EOF.
bool next_record(const std::string& text, size_t& pos, char delim, std::vector<std::string>& fields, int64_t& line) {
  fields.clear();
  if (pos >= text.size()) return false;
  std::string cur;
  bool quoted = false;
  for (;;) {
    if (pos >= text.size()) {
      fields.push_back(cur);
      return true;
    }
    char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          cur += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == delim) {
      fields.push_back(std::move(cur));
      cur.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
      ++line;
      fields.push_back(std::move(cur));
      return true;
    } else {
      cur += c;
    }
  }
}

class CsvSource : public ChunkIterator {
 public:
  CsvSource(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    const Stage& s = spec();
    path_ = ctx.resolve_path(s.arg("path")->s);
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw StageError(s, DataError(DataError::Kind::NotFound, "cannot open the CSV file", {path_}));
    std::stringstream ss;
    ss << in.rdbuf();
    text_ = ss.str();
    const Value* d = s.arg("delimiter");
    delim_ = d && !d->s.empty() ? d->s[0] : ',';
    const Value* h = s.arg("header");
    bool header = !h || h->b;
    std::vector<std::string> fields;
    if (header) {
      if (!next_record(text_, pos_, delim_, fields, line_)) throw StageError(s, path_ + ": the CSV file is empty");
      for (const SchemaEntry& e : s.schema) {
        auto it = std::find(fields.begin(), fields.end(), e.name);
        if (it == fields.end()) throw StageError(s, fmt::format("{}: the header has no column `{}`", path_, e.name));
        columns_.push_back(static_cast<int>(it - fields.begin()));
      }
    } else {
      for (size_t i = 0; i < s.schema.size(); ++i) columns_.push_back(static_cast<int>(i));
    }
    data_start_ = pos_;
    data_line_ = line_;
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_u64(pos_);
    w.write_i64(line_);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    pos_ = r.read_u64();
    line_ = r.read_i64();
    if (pos_ > text_.size()) throw r.error("csv position beyond the end of the file");
  }

 protected:
  bool produce(Chunk& out) override {
    const Stage& s = spec();
    std::vector<std::vector<std::string>> cells(s.schema.size());
    std::vector<std::string> fields;
    int64_t n = 0;
    while (n < ctx_.chunk_rows) {
      int64_t line = line_ + 1;
      if (!next_record(text_, pos_, delim_, fields, line_)) break;
      if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
      for (size_t k = 0; k < columns_.size(); ++k) {
        if (static_cast<size_t>(columns_[k]) >= fields.size())
          throw StageError(s, fmt::format("{}:{}: the row has {} columns, column `{}` is missing", path_, line,
                                          fields.size(), s.schema[k].name));
        cells[k].push_back(fields[columns_[k]]);
      }
      ++n;
    }
    if (n == 0) return false;
    out = Chunk{};
    out.rows = n;
    for (size_t k = 0; k < s.schema.size(); ++k)
      out.columns.push_back(Column{false, convert(s.schema[k], cells[k], n), {}});
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  Tensor convert(const SchemaEntry& e, const std::vector<std::string>& cells, int64_t n) {
    DType dt = e.type.dtype;
    if (dt == DType::Bytes) return Tensor::from_strings(cells, {n});
    Tensor t = Tensor::empty(dt, {n});
    for (int64_t i = 0; i < n; ++i) {
      const std::string& c = cells[i];
      const char* b = c.data();
      const char* end = c.data() + c.size();
      while (b < end && *b == ' ') ++b;
      std::from_chars_result res{};
      if (dt == DType::I64 || dt == DType::I32) {
        int64_t v = 0;
        res = std::from_chars(b, end, v);
        if (dt == DType::I64) t.data<int64_t>()[i] = v;
        else t.data<int32_t>()[i] = static_cast<int32_t>(v);
      } else {
        double v = 0;
        res = std::from_chars(b, end, v);
        if (dt == DType::F64) t.data<double>()[i] = v;
        else t.data<float>()[i] = static_cast<float>(v);
      }
      if (res.ec != std::errc() || res.ptr != end) {
        if (c.empty() && e.default_value) {
          double d = e.default_value->as_double();
          if (dt == DType::I64) t.data<int64_t>()[i] = static_cast<int64_t>(d);
          else if (dt == DType::I32) t.data<int32_t>()[i] = static_cast<int32_t>(d);
          else if (dt == DType::F64) t.data<double>()[i] = d;
          else t.data<float>()[i] = static_cast<float>(d);
          continue;
        }
        throw StageError(spec(), fmt::format("{}: row {}: column `{}` holds `{}`, which is not {}", path_,
                                             produced_ + i + 1, e.name, c, dtype_name(dt)));
      }
    }
    return t;
  }

  int64_t epoch_;
  std::string path_;
  std::string text_;
  char delim_ = ',';
  size_t pos_ = 0;
  size_t data_start_ = 0;
  int64_t line_ = 0;
  int64_t data_line_ = 0;
  std::vector<int> columns_;
};

}  // namespace

IteratorPtr make_csv_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<CsvSource>(ctx, stage, epoch);
}

}  // namespace pipec
