#include "runtime/exec/sources/read_ahead_reader.h"

#include <chrono>

#include "runtime/trace/trace.h"

namespace pipec {

ReadAheadReader::ReadAheadReader(std::unique_ptr<TFRecordReader> reader, const CancellationToken* cancel,
                                 StageStats* stats)
    : reader_(std::move(reader)),
      stats_(stats),
      stop_(cancel ? CancellationToken::child_of(*cancel) : CancellationToken()) {
  thread_ = std::thread([this] { run(); });
}

ReadAheadReader::~ReadAheadReader() {
  stop_.cancel();
  full_.close();
  free_.close();
  thread_.join();
}

void ReadAheadReader::run() {
  trace::set_thread_name("tfrecord reader");
  for (;;) {
    std::unique_ptr<Block> b;
    if (auto reused = free_.try_pop()) b = std::move(*reused);
    else b = std::make_unique<Block>();
    b->records.clear();
    const int64_t start = trace::now_ns();
    try {
      std::string_view rec;
      while (b->records.size() < kBlockRecords && b->records.byte_size() < kBlockBytes) {
        if (stop_.cancelled()) return;
        if (!reader_->next(rec)) {
          b->end = true;
          break;
        }
        b->records.append(rec);
      }
    } catch (...) {
      b->error = std::current_exception();
    }
    const int64_t end = trace::now_ns();
    if (stats_) stats_->add_task_ns(static_cast<uint64_t>(end - start));
    if (trace::enabled()) {
      static const trace::NameId read_block = trace::name("read block");
      trace::complete("task", read_block, start, end - start, {"records", static_cast<double>(b->records.size())});
    }
    bool last = b->end || b->error;
    if (!full_.push(std::move(b), stop_)) return;
    if (last) return;
  }
}

bool ReadAheadReader::next(std::string_view& record) {
  for (;;) {
    if (current_ && pos_ < current_->records.size()) {
      record = current_->records[pos_++];
      return true;
    }
    if (current_) {
      if (current_->error) std::rethrow_exception(current_->error);  // stays stuck on it, like the reader
      if (current_->end) return false;
      current_->records.clear();
      free_.try_push(current_);  // recycled by the thread (dropped if the free list is full)
      current_.reset();
    }
    std::optional<std::unique_ptr<Block>> b = full_.pop(stop_);
    if (!b) {
      stop_.throw_if_cancelled();
      return false;
    }
    current_ = std::move(*b);
    pos_ = 0;
  }
}

}  // namespace pipec
