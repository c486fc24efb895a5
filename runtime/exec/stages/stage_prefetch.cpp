// prefetch(n | auto): a background thread runs the stages before it and keeps up to n chunks ready,
// so they overlap with whatever consumes the pipeline. `auto` keeps 2 per worker thread (at least 4).
//
// For a checkpoint the producer thread is stopped, and the chunks it had ready are saved along with
// its input's state; it starts again on the next request.
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/exec/stage_factories.h"
#include "runtime/threads/bounded_queue.h"

namespace pipec {

namespace {

class Prefetch : public ChunkIterator {
 public:
  Prefetch(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Value* n = spec().arg("size");
    depth_ = (n && n->kind == Value::Int) ? n->i : std::max(4, ctx.threads * 2);
  }
  ~Prefetch() override { stop(); }

  void save(StateWriter& w) const override {
    auto* self = const_cast<Prefetch*>(this);
    self->stop();
    w.write_i64(produced_);
    input_->save(w);
    w.write_u64(self->ready_.size());
    for (const Chunk& c : self->ready_) save_chunk(w, c);
    w.write_u32(self->input_done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    stop();
    produced_ = r.read_i64();
    input_->restore(r);
    ready_.clear();
    uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) {
      ready_.push_back(restore_chunk(r));
      largest_seen_ = std::max<int64_t>(largest_seen_, ready_.back().rows);
    }
    input_done_ = r.read_u32() != 0;
  }

  // After a save: the queue's `depth` chunks and the one its producer held when stopped; the producer
  // starts again only once they are all handed out. (While it runs, its queue is not counted here.)
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const Chunk& c : ready_) rows += c.rows;
    return {rows, (std::max<int64_t>(1, depth_) + 1) * largest_seen_.load()};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    if (!ready_.empty()) {
      out = std::move(ready_.front());
      ready_.pop_front();
      return true;
    }
    if (pending_error_) {
      std::exception_ptr e = pending_error_;
      pending_error_ = nullptr;
      std::rethrow_exception(e);
    }
    if (input_done_) return false;
    if (!thread_.joinable()) start();
    auto wait_start = std::chrono::steady_clock::now();
    std::optional<Item> item = queue_->pop(*stop_token_);
    add_wait_ns(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wait_start).count());
    ctx_.check_cancelled();
    if (!item) return false;
    if (item->error) {
      input_done_ = true;
      std::rethrow_exception(item->error);
    }
    if (item->end) {
      input_done_ = true;
      return false;
    }
    out = std::move(item->chunk);
    return true;
  }

 private:
  struct Item {
    Chunk chunk;
    std::exception_ptr error;
    bool end = false;
  };

  void start() {
    queue_ = std::make_unique<BoundedQueue<Item>>(static_cast<size_t>(std::max<int64_t>(1, depth_)));
    stop_token_ = std::make_unique<CancellationToken>(ctx_.cancel ? CancellationToken::child_of(*ctx_.cancel)
                                                                  : CancellationToken());
    leftover_.reset();
    thread_ = std::thread([this] { run(); });
  }

  void run() {
    for (;;) {
      Item item;
      try {
        if (stop_token_->cancelled()) return;
        Chunk c;
        if (!input_->next(c)) {
          item.end = true;
        } else {
          if (c.rows > largest_seen_) largest_seen_ = c.rows;
          item.chunk = std::move(c);
        }
      } catch (const CancelledError&) {
        if (stop_token_->cancelled() && !(ctx_.cancel && ctx_.cancel->cancelled())) return;
        item.error = std::current_exception();
      } catch (...) {
        item.error = std::current_exception();
      }
      bool last = item.end || item.error;
      // A push interrupted by a stop leaves the item with us: keep it, so a checkpoint does not lose it.
      if (!queue_->push(std::move(item), *stop_token_)) {
        std::lock_guard<std::mutex> lock(mu_);
        leftover_ = std::move(item);
        return;
      }
      if (last) return;
    }
  }

  // Stops the producer and moves everything it made into ready_ (in order).
  void stop() {
    if (!thread_.joinable()) return;
    stop_token_->cancel();
    thread_.join();
    while (auto item = queue_->try_pop()) absorb(std::move(*item));
    if (leftover_) absorb(std::move(*leftover_));
    leftover_.reset();
  }

  void absorb(Item item) {
    if (item.end) {
      input_done_ = true;
    } else if (item.error) {
      pending_error_ = item.error;
      input_done_ = true;
    } else {
      ready_.push_back(std::move(item.chunk));
    }
  }

  IteratorPtr input_;
  int64_t depth_ = 4;
  std::unique_ptr<BoundedQueue<Item>> queue_;
  std::unique_ptr<CancellationToken> stop_token_;
  std::thread thread_;
  std::mutex mu_;
  std::optional<Item> leftover_;
  std::deque<Chunk> ready_;
  std::atomic<int64_t> largest_seen_{0};  // rows of the largest chunk the producer pulled
  std::exception_ptr pending_error_;
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_prefetch(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Prefetch>(ctx, stage, std::move(input));
}

}  // namespace pipec
