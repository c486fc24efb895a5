#include "runtime/exec/pipeline_run.h"

#include <functional>

#include <fmt/format.h>

#include "runtime/exec/file_shard.h"
#include "runtime/exec/footprint.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/io/file_glob.h"

namespace pipec {

namespace {
constexpr uint32_t kCheckpointVersion =
    3;  // 2: the rows held back by next(max_rows); 3: whether a cache pass fills its store

// Stages whose chunks are their input's elements in order, each chunk in its input's pass.
bool keeps_passes(StageKind k) {
  switch (k) {
    case StageKind::Map:
    case StageKind::Filter:
    case StageKind::MapFilter:
    case StageKind::MapBatch:
    case StageKind::Batch:
    case StageKind::PaddedBatch:
    case StageKind::Unbatch:
    case StageKind::Prefetch:
    case StageKind::IgnoreErrors:
    case StageKind::To: return true;
    default: return false;
  }
}
}  // namespace

int outermost_repeat(const Plan& plan) {
  if (plan.stages.empty()) return -1;
  for (int s = static_cast<int>(plan.stages.size()) - 1;;) {
    const Stage& st = plan.stages[static_cast<size_t>(s)];
    if (st.kind == StageKind::Repeat || st.kind == StageKind::ShuffleRepeat) return s;
    if (!keeps_passes(st.kind) || st.inputs.size() != 1) return -1;
    s = st.inputs[0];
  }
}

PipelineRun::PipelineRun(const Plan& plan, const RunOptions& options) : plan_(plan) {
  int threads = options.threads > 0 ? options.threads : ThreadPool::default_size();
  pool_ = std::make_unique<ThreadPool>(threads);
  ctx_.plan = &plan_;
  ctx_.spec_dir = options.spec_dir;
  ctx_.seed = options.seed;
  ctx_.threads = threads;
  ctx_.pool = pool_.get();
  ctx_.cancel = options.cancel;
  if (options.first_pass < 0) throw std::invalid_argument("a run cannot start at a pass before the first");
  if (options.first_pass > 0) {
    ctx_.first_pass_stage = outermost_repeat(plan_);
    if (ctx_.first_pass_stage < 0)
      throw std::invalid_argument(fmt::format(
          "a run asked to start at pass {} of a plan whose output has no repeat to start it at", options.first_pass));
    ctx_.first_pass = options.first_pass;
  }
  // Image pipelines move small chunks: a map runs its chunks in parallel (not the rows of one chunk),
  // per-element decoding is the whole cost, and a chunk of 1024 decoded images would be gigabytes.
  for (const Stage& s : plan_.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body)
        if (op_has(in.op, OpFlag::WholeFile)) ctx_.chunk_rows = 8;
  if (options.chunk_rows > 0) ctx_.chunk_rows = options.chunk_rows;
  ctx_.parse_records_on_pool = options.parse_records_on_pool;
  ctx_.data_crc_checks = options.data_crc_checks;
  ctx_.prefetch_inline_when_idle = options.prefetch_inline_when_idle;
  ctx_.consumer_works = options.consumer_works;
  size_t n = plan_.stages.size();
  for (size_t i = 0; i < n; ++i) {
    ctx_.stats.push_back(std::make_unique<StageStats>(std::string(stage_name(plan_.stages[i].kind))));
    ctx_.dropped.push_back(std::make_unique<std::atomic<int64_t>>(0));
  }
  ctx_.shared.resize(n);
  // Stages upstream of an ignore_errors drop bad elements instead of failing.
  ctx_.tolerant.assign(n, false);
  std::function<void(int)> mark = [&](int s) {
    ctx_.tolerant[s] = true;
    for (int in : plan_.stages[s].inputs) mark(in);
  };
  for (size_t i = 0; i < n; ++i)
    if (plan_.stages[i].kind == StageKind::IgnoreErrors)
      for (int in : plan_.stages[i].inputs) mark(in);
  ctx_.stage_device.assign(n, "cpu");
  bool to_gpu = false;
  for (const Stage& s : plan_.stages)
    if (s.kind == StageKind::To && s.arg("device") && s.arg("device")->s == "gpu") to_gpu = true;
  if (options.device == DevicePolicy::Gpu) {
    std::string why;
    ctx_.gpu = gpu::cuda_driver(&why);
    if (!ctx_.gpu) throw GpuUnavailableError("--device gpu: no GPU to run on: " + why);
    ctx_.gpu_required = true;
  } else if (options.device == DevicePolicy::Auto && to_gpu) {
    ctx_.gpu = gpu::cuda_driver(&ctx_.gpu_unavailable);
  }
  // The plan's text identifies it: a checkpoint of another plan is refused.
  fingerprint_ = std::hash<std::string>{}(print_plan(plan_));

  // The memory budget starts from the bounds of the fixed buffers the plan knows; a run whose fixed
  // buffers cannot fit is refused here, naming the largest.
  // One account per stage, and one more for the JPEG window index (repeated_jpeg_index), a cache the
  // run fills too: an index is kept only when the budget grants its bytes.
  memory_ =
      std::make_unique<MemoryBudget>(options.memory_budget ? options.memory_budget : default_memory_budget(), n + 1);
  ctx_.memory = memory_.get();
  const SourceLength source_length = [this](int stage) { return this->source_length(stage); };
  const std::vector<FixedBuffer> fixed = fixed_buffers(plan_, ctx_.chunk_rows, source_length);
  int largest = -1;
  if (std::string over = fixed_buffers_over_budget(plan_, fixed, memory_->limit(), &largest); !over.empty()) {
    const Stage& s = plan_.stages.at(largest);
    throw StageError(s, over);
  }
  for (const FixedBuffer& b : fixed) {
    // A cache of a pass whose size the plan cannot tell keeps the whole budget until it knows it.
    if (b.bytes) memory_->raise_bound(b.stage, *b.bytes);
    else if (plan_.stages[b.stage].kind == StageKind::Cache) memory_->set_bound(b.stage, MemoryBudget::kUnknownBound);
  }

  autotune_ = std::make_unique<Autotuner>(ctx_, options.autotune, options.auto_values);
  ctx_.autotune = autotune_.get();
  root_ = build_iterator(ctx_, static_cast<int>(n) - 1, 0);
  autotune_->start();
  // Last, once nothing can throw: the destructor takes it away again.
  JpegIndexCache::process().set_admission([m = memory_.get(), index_account = static_cast<int>(n)](int64_t bytes) {
    return m->try_reserve(index_account, static_cast<uint64_t>(bytes));
  });
}

PipelineRun::~PipelineRun() {
  JpegIndexCache::process().set_admission(nullptr);
  autotune_->stop();
  root_.reset();  // stops prefetch threads before the pool goes
  pool_.reset();
}

std::optional<int64_t> PipelineRun::source_length(int stage) const {
  const Stage& s = plan_.stages.at(stage);
  if (s.kind != StageKind::Files && s.kind != StageKind::ListFiles) return std::nullopt;
  const Value* pattern = s.arg("pattern");
  if (!pattern || pattern->kind != Value::String) return std::nullopt;
  try {
    return static_cast<int64_t>(files_of_shard(expand_glob(ctx_.resolve_path(pattern->s)), s).size());
  } catch (const std::exception&) {
    return std::nullopt;  // the source reports it when it runs
  }
}

std::optional<int64_t> PipelineRun::pass_elements(int stage) const {
  return pass_length(plan_, stage, [this](int s) { return source_length(s); });
}

SteadyHoldings PipelineRun::steady_holdings() const {
  return pipec::steady_holdings(
      plan_, ctx_.chunk_rows, [this](int s) { return source_length(s); }, ctx_.threads);
}

bool PipelineRun::next(Chunk& out, int64_t max_rows) {
  if (held_.rows > 0) {
    out = std::move(held_);
    held_ = Chunk{};
  } else {
    autotune_->consumer_called();
    const bool ok = root_->next(out);
    autotune_->consumer_returned();
    if (!ok) return false;
  }
  if (max_rows >= 0 && max_rows < out.rows) {
    held_ = slice_rows(out, max_rows, out.rows);
    out = slice_rows(out, 0, max_rows);
  }
  delivered_ += out.rows;
  return true;
}

void PipelineRun::save_checkpoint(const std::filesystem::path& path) const { write_file_atomic(path, save_state()); }

void PipelineRun::restore_checkpoint(const std::filesystem::path& path) {
  restore_state(read_file(path), path.string());
}

std::string PipelineRun::save_state() const {
  StateWriter w(kCheckpointVersion);
  w.write_u64(fingerprint_);
  w.write_i64(delivered_);
  w.write_u64(ctx_.seed);
  root_->save(w);
  save_chunk(w, held_);
  return w.finish();
}

void PipelineRun::restore_state(std::string bytes, const std::string& source) {
  StateReader r(std::move(bytes), source);
  if (r.version() != kCheckpointVersion)
    throw r.error(fmt::format("checkpoint version {} is not supported", r.version()));
  if (r.read_u64() != fingerprint_) throw r.error("the checkpoint was written by a different pipeline");
  delivered_ = r.read_i64();
  uint64_t seed = r.read_u64();
  if (seed != ctx_.seed) throw r.error(fmt::format("the checkpoint was written with --seed {}", seed));
  root_->restore(r);
  held_ = restore_chunk(r);
  r.expect_end();
}

}  // namespace pipec
