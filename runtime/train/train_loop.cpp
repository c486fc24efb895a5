#include "runtime/train/train_loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "runtime/core/half.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/model/step_memory.h"
#include "runtime/trace/trace.h"
#include "runtime/train/batch_view.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/thread_split.h"
#include "runtime/train/train_checkpoint.h"

namespace pipec {

namespace {

std::string index_text(int64_t flat, const Shape& per_example) {
  std::vector<int64_t> idx(per_example.size());
  for (size_t d = per_example.size(); d-- > 0;) {
    idx[d] = per_example[d] ? flat % per_example[d] : 0;
    flat = per_example[d] ? flat / per_example[d] : 0;
  }
  std::string out;
  for (int64_t i : idx) out += (out.empty() ? "" : ", ") + std::to_string(i);
  return "[" + out + "]";
}

template <class F>
void check_finite_as(const Tensor& t, const std::string& field, int64_t step, F value) {
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double v = value(i);
    if (std::isfinite(v)) continue;
    Shape per(t.shape().begin() + 1, t.shape().end());
    int64_t per_n = std::max<int64_t>(shape_num_elements(per), 1);
    throw TrainError(fmt::format("step {}: field `{}` is {} at example {} of the batch, element {}", step + 1, field,
                                 std::isnan(v) ? "NaN"
                                 : v > 0       ? "+inf"
                                               : "-inf",
                                 i / per_n, index_text(i % per_n, per)));
  }
}

// A NaN or infinity in a float input stops the run naming the field, the example and the element.
void check_finite(const Tensor& t, const std::string& field, int64_t step) {
  switch (t.dtype()) {
    case DType::F32: check_finite_as(t, field, step, [&](int64_t i) { return t.data<float>()[i]; }); break;
    case DType::F64: check_finite_as(t, field, step, [&](int64_t i) { return t.data<double>()[i]; }); break;
    case DType::F16:
      check_finite_as(t, field, step, [&](int64_t i) { return half_bits_to_float(t.data<uint16_t>()[i]); });
      break;
    case DType::BF16:
      check_finite_as(t, field, step, [&](int64_t i) { return bf16_bits_to_float(t.data<uint16_t>()[i]); });
      break;
    default: break;
  }
}

// Bytes this process may still allocate: MemAvailable, or less under a cgroup (v2) memory limit.
int64_t available_memory() {
  int64_t available = -1;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) available = kb * 1024;
    std::fclose(f);
  }
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/memory.max", "r")) {
    long long limit = 0, used = 0;
    if (std::fscanf(f, "%lld", &limit) == 1) {
      if (std::FILE* u = std::fopen("/sys/fs/cgroup/memory.current", "r")) {
        if (std::fscanf(u, "%lld", &used) != 1) used = 0;
        std::fclose(u);
      }
      if (available < 0 || limit - used < available) available = limit - used;
    }
    std::fclose(f);
  }
  return available;
}

// A step that cannot fit is reported before step 1 (before the weights are even allocated), with the
// liveness plan's figures, instead of failing in the middle of a step.
void check_step_fits(const TrainProgram& t) {
  const ModelGraph& g = t.step;
  if (g.batch <= 0) return;
  StepMemory m = step_memory(g, g.batch);
  int64_t available = available_memory();
  if (available >= 0 && m.total_bytes() > available)
    throw TrainError(
        fmt::format("train `{}`: a step of {} examples needs {} (the batch {}, activations and gradients {} in "
                    "the block planned for them, parameters, gradients and optimizer state {}), but only {} of "
                    "memory is available; a smaller batch needs proportionally less activation memory",
                    t.name, g.batch, bytes_text(m.total_bytes()), bytes_text(m.input_bytes), bytes_text(m.arena_bytes),
                    bytes_text(m.flat_bytes), bytes_text(available)));
}

}  // namespace

TrainSummary run_training(const TrainProgram& t, const Plan& data, const TrainOptions& o,
                          const std::function<void(const TrainProgress&)>& progress) {
  const ModelGraph& g = t.step;
  check_step_fits(t);
  std::unique_ptr<ReferenceExecutor<float>> executor =
      o.make_executor ? o.make_executor(g, o.seed) : std::make_unique<ReferenceExecutor<float>>(g, o.seed);
  ReferenceExecutor<float>& ex = *executor;
  if (!o.init_path.empty()) load_weights(g, o.init_path, ex.buffers());
  RunOptions ro;
  ro.seed = o.seed;
  ro.threads = o.threads;
  ro.spec_dir = o.spec_dir;
  ro.cancel = o.cancel;
  ro.memory_budget = o.memory_budget;
  ro.autotune = o.autotune;
  ro.auto_values = o.auto_values;
  PipelineRun run(data, ro);
  ThreadSplit split(run.context().threads, o.autotune);
  const ElementInfo& element = data.stages.back().element;
  std::vector<size_t> input_columns;
  for (const std::string& f : g.input_fields) input_columns.push_back(field_index(element, f));
  const size_t target_column = field_index(element, g.target_field);

  // The chunks' epoch counts passes over the data when the only repeat is the one append_data_repeat
  // added (a repeat inside the pipeline numbers its own passes).
  int repeats = 0;
  for (const Stage& s : data.stages) repeats += s.kind == StageKind::Repeat || s.kind == StageKind::ShuffleRepeat;
  const bool epochs_visible = o.length.epochs && !o.length.steps && *o.length.epochs > 1 && repeats == 1;
  TrainSummary sum;
  TrainProgress& p = sum.last;
  p.total_steps = o.length.steps;
  double ema = 0;
  int64_t finite_steps = 0;  // steps in the smoothed loss (mixed_fp16 may skip one whose loss is not finite)
  // The current chunk of batches and the next of its rows to train on.
  Chunk c;
  int64_t next_row = 0;
  if (o.resume) {
    TrainCheckpointState cs = load_train_checkpoint(o.checkpoint_dir, g, o.seed, ex.buffers(), ex.optimizer_slots());
    run.restore_state(std::move(cs.pipeline_state),
                      train_checkpoint_file(o.checkpoint_dir).string() + " (the input pipeline's state)");
    p.step = p.resumed_from = cs.step;
    p.epoch = cs.epoch;
    if (!p.total_steps) p.total_steps = cs.total_steps;
    ema = cs.loss_sum;
    finite_steps = cs.finite_steps;
    sum.first_loss = cs.first_loss;
    p.loss = cs.last_loss;
    if (LossScale* ls = ex.loss_scale()) {
      ls->scale = cs.loss_scale;
      ls->good_steps = cs.loss_scale_good_steps;
      ls->skipped = cs.skipped_steps;
      p.loss_scale = ls->scale;
      p.skipped_steps = ls->skipped;
    }
    p.lr = ex.optimizer_slots().last_lr;
    p.smoothed_loss = finite_steps ? ema / (1 - std::pow(0.95, static_cast<double>(finite_steps))) : p.loss;
    if (cs.pending) c = std::move(*cs.pending);
  }
  auto save_checkpoint = [&] {
    TrainCheckpointState cs;
    cs.seed = o.seed;
    cs.step = p.step;
    cs.epoch = p.epoch;
    // With epochs alone the total is known from the data only; a resumed run must not take a guess for it.
    if (p.total_steps && (o.length.steps || epochs_visible)) cs.total_steps = p.total_steps;
    cs.loss_sum = ema;
    cs.finite_steps = finite_steps;
    cs.first_loss = sum.first_loss;
    cs.last_loss = p.loss;
    if (const LossScale* ls = ex.loss_scale()) {
      cs.loss_scale = ls->scale;
      cs.loss_scale_good_steps = ls->good_steps;
      cs.skipped_steps = ls->skipped;
    }
    cs.pipeline_state = run.save_state();
    if (next_row < c.rows) cs.pending = slice_rows(c, next_row, c.rows);
    save_train_checkpoint(o.checkpoint_dir, g, t.name, ex.buffers(), ex.optimizer_slots(), cs);
    ++sum.checkpoints;
  };
  int64_t checkpointed_at = o.resume ? p.step : -1;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Evaluator> evaluator;
  if (t.eval && o.validation) evaluator.emplace(t, *o.validation, ro, o.seed);
  auto evaluate = [&] {
    sum.evals.push_back(evaluator->run(ex.buffers(), p.step));
    p.eval = sum.evals.back();
  };
  while (true) {
    if (o.cancel) o.cancel->throw_if_cancelled();
    if (p.total_steps && p.step >= *p.total_steps) break;
    // The step's span ends before an evaluation, a checkpoint and the progress callback.
    std::optional<trace::StepTimer> step_span;
    step_span.emplace(p.step + 1);
    const auto step_start = std::chrono::steady_clock::now();
    double waited = 0;
    if (next_row >= c.rows) {
      bool more;
      {
        auto phase = step_span->phase(trace::StepPhase::InputWait);
        more = run.next(c);
      }
      waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
      p.input_wait += waited;
      next_row = 0;
      if (!more) {
        c.rows = 0;
        step_span->discard();
        break;
      }
      if (c.rows == 0) {
        step_span->discard();
        continue;
      }
    }
    const int64_t r = next_row++;
    // Trained by epochs: once the first pass ends, its length gives the total (for the ETA).
    if (!p.total_steps && epochs_visible && c.epoch > 0 && p.step > 0) p.total_steps = p.step * *o.length.epochs;
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < input_columns.size(); ++k) {
      inputs.push_back(batch_of(c.columns[input_columns[k]], c.rows, r));
      check_finite(inputs.back(), g.input_fields[k], p.step);
    }
    Tensor target = batch_of(c.columns[target_column], c.rows, r);
    check_finite(target, g.target_field, p.step);
    double loss = 0;
    try {
      loss = ex.run(inputs, &target, static_cast<uint64_t>(p.step), OpCategory::Loss, &sum.phases);
    } catch (const CancelledError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrainError(fmt::format("step {}: {}", p.step + 1, e.what()));
    }
    // mixed_fp16 skips a step whose loss or gradients overflow (the optimizer step halves the scale).
    if (!std::isfinite(loss) && !ex.loss_scale()) {
      std::string last = p.step == 0 ? std::string("it was the first step")
                                     : fmt::format("the loss was {:.6g} at step {}", p.loss, p.step);
      throw TrainError(fmt::format(
          "step {}: the loss is {} ({}); the weights are left as they were before this step. A learning rate "
          "too large, or inputs far from 0, are the usual causes",
          p.step + 1, std::isnan(loss) ? "NaN" : "infinite", last));
    }
    ex.resume(static_cast<uint64_t>(p.step), OpCategory::Update, &sum.phases);
    if (const LossScale* ls = ex.loss_scale()) {
      p.loss_scale = ls->scale;
      p.skipped_steps = ls->skipped;
      // Halving cannot help a forward pass that overflows by itself: stop rather than skip forever.
      if (ls->scale < 1)
        throw TrainError(
            fmt::format("step {}: the loss scale fell below 1 after {} skipped steps: the step overflows fp16 at any "
                        "scale (the loss was {}); train in mixed_bf16 or fp32, or keep activations smaller",
                        p.step + 1, ls->skipped, loss));
    }
    if (p.step == 0) sum.first_loss = loss;
    sum.losses.push_back(loss);
    ++p.step;
    if (std::isfinite(loss)) {
      ++finite_steps;
      ema = 0.95 * ema + 0.05 * loss;
    }
    p.loss = loss;
    p.lr = ex.optimizer_slots().last_lr;
    p.smoothed_loss = finite_steps ? ema / (1 - std::pow(0.95, static_cast<double>(finite_steps))) : loss;
    p.examples += target.shape().empty() ? 1 : target.shape()[0];
    p.epoch = o.length.steps_per_epoch > 0 ? (p.step - 1) / o.length.steps_per_epoch : c.epoch;
    // The split between the pipeline's workers and the compute follows the time waited for input.
    if (split.note_step(waited, std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count()))
      run.autotuner().set_compute_threads(split.compute_threads());
    step_span.reset();
    if (evaluator && t.eval->every > 0 && p.step % t.eval->every == 0) evaluate();
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && p.step % o.checkpoint_every == 0) {
      save_checkpoint();
      checkpointed_at = p.step;
    }
    p.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (progress) progress(p);
  }
  sum.executor = ex.description();  // after the steps: what their kernels turned out to be
  sum.threads = split.threads();
  sum.compute_threads = split.compute_threads();
  sum.thread_split_changes = split.changes();
  sum.thread_split = split.reason();
  if (o.inspect_pipeline) {
    p.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    o.inspect_pipeline(run, p);
  }
  if (p.step == 0) throw TrainError(fmt::format("train `{}`: the data gave no batch to train on", t.name));
  if (evaluator && (sum.evals.empty() || sum.evals.back().step != p.step)) evaluate();
  if (!o.checkpoint_dir.empty() && checkpointed_at != p.step) save_checkpoint();
  p.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.save_path.empty()) {
    save_weights(g, o.save_path, ex.buffers(), t.name);
    sum.saved_tensors = static_cast<int64_t>(g.params.size() + g.states.size());
    sum.saved_bytes = 4.0 * static_cast<double>(g.param_elements() + g.state_elements());
  }
  return sum;
}

}  // namespace pipec
