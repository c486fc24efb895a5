// scan(initial, fn): tf.data's `scan(initial_state, scan_func)`. The function runs on one element at a
// time with the state the element before left (`initial` for the first): its fields named like the
// state's are the next state, and the record it returns is the element. One element at a time, in
// order, on the thread that pulls: element i depends on every element before it. The function is the
// compiled kernel when there is one (runtime/exec/stages/map_apply.h), else the interpreter; random
// ops in it are keyed by the element's index, as a map's.
#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/map_apply.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

// One tensor as a column of one row.
Column one_row(const Tensor& t) {
  Shape s = t.shape();
  s.insert(s.begin(), 1);
  return Column{false, t.reshaped(s), {}};
}

class Scan : public ChunkIterator {
 public:
  Scan(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    in_fields_ = function_input_fields(*ctx.plan, stage);
    const Value* initial = s.arg("initial");
    if (!initial || !s.fn) throw StageError(s, "scan without its initial state or function");
    for (const Value& pair : initial->items) {
      const std::string& name = pair.items.at(0).s;
      // The state's type is its field's in the element (the checker makes them agree).
      const Field* f = nullptr;
      for (const Field& g : s.element.fields)
        if (g.name == name) f = &g;
      size_t result = 0;
      while (result < s.fn->results.size() && s.fn->results[result].first != name) ++result;
      if (!f || result == s.fn->results.size())
        throw StageError(s, fmt::format("scan's state `{}` is not returned", name));
      state_.push_back(tensor_from_value(pair.items.at(1), f->type->dtype, f->type->shape));
      state_result_.push_back(result);
    }
  }

  // The state left by the last element: the next element's depends on it alone.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    Chunk state;
    state.rows = 1;
    for (const Tensor& t : state_) state.columns.push_back(one_row(t));
    save_chunk(w, state);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    const Chunk state = restore_chunk(r);
    if (state.rows != 1 || state.columns.size() != state_.size()) throw r.error("scan: the saved state does not fit");
    for (size_t k = 0; k < state_.size(); ++k) state_[k] = column_row(state.columns[k], 0);
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& in_and_out) override {
    Chunk in;
    do {
      if (!pull(*input_, in)) return false;
    } while (in.rows == 0);
    std::optional<ChunkBuilder> rows;
    for (int64_t r = 0; r < in.rows; ++r) {
      // The state's columns, then the element's: the function's inputs in function_input_fields' order.
      Chunk one;
      one.rows = 1;
      one.first_index = produced_ + r;
      one.epoch = in.epoch;
      for (const Tensor& t : state_) one.columns.push_back(one_row(t));
      for (const Column& c : in.columns) one.columns.push_back(one_row(column_row(c, r)));
      Chunk result;
      result.rows = 1;
      try {
        result.columns = apply_stage_function(ctx_, spec(), in_fields_, one, true);
      } catch (const StageError&) {
        throw;
      } catch (const std::exception& e) {
        throw StageError::from(spec(), e);
      }
      for (size_t k = 0; k < state_.size(); ++k) state_[k] = column_row(result.columns.at(state_result_[k]), 0);
      if (!rows) rows.emplace(result, in.rows);
      rows->add_row(result, 0);
    }
    in_and_out = rows->finish();
    in_and_out.first_index = produced_;
    in_and_out.epoch = in.epoch;
    produced_ += in_and_out.rows;
    return true;
  }

 private:
  IteratorPtr input_;
  std::vector<std::string> in_fields_;  // the state's fields, then the element's
  std::vector<Tensor> state_;           // one per state field, in `initial`'s order
  std::vector<size_t> state_result_;    // where each state field is among the function's results
};

}  // namespace

IteratorPtr make_scan(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Scan>(ctx, stage, std::move(input));
}

}  // namespace pipec
