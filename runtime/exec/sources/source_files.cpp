// files(pattern) / list_files(pattern): one element {path} per matching file, sorted unless shuffled
// (of a worker's share of them, under multi_worker's sharding by files).
#include "runtime/core/philox.h"
#include "runtime/exec/file_shard.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"

namespace pipec {

namespace {

class FilesSource : public ChunkIterator {
 public:
  FilesSource(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    const Stage& s = spec();
    try {
      files_ = files_of_shard(expand_glob(ctx.resolve_path(s.arg("pattern")->s)), s);
    } catch (const DataError& e) {
      throw StageError(s, e);
    }
    const Value* shuffle = s.arg("shuffle");
    if (shuffle && shuffle->b) {
      const Value* seed = s.arg("seed");
      RandomStream rng(seed ? static_cast<uint64_t>(seed->i) : ctx.seed, static_cast<uint64_t>(stage), 0, epoch);
      for (size_t i = files_.size(); i > 1; --i)
        std::swap(files_[i - 1], files_[rng.uniform_int(0, static_cast<int64_t>(i) - 1)]);
    }
  }
  void save(StateWriter& w) const override { w.write_i64(produced_); }
  void restore(StateReader& r) override { produced_ = r.read_i64(); }

 protected:
  bool produce(Chunk& out) override {
    int64_t n = std::min<int64_t>(ctx_.chunk_rows, static_cast<int64_t>(files_.size()) - produced_);
    if (n <= 0) return false;
    std::vector<std::string> paths(files_.begin() + produced_, files_.begin() + produced_ + n);
    out = Chunk{};
    out.rows = n;
    out.columns.push_back(Column{false, Tensor::from_strings(paths, {n}), {}});
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  int64_t epoch_;
  std::vector<std::string> files_;
};

}  // namespace

IteratorPtr make_files_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<FilesSource>(ctx, stage, epoch);
}

}  // namespace pipec
