// cache() / cache("path"): the first complete pass over the input is kept and replayed by later passes
// (after a repeat). A pass that stops early leaves no cache, as in tf.data, and the next pass reads the
// input again, as the first pass did (with its epoch, so random ops and shuffles upstream give the
// same elements): whether a pass ended or stopped early depends on how far the stages after it read
// ahead, which depends on chunk sizes and threads, and the elements must not. In memory the cache lives
// for the run; in a file it is written to a temporary name and renamed when the pass completes, and a
// later run that finds the file replays it without reading the input at all.
//
// Passes of one cache can overlap: rejection_resample reads its input in several passes at once. Only
// one pass fills the store; a pass that starts while another fills it reads its input straight through
// (in the same epoch, so with the same elements) and keeps nothing.
//
// The chunks kept count in the run's memory budget as a fixed holding (runtime/exec/memory_budget.h):
// a pass that does not fit stops the run with an error naming the cache. Until the pass is complete
// its size is known only when the plan says how long the pass is (runtime/exec/footprint.h).
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "runtime/exec/memory_budget.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

struct CacheStore {
  std::vector<Chunk> chunks;
  bool complete = false;
  int64_t charged = 0;           // bytes of `chunks` counted in the memory budget
  int64_t first_epoch = -1;      // the epoch of the first pass, which every pass that reads the input uses
  const void* filler = nullptr;  // the pass filling `chunks` now, if any
};

// A cache file: a sequence of (u64 length, checkpoint-format blob of one chunk).
class CacheFile {
 public:
  static void write_chunk(std::ofstream& out, const Chunk& c) {
    StateWriter w(1);
    save_chunk(w, c);
    std::string blob = w.finish();
    uint64_t n = blob.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof n);
    out.write(blob.data(), static_cast<std::streamsize>(n));
  }
  static std::vector<Chunk> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<Chunk> chunks;
    uint64_t n = 0;
    while (in.read(reinterpret_cast<char*>(&n), sizeof n)) {
      std::string blob(n, '\0');
      if (!in.read(blob.data(), static_cast<std::streamsize>(n)))
        throw CheckpointError(path + ": the cache file is cut short");
      StateReader r(std::move(blob), path);
      chunks.push_back(restore_chunk(r));
    }
    return chunks;
  }
};

class Cache : public ChunkIterator {
 public:
  Cache(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    auto& slot = ctx.shared.at(stage);
    if (!slot) slot = std::make_shared<CacheStore>();
    store_ = std::static_pointer_cast<CacheStore>(slot);
    if (const Value* w = spec().arg("where"); w && w->kind == Value::String) {
      path_ = ctx.resolve_path(w->s);
      // A complete cache file from an earlier run is replayed as it is.
      if (!store_->complete && std::filesystem::exists(path_)) {
        try {
          store_->chunks = CacheFile::read_all(path_);
        } catch (const std::exception& e) {
          throw StageError(spec(), fmt::format("{} (delete it to rebuild the cache)", e.what()));
        }
        store_->complete = true;
        recount();
      }
    }
  }
  ~Cache() override {
    if (store_->filler == this) store_->filler = nullptr;
    if (file_.is_open()) {
      file_.close();
      std::filesystem::remove(path_ + ".tmp");
    }
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_u32(store_->complete ? 1 : 0);
    w.write_u64(store_->chunks.size());
    for (const Chunk& c : store_->chunks) save_chunk(w, c);
    w.write_u64(replay_pos_);
    w.write_i64(store_->first_epoch);
    w.write_u32(input_ ? 1 : 0);
    if (input_) input_->save(w);
    w.write_u32(reads_through_ ? 1 : 0);
    w.write_u32(ended_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    store_->complete = r.read_u32() != 0;
    uint64_t n = r.read_u64();
    store_->chunks.clear();
    for (uint64_t i = 0; i < n; ++i) store_->chunks.push_back(restore_chunk(r));
    recount();
    replay_pos_ = r.read_u64();
    store_->first_epoch = r.read_i64();
    input_.reset();
    if (r.read_u32()) {
      input_ = build_iterator(ctx_, spec().inputs[0], store_->first_epoch);
      input_->restore(r);
    }
    reads_through_ = r.read_u32() != 0;
    ended_ = r.read_u32() != 0;
    if (input_ && !reads_through_) store_->filler = this;
  }

  // One whole pass, by design: it is what a cache keeps (and what tf.data's checkpoints save of it).
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const Chunk& c : store_->chunks) rows += c.rows;
    return {rows, kUnbounded};
  }
  std::vector<const ChunkIterator*> inputs() const override {
    return input_ ? std::vector<const ChunkIterator*>{input_.get()} : std::vector<const ChunkIterator*>{};
  }

 protected:
  bool produce(Chunk& out) override {
    if (ended_) return false;
    if (!input_ && !store_->complete && store_->filler && store_->filler != this) {
      reads_through_ = true;
      input_ = build_iterator(ctx_, spec().inputs[0], store_->first_epoch);
    }
    if (reads_through_) {
      if (!pull(*input_, out)) {
        input_.reset();
        ended_ = true;
        return false;
      }
      out.epoch = epoch_;
      return true;
    }
    if (store_->complete && !input_) {
      if (replay_pos_ >= store_->chunks.size()) return false;
      out = store_->chunks[replay_pos_++];
      out.epoch = epoch_;
      return true;
    }
    if (!input_) {
      store_->chunks.clear();
      recount();
      if (store_->first_epoch < 0) store_->first_epoch = epoch_;
      input_ = build_iterator(ctx_, spec().inputs[0], store_->first_epoch);
      store_->filler = this;
      if (!path_.empty()) {
        std::filesystem::path parent = std::filesystem::path(path_).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent);
        file_.open(path_ + ".tmp", std::ios::binary | std::ios::trunc);
        if (!file_) throw StageError(spec(), fmt::format("cannot write the cache file {}.tmp", path_));
      }
    }
    if (!pull(*input_, out)) {
      store_->complete = true;
      store_->filler = nullptr;
      if (ctx_.memory) ctx_.memory->set_bound(stage_, static_cast<uint64_t>(store_->charged));  // known now
      input_.reset();
      replay_pos_ = store_->chunks.size();
      if (file_.is_open()) {
        file_.close();
        std::filesystem::rename(path_ + ".tmp", path_);
      }
      return false;
    }
    store_->chunks.push_back(out);
    const int64_t bytes = static_cast<int64_t>(chunk_bytes(out));
    store_->charged += bytes;
    charge_fixed(bytes, "its pass so far");
    if (file_.is_open()) CacheFile::write_chunk(file_, out);
    out.epoch = epoch_;  // the stages after the cache are in this pass's epoch
    return true;
  }

  // Counts the whole store again (after it was replaced or cleared).
  void recount() {
    const int64_t bytes = [&] {
      int64_t n = 0;
      for (const Chunk& c : store_->chunks) n += static_cast<int64_t>(chunk_bytes(c));
      return n;
    }();
    const int64_t delta = bytes - store_->charged;
    store_->charged = bytes;
    charge_fixed(delta, "its pass");
    if (store_->complete && ctx_.memory) ctx_.memory->set_bound(stage_, static_cast<uint64_t>(bytes));
  }

 private:
  int64_t epoch_;
  std::shared_ptr<CacheStore> store_;
  std::string path_;    // cache("path"): the cache file
  std::ofstream file_;  // open while the first pass writes it
  IteratorPtr input_;
  size_t replay_pos_ = 0;
  bool reads_through_ = false;  // another pass was filling the store when this one began
  bool ended_ = false;          // a pass that read through has ended
};

}  // namespace

IteratorPtr make_cache(RunContext& ctx, int stage, int64_t epoch) { return std::make_unique<Cache>(ctx, stage, epoch); }

}  // namespace pipec
