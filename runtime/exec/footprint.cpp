#include "runtime/exec/footprint.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/exec/memory_budget.h"

namespace pipec {

namespace {

bool is_auto(const Value* v) { return !v || v->kind != Value::Int; }

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

std::optional<uint64_t> chunk_bytes_of(const Plan& plan, int stage, int64_t source_rows) {
  auto e = element_bytes(plan.stages.at(stage).element);
  if (!e) return std::nullopt;
  return *e * static_cast<uint64_t>(rows_per_chunk(plan, stage, source_rows));
}

std::optional<uint64_t> element_bytes(const ElementInfo& e) {
  uint64_t total = 0;
  for (const Field& f : e.fields) {
    if (!f.type || f.type->kind != TypeKind::Tensor || f.type->dtype == DType::Bytes) return std::nullopt;
    uint64_t n = 1;
    for (int64_t d : f.type->shape) {
      if (d < 0) return std::nullopt;
      n *= static_cast<uint64_t>(d);
    }
    total += n * dtype_size(f.type->dtype);
  }
  return total;
}

int64_t rows_per_chunk(const Plan& plan, int stage, int64_t source_rows) {
  const Stage& s = plan.stages.at(stage);
  switch (s.kind) {
    case StageKind::Batch:
    case StageKind::PaddedBatch:
    case StageKind::MapBatch:
    case StageKind::Window:
    case StageKind::Rebatch:
    case StageKind::BucketByLength:
    case StageKind::GroupByWindow: return 1;
    case StageKind::FlatMap: return source_rows;  // its chunks are filled from its inner pipelines
    default: break;
  }
  if (s.inputs.empty()) return source_rows;
  int64_t rows = 0;
  for (int in : s.inputs) rows = std::max(rows, rows_per_chunk(plan, in, source_rows));
  return rows;
}

std::optional<int64_t> pass_length(const Plan& plan, int stage, const SourceLength& source_length) {
  const Stage& s = plan.stages.at(stage);
  auto input = [&](size_t k = 0) { return pass_length(plan, s.inputs.at(k), source_length); };
  auto int_arg = [&](const char* name) -> std::optional<int64_t> {
    const Value* v = s.arg(name);
    if (v && v->kind == Value::Int) return v->i;
    return std::nullopt;
  };
  switch (s.kind) {
    case StageKind::Range: {
      auto a = int_arg("start_or_stop"), b = int_arg("stop"), st = int_arg("step");
      if (!a) return std::nullopt;
      int64_t start = b ? *a : 0, stop = b ? *b : *a, step = st.value_or(1);
      if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;
      if (step < 0) return start > stop ? (start - stop - step - 1) / -step : 0;
      return std::nullopt;
    }
    case StageKind::Tfrecord:
    case StageKind::Files:
    case StageKind::ListFiles:
    case StageKind::Csv:
    case StageKind::Npy: return source_length ? source_length(stage) : std::nullopt;
    case StageKind::TextLines:
    case StageKind::FixedLengthRecords: return std::nullopt;  // known only once the files are read
    case StageKind::Zip: {
      std::optional<int64_t> n;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        auto m = input(k);
        if (m) n = n ? std::min(*n, *m) : *m;
      }
      return n;
    }
    case StageKind::Concatenate: {
      int64_t n = 0;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        auto m = input(k);
        if (!m) return std::nullopt;
        n += *m;
      }
      return n;
    }
    case StageKind::ChooseFrom: return std::nullopt;  // depends on the index pipeline's values
    case StageKind::FlatMap: return std::nullopt;     // the sum of its elements' datasets' lengths
    case StageKind::SampleFrom: return std::nullopt;  // depends on the random choices
    case StageKind::Enumerate: return input();
    case StageKind::Batch:
    case StageKind::PaddedBatch:
    case StageKind::MapBatch: {
      auto n = input();
      auto size = int_arg("size");
      if (!n || !size || *size <= 0) return std::nullopt;
      return (*n + *size - 1) / *size;
    }
    case StageKind::Window: {
      // Windows start at 0, shift, 2 shift, ... while an element is left (a full span of them when
      // the remainder is dropped).
      auto n = input();
      auto size = int_arg("size"), shift = int_arg("shift"), stride = int_arg("stride");
      if (!n || !size || *size <= 0) return std::nullopt;
      const int64_t step = shift.value_or(*size), span = (*size - 1) * stride.value_or(1) + 1;
      if (step <= 0) return std::nullopt;
      const Value* d = s.arg("drop_remainder");
      if (d && d->b) return *n >= span ? (*n - span) / step + 1 : 0;
      return (*n + step - 1) / step;
    }
    case StageKind::Scan: return input();
    case StageKind::Unbatch:
    case StageKind::Rebatch:
    case StageKind::BucketByLength:  // how many batches depends on every element's length (key)
    case StageKind::Pack:            // how many rows depends on every element's length
    case StageKind::GroupByWindow:
    case StageKind::RejectionResample: return std::nullopt;  // depends on the random draws
    case StageKind::Take: {
      auto n = input();
      auto c = int_arg("count");
      if (c && *c >= 0) return n ? std::min(*n, *c) : *c;
      return n;
    }
    case StageKind::Skip: {
      auto n = input();
      auto c = int_arg("count");
      if (!n || !c) return n;
      return std::max<int64_t>(0, *n - std::max<int64_t>(0, *c));
    }
    case StageKind::Shard: {
      auto n = input();
      auto k = int_arg("num_shards");
      if (!n || !k || *k <= 0) return std::nullopt;
      return (*n + *k - 1) / *k;
    }
    case StageKind::Repeat:
    case StageKind::ShuffleRepeat: {
      auto n = input();
      auto c = int_arg("count");
      if (!n || !c || *c < 0) return std::nullopt;
      return *n * *c;
    }
    default: return s.inputs.empty() ? std::nullopt : input();
  }
}

int64_t prefetch_starting_depth(int threads) { return std::max(4, threads * 2); }
int64_t map_starting_window(int threads) { return std::max(1, threads * 2); }

SteadyHoldings steady_holdings(const Plan& plan, int64_t source_rows, const SourceLength& source_length, int threads) {
  SteadyHoldings h;
  auto add = [&](int stage, std::optional<uint64_t> bytes) {
    if (bytes) h.bytes += *bytes;
    else h.unknown.push_back(fmt::format("#{} {}", stage, stage_name(plan.stages[stage].kind)));
  };
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const Stage& s = plan.stages[i];
    const Value* parallel = s.arg("parallel");
    switch (s.kind) {
      case StageKind::Shuffle:
      case StageKind::ShuffleRepeat: {
        int64_t n = s.arg("buffer")->i;
        if (auto pass = pass_length(plan, s.inputs.at(0), source_length)) n = std::min(n, *pass);
        auto e = element_bytes(s.element);
        add(i, e ? std::optional<uint64_t>(*e * static_cast<uint64_t>(n)) : std::nullopt);
        break;
      }
      case StageKind::Cache: {
        auto n = pass_length(plan, s.inputs.at(0), source_length);
        auto e = element_bytes(s.element);
        add(i, n && e ? std::optional<uint64_t>(*e * static_cast<uint64_t>(*n)) : std::nullopt);
        break;
      }
      case StageKind::Prefetch: {
        const Value* v = s.arg("size");
        const int64_t depth = is_auto(v) ? prefetch_starting_depth(threads) : std::max<int64_t>(1, v->i);
        auto c = chunk_bytes_of(plan, i, source_rows);
        add(i, c ? std::optional<uint64_t>(*c * static_cast<uint64_t>(depth + 1)) : std::nullopt);
        break;
      }
      case StageKind::Map:
      case StageKind::Filter:
      case StageKind::MapFilter: {
        // Between pulls a map keeps its window full but for the chunk it handed out.
        const int64_t window =
            std::max<int64_t>(1, (is_auto(parallel) ? map_starting_window(threads) : parallel->i) - 1);
        auto c = chunk_bytes_of(plan, i, source_rows);
        add(i, c ? std::optional<uint64_t>(*c * static_cast<uint64_t>(window)) : std::nullopt);
        break;
      }
      case StageKind::MapBatch: {
        const int64_t window =
            std::max<int64_t>(1, (is_auto(parallel) ? map_starting_window(threads) : parallel->i) - 1);
        auto e = element_bytes(s.element);
        auto size = s.arg("size");
        std::optional<uint64_t> bytes;
        if (e && size && size->i > 0)
          bytes = *e / static_cast<uint64_t>(size->i) *
                      static_cast<uint64_t>(rows_per_chunk(plan, s.inputs.at(0), source_rows)) *
                      static_cast<uint64_t>(window) +
                  *e;
        add(i, bytes);
        break;
      }
      default: break;
    }
  }
  return h;
}

std::vector<FixedBuffer> fixed_buffers(const Plan& plan, int64_t source_rows, const SourceLength& source_length) {
  std::vector<FixedBuffer> out;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const Stage& s = plan.stages[i];
    FixedBuffer b;
    b.stage = i;
    switch (s.kind) {
      case StageKind::Shuffle:
      case StageKind::ShuffleRepeat: {
        const int64_t n = s.arg("buffer")->i;
        auto e = element_bytes(s.element);
        if (e) b.bytes = *e * static_cast<uint64_t>(n);
        b.what = e ? fmt::format("its buffer of {} elements of {}", thousands(n), format_bytes(*e))
                   : fmt::format("its buffer of {} elements", thousands(n));
        break;
      }
      case StageKind::Cache: {
        auto n = pass_length(plan, s.inputs.at(0), source_length);
        auto e = element_bytes(s.element);
        if (n && e) b.bytes = *e * static_cast<uint64_t>(*n);
        b.what =
            n ? fmt::format("its pass of {} elements{}", thousands(*n), e ? " of " + format_bytes(*e) : std::string())
              : std::string("its pass");
        break;
      }
      case StageKind::Prefetch: {
        const Value* v = s.arg("size");
        const int64_t depth = is_auto(v) ? 1 : std::max<int64_t>(1, v->i);
        if (auto c = chunk_bytes_of(plan, i, source_rows)) b.bytes = *c * static_cast<uint64_t>(depth);
        b.what = is_auto(v) ? std::string("its first chunk") : fmt::format("its {} chunks", depth);
        break;
      }
      case StageKind::Map:
      case StageKind::Filter:
      case StageKind::MapFilter:
      case StageKind::MapBatch: {
        const Value* v = s.arg("parallel");
        const int64_t window = is_auto(v) ? 1 : std::max<int64_t>(1, v->i);
        auto o = chunk_bytes_of(plan, i, source_rows);
        // A map's window holds its results; map_batch's holds input chunks' worth of batch rows.
        if (s.kind == StageKind::MapBatch) {
          auto e = element_bytes(s.element);
          auto size = s.arg("size");
          if (e && size && size->i > 0) {
            const uint64_t row = *e / static_cast<uint64_t>(size->i);
            b.bytes = row * static_cast<uint64_t>(rows_per_chunk(plan, s.inputs.at(0), source_rows)) *
                          static_cast<uint64_t>(window) +
                      *e;
          }
        } else if (o) {
          b.bytes = *o * static_cast<uint64_t>(window);
        }
        b.what =
            is_auto(v) ? std::string("its first chunk of results") : fmt::format("its {} chunks of results", window);
        break;
      }
      default: continue;
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::string fixed_buffers_over_budget(const Plan& plan, const std::vector<FixedBuffer>& buffers, uint64_t budget,
                                      int* largest) {
  uint64_t total = 0, most = 0;
  const FixedBuffer* big = nullptr;
  for (const FixedBuffer& b : buffers) {
    if (!b.bytes) continue;
    total += *b.bytes;
    if (!big || *b.bytes > most) {
      most = *b.bytes;
      big = &b;
    }
  }
  if (total <= budget || !big) return {};
  if (largest) *largest = big->stage;
  std::string msg = fmt::format("{} need{} {}", big->what, big->what.find("chunks") != std::string::npos ? "" : "s",
                                format_bytes(most));
  if (most > budget) {
    msg += fmt::format(", over the memory budget of {}", format_bytes(budget));
  } else {
    msg += fmt::format("; with the run's other fixed buffers that makes {}, over the memory budget of {}",
                       format_bytes(total), format_bytes(budget));
  }
  return msg + " (raise --memory-budget, or make the buffer smaller)";
}

}  // namespace pipec
