// text_lines(files, compression): tf.data's TextLineDataset: one element {line: bytes} per line of each
// file, in the sorted order of the files the pattern matches. A line ends at "\n", which is not part of
// it, and neither is a "\r" before it; the bytes after the last "\n" are a line unless they are empty
// (or only "\r"), as TensorFlow's line reader has it.
#include <string>
#include <vector>

#include "runtime/exec/sources/file_sequence.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"

namespace pipec {

namespace {

class TextLinesSource : public ChunkIterator {
 public:
  TextLinesSource(RunContext& ctx, int stage, int64_t epoch) try
      : ChunkIterator(ctx, stage), epoch_(epoch), files_(ctx, spec(), spec().arg("files")->s) {
  } catch (const DataError& e) {
    throw StageError(ctx.plan->stages.at(stage), e);
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    files_.save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    files_.restore(r);
  }

 protected:
  bool produce(Chunk& out) override {
    std::vector<std::string> lines;
    try {
      std::string line;
      while (static_cast<int64_t>(lines.size()) < ctx_.chunk_rows && next_line(line)) lines.push_back(line);
    } catch (const DataError& e) {
      throw StageError(spec(), e);
    }
    if (lines.empty()) return false;
    const auto n = static_cast<int64_t>(lines.size());
    out = Chunk{};
    out.rows = n;
    out.columns.push_back(Column{false, Tensor::from_strings(lines, {n}), {}});
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  // The next line of the files; false after the last.
  bool next_line(std::string& line) {
    while (InputStream* in = files_.current()) {
      line.clear();
      for (;;) {
        const std::string_view some = in->peek_some();
        if (some.empty()) break;
        const size_t nl = some.find('\n');
        if (nl == std::string_view::npos) {
          line.append(some);
          in->consume(some.size());
          continue;
        }
        line.append(some.substr(0, nl));
        in->consume(nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
      // The end of the file: what follows the last "\n" is a line unless it is empty.
      if (!line.empty() && line.back() == '\r') line.pop_back();
      files_.next_file();
      if (!line.empty()) return true;
    }
    return false;
  }

  int64_t epoch_;
  FileSequence files_;
};

}  // namespace

IteratorPtr make_text_lines_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<TextLinesSource>(ctx, stage, epoch);
}

}  // namespace pipec
