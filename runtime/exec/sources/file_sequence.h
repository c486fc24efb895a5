// The files of a source read one after another (text_lines, fixed_length_records): the sorted list a
// pattern matches (a worker's share of it under sharding by files), the stream open on the current
// one, and where the source is, as a checkpoint holds it: the file's index and the bytes of its
// (decompressed) stream consumed. A restore opens that file again and reads past those bytes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/exec/iterator.h"
#include "runtime/io/input_stream.h"

namespace pipec {

class FileSequence {
 public:
  /// The files `pattern` (resolved against the spec's folder) matches; a DataError when none does.
  FileSequence(const RunContext& ctx, const Stage& s, const std::string& pattern);

  /// The stream of the current file, opened on first use; null once every file is read. `opened` is
  /// called with each file as it opens (a source that checks a file's size first).
  InputStream* current();
  /// Closes the current file and moves to the next.
  void next_file();
  const std::string& path() const { return files_.at(index_); }
  size_t file_index() const { return index_; }

  void save(StateWriter& w) const;
  void restore(StateReader& r);

 private:
  std::vector<std::string> files_;
  Compression compression_ = Compression::None;
  size_t index_ = 0;                     // the file being read; files_.size() when all are
  std::unique_ptr<InputStream> stream_;  // open on files_[index_], or null before it is opened
  uint64_t skip_ = 0;                    // bytes to read past when the stream opens (a restore)
};

}  // namespace pipec
