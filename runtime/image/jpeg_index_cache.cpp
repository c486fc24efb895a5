#include "runtime/image/jpeg_index_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pipec {

namespace {

// Per-entry bookkeeping beyond the index itself (key, map node), so many small entries still count.
constexpr int64_t kEntryOverhead = 128;

int64_t default_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t{1} << 30;
  return static_cast<int64_t>(pages) * page / 4;
}

int64_t budget_from_environment() {
  const char* text = std::getenv("PIPEC_JPEG_INDEX_MEMORY");
  if (!text || !*text) return default_budget();
  const int64_t n = parse_memory_size(text);
  if (n >= 0) return n;
  std::fprintf(stderr,
               "pipec: PIPEC_JPEG_INDEX_MEMORY=%s is not a size (like 0, 512M or 2G); using a quarter of memory\n",
               text);
  return default_budget();
}

// Two independent 64-bit multiply-xorshift lanes over 8-byte words: not cryptographic, but a chance
// collision of 128 bits (with the length) between two files of one dataset is not a concern.
uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

JpegIndexCache& JpegIndexCache::process() {
  static JpegIndexCache cache(budget_from_environment());
  return cache;
}

JpegIndexCache::Lookup JpegIndexCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  if (it->second) ++hits_;
  return {true, it->second};
}

bool JpegIndexCache::has_room(size_t file_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const bool room = bytes_ + static_cast<int64_t>(file_bytes) + kEntryOverhead <= budget_;
  if (!room && budget_ > 0) full_ = true;
  return room;
}

void JpegIndexCache::remember(const std::string& key, std::shared_ptr<const JpegWindowIndex> index) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t cost =
      (index ? static_cast<int64_t>(index->memory_bytes()) : 0) + kEntryOverhead + static_cast<int64_t>(key.size());
  const int64_t index_bytes = index ? static_cast<int64_t>(index->memory_bytes()) : 0;
  if (bytes_ + cost > budget_ || (index && admit_ && entries_.count(key) == 0 && !admit_(index_bytes))) {
    full_ = true;
    if (!index) return;
    index = nullptr;  // too big for what is left: remembered as not indexed, which costs only the key
    if (bytes_ + kEntryOverhead + static_cast<int64_t>(key.size()) > budget_) return;
  }
  auto [it, inserted] = entries_.emplace(key, std::move(index));
  if (!inserted) return;  // another thread indexed the same file meanwhile
  bytes_ += (it->second ? static_cast<int64_t>(it->second->memory_bytes()) : 0) + kEntryOverhead +
            static_cast<int64_t>(key.size());
  if (!it->second) ++unindexable_;
}

void JpegIndexCache::set_admission(std::function<bool(int64_t)> admit) {
  std::lock_guard<std::mutex> lock(mu_);
  admit_ = std::move(admit);
}

JpegIndexCache::Stats JpegIndexCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.indexed = static_cast<int64_t>(entries_.size()) - unindexable_;
  s.unindexable = unindexable_;
  s.bytes = bytes_;
  s.budget = budget_;
  s.hits = hits_;
  s.full = full_;
  return s;
}

std::string jpeg_file_key(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return fmt::format("f{}\n{}:{}:{}:{}.{:09d}", path, static_cast<uint64_t>(st.st_dev),
                     static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
                     static_cast<int64_t>(st.st_mtim.tv_sec), static_cast<int64_t>(st.st_mtim.tv_nsec));
}

std::string jpeg_bytes_key(std::string_view data) {
  uint64_t a = 0x9e3779b97f4a7c15ull, b = 0x632be59bd9b4e019ull;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    a = (a ^ w) * 0x9fb21c651e98df25ull;
    a ^= a >> 29;
    b = (b + w) * 0xd6e8feb86659fd93ull;
    b ^= b >> 31;
  }
  uint64_t tail = 0;
  if (i < data.size()) std::memcpy(&tail, data.data() + i, data.size() - i);
  a = mix(a ^ tail ^ data.size());
  b = mix(b + tail + (data.size() << 1));
  return fmt::format("b{:016x}{:016x}:{}", a, b, data.size());
}

int64_t parse_memory_size(std::string_view text) {
  if (text.empty()) return -1;
  int64_t n = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (int64_t{1} << 50)) return -1;
    n = n * 10 + (text[i] - '0');
  }
  if (i == 0) return -1;
  std::string_view unit = text.substr(i);
  if (unit.empty() || unit == "B") return n;
  int shift = 0;
  switch (unit[0]) {
    case 'K':
    case 'k': shift = 10; break;
    case 'M':
    case 'm': shift = 20; break;
    case 'G':
    case 'g': shift = 30; break;
    case 'T':
    case 't': shift = 40; break;
    default: return -1;
  }
  if (unit.size() > 1 && unit.substr(1) != "B" && unit.substr(1) != "iB") return -1;
  if (n > (int64_t{1} << (62 - shift))) return -1;
  return n << shift;
}

}  // namespace pipec
