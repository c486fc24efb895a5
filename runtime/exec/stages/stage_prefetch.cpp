// prefetch(n | auto): a background thread runs the stages before it and keeps up to n chunks ready,
// so they overlap with whatever consumes the pipeline. `auto` is a knob of the autotuner
// (runtime/exec/autotuner.h), starting at 2 per worker thread (at least 4); it may change while the
// run goes on.
//
// Memory: the chunks it holds count in the run's memory budget. The first is the least it needs to make
// progress (a fixed holding); more are taken only when the budget grants them, so before computing
// another chunk the producer asks for the size of the largest chunk seen so far and waits (for the
// consumer to take one) when there is no room.
//
// For a checkpoint the producer thread is stopped, and the chunks it had ready are saved along with
// its input's state; it starts again on the next request.
//
// Pulled through inline: the thread is there to overlap the input's work with the consumer's. A
// consumer that does nothing between chunks (it asks for the next as soon as it has one: `pipec run`
// counting batches, a benchmark's loop) has nothing to overlap, and handing each chunk from one thread
// to another then only costs wake-ups: tens of microseconds of CPU each across cores in a VM
// (docs/performance.md, "A prefetch with nothing to overlap"). So the stage watches, over windows of
// kWatchWindow chunks, the share of the consumer's time spent away from it. Below 1/32 the thread is
// stopped (as for a checkpoint: its chunks are handed out first) and the consumer's thread pulls the
// input itself; above 1/8 the thread starts again. Which thread pulls never changes what comes out.
// A run starts inline and decides after its first kFirstWatchWindow chunks: a thread started at once
// filled its queue before the first decision, which on 2 cores cost a `pipec run` of the chess
// pipeline ~5 ms of CPU for batches and fresh output buffers (page faults) it then only handed out.
// A caller known to work between chunks (RunOptions::consumer_works: the trainer) gets the thread at
// once.
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "runtime/exec/footprint.h"
#include "runtime/exec/knob.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/threads/bounded_queue.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {

class Prefetch : public ChunkIterator {
 public:
  Prefetch(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Value* n = spec().arg("size");
    const bool fixed = n && n->kind == Value::Int;
    const int64_t initial = fixed ? n->i : prefetch_starting_depth(ctx.threads);
    knob_ = fixed ? auto_knob(ctx, stage, KnobKind::PrefetchDepth, initial, initial, initial)
                  : auto_knob(ctx, stage, KnobKind::PrefetchDepth, initial, 1, std::max<int64_t>(64, initial));
    depth_ = initial;
    most_depth_ = depth();
    inline_ = ctx.prefetch_inline_when_idle && !ctx.consumer_works;
  }
  ~Prefetch() override {
    stop();
    release_all();
  }

  void save(StateWriter& w) const override {
    auto* self = const_cast<Prefetch*>(this);
    self->stop();
    w.write_i64(produced_);
    input_->save(w);
    w.write_u64(self->ready_.size());
    for (const Item& c : self->ready_) save_chunk(w, c.chunk);
    w.write_u32(self->input_done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    stop();
    release_all();
    produced_ = r.read_i64();
    input_->restore(r);
    ready_.clear();
    uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) {
      Item item;
      item.chunk = restore_chunk(r);
      largest_seen_ = std::max<int64_t>(largest_seen_, item.chunk.rows);
      // Restored chunks are what the saving run held: count them as fixed.
      item.bytes = chunk_bytes(item.chunk);
      item.fixed = true;
      charge_fixed(static_cast<int64_t>(item.bytes), "its restored chunks");
      ready_.push_back(std::move(item));
    }
    input_done_ = r.read_u32() != 0;
    // The saving run held these at its depth then (its queue plus the chunk its producer held), which
    // its autotuner may have raised above where this run's starts: that depth is this run's deepest too.
    note_depth(static_cast<int64_t>(n) - 1);
  }

  // After a save: the queue's chunks and the one its producer held when stopped; the producer starts
  // again only once they are all handed out. (While it runs, its queue is not counted here.) The depth
  // may have changed: the bound is the deepest it has been.
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const Item& c : ready_) rows += c.chunk.rows;
    return {rows, (std::max<int64_t>(1, most_depth_.load()) + 1) * largest_seen_.load()};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    watch_consumer();
    const bool ok = produce_chunk(out);
    last_return_ns_ = trace::now_ns();
    return ok;
  }

 private:
  struct Item {
    Chunk chunk;
    std::exception_ptr error;
    bool end = false;
    uint64_t bytes = 0;  // counted in the memory budget
    bool fixed = false;  // as the first chunk (a fixed holding) or as one more (granted by the budget)
  };

  static constexpr int kWatchWindow = 32;
  static constexpr int kFirstWatchWindow = 4;

  // Called as the consumer asks for a chunk: adds the time since it was handed the last one (its own
  // work) and the whole time since it last asked, and at the end of each window decides which thread
  // pulls the input.
  void watch_consumer() {
    if (!ctx_.prefetch_inline_when_idle) return;
    const int64_t now = trace::now_ns();
    if (last_return_ns_ > 0) {
      away_ns_ += now - last_return_ns_;
      cycle_ns_ += now - last_entry_ns_;
      if (++watched_ == (first_window_ ? kFirstWatchWindow : kWatchWindow)) {
        first_window_ = false;
        if (!inline_ && away_ns_ * 32 < cycle_ns_) {
          stop();  // its chunks go to ready_, handed out before the consumer pulls any itself
          inline_ = true;
        } else if (inline_ && away_ns_ * 8 > cycle_ns_) {
          inline_ = false;  // the thread starts on the next pull
        }
        away_ns_ = cycle_ns_ = 0;
        watched_ = 0;
      }
    }
    last_entry_ns_ = now;
  }

  bool produce_chunk(Chunk& out) {
    if (!ready_.empty()) {
      Item item = std::move(ready_.front());
      ready_.pop_front();
      hand_out(item, out);
      return true;
    }
    if (pending_error_) {
      std::exception_ptr e = pending_error_;
      pending_error_ = nullptr;
      std::rethrow_exception(e);
    }
    if (input_done_) return false;
    if (inline_) return pull_inline(out);
    if (!thread_.joinable()) start();
    const int64_t d = depth();
    queue_->set_capacity(static_cast<size_t>(d));
    auto wait_start = std::chrono::steady_clock::now();
    // Found empty, the queue is waited on until half of it is ready: the producer is the slower side
    // then, and taking its chunks in twos halves the wake-ups (runtime/threads/bounded_queue.h).
    std::optional<Item> item = queue_->pop_when(static_cast<size_t>(std::max<int64_t>(1, d / 2)), *stop_token_);
    add_wait_ns(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wait_start).count());
    ctx_.check_cancelled();
    if (!item) return false;
    note_queue();
    if (item->error) {
      input_done_ = true;
      std::rethrow_exception(item->error);
    }
    if (item->end) {
      input_done_ = true;
      return false;
    }
    hand_out(*item, out);
    return true;
  }

  // The consumer's thread pulls the input itself; an error ends the stage as the thread's would.
  bool pull_inline(Chunk& out) {
    try {
      if (!pull(*input_, out)) {
        input_done_ = true;
        return false;
      }
    } catch (...) {
      input_done_ = true;
      throw;
    }
    if (out.rows > largest_seen_) largest_seen_ = out.rows;
    ctx_.stats[stage_]->add_inline_chunk();
    return true;
  }

  int64_t depth() const {
    const int64_t d = knob_ ? knob_->value() : depth_;
    note_depth(d);
    return d;
  }
  // Keeps the deepest depth seen (the bound of buffered()); both threads of the stage call it.
  void note_depth(int64_t d) const {
    int64_t most = most_depth_.load();
    while (d > most && !most_depth_.compare_exchange_weak(most, d)) {
    }
  }

  void hand_out(Item& item, Chunk& out) {
    release(item);
    out = std::move(item.chunk);
  }

  void release(Item& item) {
    if (item.bytes == 0) return;
    if (item.fixed) charge_fixed(-static_cast<int64_t>(item.bytes), "");
    else if (ctx_.memory) ctx_.memory->release(stage_, item.bytes);
    item.bytes = 0;
  }

  void release_all() {
    for (Item& i : ready_) release(i);
  }

  void note_queue() {
    const int64_t held = queue_ ? static_cast<int64_t>(queue_->size()) : 0;
    if (knob_) knob_->set_held(held);
    if (trace::enabled()) {
      if (!queue_name_) queue_name_ = trace::name(fmt::format("#{} prefetch queue", stage_));
      trace::counter(queue_name_, trace::now_ns(), static_cast<double>(held));
    }
  }

  void start() {
    queue_ = std::make_unique<BoundedQueue<Item>>(static_cast<size_t>(std::max<int64_t>(1, depth())));
    stop_token_ = std::make_unique<CancellationToken>(ctx_.cancel ? CancellationToken::child_of(*ctx_.cancel)
                                                                  : CancellationToken());
    leftover_.reset();
    thread_ = std::thread([this] { run(); });
  }

  // Before computing another chunk: the first one held is a fixed holding; one more needs the budget
  // to grant the largest chunk seen so far (nothing beyond the first until one size is known). Waits
  // for the consumer while the budget has no room. Returns false when stopped.
  bool admit(Item& item) {
    if (!ctx_.memory) return true;
    for (;;) {
      if (queue_->size() == 0) {
        item.fixed = true;
        return true;
      }
      const uint64_t estimate = knob_ ? knob_->item_bytes() : largest_bytes_.load();
      if (estimate > 0 && ctx_.memory->try_reserve(stage_, estimate)) {
        item.bytes = estimate;
        return true;
      }
      // The consumer frees the room: it must not wait for more chunks than are queued meanwhile.
      queue_->release_waiters();
      const bool stopped = stop_token_->wait_for(std::chrono::milliseconds(1));
      queue_->hold_waiters();
      if (stopped) return false;
    }
  }

  void run() {
    trace::set_thread_name(fmt::format("prefetch #{}", stage_));
    for (;;) {
      Item item;
      try {
        if (stop_token_->cancelled()) return;
        if (!admit(item)) return;
        Chunk c;
        if (!input_->next(c)) {
          item.end = true;
          release(item);
        } else {
          if (c.rows > largest_seen_) largest_seen_ = c.rows;
          const uint64_t bytes = chunk_bytes(c);
          if (bytes > largest_bytes_) largest_bytes_ = bytes;
          if (knob_) knob_->note_item_bytes(bytes);
          if (item.fixed) {
            item.bytes = bytes;
            charge_fixed(static_cast<int64_t>(bytes), "its first chunk");
            if (ctx_.memory) ctx_.memory->raise_bound(stage_, bytes);
          } else if (bytes > item.bytes && ctx_.memory) {
            // Larger than any chunk before: it is here, so it counts (the next estimate is this size).
            ctx_.memory->add_optional(stage_, bytes - item.bytes);
            item.bytes = bytes;
          }
          item.chunk = std::move(c);
        }
      } catch (const CancelledError&) {
        release(item);
        if (stop_token_->cancelled() && !(ctx_.cancel && ctx_.cancel->cancelled())) return;
        item.error = std::current_exception();
      } catch (...) {
        release(item);
        item.error = std::current_exception();
      }
      bool last = item.end || item.error;
      if (last) queue_->release_waiters();  // nothing comes after it
      // A push interrupted by a stop leaves the item with us: keep it, so a checkpoint does not lose it.
      if (!queue_->push(std::move(item), *stop_token_)) {
        std::lock_guard<std::mutex> lock(mu_);
        leftover_ = std::move(item);
        return;
      }
      note_queue();
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
      ready_.push_back(std::move(item));
    }
  }

  IteratorPtr input_;
  Knob* knob_ = nullptr;
  std::atomic<trace::NameId> queue_name_{0};  // recorded from both sides of the queue
  int64_t depth_ = 4;                         // without an autotuner
  mutable std::atomic<int64_t> most_depth_{1};
  std::unique_ptr<BoundedQueue<Item>> queue_;
  std::unique_ptr<CancellationToken> stop_token_;
  std::thread thread_;
  std::mutex mu_;
  std::optional<Item> leftover_;
  std::deque<Item> ready_;
  std::atomic<int64_t> largest_seen_{0};  // rows of the largest chunk the producer pulled
  std::atomic<uint64_t> largest_bytes_{0};
  std::exception_ptr pending_error_;
  bool input_done_ = false;
  // Which thread pulls the input (watch_consumer), and what the consumer did in the current window.
  bool inline_ = false;
  int64_t last_entry_ns_ = 0;   // when the consumer last asked for a chunk
  int64_t last_return_ns_ = 0;  // when it was handed one (0: not yet)
  int64_t away_ns_ = 0;         // its own time between chunks, this window
  int64_t cycle_ns_ = 0;        // all of its time, this window
  int watched_ = 0;             // chunks watched this window
  bool first_window_ = true;    // the first window is kFirstWatchWindow chunks
};

}  // namespace

IteratorPtr make_prefetch(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Prefetch>(ctx, stage, std::move(input));
}

}  // namespace pipec
