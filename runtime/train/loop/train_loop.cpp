#include "runtime/train/loop/train_loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "runtime/core/half.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/model/step_memory.h"
#include "runtime/trace/trace.h"
#include "runtime/train/loop/batch_view.h"
#include "runtime/train/loop/thread_split.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/persist/train_checkpoint.h"
#include "runtime/train/reference/reference_executor.h"

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
// liveness plan's figures, instead of failing in the middle of a step. The full plan (the executor's
// kernels, the input pipeline) is checked once they are made: TrainingRun::plan_memory.
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

RunOptions pipeline_options(const TrainOptions& o, int64_t first_pass = 0) {
  RunOptions ro;
  ro.first_pass = first_pass;
  ro.seed = o.seed;
  ro.threads = o.threads;
  ro.spec_dir = o.spec_dir;
  ro.cancel = o.cancel;
  ro.memory_budget = o.memory_budget;
  ro.autotune = o.autotune;
  ro.auto_values = o.auto_values;
  ro.consumer_works = true;  // a step between batches: the prefetch's thread overlaps it from the start
  return ro;
}

// What a resumed run starts from: this process's share of the checkpoint (rank 0 read it, the weights and
// the optimizer's state into its executor's host copies), and, for a checkpoint of another number of
// processes, how the run restarts its epoch instead of continuing the positions.
struct ResumePoint {
  TrainCheckpointState state;
  std::optional<EpochRestart> restart;
};

// Under multi_worker rank 0 reads the checkpoint and sends each rank its counts and its position (none
// when the number of ranks changed); the weights follow with the executor's sync_to_device().
ResumePoint read_resume_point(const TrainProgram& t, const Plan& data, const TrainOptions& o, StepExecutor& ex) {
  const int rank = o.ranks ? o.ranks->rank() : 0;
  const int processes = o.ranks ? o.ranks->size() : 1;
  const std::string file = train_checkpoint_file(o.checkpoint_dir).string();
  ResumePoint r;
  if (rank == 0) {
    r.state = load_train_checkpoint(o.checkpoint_dir, t.step, o.seed, ex.buffers(), ex.optimizer_slots());
    // A restart that cannot be done is refused here, on the process that read the checkpoint.
    if (r.state.writers != processes) plan_epoch_restart(data, o.length, r.state, processes, file);
  }
  if (processes > 1) {
    std::vector<std::string> shares;
    if (rank == 0)
      for (int k = 0; k < processes; ++k) shares.push_back(rank_share_bytes(r.state, k, processes));
    r.state = parse_rank_share(o.ranks->scatter(shares, 0, "the checkpoint's input positions"));
  }
  if (r.state.writers != processes) r.restart = plan_epoch_restart(data, o.length, r.state, processes, file);
  return r;
}

// One step's batch: the inputs in the step graph's order, and the target.
struct Batch {
  std::vector<Tensor> inputs;
  Tensor target;
};

// One run of run_training, in the order its data flows: restore() puts the starting state into the
// executor; train() takes each step's batch, runs the step with its checks, then the checkpoint and
// the evaluation it is due; finish() ends with the last checkpoint and evaluation and --save.
class TrainingRun {
 public:
  TrainingRun(const TrainProgram& t, const Plan& data, const TrainOptions& o, StepExecutor& ex,
              std::optional<ResumePoint> resumed)
      : t_(t),
        g_(t.step),
        o_(o),
        ex_(ex),
        resumed_(std::move(resumed)),
        first_pass_(resumed_ && resumed_->restart ? resumed_->restart->pass.value_or(0) : 0),
        run_(data, pipeline_options(o, first_pass_)),
        split_(run_.context().threads, o.autotune) {
    const ElementInfo& element = data.stages.back().element;
    for (const std::string& f : g_.input_fields) input_columns_.push_back(field_index(element, f));
    target_column_ = field_index(element, g_.target_field);
    // The chunks' epoch counts passes over the data when the only repeat is the one append_data_repeat
    // added (a repeat inside the pipeline numbers its own passes).
    int repeats = 0;
    for (const Stage& s : data.stages) repeats += s.kind == StageKind::Repeat || s.kind == StageKind::ShuffleRepeat;
    epochs_visible_ = o.length.epochs && !o.length.steps && *o.length.epochs > 1 && repeats == 1;
    epoch_ends_ = o.length.epochs && (o.length.steps_per_epoch > 0 || *o.length.epochs == 1 || epochs_visible_);
    p_.total_steps = o.length.steps;
  }

  // The memory plan of the run (train_memory_plan.h), with the executor readied for the step's batch
  // size, checked against what the machine has: a run that cannot fit stops here, before step 1.
  // `process` is what was resident when the run began.
  void plan_memory(int64_t process) {
    sum_.memory = plan_train_memory(t_, ex_, run_, o_.validation, process);
    const TrainMemoryPlan& m = sum_.memory;
    const int64_t held = std::max<int64_t>(resident_bytes(), 0);  // of the plan, resident already
    const int64_t available = available_memory();
    if (available >= 0 && m.total() - held > available)
      throw TrainError(fmt::format(
          "train `{}`: the run needs {} in all, {} more than this process holds now, but only {} of memory is "
          "available: {}. A smaller batch needs proportionally less for activations, kernels and batches",
          t_.name, bytes_text(m.total()), bytes_text(m.total() - held), bytes_text(available), m.text()));
  }

  // The starting state: the executor's own initial weights, --init's, or a checkpoint's, on the
  // executor. Then the run's clock starts and the evaluator is made.
  void restore() {
    if (resumed_) restore_checkpoint();
    else if (!o_.init_path.empty()) load_weights(g_, o_.init_path, ex_.buffers());
    if (o_.resume || !o_.init_path.empty()) ex_.sync_to_device();
    host_current_at_ = p_.step;
    checkpointed_at_ = o_.resume ? p_.step : -1;
    start_ = std::chrono::steady_clock::now();
    if (t_.eval && o_.validation)
      evaluator_.emplace(t_, *o_.validation, pipeline_options(o_),
                         o_.make_eval_executor ? o_.make_eval_executor(t_.eval->graph, o_.seed)
                                               : std::make_unique<ReferenceExecutor<float>>(t_.eval->graph, o_.seed));
  }

  // Steps until the length, the data or a cancel ends the run.
  void train(const std::function<void(const TrainProgress&)>& progress) {
    while (true) {
      if (o_.cancel) o_.cancel->throw_if_cancelled();
      if (p_.total_steps && p_.step >= *p_.total_steps) {
        end_epoch();
        return;
      }
      // The step's span ends before a checkpoint, an evaluation and the progress callback.
      std::optional<trace::StepTimer> span;
      span.emplace(p_.step + 1);
      const auto step_start = std::chrono::steady_clock::now();
      double waited = 0;
      if (next_row_ >= chunk_.rows) {
        const Pulled pulled = pull_chunk(*span, step_start, waited);
        if (pulled != Pulled::Rows) {
          span->discard();
          if (pulled == Pulled::Empty) continue;
          if (o_.all_have_batch) o_.all_have_batch(false);  // the others end with this one
          data_ended_ = true;
          end_epoch();  // the data ended: so did its last pass
          return;
        }
        // The first batch of the next pass over the data: the epoch before it ends first, outside a
        // step (its evaluation is no step's time).
        if (epochs_visible_ && epoch_steps_ > 0 && chunk_.epoch != epoch_index_) {
          span->discard();
          end_epoch();
          continue;
        }
      }
      // Every process must have a batch for this step, or all stop here.
      if (o_.all_have_batch && !o_.all_have_batch(true)) {
        span->discard();
        for (int64_t r = next_row_; r < chunk_.rows; ++r) sum_.left_by_others += batch_rows(r);
        data_ended_ = true;
        end_epoch();
        return;
      }
      if (epoch_steps_ == 0) epoch_start_ = step_start;
      const Batch batch = next_batch();
      const double loss = step(batch);
      count_step(loss, batch);
      // The split between the pipeline's workers and the compute follows the time waited for input.
      if (split_.note_step(waited,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count()))
        run_.autotuner().set_compute_threads(split_.compute_threads());
      span.reset();
      if (!o_.checkpoint_dir.empty() && o_.checkpoint_every > 0 && p_.step % o_.checkpoint_every == 0) checkpoint();
      if (evaluator_ && t_.eval->every > 0 && p_.step % t_.eval->every == 0) evaluate();
      if (o_.length.steps_per_epoch > 0 && p_.step % o_.length.steps_per_epoch == 0) end_epoch();
      p_.elapsed = seconds_since_start();
      if (progress) progress(p_);
    }
  }

  // After the last step: the summary, then the checkpoint and the evaluation of the last step (unless
  // it had them) and --save.
  TrainSummary finish() {
    sum_.executor = ex_.description();  // after the steps: what their kernels turned out to be
    sum_.threads = split_.threads();
    sum_.compute_threads = split_.compute_threads();
    sum_.thread_split_changes = split_.changes();
    sum_.thread_split = split_.reason();
    if (o_.inspect_pipeline) {
      p_.elapsed = seconds_since_start();
      o_.inspect_pipeline(run_, p_);
    }
    if (p_.step == 0) throw TrainError(fmt::format("train `{}`: the data gave no batch to train on", t_.name));
    if (!o_.checkpoint_dir.empty() && checkpointed_at_ != p_.step) checkpoint();
    if (evaluator_ && (sum_.evals.empty() || sum_.evals.back().step != p_.step)) evaluate();
    p_.elapsed = seconds_since_start();
    if (!o_.save_path.empty()) save();
    sum_.peak_resident_bytes = peak_resident_bytes();
    return std::move(sum_);
  }

 private:
  enum class Pulled { Rows, Empty, End };

  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double smoothed_loss(double fallback) const {
    return finite_steps_ ? ema_ / (1 - std::pow(0.95, static_cast<double>(finite_steps_))) : fallback;
  }

  int rank() const { return o_.ranks ? o_.ranks->rank() : 0; }
  int processes() const { return o_.ranks ? o_.ranks->size() : 1; }

  // The checkpoint's input position into the data pipeline (read_resume_point put its weights and
  // optimizer state into the executor's host copies), and its counts into the progress. A checkpoint of
  // another number of processes has no position for this one: the pipeline was built to start the
  // epoch's pass (first_pass_), and the step count goes on from the checkpoint's.
  void restore_checkpoint() {
    const TrainCheckpointState& cs = resumed_->state;
    const std::optional<EpochRestart>& restart = resumed_->restart;
    std::optional<InputPosition> position;
    if (!restart) {
      const std::string& source = cs.position_sources.at(0);
      position = parse_input_position(cs.positions.at(0), source, rank(), processes(), cs.step);
      run_.restore_state(std::move(position->pipeline_state),
                         processes() == 1 ? source + " (the input pipeline's state)"
                                          : fmt::format("{} (rank {}'s input pipeline state)", source, rank()));
    }
    p_.step = p_.resumed_from = cs.step;
    p_.epoch = cs.epoch;
    // By epochs, a restarted run learns its total anew from its first pass (another sharding's passes
    // may have another number of steps), unless the checkpoint's run had ended.
    if (!p_.total_steps && (!restart || restart->finished)) p_.total_steps = cs.total_steps;
    if (restart) {
      pass_start_step_ = cs.step;
      sum_.epoch_restart = *restart;
      if (o_.on_epoch_restart) o_.on_epoch_restart(*restart);
    }
    ema_ = cs.loss_sum;
    finite_steps_ = cs.finite_steps;
    sum_.first_loss = cs.first_loss;
    p_.loss = cs.last_loss;
    if (LossScale* ls = ex_.loss_scale()) {
      ls->scale = cs.loss_scale;
      ls->good_steps = cs.loss_scale_good_steps;
      ls->skipped = cs.skipped_steps;
      p_.loss_scale = ls->scale;
      p_.skipped_steps = ls->skipped;
    }
    p_.lr = ex_.optimizer_slots().last_lr;
    p_.smoothed_loss = smoothed_loss(p_.loss);
    if (position && position->pending) chunk_ = std::move(*position->pending);
  }

  // The next chunk of batches from the pipeline, once the current one is used up: Empty for a chunk
  // without rows (the step starts again), End at the end of the data.
  Pulled pull_chunk(trace::StepTimer& span, std::chrono::steady_clock::time_point step_start, double& waited) {
    bool more;
    {
      auto phase = span.phase(trace::StepPhase::InputWait);
      more = run_.next(chunk_);
    }
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    p_.input_wait += waited;
    next_row_ = 0;
    if (!more) {
      chunk_.rows = 0;
      return Pulled::End;
    }
    return chunk_.rows == 0 ? Pulled::Empty : Pulled::Rows;
  }

  // The examples in row `r` of the current chunk (one batch).
  int64_t batch_rows(int64_t r) const {
    const Tensor t = batch_of(chunk_.columns[target_column_], chunk_.rows, r);
    return t.shape().empty() ? 1 : t.shape()[0];
  }

  // The chunk's next batch, every float input and the target checked to be finite.
  Batch next_batch() {
    const int64_t r = next_row_++;
    // Trained by epochs: once the run's first pass ends, its length gives the total (for the ETA).
    if (!p_.total_steps && epochs_visible_ && chunk_.epoch > first_pass_ && p_.step > pass_start_step_)
      p_.total_steps = p_.step + (p_.step - pass_start_step_) * (*o_.length.epochs - chunk_.epoch);
    Batch b;
    for (size_t k = 0; k < input_columns_.size(); ++k) {
      b.inputs.push_back(batch_of(chunk_.columns[input_columns_[k]], chunk_.rows, r));
      check_finite(b.inputs.back(), g_.input_fields[k], p_.step);
    }
    b.target = batch_of(chunk_.columns[target_column_], chunk_.rows, r);
    check_finite(b.target, g_.target_field, p_.step);
    return b;
  }

  // One training step on `b`: the forward pass and the loss, checked to be finite (unless mixed_fp16
  // may skip the step), then the backward pass and the update, the loss scale checked. Returns the loss.
  double step(const Batch& b) {
    double loss = 0;
    try {
      loss = ex_.run(b.inputs, &b.target, static_cast<uint64_t>(p_.step), OpCategory::Loss, &sum_.phases);
    } catch (const CancelledError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrainError(fmt::format("step {}: {}", p_.step + 1, e.what()));
    }
    // mixed_fp16 skips a step whose loss or gradients overflow (the optimizer step halves the scale).
    if (!std::isfinite(loss) && !ex_.loss_scale()) {
      std::string last = p_.step == 0 ? std::string("it was the first step")
                                      : fmt::format("the loss was {:.6g} at step {}", p_.loss, p_.step);
      throw TrainError(fmt::format(
          "step {}: the loss is {} ({}); the weights are left as they were before this step. A learning rate "
          "too large, or inputs far from 0, are the usual causes",
          p_.step + 1, std::isnan(loss) ? "NaN" : "infinite", last));
    }
    ex_.resume(static_cast<uint64_t>(p_.step), OpCategory::Update, &sum_.phases);
    if (const LossScale* ls = ex_.loss_scale()) {
      p_.loss_scale = ls->scale;
      p_.skipped_steps = ls->skipped;
      // Halving cannot help a forward pass that overflows by itself: stop rather than skip forever.
      if (ls->scale < 1)
        throw TrainError(
            fmt::format("step {}: the loss scale fell below 1 after {} skipped steps: the step overflows fp16 at any "
                        "scale (the loss was {}); train in mixed_bf16 or fp32, or keep activations smaller",
                        p_.step + 1, ls->skipped, loss));
    }
    return loss;
  }

  // The step done: its loss into the progress and the summary.
  void count_step(double loss, const Batch& b) {
    if (p_.step == 0) sum_.first_loss = loss;
    sum_.losses.push_back(loss);
    ++p_.step;
    if (std::isfinite(loss)) {
      ++finite_steps_;
      ema_ = 0.95 * ema_ + 0.05 * loss;
    }
    p_.loss = loss;
    p_.lr = ex_.optimizer_slots().last_lr;
    p_.smoothed_loss = smoothed_loss(loss);
    const int64_t rows = b.target.shape().empty() ? 1 : b.target.shape()[0];
    p_.examples += o_.step_examples ? o_.step_examples(rows) : rows;
    p_.epoch = o_.length.steps_per_epoch > 0 ? (p_.step - 1) / o_.length.steps_per_epoch : chunk_.epoch;
    // One epoch of one pass: the data's own repeats do not divide it.
    epoch_index_ = o_.length.epochs == 1 ? 0 : p_.epoch;
    ++epoch_steps_;
    if (std::isfinite(loss)) {
      epoch_loss_sum_ += loss;
      ++epoch_finite_steps_;
    }
  }

  // The epoch whose steps were counted since the last one ended, on a run that counts epochs: its
  // evaluation (as Keras' fit() validates after every epoch) unless this step had one, then its EpochEnd.
  void end_epoch() {
    if (!epoch_ends_ || epoch_steps_ == 0) return;
    if (evaluator_ && (sum_.evals.empty() || sum_.evals.back().step != p_.step)) evaluate();
    EpochEnd e;
    e.epoch = epoch_index_ + 1;
    e.epochs = *o_.length.epochs;
    e.steps = epoch_steps_;
    e.step = p_.step;
    e.loss = epoch_finite_steps_ ? epoch_loss_sum_ / static_cast<double>(epoch_finite_steps_)
                                 : std::numeric_limits<double>::quiet_NaN();
    e.lr = p_.lr;
    if (evaluator_) e.eval = sum_.evals.back();
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
    epoch_steps_ = 0;
    epoch_loss_sum_ = 0;
    epoch_finite_steps_ = 0;
    sum_.epochs.push_back(e);
    if (o_.on_epoch_end) o_.on_epoch_end(sum_.epochs.back());
  }

  // The executor's host copies, current for this step (one sync when a step has both a checkpoint and
  // an evaluation).
  void sync_host_copies() {
    if (host_current_at_ == p_.step) return;
    ex_.sync_to_host();
    host_current_at_ = p_.step;
  }

  void checkpoint() {
    sync_host_copies();
    TrainCheckpointState cs;
    cs.seed = o_.seed;
    cs.step = p_.step;
    cs.epoch = p_.epoch;
    cs.data_pass = chunk_.epoch;  // the chunk of the last batch
    // With epochs alone the total is known from the data only; a resumed run must not take a guess for
    // it. Once the data has ended it is the steps done, so that a run of another number of processes
    // resumed from the end has nothing left to train instead of restarting the last epoch.
    if (data_ended_) cs.total_steps = p_.step;
    else if (p_.total_steps && (o_.length.steps || epochs_visible_)) cs.total_steps = p_.total_steps;
    cs.loss_sum = ema_;
    cs.finite_steps = finite_steps_;
    cs.first_loss = sum_.first_loss;
    cs.last_loss = p_.loss;
    if (const LossScale* ls = ex_.loss_scale()) {
      cs.loss_scale = ls->scale;
      cs.loss_scale_good_steps = ls->good_steps;
      cs.skipped_steps = ls->skipped;
    }
    // This process's input position; under multi_worker every rank's, gathered on rank 0, which writes.
    InputPosition position;
    position.pipeline_state = run_.save_state();
    if (next_row_ < chunk_.rows) position.pending = slice_rows(chunk_, next_row_, chunk_.rows);
    std::string mine = input_position_bytes(position, rank(), processes(), p_.step);
    if (processes() > 1)
      cs.positions = o_.ranks->gather(mine, 0, fmt::format("the input positions, checkpoint after step {}", p_.step));
    else cs.positions.push_back(std::move(mine));
    if (rank() == 0) save_train_checkpoint(o_.checkpoint_dir, g_, t_.name, ex_.buffers(), ex_.optimizer_slots(), cs);
    ++sum_.checkpoints;
    checkpointed_at_ = p_.step;
  }

  void evaluate() {
    sync_host_copies();
    sum_.evals.push_back(evaluator_->run(ex_.buffers(), p_.step));
    p_.eval = sum_.evals.back();
    if (o_.on_evaluation) o_.on_evaluation(sum_.evals.back());
  }

  void save() {
    sync_host_copies();
    if (rank() == 0) save_weights(g_, o_.save_path, ex_.buffers(), t_.name);
    sum_.saved_tensors = static_cast<int64_t>(g_.params.size() + g_.states.size());
    sum_.saved_bytes = 4.0 * static_cast<double>(g_.param_elements() + g_.state_elements());
  }

  const TrainProgram& t_;
  const ModelGraph& g_;
  const TrainOptions& o_;
  StepExecutor& ex_;
  std::optional<ResumePoint> resumed_;
  // The pass of the data's outermost repeat the pipeline starts at (a restarted epoch's; 0 otherwise),
  // and the step this run's first pass started after.
  int64_t first_pass_ = 0;
  int64_t pass_start_step_ = 0;
  PipelineRun run_;
  ThreadSplit split_;
  std::vector<size_t> input_columns_;
  size_t target_column_ = 0;
  bool epochs_visible_ = false;
  bool epoch_ends_ = false;  // the run counts epochs and their ends are known (EpochEnd)
  // The epoch being trained: its index (0-based), the steps this run took of it, their losses and start.
  int64_t epoch_index_ = 0;
  int64_t epoch_steps_ = 0;
  double epoch_loss_sum_ = 0;
  int64_t epoch_finite_steps_ = 0;
  std::chrono::steady_clock::time_point epoch_start_;
  std::optional<Evaluator> evaluator_;
  TrainSummary sum_;
  TrainProgress& p_ = sum_.last;
  double ema_ = 0;
  int64_t finite_steps_ = 0;  // steps in the smoothed loss (mixed_fp16 may skip one whose loss is not finite)
  // The current chunk of batches and the next of its rows to train on.
  Chunk chunk_;
  int64_t next_row_ = 0;
  bool data_ended_ = false;       // the data (or another rank's shard) ended the run
  int64_t checkpointed_at_ = -1;  // the step of the last checkpoint
  int64_t host_current_at_ = -1;  // the step the executor's host copies were last made current at
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

TrainSummary run_training(const TrainProgram& t, const Plan& data, const TrainOptions& o,
                          const std::function<void(const TrainProgress&)>& progress) {
  check_step_fits(t);
  const int64_t process = resident_bytes();
  std::unique_ptr<StepExecutor> ex =
      o.make_executor ? o.make_executor(t.step, o.seed) : std::make_unique<ReferenceExecutor<float>>(t.step, o.seed);
  std::optional<ResumePoint> resumed;
  if (o.resume) resumed = read_resume_point(t, data, o, *ex);
  TrainingRun run(t, data, o, *ex, std::move(resumed));
  if (t.step.batch > 0) run.plan_memory(process);
  run.restore();
  run.train(progress);
  return run.finish();
}

}  // namespace pipec
