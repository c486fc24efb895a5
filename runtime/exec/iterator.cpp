#include "runtime/exec/iterator.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void RunContext::warn_once(const std::string& w) {
  std::lock_guard<std::mutex> lock(warnings_mu_);
  if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
}

std::vector<std::string> RunContext::warnings(size_t first) const {
  std::lock_guard<std::mutex> lock(warnings_mu_);
  if (first >= warnings_.size()) return {};
  return {warnings_.begin() + static_cast<std::ptrdiff_t>(first), warnings_.end()};
}

size_t RunContext::warning_count() const {
  std::lock_guard<std::mutex> lock(warnings_mu_);
  return warnings_.size();
}

std::string resolve_spec_path(const std::string& spec_dir, const std::string& p) {
  if (p.empty() || p[0] == '/' || spec_dir.empty()) return p;
  return (std::filesystem::path(spec_dir) / p).string();
}

std::string RunContext::resolve_path(const std::string& p) const { return resolve_spec_path(spec_dir, p); }

void RunContext::check_cancelled() const {
  if (cancel) cancel->throw_if_cancelled();
}

bool ChunkIterator::next(Chunk& out) {
  ctx_.check_cancelled();
  int64_t start = now_ns();
  child_ns_ = 0;
  bool ok = produce(out);
  const int64_t end = now_ns();
  int64_t own = end - start - child_ns_;
  StageStats& s = *ctx_.stats[stage_];
  s.add_busy_ns(own > 0 ? static_cast<uint64_t>(own) : 0);
  if (ok) {
    s.add_out(static_cast<uint64_t>(out.rows));
    s.add_bytes(chunk_bytes(out));
  } else {
    s.note_end();
  }
  // A span per chunk per stage: nested in the spans of the stages that pulled it, on this thread.
  if (trace::enabled()) {
    if (!trace_name_) trace_name_ = trace::name(fmt::format("#{} {}", stage_, stage_name(spec().kind)));
    trace::complete("stage", trace_name_, start, end - start, {"rows", ok ? static_cast<double>(out.rows) : 0.0},
                    {"own_us", own / 1e3});
  }
  return ok;
}

void ChunkIterator::charge_fixed(int64_t delta, const char* what) {
  if (!ctx_.memory || delta == 0) return;
  if (ctx_.memory->add_fixed(stage_, delta)) return;
  // Over the budget: the error names the stage holding the most, which is the one to make smaller
  // (often not the one whose last few bytes tipped the total).
  int largest = stage_;
  for (int i = 0; i < static_cast<int>(ctx_.plan->stages.size()); ++i)
    if (ctx_.memory->stage_use(i).fixed > ctx_.memory->stage_use(largest).fixed) largest = i;
  const uint64_t held = ctx_.memory->stage_use(largest).fixed;
  const std::string holding = largest == stage_ ? fmt::format("{} holds {}", what, format_bytes(held))
                                                : fmt::format("holds {} in fixed buffers", format_bytes(held));
  throw StageError(ctx_.plan->stages.at(largest),
                   fmt::format("{}, and the run's fixed buffers ({} in all) no longer fit in the memory budget of {} "
                               "(raise --memory-budget, or make the buffer smaller)",
                               holding, format_bytes(ctx_.memory->fixed_total()), format_bytes(ctx_.memory->limit())));
}

bool ChunkIterator::pull(ChunkIterator& input, Chunk& out) {
  int64_t start = now_ns();
  bool ok = input.next(out);
  child_ns_ += now_ns() - start;
  if (ok) largest_pulled_ = std::max(largest_pulled_, out.rows);
  return ok;
}

Chunk slice_rows(const Chunk& in, int64_t begin, int64_t end) {
  ChunkBuilder b(in, end - begin);
  b.add_rows(in, begin, end);
  Chunk out = b.finish();
  out.first_index = in.first_index + begin;
  out.epoch = in.epoch;
  return out;
}

Chunk select_rows(const Chunk& in, const std::vector<uint8_t>& keep) {
  int64_t n = 0;
  for (int64_t r = 0; r < in.rows; ++r) n += keep[r] ? 1 : 0;
  ChunkBuilder b(in, n);
  for (int64_t r = 0; r < in.rows; ++r)
    if (keep[r]) b.add_row(in, r);
  Chunk out = b.finish();
  out.epoch = in.epoch;
  return out;
}

std::vector<size_t> field_order(const ElementInfo& want, const ElementInfo& have) {
  std::vector<size_t> order;
  for (const Field& f : want.fields) {
    size_t k = 0;
    while (k < have.fields.size() && have.fields[k].name != f.name) ++k;
    if (k == have.fields.size()) throw std::logic_error("field_order: an input lacks field `" + f.name + "`");
    order.push_back(k);
  }
  return order;
}

void reorder_columns(Chunk& c, const std::vector<size_t>& order) {
  bool identity = order.size() == c.columns.size();
  for (size_t i = 0; identity && i < order.size(); ++i) identity = order[i] == i;
  if (identity) return;
  std::vector<Column> columns;
  columns.reserve(order.size());
  for (size_t k : order) columns.push_back(c.columns.at(k));
  c.columns = std::move(columns);
}

void append_rows(Chunk& dst, const Chunk& src, int64_t begin, int64_t end) {
  ChunkBuilder b(src, dst.rows + (end - begin));
  b.add_rows(dst, 0, dst.rows);
  b.add_rows(src, begin, end);
  int64_t first = dst.first_index;
  int64_t epoch = dst.epoch;
  dst = b.finish();
  dst.first_index = first;
  dst.epoch = epoch;
}

static void save_tensor(StateWriter& w, const Tensor& t) {
  w.write_u32(static_cast<uint32_t>(t.dtype()));
  w.write_u32(static_cast<uint32_t>(t.shape().size()));
  for (int64_t d : t.shape()) w.write_i64(d);
  if (t.dtype() == DType::Bytes) {
    w.write_string(t.blob());
    w.write_u64(t.offsets().size());
    for (int64_t o : t.offsets()) w.write_i64(o);
  } else {
    w.write_bytes(std::span<const uint8_t>(t.raw(), t.byte_size()));
  }
}

static Tensor restore_tensor(StateReader& r) {
  DType dt = static_cast<DType>(r.read_u32());
  uint32_t rank = r.read_u32();
  if (rank > 32) throw r.error("tensor rank out of range");
  Shape s(rank);
  for (auto& d : s) d = r.read_i64();
  Tensor t = Tensor::empty(dt, s);
  if (dt == DType::Bytes) {
    std::string blob = r.read_string();
    uint64_t n = r.read_u64();
    if (n != static_cast<uint64_t>(t.num_elements()) + 1) throw r.error("string offsets do not match the shape");
    std::vector<int64_t> offs(n);
    for (auto& o : offs) o = r.read_i64();
    t.set_strings(std::move(blob), std::move(offs));
  } else {
    std::vector<uint8_t> bytes = r.read_bytes();
    if (bytes.size() != t.byte_size()) throw r.error("tensor data size does not match its shape");
    // An empty tensor has no buffer, and memcpy's pointers must not be null even for 0 bytes.
    if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
  }
  return t;
}

void save_chunk(StateWriter& w, const Chunk& c) {
  w.write_i64(c.rows);
  w.write_i64(c.first_index);
  w.write_i64(c.epoch);
  w.write_u32(static_cast<uint32_t>(c.columns.size()));
  for (const Column& col : c.columns) {
    w.write_u32(col.ragged ? 1 : 0);
    if (col.ragged) {
      w.write_u64(col.rows.size());
      for (const Tensor& t : col.rows) save_tensor(w, t);
    } else {
      save_tensor(w, col.dense);
    }
  }
}

Chunk restore_chunk(StateReader& r) {
  Chunk c;
  c.rows = r.read_i64();
  c.first_index = r.read_i64();
  c.epoch = r.read_i64();
  uint32_t ncols = r.read_u32();
  if (ncols > 4096) throw r.error("column count out of range");
  for (uint32_t i = 0; i < ncols; ++i) {
    Column col;
    col.ragged = r.read_u32() != 0;
    if (col.ragged) {
      uint64_t n = r.read_u64();
      if (n != static_cast<uint64_t>(c.rows)) throw r.error("ragged column length does not match the rows");
      for (uint64_t k = 0; k < n; ++k) col.rows.push_back(restore_tensor(r));
    } else {
      col.dense = restore_tensor(r);
    }
    c.columns.push_back(std::move(col));
  }
  return c;
}

StageError::StageError(const Stage& stage, const std::string& what)
    : std::runtime_error((stage.loc.valid() ? stage.loc.to_string() + ": " : std::string()) +
                         std::string(stage_name(stage.kind)) + ": " + what),
      op_(stage_name(stage.kind)),
      spec_location_(stage.loc.valid() ? stage.loc.to_string() : std::string()) {}

StageError::StageError(const Stage& stage, const DataError& error) : StageError(stage, std::string(error.what())) {
  data_location_ = error.location();
}

StageError StageError::from(const Stage& stage, const std::exception& error) {
  if (const auto* data = dynamic_cast<const DataError*>(&error)) return StageError(stage, *data);
  return StageError(stage, std::string(error.what()));
}

}  // namespace pipec
