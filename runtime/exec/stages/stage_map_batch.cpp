// map_batch(size, drop_remainder): `map(f) | batch(n)` as one stage (compiler/passes/map_batch_fusion.h).
// The optimizer makes it where the map cannot move after the batch (a repeat feeds a map with random
// ops, so a batch can hold two epochs). Unfused, the map's result chunks come back to the consumer
// thread, which then copies every row into the batch. Here each task on the pool runs f on a piece of
// an input chunk and copies its result rows straight into the batches they belong to (input row k of
// this stage is row k % n of batch k / n), so the copy happens on the workers, in parallel, while the
// results are still in cache; the consumer only hands out input and emits batches once every task
// writing into them is done. Results equal the unfused stages': the map's rows keep their first_index
// and epoch (so the same random draws), a batch belongs to the epoch of its first element, and the
// last short batch keeps its size unless drop_remainder is set. Only fields of fixed shape and
// numeric dtype come here.
//
// Read-ahead is bounded by `window` live tasks: a task stays live until every batch it writes into has
// been handed out (or, when the only open batch still needs rows, until it is done), so the open
// batches hold at most window input chunks plus one partial batch. A checkpoint waits for the tasks
// but keeps them live: saving does not make room for more read-ahead.
//
// `parallel = auto` is a knob of the autotuner (runtime/exec/autotuner.h): the live tasks, at first 2
// per worker thread. The rows a live task writes count in the run's memory budget: the first task as a
// fixed holding, each further one only when the budget grants them (an input chunk's tasks go
// together: the budget grants an input chunk's results at a time).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <future>

#include <fmt/format.h>

#include "runtime/exec/cpu_share.h"
#include "runtime/exec/knob.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/map_apply.h"
#include "runtime/threads/task_length.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {

// A batch being filled: one [1, n, ...] tensor per field; rows [0, assigned) are owned by tasks.
struct OpenBatch {
  std::vector<Tensor> columns;
  int64_t assigned = 0;
  int64_t epoch = 0;
  int64_t seq = 0;                                // batches are numbered in the order they open
  std::vector<std::shared_future<void>> writers;  // the tasks that write rows of this batch
};

// A task on the pool, live from its dispatch until the last batch it writes into has been emitted.
struct LiveTask {
  std::shared_future<void> done;
  int64_t last_batch = 0;  // seq of the last batch it writes into
  uint64_t bytes = 0;      // the result rows it writes, counted in the memory budget
  bool fixed = false;      // counted as the first task (a fixed holding) or as one more (granted)
};

int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MapBatch : public ChunkIterator {
 public:
  MapBatch(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    size_ = s.arg("size")->i;
    const Value* d = s.arg("drop_remainder");
    drop_ = d && d->b;
    for (const Field& f : ctx.plan->stages.at(s.inputs.at(0)).element.fields) in_fields_.push_back(f.name);
    for (const Field& f : s.element.fields) {
      // The element is the batch's: [n, ...] per field; the map computes the row shape after n.
      Shape row(f.type->shape.begin() + 1, f.type->shape.end());
      row_shapes_.push_back(row);
      dtypes_.push_back(f.type->dtype);
      row_bytes_.push_back(static_cast<size_t>(shape_num_elements(row)) * dtype_size(f.type->dtype));
    }
    size_t result_row_bytes = 0;
    for (size_t rb : row_bytes_) result_row_bytes += rb;
    min_task_rows_ = std::max<int64_t>(1, static_cast<int64_t>(kMinTaskBytes / std::max<size_t>(1, result_row_bytes)));
    result_row_bytes_ = result_row_bytes;
    knob_ = map_parallelism_knob(ctx, stage, &window_);
    most_window_ = window();
    if (trace::enabled()) task_name_ = trace::name(fmt::format("#{} map_batch task", stage));
  }

  // Tasks write into batches this iterator owns: wait for every one before going away.
  ~MapBatch() override {
    wait_all();
    release_reserved();
  }

  void save(StateWriter& w) const override {
    // Every task is finished first, so the open batches hold results, not work in flight. The tasks
    // stay live: the window they fill is what bounds read-ahead, and a save must not empty it.
    for (const LiveTask& t : live_) t.done.wait();
    for (const OpenBatch& b : open_)
      for (const auto& f : b.writers) f.get();  // a failed task fails the save, not the restored run
    w.write_i64(produced_);
    input_->save(w);
    w.write_u64(open_.size());
    for (const OpenBatch& b : open_) {
      Chunk rows = batch_rows(b, b.assigned);
      rows.epoch = b.epoch;
      save_chunk(w, rows);
    }
    w.write_u32(input_done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    wait_all();
    produced_ = r.read_i64();
    input_->restore(r);
    open_.clear();
    next_seq_ = 0;
    uint64_t n = r.read_u64();
    restored_rows_ = 0;
    for (uint64_t i = 0; i < n; ++i) {
      Chunk rows = restore_chunk(r);
      OpenBatch& b = open_batch(rows.epoch);
      copy_rows(rows.columns, 0, rows.rows, b, 0);
      b.assigned = rows.rows;
      restored_rows_ += rows.rows;
    }
    input_done_ = r.read_u32() != 0;
    // The restored batches fill the whole window until they have been handed out, as the tasks that
    // computed them did: a run resumed again and again never holds more than the saving run did.
    if (!open_.empty()) {
      std::promise<void> done;
      done.set_value();
      std::shared_future<void> f = done.get_future().share();
      for (int64_t i = 0; i < window(); ++i) live_.push_back({f, open_.back().seq});
    }
  }

  Buffered buffered() const override {
    int64_t rows = 0;
    for (const OpenBatch& b : open_) rows += b.assigned;
    // window input chunks, and the rows of one batch that tasks no longer live wrote; after a restore,
    // the restored rows (no more than the saving run's bound) until they drain.
    return {rows, std::max(most_window_ * largest_pulled_ + size_ - 1, restored_rows_)};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    for (;;) {
      retire_emitted();
      if (knob_) knob_->set_held(static_cast<int64_t>(live_.size()));
      if (!input_done_ && static_cast<int64_t>(live_.size()) < window() && room_for_a_task()) {
        Chunk in;
        if (!pull(*input_, in)) input_done_ = true;
        else if (in.rows > 0) dispatch(std::move(in));
        release_reserved();
        continue;
      }
      if (open_.empty()) return false;
      if (open_.front().assigned < size_ && !input_done_) {
        // The window is full but the only open batch still needs rows (every live task writes into
        // it): let the oldest task finish and give its place to the next input chunk.
        const int64_t start = clock_ns();
        wait_for_task(live_.front().done);
        add_wait_ns(clock_ns() - start);
        retire(live_.front());
        live_.pop_front();
        continue;
      }
      // get() rethrows a task's error; rows the batch then drops still had to be computed first.
      // The tasks write through pointers into open_, so they finish before the batch leaves it.
      const int64_t start = clock_ns();
      for (auto& f : open_.front().writers) {
        wait_for_task(f);
        f.get();
      }
      add_wait_ns(clock_ns() - start);
      OpenBatch b = std::move(open_.front());
      open_.pop_front();
      if (b.assigned < size_ && drop_) {
        open_.clear();
        return false;
      }
      out = batch_rows(b, b.assigned);
      for (Column& c : out.columns) {
        Shape s = c.dense.shape();
        s.insert(s.begin(), 1);
        c.dense = c.dense.reshaped(s);
      }
      out.rows = 1;
      out.epoch = b.epoch;
      out.first_index = produced_;
      produced_ += 1;
      return true;
    }
  }

 private:
  // A task run inline (no pool) is done already; waiting for one on the pool, this thread may run short
  // queued tasks (ThreadPool::wait_helping; its own are helpable while short: runtime/threads/task_length.h).
  void wait_for_task(const std::shared_future<void>& f) {
    if (ctx_.pool) ctx_.pool->wait_helping(f);
    else f.wait();
  }

  // Rows [src_begin, src_begin + count) of a task's chunk, which become rows [dst_row, ...) of `batch`.
  struct Piece {
    int64_t src_begin, count;
    OpenBatch* batch;
    int64_t dst_row;
  };

  // Assigns the rows of `in` to the open batches (opening new ones) and starts tasks that map them
  // and write the results there. A chunk is cut at batch boundaries into tasks of at least
  // min_task_rows_ rows: with large results (a decoded image per row) that is one task per batch, so
  // the open batches, each as large as a whole batch of results, stay about as many as the tasks in
  // flight; with small ones a task spans many batches and its fixed cost (a pool hand-off, a kernel
  // call) is spread over enough rows. Cutting copies the input rows (first_index and epoch follow).
  void dispatch(Chunk in) {
    if (knob_) knob_->note_item_bytes(static_cast<uint64_t>(in.rows) * result_row_bytes_);
    std::vector<Piece> pieces;
    int64_t task_begin = 0;
    for (int64_t r = 0; r < in.rows;) {
      if (open_.empty() || open_.back().assigned == size_) open_batch(in.epoch);
      OpenBatch& b = open_.back();
      const int64_t take = std::min(size_ - b.assigned, in.rows - r);
      pieces.push_back({r, take, &b, b.assigned});
      b.assigned += take;
      r += take;
      if (r - task_begin >= min_task_rows_ || r == in.rows) {
        Chunk part = (task_begin == 0 && r == in.rows) ? std::move(in) : slice_rows(in, task_begin, r);
        for (Piece& p : pieces) p.src_begin -= task_begin;
        start_task(std::make_shared<Chunk>(std::move(part)), std::move(pieces));
        pieces.clear();
        task_begin = r;
      }
    }
  }

  // Maps `in` and writes each piece of its results into its batch. OpenBatch lives in a deque that
  // only grows at the back and shrinks at the front once its writers are done, so the pointers stay
  // valid while the task runs.
  void start_task(std::shared_ptr<Chunk> in, std::vector<Piece> pieces) {
    auto work = [this, in, pieces] {
      const int64_t start = clock_ns();
      const int64_t cpu_start = thread_cpu_ns();  // its CPU time, as stage_map.cpp's tasks
      std::vector<Column> cols = map_chunk(*in);
      for (const Piece& p : pieces) copy_rows(cols, p.src_begin, p.count, *p.batch, p.dst_row);
      const int64_t cpu = thread_cpu_ns() - cpu_start;
      const int64_t end = clock_ns();
      ctx_.stats[stage_]->add_task_ns(static_cast<uint64_t>(std::max<int64_t>(0, cpu)));
      task_length_.add(cpu);
      if (task_name_ && trace::enabled())
        trace::complete("task", task_name_, start, end - start, {"rows", static_cast<double>(in->rows)});
    };
    std::shared_future<void> f;
    if (ctx_.pool && window() > 1) {
      // Not this stage's own time: the woken worker may take this thread's core (stage_map.cpp).
      const int64_t start = clock_ns();
      f = ctx_.pool->submit(std::move(work), task_length_.short_tasks()).share();
      add_wait_ns(clock_ns() - start);
    } else {
      std::promise<void> done;
      const int64_t start = clock_ns();
      try {
        work();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
      add_wait_ns(clock_ns() - start);  // counted as task time
      f = done.get_future().share();
    }
    for (const Piece& p : pieces) p.batch->writers.push_back(f);  // each piece is in another batch
    // The memory the task's rows take, as room_for_a_task() planned it.
    const uint64_t bytes = static_cast<uint64_t>(in->rows) * result_row_bytes_;
    LiveTask t{f, pieces.back().batch->seq, 0, false};
    if (ctx_.memory) {
      if (dispatch_fixed_) {
        t.fixed = true;
        t.bytes = bytes;
        charge_fixed(static_cast<int64_t>(bytes), "its first task's results");
        ctx_.memory->raise_bound(stage_, bytes);
      } else {
        // room_for_a_task() reserved the largest task's results so far; this one takes what it needs.
        t.bytes = bytes;
        const uint64_t from_reserved = std::min(reserved_, bytes);
        reserved_ -= from_reserved;
        if (bytes > from_reserved) ctx_.memory->add_optional(stage_, bytes - from_reserved);
      }
    }
    live_.push_back(t);
  }

  int64_t window() const {
    const int64_t w = knob_ ? knob_->value() : window_;
    most_window_ = std::max(most_window_, w);
    return w;
  }

  // Whether the memory budget has room for one more live task: the first always (a fixed holding),
  // more when the budget could grant the largest task's results so far (none until one is known).
  // The unit is an input chunk: its tasks all go, with its results counted as one item.
  bool room_for_a_task() {
    dispatch_fixed_ = live_.empty();
    if (!ctx_.memory || live_.empty()) return true;
    const uint64_t estimate = knob_ ? knob_->item_bytes() : 0;
    if (estimate == 0 || !ctx_.memory->try_reserve(stage_, estimate)) return false;
    reserved_ = estimate;
    return true;
  }
  void release_reserved() {
    if (reserved_ && ctx_.memory) ctx_.memory->release(stage_, reserved_);
    reserved_ = 0;
  }

  void retire(LiveTask& t) {
    if (!t.bytes) return;
    if (t.fixed) charge_fixed(-static_cast<int64_t>(t.bytes), "");
    else if (ctx_.memory) ctx_.memory->release(stage_, t.bytes);
    t.bytes = 0;
  }

  std::vector<Column> map_chunk(const Chunk& in) const {
    try {
      std::vector<Column> cols = apply_stage_function(ctx_, spec(), in_fields_, in, true);
      check_results(cols, in.rows);
      return cols;
    } catch (const CancelledError&) {
      throw;
    } catch (const StageError&) {
      throw;
    } catch (const std::exception& e) {
      throw StageError::from(spec(), e);
    }
  }

  // The type checker promised fixed shapes and numeric dtypes; a result that breaks the promise is
  // reported rather than copied as garbage.
  void check_results(const std::vector<Column>& cols, int64_t rows) const {
    if (cols.size() != row_shapes_.size())
      throw StageError(spec(),
                       fmt::format("the map returned {} fields, the element has {}", cols.size(), row_shapes_.size()));
    for (size_t k = 0; k < cols.size(); ++k) {
      const Column& c = cols[k];
      Shape want = row_shapes_[k];
      want.insert(want.begin(), rows);
      if (c.ragged || c.dense.dtype() != dtypes_[k] || c.dense.shape() != want)
        throw StageError(
            spec(),
            fmt::format("field `{}`: the map computed {} where the element says {} {}", spec().element.fields[k].name,
                        c.ragged ? std::string("rows of different shapes")
                                 : std::string(dtype_name(c.dense.dtype())) + " " + shape_to_string(c.dense.shape()),
                        dtype_name(dtypes_[k]), shape_to_string(want)));
    }
  }

  OpenBatch& open_batch(int64_t epoch) {
    OpenBatch b;
    b.epoch = epoch;
    b.seq = next_seq_++;
    for (size_t k = 0; k < row_shapes_.size(); ++k) {
      Shape s = row_shapes_[k];
      s.insert(s.begin(), size_);
      b.columns.push_back(Tensor::empty(dtypes_[k], s));
    }
    open_.push_back(std::move(b));
    return open_.back();
  }

  // Rows [src_begin, src_begin + count) of `cols` become rows [dst_row, ...) of `b`.
  void copy_rows(const std::vector<Column>& cols, int64_t src_begin, int64_t count, OpenBatch& b,
                 int64_t dst_row) const {
    for (size_t k = 0; k < cols.size(); ++k) {
      const size_t rb = row_bytes_[k];
      std::memcpy(b.columns[k].raw() + static_cast<size_t>(dst_row) * rb,
                  cols[k].dense.raw() + static_cast<size_t>(src_begin) * rb, static_cast<size_t>(count) * rb);
    }
  }

  // The first `rows` rows of `b` as a chunk of [rows, ...] columns (no copy when the batch is full).
  Chunk batch_rows(const OpenBatch& b, int64_t rows) const {
    Chunk c;
    c.rows = rows;
    for (size_t k = 0; k < b.columns.size(); ++k) {
      if (rows == size_) {
        c.columns.push_back(Column{false, b.columns[k], {}});
        continue;
      }
      Shape s = row_shapes_[k];
      s.insert(s.begin(), rows);
      Tensor t = Tensor::empty(dtypes_[k], s);
      std::memcpy(t.raw(), b.columns[k].raw(), static_cast<size_t>(rows) * row_bytes_[k]);
      c.columns.push_back(Column{false, t, {}});
    }
    return c;
  }

  // Tasks whose batches have all been handed out are finished (emitting a batch waits for its
  // writers) and leave the window. Tasks are live in dispatch order, so their last batches ascend.
  void retire_emitted() {
    const int64_t first_open = open_.empty() ? next_seq_ : open_.front().seq;
    while (!live_.empty() && live_.front().last_batch < first_open) {
      retire(live_.front());
      live_.pop_front();
    }
  }

  void wait_all() {
    for (LiveTask& t : live_) {
      t.done.wait();
      retire(t);
    }
    live_.clear();
  }

  // A task computes at least this many bytes of results (unless its chunk has fewer rows).
  static constexpr size_t kMinTaskBytes = size_t(1) << 20;

  IteratorPtr input_;
  std::vector<std::string> in_fields_;
  int64_t min_task_rows_ = 1;
  std::vector<Shape> row_shapes_;
  std::vector<DType> dtypes_;
  std::vector<size_t> row_bytes_;
  int64_t size_ = 1;
  bool drop_ = false;
  int64_t window_ = 1;  // without an autotuner
  Knob* knob_ = nullptr;
  mutable int64_t most_window_ = 1;
  trace::NameId task_name_ = 0;  // interned at construction when a trace records (tasks run on the pool)
  TaskLength task_length_;       // whether its tasks are short enough for a waiting thread to run
  uint64_t result_row_bytes_ = 0;
  uint64_t reserved_ = 0;        // granted by room_for_a_task() for the tasks of the chunk being dispatched
  bool dispatch_fixed_ = false;  // that chunk's results are the stage's fixed holding
  std::deque<OpenBatch> open_;
  int64_t next_seq_ = 0;
  std::deque<LiveTask> live_;
  int64_t restored_rows_ = 0;
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_map_batch(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<MapBatch>(ctx, stage, std::move(input));
}

}  // namespace pipec
