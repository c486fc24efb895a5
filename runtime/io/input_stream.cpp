#include "runtime/io/input_stream.h"

#include <algorithm>
#include <cstring>

namespace pipec {

InputStream::InputStream(std::string name, Compression compression, size_t buffer_size)
    : name_(std::move(name)),
      compression_(compression),
      buf_(new char[std::max<size_t>(buffer_size, 64)]),
      cap_(std::max<size_t>(buffer_size, 64)) {}

InputStream::~InputStream() = default;

namespace {
// Buffers left behind while held that a stream keeps for reuse; more are freed by their last holder.
constexpr size_t kMostLeftBehind = 4;
}  // namespace

void InputStream::move_to_unheld_buffer(size_t cap) {
  std::shared_ptr<char[]> next;
  size_t next_cap = 0;
  for (auto it = left_behind_.begin(); it != left_behind_.end();) {
    // Only left_behind_ holds it: every holder let it go (on this thread, so nothing reads it now).
    const bool free = it->first.use_count() == 1;
    if (free && it->second >= cap && !next) {
      next = std::move(it->first);
      next_cap = it->second;
      it = left_behind_.erase(it);
    } else if (free && it->second < cap) {
      it = left_behind_.erase(it);  // from before the buffer grew: never big enough again
    } else {
      ++it;
    }
  }
  if (!next) {
    next.reset(new char[cap]);
    next_cap = cap;
  }
  std::memcpy(next.get(), buf_.get() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
  if (left_behind_.size() < kMostLeftBehind) left_behind_.emplace_back(std::move(buf_), cap_);
  buf_ = std::move(next);
  cap_ = next_cap;
}

std::string_view InputStream::peek_slow(size_t n) {
  if (!at_end_) {
    // Bytes that a holder keeps (hold_buffer) stay where they are: go on in another buffer.
    if (buf_.use_count() > 1) move_to_unheld_buffer(cap_);
    // Move the unconsumed tail to the front so the buffer's free space is contiguous.
    if (pos_ > 0) {
      std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    while (end_ < n && !at_end_) {
      if (end_ == cap_) {
        // Only grow when the buffer is full of real data: doubling keeps the total copying linear
        // and never allocates more than twice what the source actually delivered.
        size_t new_cap = std::min(std::max(n, cap_), cap_ * 2);
        std::shared_ptr<char[]> bigger(new char[new_cap]);
        std::memcpy(bigger.get(), buf_.get(), end_);
        buf_ = std::move(bigger);  // a holder of the old one keeps it
        cap_ = new_cap;
      }
      size_t got = produce(buf_.get() + end_, cap_ - end_);
      if (got == 0) at_end_ = true;
      end_ += got;
    }
  }
  return std::string_view(buf_.get() + pos_, end_ - pos_);
}

size_t InputStream::read(void* dst, size_t n) {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    std::string_view avail = peek_some();
    if (avail.empty()) break;
    size_t k = std::min(avail.size(), n - done);
    std::memcpy(out + done, avail.data(), k);
    consume(k);
    done += k;
  }
  return done;
}

std::unique_ptr<InputStream> open_input_stream(const std::string& path, Compression compression, size_t buffer_size) {
  return open_decompressing_stream(open_file_stream(path, buffer_size), compression, buffer_size);
}

}  // namespace pipec
