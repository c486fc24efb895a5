// What choose_from and sample_from share (tf.data's DirectedInterleave): element i of the output is the
// next element of the dataset that choice i of a selector names. The output ends when the selector does;
// when the chosen dataset has ended, it ends too (stop_on_empty), or that choice is skipped, and the
// output ends once every dataset has. A subclass is the selector: choose_from's reads an index pipeline,
// sample_from's draws tf.data's random choices.
#pragma once

#include <optional>
#include <vector>

#include "runtime/exec/stage_factories.h"

namespace pipec {

class DirectedInterleave : public ChunkIterator {
 public:
  /// `datasets`: one per dataset the stage reads; a null one is never chosen (sample_from's weight 0).
  DirectedInterleave(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> datasets, bool stop_on_empty);

  // The selector's position, every dataset's and the rest of the chunk pulled from it; an ended
  // dataset saves nothing.
  void save(StateWriter& w) const final;
  void restore(StateReader& r) final;
  // The rest of one chunk of each input: the datasets and the selector's, if it reads one.
  Buffered buffered() const final;
  std::vector<const ChunkIterator*> inputs() const final;

 protected:
  bool produce(Chunk& out) final;

  /// The dataset that choice number `choice` names; nullopt when the selector has ended. Throws a
  /// StageError naming the choice when it is outside [0, number of datasets).
  virtual std::optional<int64_t> next_choice(int64_t choice) = 0;
  /// The selector's own state, besides how many choices were made (which the base saves).
  virtual void save_selector(StateWriter&) const {}
  virtual void restore_selector(StateReader&) {}
  /// The selector's input, if it reads one, and the rows it holds of it (at most one chunk).
  virtual const ChunkIterator* selector_input() const { return nullptr; }
  virtual int64_t selector_rows() const { return 0; }

  size_t dataset_count() const { return data_.size(); }

 private:
  static Chunk rest(const Chunk& c, int64_t offset);
  // Makes sure dataset d has a row pending; false when it has ended.
  bool fill(size_t d);

  int64_t epoch_;
  std::vector<IteratorPtr> data_;            // null once a dataset has ended (or never chosen)
  std::vector<std::vector<size_t>> orders_;  // per dataset: where each of this stage's fields is in its chunks
  std::vector<Chunk> pending_;
  std::vector<int64_t> offset_;
  int64_t choices_ = 0;  // choices read from the selector so far
  int64_t active_ = 0;   // datasets that have not ended
  bool stop_on_empty_;
  bool done_ = false;
};

}  // namespace pipec
