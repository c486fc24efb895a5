// The process's JpegWindowIndex store: cropping decodes that a repeat runs again (the
// repeated_jpeg_index pass marks them) index each file the first time and cut windows from the index
// afterwards.
//
// Entries are keyed by the file's identity (path, device, inode, size and modification time: a file
// that changes gets a new key, so a stale index is never used) or, for encoded bytes that did not come
// from a file (a TFRecord field), by a 128-bit hash of the bytes and their length. The store is bounded
// by a byte budget, PIPEC_JPEG_INDEX_MEMORY ("0" turns indexing off; "512M", "2G" or a byte count),
// by default a quarter of the machine's memory. Once full it keeps what it has and indexes nothing
// more: epochs visit files in a cycle, where evicting the oldest entry would evict each one just before
// it is needed again. Files that cannot be indexed are remembered too, so they are not tried again.
//
// A run may make the store answer to its own memory budget as well (`set_admission`, which
// PipelineRun sets for its lifetime): an index is added only when that budget grants its bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/image/jpeg_window_index.h"

namespace pipec {

class JpegIndexCache {
 public:
  explicit JpegIndexCache(int64_t budget_bytes) : budget_(budget_bytes) {}

  /// The process-wide store, its budget read from PIPEC_JPEG_INDEX_MEMORY on first use.
  static JpegIndexCache& process();

  struct Lookup {
    bool known = false;                            // the key was seen before
    std::shared_ptr<const JpegWindowIndex> index;  // null when known but not indexable
  };
  Lookup find(const std::string& key);

  /// Whether an index of a file of `file_bytes` bytes may still be added.
  bool has_room(size_t file_bytes) const;

  /// Remembers `index` (nullptr: not indexable) under `key`; an index is dropped when it would exceed
  /// the budget, or when the admission function refuses its bytes.
  void remember(const std::string& key, std::shared_ptr<const JpegWindowIndex> index);

  /// A second budget every index added must fit in: called (under the store's lock) with an index's
  /// bytes, it counts them and returns true, or returns false to refuse them. Empty: none.
  void set_admission(std::function<bool(int64_t bytes)> admit);

  struct Stats {
    int64_t indexed = 0, unindexable = 0, bytes = 0, budget = 0, hits = 0;
    bool full = false;  // a file was not indexed for want of room
  };
  Stats stats() const;
  int64_t budget() const { return budget_; }

 private:
  const int64_t budget_;
  mutable std::mutex mu_;
  std::function<bool(int64_t)> admit_;
  std::unordered_map<std::string, std::shared_ptr<const JpegWindowIndex>> entries_;
  int64_t bytes_ = 0, unindexable_ = 0, hits_ = 0;
  mutable bool full_ = false;
};

/// The key of the file at `path` as it is now; "" when it cannot be stat'ed (the decoder then reports
/// the error).
std::string jpeg_file_key(const std::string& path);

/// The key of encoded bytes.
std::string jpeg_bytes_key(std::string_view data);

/// "0", "4096", "512K", "512M", "2G" (powers of 1024) to bytes; -1 when malformed.
int64_t parse_memory_size(std::string_view text);

}  // namespace pipec
