// map(fn) and filter(predicate): run the stage's expression function on whole chunks with the
// interpreter. Several chunks are in flight on the thread pool at once; results come out in input
// order (tf.data's deterministic = true), so the output never depends on the thread count.
// Two forms the optimizer makes run here too: map_filter (a map and the filter after it, one function
// whose last result is the keep flag) and a map with `per_row = n` (moved after its batch; it runs on
// the element rows of the batches, runtime/exec/stages/row_view.h).
//
// `parallel = auto` is a knob of the autotuner (runtime/exec/autotuner.h): the chunks in flight (on
// the pool) or ready, at first 2 per worker thread. 1 runs the function on the thread that pulls from
// the map. The results it holds count in the run's memory budget: the first as a fixed holding, each
// further one only when the budget grants the size of the largest result seen so far, or before any is
// seen, the size the plan gives a chunk of the map's element type (when its shape is fixed). Without
// that size, the first chunk would run alone on one core while the others wait for it: a short run
// of large decoded images (seed 003's pairs) lost a tenth of its rate that way.
#include <algorithm>
#include <chrono>
#include <deque>
#include <future>

#include <fmt/format.h>

#include "runtime/exec/cpu_share.h"
#include "runtime/exec/footprint.h"
#include "runtime/exec/knob.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/map_apply.h"
#include "runtime/exec/stages/row_view.h"
#include "runtime/threads/task_length.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {

int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MapLike : public ChunkIterator {
 public:
  MapLike(RunContext& ctx, int stage, IteratorPtr input, bool is_filter)
      : ChunkIterator(ctx, stage), input_(std::move(input)), is_filter_(is_filter) {
    const Stage& s = spec();
    for (const Field& f : ctx.plan->stages.at(s.inputs.at(0)).element.fields) in_fields_.push_back(f.name);
    knob_ = map_parallelism_knob(ctx, stage, &window_);
    static_chunk_bytes_ = chunk_bytes_of(*ctx.plan, stage, ctx.chunk_rows).value_or(0);
    most_window_ = window();
    // Tasks record their spans on the pool's threads: the name is interned here, once (a trace starts
    // before the run).
    if (trace::enabled()) task_name_ = trace::name(fmt::format("#{} {} task", stage, stage_name(s.kind)));
    if (const Value* p = s.arg("per_row"); p && p->kind == Value::Int) per_row_ = p->i;
    fused_map_ = s.kind == StageKind::MapFilter;
  }

  // Tasks on the pool refer to this iterator: wait for every one before going away (an error in one
  // chunk unwinds the run while the others are still computing).
  ~MapLike() override {
    for (auto& f : inflight_) {
      try {
        f.get();
      } catch (...) {
      }
    }
    while (!charges_.empty()) release_front();
  }

  void save(StateWriter& w) const override {
    // Work in flight is finished first, so the checkpoint holds its results rather than its inputs.
    drain();
    w.write_i64(produced_);
    input_->save(w);
    w.write_u64(ready_.size());
    for (const Chunk& c : ready_) save_chunk(w, c);
    w.write_u32(input_done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    inflight_.clear();
    ready_.clear();
    while (!charges_.empty()) release_front();
    uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) {
      ready_.push_back(restore_chunk(r));
      largest_pulled_ = std::max(largest_pulled_, ready_.back().rows);  // each came from one input chunk
      // What the saving run held: fixed holdings.
      const uint64_t bytes = chunk_bytes(ready_.back());
      charge_fixed(static_cast<int64_t>(bytes), "its restored results");
      charges_.push_back({bytes, true});
    }
    input_done_ = r.read_u32() != 0;
    // The saving run's window held them, which its autotuner may have widened past where this run's
    // starts: that width is this run's widest too.
    most_window_ = std::max(most_window_, static_cast<int64_t>(n));
  }

  // Results of at most `window` input chunks, computed or in flight (a save finishes them). The window
  // may have changed: the bound is the widest it has been.
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const Chunk& c : ready_) rows += c.rows;
    return {rows, most_window_ * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    for (;;) {
      // Keep the window full, as far as the memory budget allows, refilling it `group` chunks at a
      // time (one task each) once that many slots are free.
      const int64_t window = this->window();
      const bool on_pool = ctx_.pool && window > 1;
      const int64_t group = on_pool ? refill_group(window) : 1;
      const int64_t held = static_cast<int64_t>(inflight_.size() + ready_.size());
      if (held == 0 || window - held >= group) {
        std::vector<Chunk> pulled;
        while (!input_done_ && static_cast<int64_t>(inflight_.size() + ready_.size() + pulled.size()) < window &&
               admit()) {
          Chunk in;
          if (!pull(*input_, in)) {
            input_done_ = true;
            release_back();
            break;
          }
          if (on_pool) {
            pulled.push_back(std::move(in));
            if (static_cast<int64_t>(pulled.size()) == group) submit(pulled);
          } else {
            const int64_t start = clock_ns();
            ready_.push_back(timed_apply(in));
            add_wait_ns(clock_ns() - start);  // counted as the map's task time, not twice
          }
        }
        if (!pulled.empty()) submit(pulled);
      }
      if (!ready_.empty()) {
        out = std::move(ready_.front());
        ready_.pop_front();
      } else if (!inflight_.empty()) {
        const int64_t start = clock_ns();
        ctx_.pool->wait_helping(inflight_.front());
        out = inflight_.front().get();
        add_wait_ns(clock_ns() - start);
        inflight_.pop_front();
      } else {
        return false;
      }
      if (knob_) {
        knob_->note_item_bytes(chunk_bytes(out));
        knob_->set_held(static_cast<int64_t>(inflight_.size() + ready_.size()));
      }
      release_front();
      if (out.rows > 0 || !is_filter_) return true;
    }
  }

 private:
  struct Charge {
    uint64_t bytes = 0;
    bool fixed = false;
  };

  int64_t window() const {
    const int64_t w = knob_ ? knob_->value() : window_;
    most_window_ = std::max(most_window_, w);
    return w;
  }

  // One more chunk in flight: the first is a fixed holding, each further one needs the budget to grant
  // the largest result seen so far, or the plan's size of a chunk (none when neither is known). Leaves
  // its charge in charges_.
  bool admit() {
    const uint64_t estimate = std::max(knob_ ? knob_->item_bytes() : 0, static_chunk_bytes_);
    if (!ctx_.memory) {
      charges_.push_back({});
    } else if (charges_.empty()) {
      charge_fixed(static_cast<int64_t>(estimate), "its first chunk of results");
      ctx_.memory->raise_bound(stage_, estimate);
      charges_.push_back({estimate, true});
    } else if (estimate > 0 && ctx_.memory->try_reserve(stage_, estimate)) {
      charges_.push_back({estimate, false});
    } else {
      return false;
    }
    return true;
  }
  void release(const Charge& c) {
    if (c.fixed) charge_fixed(-static_cast<int64_t>(c.bytes), "");
    else if (ctx_.memory && c.bytes) ctx_.memory->release(stage_, c.bytes);
  }
  void release_front() {
    if (charges_.empty()) return;
    release(charges_.front());
    charges_.pop_front();
  }
  void release_back() {
    if (charges_.empty()) return;
    release(charges_.back());
    charges_.pop_back();
  }

  // How many input chunks one task on the pool computes (in order, each result ready as soon as it is
  // computed). A worker that keeps up with the map's input sleeps after each task and is woken for the
  // next: with two chunks a task, half as often. The window keeps two tasks per worker taking tasks,
  // so a map that is the slow side still has every worker busy.
  int64_t refill_group(int64_t window) const {
    const int64_t workers = std::max(1, ctx_.pool->active_workers());
    return std::clamp<int64_t>(window / (2 * workers), 1, kMostGroup);
  }
  static constexpr int64_t kMostGroup = 2;

  // One task on the pool for the chunks in `pulled` (emptied), a future per chunk in inflight_.
  void submit(std::vector<Chunk>& pulled) {
    struct Part {
      Chunk in;
      std::promise<Chunk> result;
    };
    auto parts = std::make_shared<std::vector<Part>>(pulled.size());
    for (size_t i = 0; i < pulled.size(); ++i) {
      (*parts)[i].in = std::move(pulled[i]);
      inflight_.push_back((*parts)[i].result.get_future());
    }
    pulled.clear();
    // The hand-off wakes a worker, which on a busy machine may take this thread's core until its task
    // is done: that time is the task's (counted where it runs), not the map's own.
    const int64_t start = clock_ns();
    ctx_.pool->submit(
        [this, parts] {
          for (Part& p : *parts) {
            try {
              p.result.set_value(timed_apply(p.in));
            } catch (...) {
              p.result.set_exception(std::current_exception());
            }
            p.in = Chunk();  // its memory goes back as soon as it is done with
          }
        },
        task_length_.short_tasks());
    add_wait_ns(clock_ns() - start);
  }

  // apply() on a worker (or inline), its thread's CPU time counted as the stage's task time (not the
  // time it waited for a core: runtime/exec/cpu_share.h).
  Chunk timed_apply(const Chunk& in) const {
    const int64_t start = clock_ns();
    const int64_t cpu_start = thread_cpu_ns();
    Chunk out = apply(in);
    const int64_t cpu = thread_cpu_ns() - cpu_start;
    const int64_t end = clock_ns();
    ctx_.stats[stage_]->add_task_ns(static_cast<uint64_t>(std::max<int64_t>(0, cpu)));
    task_length_.add(cpu);
    if (task_name_ && trace::enabled())
      trace::complete("task", task_name_, start, end - start, {"rows", static_cast<double>(in.rows)});
    return out;
  }

  void drain() const {
    while (!inflight_.empty()) {
      ready_.push_back(inflight_.front().get());
      inflight_.pop_front();
    }
  }

  Chunk apply(const Chunk& in) const {
    try {
      return apply_unchecked(in);
    } catch (const CancelledError&) {
      throw;
    } catch (const std::exception& e) {
      if (!ctx_.tolerant[stage_]) throw StageError::from(spec(), e);
    }
    // ignore_errors: run row by row on the interpreter (the reference for errors) and drop the rows that fail.
    std::vector<uint8_t> ok(in.rows, 1);
    std::vector<Chunk> parts;
    for (int64_t r = 0; r < in.rows; ++r) {
      try {
        parts.push_back(apply_unchecked(slice_rows(in, r, r + 1), /*allow_native=*/false));
      } catch (const std::exception&) {
        ok[r] = 0;
        ctx_.dropped[stage_]->fetch_add(1);
      }
    }
    Chunk out;
    out.first_index = in.first_index;
    out.epoch = in.epoch;
    for (Chunk& p : parts) {
      if (out.columns.empty() && out.rows == 0) {
        int64_t fi = out.first_index;
        out = std::move(p);
        out.first_index = fi;
      } else {
        append_rows(out, p, 0, p.rows);
      }
    }
    return out;
  }

  Chunk apply_unchecked(const Chunk& in, bool allow_native = true) const {
    if (per_row_ <= 0) return apply_rows(in, allow_native);
    Chunk out = apply_rows(batches_as_rows(in, per_row_), allow_native);
    out.columns = rows_as_batches(std::move(out.columns), in.rows);
    out.rows = in.rows;
    out.first_index = in.first_index;
    out.epoch = in.epoch;
    return out;
  }

  Chunk apply_rows(const Chunk& in, bool allow_native) const {
    std::vector<Column> cols = apply_stage_function(ctx_, spec(), in_fields_, in, allow_native);
    if (is_filter_) {
      const Tensor& keep = (fused_map_ ? cols.back() : cols.at(0)).dense;
      std::vector<uint8_t> flags(in.rows);
      for (int64_t r = 0; r < in.rows; ++r) flags[r] = keep.data<uint8_t>()[r] != 0;
      Chunk mapped;
      if (fused_map_) {
        cols.pop_back();
        mapped.rows = in.rows;
        mapped.columns = std::move(cols);
        mapped.epoch = in.epoch;
      }
      Chunk out = select_rows(fused_map_ ? mapped : in, flags);
      out.first_index = 0;  // renumbered by position below
      return out;
    }
    Chunk out;
    out.rows = in.rows;
    out.columns = std::move(cols);
    out.first_index = in.first_index;
    out.epoch = in.epoch;
    return out;
  }

  IteratorPtr input_;
  bool is_filter_;
  std::vector<std::string> in_fields_;
  int64_t window_ = 1;  // without an autotuner
  Knob* knob_ = nullptr;
  mutable int64_t most_window_ = 1;
  trace::NameId task_name_ = 0;
  std::deque<Charge> charges_;       // one per chunk in flight or ready, in order
  uint64_t static_chunk_bytes_ = 0;  // a chunk of results by the plan's element type; 0: not fixed
  int64_t per_row_ = 0;              // > 0: runs on the element rows of batches of this size
  bool fused_map_ = false;           // map_filter: the function's last result is the keep flag
  mutable std::deque<std::future<Chunk>> inflight_;
  mutable TaskLength task_length_;  // whether its tasks are short enough for a waiting thread to run
  mutable std::deque<Chunk> ready_;
  bool input_done_ = false;
};

// A filter renumbers its output: element indices count what it lets through.
class Filter : public MapLike {
 public:
  using MapLike::MapLike;

 protected:
  bool produce(Chunk& out) override {
    if (!MapLike::produce(out)) return false;
    out.first_index = produced_;
    produced_ += out.rows;
    return true;
  }
};

}  // namespace

IteratorPtr make_map(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<MapLike>(ctx, stage, std::move(input), false);
}

IteratorPtr make_filter(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Filter>(ctx, stage, std::move(input), true);
}

}  // namespace pipec
