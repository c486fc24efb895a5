#include "runtime/exec/stages/directed_interleave.h"

#include <algorithm>

#include "runtime/exec/chunk_builder.h"

namespace pipec {

DirectedInterleave::DirectedInterleave(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> datasets,
                                       bool stop_on_empty)
    : ChunkIterator(ctx, stage), epoch_(epoch), data_(std::move(datasets)), stop_on_empty_(stop_on_empty) {
  const Stage& s = spec();
  for (size_t k = 0; k < data_.size(); ++k) {
    orders_.push_back(field_order(s.element, ctx.plan->stages.at(s.inputs.at(k)).element));
    active_ += data_[k] ? 1 : 0;
  }
  pending_.resize(data_.size());
  offset_.assign(data_.size(), 0);
  done_ = active_ == 0;
}

void DirectedInterleave::save(StateWriter& w) const {
  w.write_i64(produced_);
  w.write_i64(choices_);
  w.write_u32(done_ ? 1 : 0);
  save_selector(w);
  for (size_t k = 0; k < data_.size(); ++k) {
    w.write_u32(data_[k] ? 1 : 0);
    if (!data_[k]) continue;
    data_[k]->save(w);
    save_chunk(w, rest(pending_[k], offset_[k]));
  }
}

void DirectedInterleave::restore(StateReader& r) {
  produced_ = r.read_i64();
  choices_ = r.read_i64();
  done_ = r.read_u32() != 0;
  restore_selector(r);
  active_ = 0;
  for (size_t k = 0; k < data_.size(); ++k) {
    offset_[k] = 0;
    pending_[k] = Chunk{};
    if (r.read_u32() == 0) {
      data_[k].reset();
      continue;
    }
    if (!data_[k]) throw r.error("a dataset that cannot be chosen has a saved state");
    ++active_;
    data_[k]->restore(r);
    pending_[k] = restore_chunk(r);
    largest_pulled_ = std::max(largest_pulled_, pending_[k].rows);
  }
}

ChunkIterator::Buffered DirectedInterleave::buffered() const {
  int64_t rows = selector_rows();
  for (size_t k = 0; k < data_.size(); ++k) rows += std::max<int64_t>(0, pending_[k].rows - offset_[k]);
  const int64_t chunks = static_cast<int64_t>(data_.size()) + (selector_input() ? 1 : 0);
  return {rows, chunks * largest_pulled_};
}

std::vector<const ChunkIterator*> DirectedInterleave::inputs() const {
  std::vector<const ChunkIterator*> out;
  for (const IteratorPtr& in : data_)
    if (in) out.push_back(in.get());
  if (const ChunkIterator* s = selector_input()) out.push_back(s);
  return out;
}

bool DirectedInterleave::produce(Chunk& out) {
  std::optional<ChunkBuilder> rows;
  while (!done_ && (!rows || !rows->full())) {
    std::optional<int64_t> k = next_choice(choices_);
    if (!k) {
      done_ = true;
      break;
    }
    ++choices_;
    const size_t d = static_cast<size_t>(*k);
    if (!data_[d]) continue;  // a dataset that ended (stop_on_empty = false)
    if (!fill(d)) {
      data_[d].reset();
      pending_[d] = Chunk{};
      if (stop_on_empty_ || --active_ == 0) done_ = true;
      continue;
    }
    if (!rows) rows.emplace(pending_[d], ctx_.chunk_rows);
    rows->add_row(pending_[d], offset_[d]++);
  }
  if (!rows || rows->rows() == 0) return false;
  out = rows->finish();
  out.first_index = produced_;
  out.epoch = epoch_;
  produced_ += out.rows;
  return true;
}

Chunk DirectedInterleave::rest(const Chunk& c, int64_t offset) {
  return offset < c.rows ? slice_rows(c, offset, c.rows) : Chunk{};
}

bool DirectedInterleave::fill(size_t d) {
  while (offset_[d] >= pending_[d].rows) {
    if (!pull(*data_[d], pending_[d])) return false;
    offset_[d] = 0;
    reorder_columns(pending_[d], orders_[d]);
  }
  return true;
}

}  // namespace pipec
