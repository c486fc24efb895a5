// npy(path) { row: dtype[shape] }: the rows of a NumPy array (its first dimension), one element each.
// The file must hold exactly the declared dtype and row shape; anything else is an error naming it.
#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"
#include "runtime/io/npy.h"

namespace pipec {

namespace {

class NpySource : public ChunkIterator {
 public:
  NpySource(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    const Stage& s = spec();
    std::string path = ctx.resolve_path(s.arg("path")->s);
    try {
      array_ = read_npy(path);
    } catch (const DataError& e) {
      throw StageError(s, e);
    }
    const Type& want = s.schema.at(0).type;
    Shape row(array_.shape().begin() + std::min<size_t>(1, array_.shape().size()), array_.shape().end());
    bool shape_ok = array_.rank() >= 1 && row.size() == want.shape.size();
    for (size_t i = 0; shape_ok && i < row.size(); ++i) shape_ok = want.shape[i] < 0 || want.shape[i] == row[i];
    if (array_.dtype() != want.dtype || !shape_ok)
      throw StageError(s, fmt::format("{} holds {}{} but the schema says rows of {}", path, dtype_name(array_.dtype()),
                                      shape_to_string(array_.shape()), type_to_string(want)));
    rows_ = array_.shape()[0];
  }
  void save(StateWriter& w) const override { w.write_i64(produced_); }
  void restore(StateReader& r) override { produced_ = r.read_i64(); }

 protected:
  bool produce(Chunk& out) override {
    int64_t n = std::min(ctx_.chunk_rows, rows_ - produced_);
    if (n <= 0) return false;
    Chunk whole;
    whole.rows = rows_;
    whole.columns.push_back(Column{false, array_, {}});
    out = slice_rows(whole, produced_, produced_ + n);
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  int64_t epoch_;
  Tensor array_;
  int64_t rows_ = 0;
};

}  // namespace

IteratorPtr make_npy_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<NpySource>(ctx, stage, epoch);
}

}  // namespace pipec
