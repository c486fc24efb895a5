// flat_map(fn) and interleave(fn, cycle_length, block_length): tf.data's interleave, of which flat_map
// is the cycle of one. Each input element becomes a pipeline of its own: the stage's inner plan with the
// element's fields put in place of the arguments its `bind` names, read by iterators of their own.
// The order is tf.data's deterministic InterleaveDatasetOp's: a cycle of cycle_length slots; at the
// current slot, an open pipeline gives its next element (block_length in a row before the cycle moves
// on) or, at its end, closes and the cycle moves on; an empty slot opens the next input element's
// pipeline while the input lasts, and is passed over after. It ends when the input has ended and no
// slot is open.
//
// Each element's pipeline runs on the thread that pulls this stage, one element after another, so the
// output depends on nothing but the data. A checkpoint holds the input's position, the input rows read
// but not yet opened, and for each open slot the values bound into its pipeline and that pipeline's
// own state, so a resumed run rebuilds each open pipeline and continues it where it was.
#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

// One argument of the inner plan that takes a field of the element.
struct Binding {
  size_t stage = 0;
  std::string arg;
  size_t field = 0;  // in the input's element
};

// A scalar of an element's field as an argument value: a byte string, or an integer.
Value scalar_value(const Tensor& t, const Stage& s, const std::string& field) {
  if (t.num_elements() != 1) throw StageError(s, fmt::format("field `{}` is not one value", field));
  switch (t.dtype()) {
    case DType::Bytes: return Value::make_string(std::string(t.str(0)));
    case DType::Bool: return Value::make_int(*t.data<bool>() ? 1 : 0);
    case DType::I8: return Value::make_int(*t.data<int8_t>());
    case DType::U8: return Value::make_int(*t.data<uint8_t>());
    case DType::I16: return Value::make_int(*t.data<int16_t>());
    case DType::U16: return Value::make_int(*t.data<uint16_t>());
    case DType::I32: return Value::make_int(*t.data<int32_t>());
    case DType::U32: return Value::make_int(*t.data<uint32_t>());
    case DType::I64: return Value::make_int(*t.data<int64_t>());
    case DType::U64: return Value::make_int(static_cast<int64_t>(*t.data<uint64_t>()));
    default: break;
  }
  throw StageError(s, fmt::format("field `{}` is {}, which no source argument takes", field, dtype_name(t.dtype())));
}

class FlatMap : public ChunkIterator {
 public:
  FlatMap(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input)
      : ChunkIterator(ctx, stage), epoch_(epoch), input_(std::move(input)) {
    const Stage& s = spec();
    if (const Value* v = s.arg("cycle_length"); v && v->kind == Value::Int) cycle_ = v->i;
    if (const Value* v = s.arg("block_length")) block_ = v->i;
    if (cycle_ < 1 || block_ < 1) throw StageError(s, "cycle_length and block_length must be at least 1");
    const ElementInfo& in = ctx.plan->stages.at(s.inputs.at(0)).element;
    if (const Value* bind = s.arg("bind"))
      for (const Value& b : bind->items) {
        Binding one{static_cast<size_t>(b.items.at(0).i), b.items.at(1).s, in.fields.size()};
        for (size_t k = 0; k < in.fields.size(); ++k)
          if (in.fields[k].name == b.items.at(2).s) one.field = k;
        if (one.field == in.fields.size())
          throw StageError(s, fmt::format("the input has no field `{}`", b.items.at(2).s));
        bindings_.push_back(std::move(one));
      }
    slots_.resize(static_cast<size_t>(cycle_));
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_u32(end_of_input_ ? 1 : 0);
    w.write_i64(cycle_index_);
    w.write_i64(block_index_);
    save_chunk(w, slice_rows(pending_, offset_, pending_.rows));
    input_->save(w);
    for (const auto& slot : slots_) {
      w.write_u32(slot ? 1 : 0);
      if (!slot) continue;
      w.write_u64(slot->args.size());
      for (const Value& v : slot->args) {
        w.write_u32(v.kind == Value::String ? 1 : 0);
        if (v.kind == Value::String) w.write_string(v.s);
        else w.write_i64(v.i);
      }
      save_chunk(w, slice_rows(slot->pending, slot->offset, slot->pending.rows));
      slot->it->save(w);
    }
  }

  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    end_of_input_ = r.read_u32() != 0;
    cycle_index_ = r.read_i64();
    block_index_ = r.read_i64();
    if (cycle_index_ < 0 || cycle_index_ >= cycle_ || block_index_ < 0 || block_index_ >= block_)
      throw r.error("flat_map: position in the cycle out of range");
    pending_ = restore_chunk(r);
    offset_ = 0;
    largest_pulled_ = std::max(largest_pulled_, pending_.rows);  // the rest of one input chunk
    input_->restore(r);
    for (auto& slot : slots_) {
      slot.reset();
      if (r.read_u32() == 0) continue;
      const uint64_t n = r.read_u64();
      if (n != bindings_.size()) throw r.error("flat_map: the saved element binds other arguments");
      std::vector<Value> args;
      for (uint64_t k = 0; k < n; ++k)
        args.push_back(r.read_u32() != 0 ? Value::make_string(r.read_string()) : Value::make_int(r.read_i64()));
      slot = open(std::move(args));
      slot->pending = restore_chunk(r);
      largest_pulled_ = std::max(largest_pulled_, slot->pending.rows);  // the rest of one chunk of its pipeline
      slot->it->restore(r);
    }
  }

  Buffered buffered() const override {
    int64_t rows = pending_.rows - offset_;
    for (const auto& slot : slots_)
      if (slot) rows += slot->pending.rows - slot->offset;
    return {rows, (cycle_ + 1) * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    std::unique_ptr<ChunkBuilder> builder;
    while (!builder || !builder->full()) {
      auto& slot = slots_[static_cast<size_t>(cycle_index_)];
      if (slot) {
        if (slot->offset == slot->pending.rows && !refill(*slot)) {
          // The end of this element's pipeline: the cycle moves on.
          slot.reset();
          next_in_cycle();
          continue;
        }
        if (!builder) builder = std::make_unique<ChunkBuilder>(slot->pending, ctx_.chunk_rows);
        // Pipelines whose elements are laid out differently (a field ragged in one) go in chunks of their own.
        if (!builder->compatible(slot->pending)) break;
        const int64_t n =
            std::min({block_ - block_index_, slot->pending.rows - slot->offset, builder->capacity() - builder->rows()});
        builder->add_rows(slot->pending, slot->offset, slot->offset + n);
        slot->offset += n;
        block_index_ += n;
        if (block_index_ == block_) next_in_cycle();
      } else if (!end_of_input_) {
        if (offset_ == pending_.rows && !next_input()) continue;
        slot = open(bound_values(pending_, offset_));
        ++offset_;
      } else {
        bool any = false;
        for (const auto& s : slots_) any = any || s != nullptr;
        if (!any) break;
        next_in_cycle();
      }
    }
    if (!builder || builder->rows() == 0) return false;
    out = builder->finish();
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += out.rows;
    return true;
  }

 private:
  // One open element's pipeline: its plan, the run context its iterators share, and the rows of its
  // last chunk not handed on yet. Held by pointer: the context points at the plan.
  struct Slot {
    std::vector<Value> args;  // the values bound into the plan, in bindings_' order
    Plan plan;
    RunContext ctx;
    IteratorPtr it;
    Chunk pending;
    int64_t offset = 0;
  };

  void next_in_cycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % cycle_;
  }

  // The next chunk of the input into pending_; false (and end_of_input_) at its end.
  bool next_input() {
    while (pull(*input_, pending_)) {
      offset_ = 0;
      if (pending_.rows > 0) return true;
    }
    pending_ = Chunk{};
    offset_ = 0;
    end_of_input_ = true;
    return false;
  }

  // The next chunk of a slot's pipeline; false at its end.
  bool refill(Slot& slot) {
    while (pull(*slot.it, slot.pending)) {
      slot.offset = 0;
      if (slot.pending.rows > 0) return true;
    }
    return false;
  }

  std::vector<Value> bound_values(const Chunk& c, int64_t row) const {
    std::vector<Value> out;
    const ElementInfo& in = ctx_.plan->stages.at(spec().inputs.at(0)).element;
    for (const Binding& b : bindings_)
      out.push_back(scalar_value(column_row(c.columns.at(b.field), row), spec(), in.fields[b.field].name));
    return out;
  }

  // The pipeline of the element whose bound values are `args`, with iterators built and nothing read.
  std::unique_ptr<Slot> open(std::vector<Value> args) {
    auto slot = std::make_unique<Slot>();
    slot->args = std::move(args);
    slot->plan = *spec().inner;
    for (size_t k = 0; k < bindings_.size(); ++k) {
      Stage& target = slot->plan.stages.at(bindings_[k].stage);
      const Value& v = slot->args[k];
      if (target.kind == StageKind::Range && bindings_[k].arg == "step" && v.i == 0)
        throw StageError(spec(), "an element gives range a step of 0");
      bool set = false;
      for (auto& [name, value] : target.args)
        if (name == bindings_[k].arg) {
          value = v;
          set = true;
        }
      if (!set) target.args.push_back({bindings_[k].arg, v});
    }
    RunContext& c = slot->ctx;
    c.plan = &slot->plan;
    c.spec_dir = ctx_.spec_dir;
    c.seed = ctx_.seed;
    c.threads = 1;  // on this stage's thread: nothing in it waits on the run's pool
    c.cancel = ctx_.cancel;
    c.chunk_rows = ctx_.chunk_rows;
    const size_t n = slot->plan.stages.size();
    for (size_t i = 0; i < n; ++i) {
      c.stats.push_back(std::make_unique<StageStats>(std::string(stage_name(slot->plan.stages[i].kind))));
      c.dropped.push_back(std::make_unique<std::atomic<int64_t>>(0));
    }
    c.shared.resize(n);
    c.tolerant.assign(n, ctx_.tolerant.at(static_cast<size_t>(stage_)));
    c.stage_device.assign(n, "cpu");
    slot->it = build_iterator(c, static_cast<int>(n) - 1, epoch_);
    return slot;
  }

  int64_t epoch_;
  IteratorPtr input_;
  int64_t cycle_ = 1, block_ = 1;
  std::vector<Binding> bindings_;
  std::vector<std::unique_ptr<Slot>> slots_;  // the cycle; null where no pipeline is open
  int64_t cycle_index_ = 0, block_index_ = 0;
  bool end_of_input_ = false;
  Chunk pending_;  // input rows not opened yet, from offset_
  int64_t offset_ = 0;
};

}  // namespace

IteratorPtr make_flat_map(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input) {
  return std::make_unique<FlatMap>(ctx, stage, epoch, std::move(input));
}

}  // namespace pipec
