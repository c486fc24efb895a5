// tfrecord(files) { schema }: reads TFRecord files and parses the schema's features, a chunk of
// records at a time. Followed by interleave(cycle_length, block_length), it reads several files in
// turn exactly as tf.data's interleave over per-file TFRecordDatasets does. Under multi_worker's sharding
// by files it reads only its share of the files (runtime/exec/file_shard.h).
//
// Files read ahead: a slot of the cycle may read its file on a thread of its own (ReadAheadReader).
// How many do is a knob (runtime/exec/knob.h): fixed by parallel_reads = N, tuned for
// parallel_reads = auto and interleave(cycle_length = auto). Reading ahead never changes the order of
// the records, only which thread reads them. A reader's blocks count in the run's memory budget, only
// when the budget grants them: a slot the budget refuses reads its file inline.
//
// Records parsed on the pool: on a run with a thread pool (and without ignore_errors), the source's
// thread only reads and frames the records a chunk at a time and hands each chunk to a worker to parse,
// up to kParseAhead per worker ahead of the one it delivers. Chunks are delivered in the order they
// were framed, so the output never depends on the thread count, and an error stays where it was: a
// record that fails to frame stops the source after the chunks before its own, and a record that fails
// to parse is reported for its chunk, naming its file and record, as when parsing inline. (The chess
// pipeline's source thread bound the run: reading, framing and parsing plus the shuffle after it were
// 58% of the CPU, on one thread.)
//
// Data CRCs: the reader checks both CRCs of each record, unless a worker was idle when the source last
// delivered a chunk. Then the workers check the data CRCs of the records framed next, before parsing
// them (the lengths' CRCs stay with the framing, which needs them): a mismatch is the reader's own
// error for the same record, reported for its chunk as a parse error is. A file read ahead has its
// CRCs checked on its reader's thread. A checkpoint saves where the first chunk not yet delivered
// began: the chunks being parsed are framed again on restore.
#include <algorithm>
#include <cstring>
#include <deque>
#include <future>

#include <fmt/format.h>

#include "runtime/core/philox.h"
#include "runtime/exec/file_shard.h"
#include "runtime/exec/iterator.h"
#include "runtime/exec/knob.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/exec/sources/read_ahead_reader.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"
#include "runtime/io/example_parser.h"
#include "runtime/io/file_glob.h"
#include "runtime/io/record_batch.h"
#include "runtime/io/tfrecord_format.h"
#include "runtime/io/tfrecord_reader.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {

FeatureSpec feature_spec(const SchemaEntry& e) {
  FeatureSpec s;
  const Type& t = e.type;
  if (e.fixed_bytes) {
    s = FeatureSpec::fixed_bytes(e.name, t.shape.back(), Shape(t.shape.begin(), t.shape.end() - 1));
  } else {
    FeatureKind kind = t.dtype == DType::I64   ? FeatureKind::Int64
                       : t.dtype == DType::F32 ? FeatureKind::Float
                                               : FeatureKind::Bytes;
    bool var = !t.shape.empty() && t.shape.back() < 0;
    s = var               ? FeatureSpec::var_len(e.name, kind)
        : t.shape.empty() ? FeatureSpec::scalar(e.name, kind)
                          : FeatureSpec::fixed(e.name, kind, t.shape);
  }
  // tf.io.VarLenFeature: a record without the feature has an empty list.
  if (s.variable_length() && !e.default_value) {
    if (s.kind == FeatureKind::Int64) s = std::move(s).with_default(std::vector<int64_t>{});
    else if (s.kind == FeatureKind::Float) s = std::move(s).with_default(std::vector<float>{});
    else s = std::move(s).with_default(std::vector<std::string>{});
  }
  if (e.default_value) {
    // A scalar default fills every value of a fixed-length feature.
    int64_t n = s.variable_length() ? 1 : std::max<int64_t>(1, s.values_per_record());
    std::vector<Value> values;
    if (e.default_value->kind == Value::List) values = e.default_value->items;
    else values.assign(static_cast<size_t>(e.fixed_bytes ? 1 : n), *e.default_value);
    if (s.kind == FeatureKind::Int64) {
      std::vector<int64_t> v;
      for (auto& x : values) v.push_back(x.kind == Value::Float ? static_cast<int64_t>(x.f) : x.i);
      s = std::move(s).with_default(v);
    } else if (s.kind == FeatureKind::Float) {
      std::vector<float> v;
      for (auto& x : values) v.push_back(static_cast<float>(x.as_double()));
      s = std::move(s).with_default(v);
    } else {
      std::vector<std::string> v;
      for (auto& x : values) v.push_back(x.s);
      s = std::move(s).with_default(v);
    }
  }
  return s;
}

class TFRecordSource : public ChunkIterator {
 public:
  TFRecordSource(RunContext& ctx, int stage, int64_t epoch, int64_t cycle_length, int64_t block_length, Knob* readers,
                 int64_t fixed_readers)
      : ChunkIterator(ctx, stage),
        epoch_(epoch),
        cycle_length_(cycle_length),
        block_length_(block_length),
        readers_(readers),
        fixed_readers_(fixed_readers) {
    const Stage& s = spec();
    std::vector<FeatureSpec> specs;
    for (const SchemaEntry& e : s.schema) specs.push_back(feature_spec(e));
    parser_ = std::make_unique<ExampleParser>(std::move(specs));
    std::string pattern = ctx.resolve_path(s.arg("files")->s);
    try {
      files_ = files_of_shard(expand_glob(pattern), s);
    } catch (const DataError& e) {
      throw StageError(s, e);
    }
    if (const Value* c = s.arg("compression"))
      options_.compression = parse_compression(c->s).value_or(Compression::None);
    else options_.compression = Compression::None;
    const Value* shuffle = s.arg("shuffle_files");
    if (shuffle && shuffle->b) {
      const Value* seed = s.arg("seed");
      RandomStream rng(seed ? static_cast<uint64_t>(seed->i) : ctx.seed, static_cast<uint64_t>(stage), 0, epoch);
      for (size_t i = files_.size(); i > 1; --i)
        std::swap(files_[i - 1], files_[rng.uniform_int(0, static_cast<int64_t>(i) - 1)]);
    }
    slots_.resize(static_cast<size_t>(std::max<int64_t>(1, cycle_length_)));
    parse_on_pool_ = ctx.pool != nullptr && ctx.parse_records_on_pool && !tolerant();
    crc_checks_ = parse_on_pool_ && options_.verify_data_crc ? ctx.data_crc_checks : DataCrcChecks::ByReader;
    crc_on_workers_ = crc_checks_ == DataCrcChecks::OnWorkers;
  }
  ~TFRecordSource() override {
    clear_parsing();  // its tasks refer to this source
    for (Slot& s : slots_) close(s);
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    // While chunks are being parsed, the reading has gone past what was delivered: the state is where
    // the first of them began.
    const Position now = position();
    const Position& at = parsing_.empty() ? now : parsing_.front().before;
    w.write_u64(at.next_file);
    w.write_i64(at.cycle_index);
    w.write_i64(at.block_index);
    w.write_u64(at.slots.size());
    for (const auto& [file, consumed] : at.slots) {
      w.write_i64(file);
      w.write_i64(consumed);
    }
  }

  void restore(StateReader& r) override {
    clear_parsing();
    framing_done_ = false;
    produced_ = r.read_i64();
    next_file_ = r.read_u64();
    cycle_index_ = r.read_i64();
    block_index_ = r.read_i64();
    uint64_t n = r.read_u64();
    if (n != slots_.size() || next_file_ > files_.size()) throw r.error("tfrecord state does not match this plan");
    for (Slot& s : slots_) {
      s.file = r.read_i64();
      s.consumed = r.read_i64();
      close(s);
      if (s.file < 0) continue;
      if (static_cast<size_t>(s.file) >= files_.size())
        throw r.error("tfrecord state names a file that no longer matches");
      // Reopen and skip what was already delivered.
      auto reader = std::make_unique<TFRecordReader>(files_[s.file], options_);
      std::string_view rec;
      for (int64_t i = 0; i < s.consumed; ++i)
        if (!reader->next(rec))
          throw r.error(fmt::format("{} has fewer records than the checkpoint says", files_[s.file]));
      open(s, std::move(reader));
    }
  }

 protected:
  bool produce(Chunk& out) override {
    if (parse_on_pool_) {
      if (!next_parsed(out)) return false;
    } else {
      framed_.clear();
      try {
        while (static_cast<int64_t>(framed_.records.size()) < ctx_.chunk_rows) {
          if (!next_record(framed_)) break;
        }
      } catch (const DataError& e) {
        throw StageError(spec(), e);  // names the source's place in the spec too
      }
      if (framed_.records.empty()) return false;
      framed_.seal();
      out = parse(framed_);
    }
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += out.rows;
    return out.rows > 0 || produce(out);
  }

 private:
  // A record whose data CRC the worker that parses its chunk checks.
  struct Unchecked {
    size_t row;           // in the chunk
    uint32_t stored_crc;  // its footer
    uint64_t start;       // offset of the record in its file
  };

  // The records of one chunk, framed, with each one's file (index into files_) and index in its file.
  // A record read here stays where its reader read it: the chunk holds that read buffer until it is
  // parsed (TFRecordReader::hold_buffer), so framing copies nothing. A record read ahead on another
  // thread is copied (its reader's blocks go back to it). Holds are let go on the source's thread.
  struct Framed {
    std::vector<std::string_view> records;             // in held read buffers, or in `copies` once sealed
    std::vector<std::shared_ptr<const char[]>> holds;  // the read buffers those views point into
    RecordBatch copies;                                // the records read ahead, copied
    std::vector<size_t> copied_rows;                   // their rows
    uint64_t bytes = 0;                                // of all its records
    std::vector<int64_t> file, index;
    std::vector<Unchecked> unchecked;
    void clear() {
      records.clear();
      holds.clear();
      copies.clear();
      copied_rows.clear();
      bytes = 0;
      file.clear();
      index.clear();
      unchecked.clear();
    }
    // Once framing is done (`copies` no longer grows): the copied records' views.
    void seal() {
      for (size_t k = 0; k < copied_rows.size(); ++k) records[copied_rows[k]] = copies[k];
    }
  };

  // Where the reading stands (all of save()'s state but produced_).
  struct Position {
    size_t next_file = 0;
    int64_t cycle_index = 0, block_index = 0;
    std::vector<std::pair<int64_t, int64_t>> slots;  // file, records consumed
  };
  Position position() const {
    Position p{next_file_, cycle_index_, block_index_, {}};
    for (const Slot& s : slots_) p.slots.emplace_back(s.file, s.consumed);
    return p;
  }

  // A chunk framed here and parsed on the pool, or the framing error that stops the source in its place.
  struct Parsing {
    Position before;
    std::shared_ptr<Framed> framed;  // read by its task until `chunk` is ready
    std::future<Chunk> chunk;
    std::exception_ptr error;
    uint64_t charged = 0;  // granted by the memory budget (0 for the first in flight)
  };

  // Chunks in flight on the pool per worker, beyond the one delivered next.
  static constexpr int64_t kParseAhead = 2;

  // The next chunk in framing order, parsed on the pool; keeps up to kParseAhead per worker in flight.
  bool next_parsed(Chunk& out) {
    const int64_t ahead = kParseAhead * std::max(1, ctx_.pool->size());
    while (!framing_done_ && static_cast<int64_t>(parsing_.size()) < ahead) {
      // Each chunk in flight holds its records and then their parsed columns (about as many bytes).
      // The first is what the source holds parsing inline too (not counted, as there); each further
      // one is an optional holding, framed only when the budget grants its estimate.
      const uint64_t estimate = 2 * largest_framed_;
      Parsing p;
      if (ctx_.memory && !parsing_.empty()) {
        if (estimate == 0 || !ctx_.memory->try_reserve(stage_, estimate)) break;
        p.charged = estimate;
      }
      p.before = position();
      auto framed = std::make_shared<Framed>();
      if (!spare_.empty()) {
        framed = std::move(spare_.back());
        spare_.pop_back();
      }
      try {
        while (static_cast<int64_t>(framed->records.size()) < ctx_.chunk_rows && next_record(*framed)) {
        }
      } catch (const DataError& e) {
        // Not this chunk's records: the error, after the chunks before it (as when parsing inline).
        p.error = std::make_exception_ptr(StageError(spec(), e));
        framing_done_ = true;
      }
      if (!p.error && framed->records.empty()) {
        framing_done_ = true;
        release(p);
        break;
      }
      if (!p.error) {
        framed->seal();
        const uint64_t bytes = 2 * framed->bytes;
        largest_framed_ = std::max<uint64_t>(largest_framed_, framed->bytes);
        if (ctx_.memory && p.charged > 0 && bytes > p.charged) {
          ctx_.memory->add_optional(stage_, bytes - p.charged);  // here already: it counts
          p.charged = bytes;
        }
        p.chunk = ctx_.pool->submit([this, framed] { return parse(*framed); }, true);
        p.framed = std::move(framed);
      } else {
        release(p);
      }
      parsing_.push_back(std::move(p));
    }
    if (parsing_.empty()) return false;
    Parsing& front = parsing_.front();
    if (front.error) std::rethrow_exception(front.error);  // and again on every later call
    try {
      if (crc_checks_ == DataCrcChecks::Adaptive) crc_on_workers_ = ctx_.pool->idle_workers() > 0;
      // Waiting for a worker is not this stage's own time (the map's waits are counted the same way).
      const int64_t start = trace::now_ns();
      ctx_.pool->wait_helping(front.chunk);
      out = front.chunk.get();
      add_wait_ns(trace::now_ns() - start);
    } catch (...) {
      front.error = std::current_exception();
      framing_done_ = true;
      throw;
    }
    release(front);
    // Its buffers are used again (a fresh one per chunk costs page faults).
    front.framed->clear();
    spare_.push_back(std::move(front.framed));
    parsing_.pop_front();
    return true;
  }

  void release(Parsing& p) {
    if (p.charged == 0 || !ctx_.memory) return;
    ctx_.memory->release(stage_, p.charged);
    p.charged = 0;
  }

  // Waits for every chunk in flight and forgets them.
  void clear_parsing() {
    for (Parsing& p : parsing_) {
      if (p.chunk.valid()) p.chunk.wait();
      if (p.framed) p.framed->clear();  // its holds, let go here (a task's copy may outlive it)
      release(p);
    }
    parsing_.clear();
  }

  // One file of the interleave cycle, read here or (parallel reads) on a thread of its own.
  struct Slot {
    int64_t file = -1;
    int64_t consumed = 0;
    std::unique_ptr<TFRecordReader> reader;
    std::unique_ptr<ReadAheadReader> ahead;
    uint64_t charged = 0;  // the reader's blocks, counted in the memory budget

    bool is_open() const { return reader || ahead; }
    bool next(std::string_view& rec) { return ahead ? ahead->next(rec) : reader->next(rec); }
  };

  int64_t readers() const { return readers_ ? readers_->value() : fixed_readers_; }

  // Opens `r` in slot `s`: on a reader thread when the slot is among the first readers() of the cycle
  // and the memory budget has room for its blocks, otherwise read here.
  void open(Slot& s, std::unique_ptr<TFRecordReader> r) {
    const int64_t index = &s - slots_.data();
    bool ahead = index < readers();
    // Reading ahead is never needed to make progress (the slot can read here), so every reader's
    // blocks are an optional holding: a slot the budget has no room for reads its file inline.
    if (ahead && ctx_.memory) {
      const uint64_t bytes = ReadAheadReader::kMostBytes;
      if (ctx_.memory->try_reserve(stage_, bytes)) s.charged = bytes;
      else ahead = false;
    }
    if (readers_) readers_->note_item_bytes(ReadAheadReader::kMostBytes);
    if (ahead) s.ahead = std::make_unique<ReadAheadReader>(std::move(r), ctx_.cancel, ctx_.stats[stage_].get());
    else s.reader = std::move(r);
  }
  void close(Slot& s) {
    s.ahead.reset();
    s.reader.reset();
    if (s.charged && ctx_.memory) ctx_.memory->release(stage_, s.charged);
    s.charged = 0;
  }

  // One record in interleave order, appended to `into`; false at the end of all files.
  bool next_record(Framed& into) {
    for (;;) {
      Slot& slot = slots_[cycle_index_];
      if (slot.is_open()) {
        std::string_view rec;
        bool got = false;
        // A file read ahead has its CRCs checked on its reader's thread, beside this one already.
        const bool crc_on_workers = crc_on_workers_ && slot.reader;
        if (slot.reader) slot.reader->set_verify_data_crc(options_.verify_data_crc && !crc_on_workers);
        const uint64_t start = crc_on_workers ? slot.reader->offset() : 0;
        try {
          got = slot.next(rec);
        } catch (const DataError& e) {
          if (!tolerant()) throw;
          // The framing of this file can no longer be trusted: drop the rest of it.
          ctx_.dropped[stage_]->fetch_add(1);
          got = false;
        }
        if (got) {
          if (crc_on_workers)
            into.unchecked.push_back({into.records.size(), load_le32(rec.data() + rec.size()), start});
          if (slot.reader) {
            // Held, not copied: the chunk keeps the reader's buffer (it is checked against the holds
            // taken last, as a chunk's records mostly come from one buffer of each file in turn).
            const char* buffer = slot.reader->buffer_data();
            if (std::find_if(into.holds.rbegin(), into.holds.rend(),
                             [&](const auto& h) { return h.get() == buffer; }) == into.holds.rend())
              into.holds.push_back(slot.reader->hold_buffer());
            into.records.push_back(rec);
          } else {
            into.copied_rows.push_back(into.records.size());
            into.copies.append(rec);
            into.records.emplace_back();
          }
          into.bytes += rec.size();
          into.file.push_back(slot.file);
          into.index.push_back(slot.consumed);
          ++slot.consumed;
          if (++block_index_ >= block_length_) advance();
          return true;
        }
        close(slot);
        slot.file = -1;
        advance();
        continue;
      }
      if (next_file_ < files_.size()) {
        slot.file = static_cast<int64_t>(next_file_++);
        slot.consumed = 0;
        try {
          open(slot, std::make_unique<TFRecordReader>(files_[slot.file], options_));
        } catch (const DataError& e) {
          if (!tolerant()) throw;
          ctx_.dropped[stage_]->fetch_add(1);
          slot.file = -1;
          advance();
        }
        continue;
      }
      // No more files: finish when every slot is empty.
      bool any = false;
      for (const Slot& s : slots_) any = any || s.is_open();
      if (!any) return false;
      advance();
    }
  }

  void advance() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % static_cast<int64_t>(slots_.size());
  }

  bool tolerant() const { return ctx_.tolerant[stage_]; }

  // Parses a chunk's records; on the pool, only reads this source's constant members (the parser, the
  // file names, the spec).
  Chunk parse(const Framed& framed) const {
    const std::vector<std::string_view>& records = framed.records;
    for (const Unchecked& u : framed.unchecked) {
      if (tfrecord::data_crc_matches(records[u.row], u.stored_crc)) continue;
      DataLocation where{.file = files_[framed.file[u.row]],
                         .record = framed.index[u.row],
                         .offset = static_cast<int64_t>(u.start),
                         .uncompressed_offset = options_.compression != Compression::None};
      throw StageError(spec(), DataError(DataError::Kind::DataLoss, tfrecord::kDataCrcMismatch, std::move(where)));
    }
    std::vector<ParsedColumn> cols;
    try {
      parser_->parse_batch(records, cols);
      return to_chunk(cols, records.size());
    } catch (const DataError& e) {
      int64_t r = e.location().record;
      if (!tolerant()) {
        DataLocation where;
        if (r >= 0 && static_cast<size_t>(r) < framed.file.size()) {
          where.file = files_[framed.file[r]];
          where.record = framed.index[r];
        }
        throw StageError(spec(), DataError(e.kind(), e.reason(), where));
      }
    }
    // ignore_errors: parse record by record, keeping the good ones.
    std::vector<std::string_view> good;
    for (std::string_view rec : records) {
      try {
        std::vector<ParsedColumn> one;
        parser_->parse_batch(std::span<const std::string_view>(&rec, 1), one);
        good.push_back(rec);
      } catch (const DataError&) {
        ctx_.dropped[stage_]->fetch_add(1);
      }
    }
    parser_->parse_batch(good, cols);
    return to_chunk(cols, good.size());
  }

  static Chunk to_chunk(std::vector<ParsedColumn>& cols, size_t rows) {
    Chunk c;
    c.rows = static_cast<int64_t>(rows);
    for (ParsedColumn& p : cols) {
      Column col;
      if (p.ragged) {
        col.ragged = true;
        const int64_t* splits = p.row_splits.data<int64_t>();
        for (size_t r = 0; r < rows; ++r) col.rows.push_back(slice_values(p.values, splits[r], splits[r + 1]));
      } else {
        col.dense = std::move(p.values);
      }
      c.columns.push_back(std::move(col));
    }
    return c;
  }

  static Tensor slice_values(const Tensor& values, int64_t begin, int64_t end) {
    Tensor t = Tensor::empty(values.dtype(), {end - begin});
    if (values.dtype() == DType::Bytes) {
      std::string blob;
      std::vector<int64_t> offs{0};
      for (int64_t i = begin; i < end; ++i) {
        blob += values.str(i);
        offs.push_back(static_cast<int64_t>(blob.size()));
      }
      t.set_strings(std::move(blob), std::move(offs));
    } else {
      size_t w = dtype_size(values.dtype());
      std::memcpy(t.raw(), values.raw() + begin * w, (end - begin) * w);
    }
    return t;
  }

  bool parse_on_pool_ = false;
  // Who checks the data CRCs of the records read on this thread (RunOptions::data_crc_checks); while
  // adaptive, the workers do while one of them is idle when a chunk is delivered, the reader while all
  // are busy: on 2 cores the workers are the pipeline's slow side (chess ran 7% slower with the CRCs on
  // them), on 16 this thread is (chess stopped at ~3.5M examples/s with reading and shuffling on it).
  DataCrcChecks crc_checks_ = DataCrcChecks::ByReader;
  bool crc_on_workers_ = false;  // for the records framed from now on
  std::deque<Parsing> parsing_;  // in framing order
  bool framing_done_ = false;    // the end of the files, or a framing error, reached
  uint64_t largest_framed_ = 0;  // bytes of the largest chunk of records framed
  std::vector<std::shared_ptr<Framed>> spare_;
  Framed framed_;  // parsing inline

  int64_t epoch_;
  int64_t cycle_length_;
  int64_t block_length_;
  Knob* readers_;  // files read ahead (the first readers() slots of the cycle); null: fixed_readers_
  int64_t fixed_readers_;
  std::vector<std::string> files_;
  TFRecordReaderOptions options_;
  std::unique_ptr<ExampleParser> parser_;
  std::vector<Slot> slots_;
  size_t next_file_ = 0;
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
};

}  // namespace

std::unique_ptr<ChunkIterator> make_tfrecord_source(RunContext& ctx, int stage, int64_t epoch, int64_t cycle_length,
                                                    int64_t block_length, const ReadAhead& read_ahead) {
  Knob* knob = read_ahead.tunable ? auto_knob(ctx, stage, KnobKind::ReadAhead, read_ahead.readers, 0, read_ahead.most)
                                  : auto_knob(ctx, stage, KnobKind::ReadAhead, read_ahead.readers, read_ahead.readers,
                                              read_ahead.readers);
  if (knob) {
    knob->set_cycle(cycle_length);
    if (read_ahead.fixed_reason && !knob->fixed_reason()) knob->set_fixed_reason(read_ahead.fixed_reason);
  }
  return std::make_unique<TFRecordSource>(ctx, stage, epoch, cycle_length, block_length, knob, read_ahead.readers);
}

}  // namespace pipec
