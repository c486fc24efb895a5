#include "runtime/exec/autotuner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "runtime/exec/footprint.h"
#include "runtime/exec/iterator.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string label_of(const Plan& plan, int stage) {
  return fmt::format("#{} {}", stage, stage_name(plan.stages.at(stage).kind));
}

}  // namespace

Knob* auto_knob(RunContext& ctx, int stage, KnobKind kind, int64_t initial, int64_t min, int64_t max) {
  return ctx.autotune ? ctx.autotune->knob(stage, kind, initial, min, max) : nullptr;
}

Knob* map_parallelism_knob(RunContext& ctx, int stage, int64_t* window) {
  const int pool = ctx.pool ? ctx.pool->size() : 0;
  *window = map_starting_window(pool);
  const Stage& s = ctx.plan->stages.at(stage);
  if (const Value* p = s.arg("parallel"); p && p->kind == Value::Int) {
    *window = std::max<int64_t>(1, p->i);
    return auto_knob(ctx, stage, KnobKind::MapParallelism, *window, *window, *window);
  }
  return auto_knob(ctx, stage, KnobKind::MapParallelism, *window, 1,
                   std::max<int64_t>(*window, kMapWindowPerWorker * int64_t{pool}));
}

Autotuner::Autotuner(RunContext& ctx, bool tune, std::vector<std::pair<KnobKind, int64_t>> values)
    : ctx_(ctx), tune_(tune), values_(std::move(values)) {
  const Plan& plan = *ctx.plan;
  const int n = static_cast<int>(plan.stages.size());
  segment_.assign(n, 0);
  input_segment_.assign(n, -1);
  upstream_.assign(n, {});
  // Segments: the consumer's thread runs the last stage and everything up to a prefetch; each
  // prefetch's thread runs its input side.
  std::vector<bool> seen(n, false);
  std::function<void(int, int)> assign = [&](int s, int g) {
    if (seen[s]) return;
    seen[s] = true;
    segment_[s] = g;
    int inner = g;
    if (plan.stages[s].kind == StageKind::Prefetch) {
      inner = segments_++;
      input_segment_[s] = inner;
    }
    for (int in : plan.stages[s].inputs) assign(in, inner);
  };
  if (n > 0) assign(n - 1, 0);
  std::function<void(int, std::vector<int>&)> collect = [&](int s, std::vector<int>& out) {
    for (int in : plan.stages[s].inputs) {
      if (std::find(out.begin(), out.end(), in) != out.end()) continue;
      out.push_back(in);
      collect(in, out);
    }
  };
  for (int s = 0; s < n; ++s) collect(s, upstream_[s]);
  smooth_sync_.assign(n, 0);
  smooth_task_.assign(n, 0);
}

Autotuner::~Autotuner() { stop(); }

Knob* Autotuner::knob(int stage, KnobKind kind, int64_t initial, int64_t min, int64_t max) {
  std::lock_guard lock(mu_);
  for (auto& k : knobs_)
    if (k->stage() == stage && k->kind() == kind) return k.get();
  const bool tunable = max > min;
  for (const auto& [k, v] : values_) {
    if (k != kind || !tunable) continue;
    // Files read ahead stay within their range (a source reading its files in order reads one at a
    // time); the others take what was asked, at least their minimum.
    const int64_t fixed = kind == KnobKind::ReadAhead ? std::clamp(v, min, max) : std::max(v, min);
    knobs_.push_back(std::make_unique<Knob>(stage, kind, fixed, fixed, fixed));
    knobs_.back()->set_fixed_reason("set by --auto-value");
    knobs_.back()->set_overridden();
    return knobs_.back().get();
  }
  knobs_.push_back(std::make_unique<Knob>(stage, kind, initial, min, max));
  return knobs_.back().get();
}

std::vector<Knob*> Autotuner::knobs() const {
  std::lock_guard lock(mu_);
  std::vector<Knob*> out;
  for (const auto& k : knobs_) out.push_back(k.get());
  return out;
}

void Autotuner::start() {
  if (!tune_ || thread_.joinable()) return;
  started_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

void Autotuner::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Autotuner::consumer_called() {
  if (consumer_since_ >= 0)
    consumer_ns_.fetch_add(static_cast<uint64_t>(steady_ns() - consumer_since_), std::memory_order_relaxed);
  consumer_since_ = -1;
}

void Autotuner::consumer_returned() { consumer_since_ = steady_ns(); }

void Autotuner::set_compute_threads(int n) {
  int active;
  {
    std::lock_guard lock(mu_);
    compute_threads_ = std::clamp(n, 0, std::max(0, ctx_.threads - 1));
    const int keep = ctx_.threads - compute_threads_;
    active = workers_ > 0 ? std::min(workers_, keep) : keep;
  }
  if (ctx_.pool) ctx_.pool->set_active_workers(active);
}

Autotuner::Workers Autotuner::workers() const {
  std::lock_guard lock(mu_);
  const int keep = std::max(1, ctx_.threads - compute_threads_);
  return {workers_ > 0 ? std::min(workers_, keep) : keep, keep, workers_reason_};
}

int Autotuner::pipeline_threads() const {
  std::lock_guard lock(mu_);
  return std::max(1, ctx_.threads - compute_threads_);
}

Autotuner::Sample Autotuner::sample() const {
  Sample s;
  s.at = std::chrono::steady_clock::now();
  for (const auto& st : ctx_.stats) s.stages.push_back(st->snapshot());
  if (!s.stages.empty()) s.out = s.stages.back().elements_out;
  s.consumer_ns = consumer_ns_.load(std::memory_order_relaxed);
  s.cpu = process_cpu_times();
  return s;
}

ModelInput Autotuner::model_between(const Sample& a, const Sample& b, std::vector<Knob*>* tunables) const {
  const Plan& plan = *ctx_.plan;
  const int n = static_cast<int>(plan.stages.size());
  ModelInput in;
  in.segments = segments_;
  in.threads = pipeline_threads();
  {
    std::lock_guard lock(mu_);
    in.cores = std::max(1, ThreadPool::default_size() - compute_threads_);
  }
  const double out = static_cast<double>(b.out - (a.stages.empty() ? 0 : a.out));
  auto per = [&](uint64_t x, uint64_t y) { return out > 0 ? static_cast<double>(y - x) / out : 0.0; };
  double optional_held = 0;
  std::lock_guard lock(mu_);
  for (int i = 0; i < n; ++i) {
    ModelStage m;
    m.stage = i;
    m.label = label_of(plan, i);
    m.segment = segment_[i];
    m.input_segment = input_segment_[i];
    m.upstream = upstream_[i];
    const StageStatsSnapshot zero{};
    const StageStatsSnapshot& sa = a.stages.empty() ? zero : a.stages[i];
    m.sync_ns = per(sa.busy_ns, b.stages[i].busy_ns);
    m.task_ns = per(sa.task_ns, b.stages[i].task_ns);
    for (const auto& k : knobs_) {
      if (k->stage() != i) continue;
      m.role = k->kind() == KnobKind::MapParallelism  ? ModelStage::Role::Map
               : k->kind() == KnobKind::PrefetchDepth ? ModelStage::Role::Prefetch
                                                      : ModelStage::Role::Reader;
      m.value = k->value();
      m.cycle = k->cycle();
      m.item_bytes = static_cast<double>(k->item_bytes());
      if (k->tunable() && tunables) {
        m.knob = static_cast<int>(tunables->size());
        tunables->push_back(k.get());
      }
      if (ctx_.memory) optional_held += static_cast<double>(ctx_.memory->stage_use(i).optional);
    }
    in.stages.push_back(std::move(m));
  }
  in.consumer_ns = out > 0 ? static_cast<double>(b.consumer_ns - (a.stages.empty() ? 0 : a.consumer_ns)) / out : 0;
  in.room_bytes =
      ctx_.memory ? static_cast<double>(ctx_.memory->room()) + optional_held : std::numeric_limits<double>::infinity();
  return in;
}

void Autotuner::run() {
  trace::set_thread_name("autotune");
  Sample prev = sample();
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, kTick, [&] { return stopping_; })) return;
    }
    Sample now = sample();
    if (now.out < prev.out + 2 || now.at - prev.at < std::chrono::milliseconds(20)) continue;
    last_ = prev;
    decide(now);
    prev = now;
  }
}

void Autotuner::decide(const Sample& now) {
  std::vector<Knob*> knobs;
  ModelInput in = model_between(last_, now, &knobs);
  // Costs are smoothed over the last few decisions: one interval can be cut by a slow epoch start.
  for (size_t i = 0; i < in.stages.size(); ++i) {
    if (have_smooth_) {
      in.stages[i].sync_ns = smooth_sync_[i] = 0.5 * smooth_sync_[i] + 0.5 * in.stages[i].sync_ns;
      in.stages[i].task_ns = smooth_task_[i] = 0.5 * smooth_task_[i] + 0.5 * in.stages[i].task_ns;
    } else {
      smooth_sync_[i] = in.stages[i].sync_ns;
      smooth_task_[i] = in.stages[i].task_ns;
    }
  }
  in.consumer_ns = smooth_consumer_ = have_smooth_ ? 0.5 * smooth_consumer_ + 0.5 * in.consumer_ns : in.consumer_ns;
  // On a machine other processes load, plan with the cores the run got, not the ones it may use.
  ProcessCpuTimes delta{now.cpu.run_ns - last_.cpu.run_ns, now.cpu.wait_ns - last_.cpu.wait_ns,
                        now.cpu.known && last_.cpu.known};
  if (delta.run_ns < 0 || delta.wait_ns < 0) delta.known = false;  // a thread that ended took its times along
  const double got = available_cores(static_cast<int>(in.cores), delta,
                                     std::chrono::duration_cast<std::chrono::nanoseconds>(now.at - last_.at).count());
  smooth_cores_ = have_smooth_ ? 0.5 * smooth_cores_ + 0.5 * got : got;
  in.cores = std::clamp(smooth_cores_, 1.0, in.cores);
  have_smooth_ = true;
  std::vector<KnobRange> ranges;
  std::vector<int64_t> current;
  for (Knob* k : knobs) {
    // A prefetch keeps its starting depth unless the memory budget needs it (autotune_model.h).
    ranges.push_back({k->min(), k->max(), k->kind() == KnobKind::PrefetchDepth ? k->initial() : 0});
    current.push_back(k->value());
  }
  // The workers first (by capacity), then the parameters for them.
  int workers_now;
  {
    std::lock_guard lock(mu_);
    workers_now = workers_ > 0 ? workers_ : in.threads;
  }
  const WorkersChoice w = choose_workers(in, ranges, workers_now);
  in.threads = w.workers;
  Choice c = hill_climb(in, ranges_for_workers(in, ranges, w.workers), current);
  const double t = std::chrono::duration<double>(now.at - started_).count();
  std::lock_guard lock(mu_);
  ++decisions_;
  if (w.workers != workers_now && trace::enabled())
    trace::instant("autotune", fmt::format("pool workers {} -> {}", workers_now, w.workers), trace::now_ns(),
                   "\"reason\": " + trace::quote(w.reason));
  workers_ = w.workers;
  workers_reason_ = w.reason;
  if (ctx_.pool) ctx_.pool->set_active_workers(std::min(workers_, std::max(1, ctx_.threads - compute_threads_)));
  picks_.clear();
  for (size_t i = 0; i < knobs.size(); ++i) {
    Knob* k = knobs[i];
    const int64_t from = k->value();
    k->set(c.values[i]);
    if (k->value() != from) {
      changes_.push_back({t, k->stage(), k->kind(), from, k->value()});
      if (trace::enabled())
        trace::instant(
            "autotune",
            fmt::format("{} {} {} -> {}", label_of(*ctx_.plan, k->stage()), knob_param(k->kind()), from, k->value()),
            trace::now_ns(), "\"reason\": " + trace::quote(c.reasons[i]));
    }
    picks_.push_back({k->stage(), k->kind(), k->value(), true, false, c.reasons[i]});
  }
  if (trace::enabled() && ctx_.memory) trace::counter("memory held (MB)", trace::now_ns(), ctx_.memory->used() / 1e6);
}

std::vector<Autotuner::Pick> Autotuner::picks() const {
  std::lock_guard lock(mu_);
  std::vector<Pick> out;
  for (const auto& k : knobs_) {
    Pick p{k->stage(), k->kind(), k->value(), k->tunable(), k->overridden(), {}};
    for (const Pick& q : picks_)
      if (q.stage == p.stage && q.kind == p.kind) p.reason = q.reason;
    if (!k->tunable()) p.reason = k->fixed_reason() ? k->fixed_reason() : "fixed by the spec";
    else if (!tune_) p.reason = "autotuning is off: the starting value";
    else if (p.reason.empty()) p.reason = "the starting value: the run ended before the first measurement";
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const Pick& a, const Pick& b) { return a.stage < b.stage; });
  return out;
}

std::vector<Autotuner::Change> Autotuner::changes() const {
  std::lock_guard lock(mu_);
  return changes_;
}

int Autotuner::decisions() const {
  std::lock_guard lock(mu_);
  return decisions_;
}

ModelInput Autotuner::whole_run_model() const {
  std::vector<Knob*> knobs;
  return model_between(Sample{}, sample(), &knobs);
}

std::vector<int64_t> Autotuner::knob_values() const {
  std::vector<Knob*> knobs;
  model_between(Sample{}, sample(), &knobs);
  std::vector<int64_t> v;
  for (Knob* k : knobs) v.push_back(k->value());
  return v;
}

Bottleneck Autotuner::bottleneck() const {
  std::vector<Knob*> knobs;
  ModelInput in = model_between(Sample{}, sample(), &knobs);
  in.threads = workers().value;
  std::vector<int64_t> v;
  for (Knob* k : knobs) v.push_back(k->value());
  return find_bottleneck(in, v);
}

}  // namespace pipec
