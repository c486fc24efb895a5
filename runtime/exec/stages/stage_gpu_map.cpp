// map after to(gpu) with a GPU present: the stage's generated CUDA kernel runs on the device through a
// GpuMapExecutor (runtime/gpu), `depth` chunks in flight so copies overlap compute. The executor is
// made once per run (ctx.shared) and survives the iterator being rebuilt for the next epoch.
//
// A map the optimizer moved after its batch (`per_row = n`, runtime/exec/stages/row_view.h) runs its
// kernel on the batches' element rows: the kernel was generated for one element, so it is handed the
// chunk reshaped to [batches x n, ...] and its results are folded back into batches. (Handed the
// batches as rows, it computed the first element of each batch and left the rest as they were.)
#include <deque>

#include <fmt/format.h>

#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/row_view.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/gpu/gpu_map_executor.h"

namespace pipec {

namespace {

// The batch size of a map the optimizer moved after its batch, 0 for any other map.
int64_t per_row_of(const Stage& s) {
  const Value* p = s.arg("per_row");
  return p && p->kind == Value::Int && p->i > 0 ? p->i : 0;
}

class GpuMap : public ChunkIterator {
 public:
  GpuMap(RunContext& ctx, int stage, IteratorPtr input, std::shared_ptr<gpu::GpuMapExecutor> exec)
      : ChunkIterator(ctx, stage), per_row_(per_row_of(spec())), input_(std::move(input)), exec_(std::move(exec)) {}

  ~GpuMap() override {
    // The executor outlives this iterator: leave none of this iterator's chunks in it.
    try {
      while (exec_->has_pending()) exec_->collect();
    } catch (...) {
    }
  }

  void save(StateWriter& w) const override {
    // Chunks in flight are finished first, so the checkpoint holds their results.
    while (exec_->has_pending()) ready_.push_back(collect());
    input_->save(w);
    w.write_u64(ready_.size());
    for (const Chunk& c : ready_) save_chunk(w, c);
    w.write_u32(input_done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    while (exec_->has_pending()) exec_->collect();
    batches_.clear();
    input_->restore(r);
    ready_.clear();
    uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) {
      ready_.push_back(restore_chunk(r));
      largest_pulled_ = std::max(largest_pulled_, ready_.back().rows);  // each came from one input chunk
    }
    input_done_ = r.read_u32() != 0;
  }

  // The results of the executor's slots (a save collects them; new chunks go in once they are out).
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const Chunk& c : ready_) rows += c.rows;
    return {rows, exec_->depth() * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    try {
      // Keep every slot busy: the next chunks are copied in while the oldest computes.
      while (!input_done_ && ready_.empty() && exec_->can_submit()) {
        Chunk in;
        if (!pull(*input_, in)) {
          input_done_ = true;
          break;
        }
        submit(in);
      }
      if (!ready_.empty()) {
        out = std::move(ready_.front());
        ready_.pop_front();
        return true;
      }
      if (!exec_->has_pending()) return false;
      out = collect();
      return true;
    } catch (const gpu::GpuError& e) {
      throw StageError(spec(), e.what());
    } catch (const std::runtime_error& e) {  // a chunk of batches that row_view cannot take
      throw StageError(spec(), e.what());
    }
  }

 private:
  // Where the rows of a submitted chunk of batches came from, to fold its results back.
  struct Batches {
    int64_t rows = 0, first_index = 0, epoch = 0;
  };

  void submit(const Chunk& in) {
    if (per_row_ <= 0) return exec_->submit(in, ctx_.seed);
    Chunk rows = batches_as_rows(in, per_row_);
    exec_->submit(rows, ctx_.seed);
    batches_.push_back({in.rows, in.first_index, in.epoch});
  }

  Chunk collect() const {
    Chunk out = exec_->collect();
    if (per_row_ <= 0) return out;
    const Batches b = batches_.front();
    batches_.pop_front();
    out.columns = rows_as_batches(std::move(out.columns), b.rows);
    out.rows = b.rows;
    out.first_index = b.first_index;
    out.epoch = b.epoch;
    return out;
  }

  const int64_t per_row_;                // > 0: the map runs on the element rows of batches of this size
  mutable std::deque<Batches> batches_;  // one per chunk in the executor, oldest first
  IteratorPtr input_;
  std::shared_ptr<gpu::GpuMapExecutor> exec_;
  mutable std::deque<Chunk> ready_;
  bool input_done_ = false;
};

// The kernel's column shapes per row: the fields' shapes, less the batch dimension when the map runs
// on the rows of batches (`per_row`).
std::vector<gpu::GpuColumnSpec> column_specs(const std::vector<Field>& fields, bool per_row) {
  std::vector<gpu::GpuColumnSpec> out;
  for (const Field& f : fields) {
    std::vector<int64_t> shape = f.type->shape;
    if (per_row && !shape.empty()) shape.erase(shape.begin());
    out.push_back({f.type->dtype, shape});
  }
  return out;
}

std::shared_ptr<gpu::GpuMapExecutor> make_executor(RunContext& ctx, int stage) {
  const Stage& s = ctx.plan->stages.at(stage);
  if (auto& shared = ctx.shared.at(stage)) return std::static_pointer_cast<gpu::GpuMapExecutor>(shared);
  const auto& in_fields = ctx.plan->stages.at(s.inputs.at(0)).element.fields;
  const bool rows_of_batches = per_row_of(s) > 0;
  std::vector<gpu::GpuColumnSpec> ins;
  for (int f : s.gpu->input_fields) ins.push_back(column_specs({in_fields.at(f)}, rows_of_batches)[0]);
  // Four chunks in flight: one being copied in, one computing, one being copied out, and one whose
  // results wait for the consumer, so the copy engines are not idle while it takes them.
  auto exec = std::make_shared<gpu::GpuMapExecutor>(*ctx.gpu, *s.gpu, std::move(ins),
                                                    column_specs(s.element.fields, rows_of_batches), 4);
  ctx.shared[stage] = exec;
  return exec;
}

}  // namespace

IteratorPtr make_gpu_map(RunContext& ctx, int stage, IteratorPtr& input) {
  const Stage& s = ctx.plan->stages.at(stage);
  const std::string where = s.loc.valid() ? s.loc.to_string() + ": " : std::string();
  std::string why;
  if (!ctx.gpu) return nullptr;
  if (!s.gpu || !s.gpu->unsupported.empty()) {
    why = s.gpu ? s.gpu->unsupported : "no CUDA kernel was generated for it";
  } else {
    try {
      auto exec = make_executor(ctx, stage);
      ctx.stage_device.at(stage) = "gpu: " + exec->describe();
      return std::make_unique<GpuMap>(ctx, stage, std::move(input), std::move(exec));
    } catch (const gpu::GpuError& e) {
      why = e.what();
    }
  }
  if (ctx.gpu_required) throw StageError(s, "--device gpu: this map cannot run on the GPU: " + why);
  ctx.warn_once(where + "warning: this map after to(gpu) runs on the CPU: " + why);
  return nullptr;
}

}  // namespace pipec
