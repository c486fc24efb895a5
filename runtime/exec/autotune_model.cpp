#include "runtime/exec/autotune_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace pipec {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Throughput of a buffer of K items between a producer at rate lambda and a consumer at rate mu
// (M/M/1/K). Symmetric in the two rates, so it is computed from the slower side's ratio.
double buffered_rate(double lambda, double mu, double k) {
  if (!(lambda > 0) || !(mu > 0)) return 0;
  if (std::isinf(lambda) || std::isinf(mu)) return std::min(lambda, mu);
  const double slow = std::min(lambda, mu), r = slow / std::max(lambda, mu);
  if (1 - r < 1e-9) return slow * k / (k + 1);
  return slow * (1 - std::pow(r, k)) / (1 - std::pow(r, k + 1));
}

int64_t value_of(const ModelStage& s, const std::vector<int64_t>& values) {
  return s.knob >= 0 ? values.at(s.knob) : s.value;
}

// A reader's share of the reading done inline (on its segment) with `v` files read ahead.
double inline_share(const ModelStage& s, int64_t v) {
  if (v <= 0) return 1;
  const double c = static_cast<double>(std::max<int64_t>(1, s.cycle));
  return std::max(0.0, (c - static_cast<double>(v)) / c);
}

struct Cap {
  double rate = kInf;
  Bottleneck::Kind kind = Bottleneck::Kind::None;
  int index = -1;  // into ModelInput::stages (Map, Reader), or the segment (Segment)
};

struct Evaluated {
  std::vector<double> segment_ns;  // sync work per segment (consumer's own time in segment 0 not included)
  std::vector<double> sync_ns;     // per stage, as it runs with these values (inline work included)
  std::vector<double> work_ns;     // per stage, all its work
  std::vector<Cap> stage_cap;      // per stage: its map or reader cap, if any
  std::vector<Cap> segment_cap;
  Cap cpu;
  double total_work = 0;
};

Evaluated evaluate(const ModelInput& in, const std::vector<int64_t>& values) {
  Evaluated e;
  const size_t n = in.stages.size();
  e.segment_ns.assign(std::max(1, in.segments), 0.0);
  e.sync_ns.assign(n, 0.0);
  e.work_ns.assign(n, 0.0);
  e.stage_cap.assign(n, Cap{});
  const double threads = std::max(1, in.threads);
  for (size_t i = 0; i < n; ++i) {
    const ModelStage& s = in.stages[i];
    const int64_t v = value_of(s, values);
    double sync = s.sync_ns, work = s.sync_ns + s.task_ns;
    if (s.role == ModelStage::Role::Map) {
      if (v <= 1) {
        sync += s.task_ns;  // no tasks: the map runs on the thread that pulls from it
      } else if (s.task_ns > 0) {
        e.stage_cap[i] = {static_cast<double>(std::min<double>(static_cast<double>(v), threads)) * 1e9 / s.task_ns,
                          Bottleneck::Kind::Map, static_cast<int>(i)};
      }
    } else if (s.role == ModelStage::Role::Reader) {
      // Measured with s.value files read ahead: task_ns is the part read on reader threads.
      const double measured_inline = inline_share(s, s.value);
      const double read = measured_inline < 1 ? s.task_ns / (1 - measured_inline) : 0;
      const double base = std::max(0.0, s.sync_ns - measured_inline * read);
      sync = base + inline_share(s, v) * read;
      work = base + read;
      if (v >= 1 && read > 0)
        e.stage_cap[i] = {static_cast<double>(std::max<int64_t>(1, s.cycle)) * 1e9 / read, Bottleneck::Kind::Reader,
                          static_cast<int>(i)};
    }
    e.sync_ns[i] = sync;
    e.work_ns[i] = work;
    e.segment_ns.at(s.segment) += sync;
    e.total_work += work;
  }
  // The thread that pulls from a map runs its spare tasks while it waits for a result, when more are
  // queued than there are workers (ThreadPool::wait_helping: with v in flight and w of them running,
  // v - w > w). Its time left from its own stages then adds to the workers': at a rate r the tasks
  // need r x task_ns, the workers give w and that thread 1 - r x (its segment's work). Counted only
  // while its own stages are at least a worker's share of the tasks: a thread with little work of its
  // own is better left to refill the window, which it cannot do while it runs a task (the seg
  // benchmark's map, 43 ms a task beside next to nothing, ran 6% slower with one worker and the
  // helping thread than with two workers), while one with much would share a core with a further
  // worker (chess on 2 cores).
  for (size_t i = 0; i < n; ++i) {
    const ModelStage& s = in.stages[i];
    if (e.stage_cap[i].kind != Bottleneck::Kind::Map) continue;
    const double w = std::min<double>(static_cast<double>(value_of(s, values)), threads);
    if (static_cast<double>(value_of(s, values)) <= 2 * w) continue;
    const double segment = e.segment_ns.at(s.segment) + (s.segment == 0 ? in.consumer_ns : 0);
    if (segment * (w + 1) < s.task_ns) continue;
    e.stage_cap[i].rate = std::max(e.stage_cap[i].rate, (w + 1) * 1e9 / (s.task_ns + segment));
  }
  for (size_t g = 0; g < e.segment_ns.size(); ++g) {
    const double ns = e.segment_ns[g] + (g == 0 ? in.consumer_ns : 0);
    e.segment_cap.push_back({ns > 0 ? 1e9 / ns : kInf, Bottleneck::Kind::Segment, static_cast<int>(g)});
  }
  e.cpu = {e.total_work > 0 ? std::max(1.0, in.cores) * 1e9 / e.total_work : kInf, Bottleneck::Kind::Cpu, -1};
  return e;
}

Cap slowest(const ModelInput& in, const Evaluated& e) {
  Cap c = e.cpu;
  for (const Cap& s : e.segment_cap)
    if (s.rate < c.rate) c = s;
  for (const Cap& s : e.stage_cap)
    if (s.rate < c.rate) c = s;
  (void)in;
  return c;
}

// The rate of everything a prefetch pulls from (its producer) and of its own segment (its consumer).
std::pair<double, double> prefetch_sides(const ModelInput& in, const Evaluated& e, const ModelStage& p) {
  double up = p.input_segment >= 0 ? e.segment_cap.at(p.input_segment).rate : kInf;
  for (int u : p.upstream) {
    up = std::min(up, e.stage_cap[u].rate);
    up = std::min(up, e.segment_cap.at(in.stages[u].segment).rate);
  }
  return {up, e.segment_cap.at(p.segment).rate};
}

double rate_of(const ModelInput& in, const Evaluated& e, const std::vector<int64_t>& values) {
  double rate = slowest(in, e).rate;
  if (std::isinf(rate)) return rate;
  for (size_t i = 0; i < in.stages.size(); ++i) {
    const ModelStage& s = in.stages[i];
    const int64_t v = value_of(s, values);
    double lambda = kInf, mu = kInf, k = 1;
    if (s.role == ModelStage::Role::Prefetch) {
      std::tie(lambda, mu) = prefetch_sides(in, e, s);
      k = static_cast<double>(std::max<int64_t>(1, v)) + 1;
    } else if (s.role == ModelStage::Role::Map && v > 1) {
      lambda = e.stage_cap[i].rate;
      mu = e.segment_cap.at(s.segment).rate;
      k = static_cast<double>(v);
    } else {
      continue;
    }
    const double slow = std::min(lambda, mu);
    if (!(slow > 0) || std::isinf(slow)) continue;
    // The buffer passes at most what a finite buffer between those two rates passes. A bound, not a
    // factor on the pipeline's rate: a faster side never makes the pipeline slower.
    rate = std::min(rate, buffered_rate(lambda, mu, k));
  }
  return rate;
}

std::string rate_text(double r) {
  if (std::isinf(r)) return "without limit";
  if (r < 100) return fmt::format("{:.1f}/s", r);
  std::string digits = fmt::format("{:.0f}", r), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out + "/s";
}

std::string mb(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

}  // namespace

const char* knob_param(KnobKind k) {
  switch (k) {
    case KnobKind::MapParallelism: return "parallel";
    case KnobKind::PrefetchDepth: return "size";
    case KnobKind::ReadAhead: return "files read ahead";
  }
  return "?";
}

const char* knob_flag_name(KnobKind k) {
  switch (k) {
    case KnobKind::MapParallelism: return "parallel";
    case KnobKind::PrefetchDepth: return "prefetch";
    case KnobKind::ReadAhead: return "read_ahead";
  }
  return "?";
}

bool knob_kind_from_flag(std::string_view word, KnobKind* kind) {
  for (KnobKind k : kKnobKinds)
    if (word == knob_flag_name(k)) {
      *kind = k;
      return true;
    }
  return false;
}

double modelled_rate(const ModelInput& in, const std::vector<int64_t>& values) {
  return rate_of(in, evaluate(in, values), values);
}

double optional_bytes(const ModelInput& in, const std::vector<int64_t>& values) {
  double bytes = 0;
  for (const ModelStage& s : in.stages)
    if (s.knob >= 0) {
      // The first item of a map's window or a prefetch is a fixed holding; files read ahead are all
      // optional (a file can be read inline).
      const int64_t first = s.role == ModelStage::Role::Reader ? 0 : 1;
      bytes += static_cast<double>(std::max<int64_t>(0, values.at(s.knob) - first)) * s.item_bytes;
    }
  return bytes;
}

Bottleneck find_bottleneck(const ModelInput& in, const std::vector<int64_t>& values) {
  const Evaluated e = evaluate(in, values);
  const Cap c = slowest(in, e);
  Bottleneck b;
  if (c.kind == Bottleneck::Kind::None || std::isinf(c.rate)) return b;
  auto share = [&](int i) { return e.total_work > 0 ? e.work_ns[i] / e.total_work : 0; };
  auto pick = [&](int i) {
    b.stage = in.stages[i].stage;
    b.share = share(i);
  };
  b.kind = c.kind;
  switch (c.kind) {
    case Bottleneck::Kind::Segment: {
      int best = -1;
      std::vector<std::string> others;
      for (size_t i = 0; i < in.stages.size(); ++i) {
        if (in.stages[i].segment != c.index) continue;
        if (best < 0 || e.sync_ns[i] > e.sync_ns[best]) best = static_cast<int>(i);
      }
      if (c.index == 0 && (best < 0 || in.consumer_ns > e.sync_ns[best])) {
        b.kind = Bottleneck::Kind::Consumer;
        b.why = "the consumer: whatever reads the pipeline's output takes longer per element than the pipeline";
        return b;
      }
      pick(best);
      for (size_t i = 0; i < in.stages.size(); ++i)
        if (in.stages[i].segment == c.index && static_cast<int>(i) != best && e.sync_ns[i] > 0.05 * e.sync_ns[best])
          others.push_back(in.stages[i].label);
      std::string thread = c.index == 0 ? "the consumer's thread" : "one thread";
      for (const ModelStage& s : in.stages)
        if (s.role == ModelStage::Role::Prefetch && s.input_segment == c.index) thread = "the thread of " + s.label;
      b.why = "runs on " + thread;
      if (!others.empty()) {
        b.why += " with ";
        for (size_t k = 0; k < others.size(); ++k)
          b.why += (k ? (k + 1 == others.size() ? " and " : ", ") : "") + others[k];
      }
      return b;
    }
    case Bottleneck::Kind::Map: {
      pick(c.index);
      const int64_t v = value_of(in.stages[c.index], values);
      b.why = fmt::format("{} chunks in flight keep {} of {} threads on it", v, std::min<int64_t>(v, in.threads),
                          in.threads);
      return b;
    }
    case Bottleneck::Kind::Reader:
      pick(c.index);
      b.why = "reading its files";
      return b;
    case Bottleneck::Kind::Cpu: {
      int best = 0;
      for (size_t i = 0; i < in.stages.size(); ++i)
        if (e.work_ns[i] > e.work_ns[best]) best = static_cast<int>(i);
      if (in.stages.empty()) return b;
      pick(best);
      b.why = fmt::format("the CPU: the pipeline keeps {:.2g} core{} busy", in.cores, in.cores == 1 ? "" : "s");
      return b;
    }
    default: return b;
  }
}

WorkersChoice choose_workers(const ModelInput& in, const std::vector<KnobRange>& ranges, int current) {
  const int most = std::max(1, in.threads);
  std::vector<int64_t> values;
  for (const KnobRange& r : ranges) values.push_back(r.max);
  auto capacity = [&](int w) {
    ModelInput with = in;
    with.threads = w;
    return slowest(with, evaluate(with, values)).rate;
  };
  // Two capacities compared, infinite ones (nothing measured yet) equal to each other.
  auto at_least = [](double a, double b, double factor) { return std::isinf(b) ? std::isinf(a) : a >= b * factor; };
  WorkersChoice c;
  c.workers = std::clamp(current, 1, most);
  const double start = capacity(c.workers);
  while (c.workers > 1 && at_least(capacity(c.workers - 1), start, 1 - kMinGain / 2)) --c.workers;
  if (c.workers == std::clamp(current, 1, most))
    while (c.workers < most && !std::isinf(capacity(c.workers)) &&
           at_least(capacity(c.workers + 1), capacity(c.workers), 1 + kMinGain))
      ++c.workers;
  c.capacity = capacity(c.workers);
  if (c.workers >= most) {
    c.reason = fmt::format("all {} take its tasks", most);
  } else {
    const double more = capacity(c.workers + 1);
    const double gain = std::isinf(c.capacity) || !(c.capacity > 0) ? 0 : more / c.capacity - 1;
    c.reason = fmt::format("{} of {} take its tasks; one more would add {:.1f}% to what the pipeline can make",
                           c.workers, most, 100 * std::max(0.0, gain));
  }
  return c;
}

std::vector<KnobRange> ranges_for_workers(const ModelInput& in, std::vector<KnobRange> ranges, int workers) {
  for (const ModelStage& s : in.stages) {
    if (s.role != ModelStage::Role::Map || s.knob < 0 || static_cast<size_t>(s.knob) >= ranges.size()) continue;
    KnobRange& r = ranges[static_cast<size_t>(s.knob)];
    r.max = std::clamp(kMapWindowPerWorker * std::max(1, workers), r.min, r.max);
  }
  return ranges;
}

Choice hill_climb(const ModelInput& in, const std::vector<KnobRange>& ranges, const std::vector<int64_t>& start) {
  Choice c;
  const size_t k = ranges.size();
  c.values.resize(k);
  for (size_t i = 0; i < k; ++i)
    c.values[i] = std::clamp(i < start.size() ? start[i] : ranges[i].min, ranges[i].min, ranges[i].max);
  // Too much memory for the room the budget leaves: give back the step that costs the least rate per byte.
  for (int step = 0; step < 4096 && optional_bytes(in, c.values) > in.room_bytes; ++step) {
    int best = -1;
    double best_cost = 0;
    const double rate = modelled_rate(in, c.values);
    for (size_t i = 0; i < k; ++i) {
      if (c.values[i] <= ranges[i].min) continue;
      std::vector<int64_t> cand = c.values;
      cand[i] -= 1;
      const double freed = optional_bytes(in, c.values) - optional_bytes(in, cand);
      if (freed <= 0) continue;
      const double cost = (rate - modelled_rate(in, cand)) / freed;
      if (best < 0 || cost < best_cost) {
        best = static_cast<int>(i);
        best_cost = cost;
      }
    }
    if (best < 0) break;
    c.values[best] -= 1;
  }
  // Steps that buy nothing go back (memory held for no throughput), as long as all of them together
  // lose less than half the gain a step must bring: the other half keeps a choice from flapping.
  const double before = modelled_rate(in, c.values);
  for (bool shrunk = true; shrunk;) {
    shrunk = false;
    for (size_t i = 0; i < k; ++i) {
      if (c.values[i] <= std::max(ranges[i].min, ranges[i].keep)) continue;
      std::vector<int64_t> cand = c.values;
      cand[i] -= 1;
      const double r = modelled_rate(in, cand);
      if (std::isinf(before) ? std::isinf(r) : r >= before * (1 - kMinGain / 2)) {
        c.values = cand;
        shrunk = true;
      }
    }
  }
  double rate = modelled_rate(in, c.values);
  for (int step = 0; step < 4096; ++step) {
    int best = -1;
    double best_gain = 0, best_rate = rate;
    for (size_t i = 0; i < k; ++i) {
      if (c.values[i] >= ranges[i].max) continue;
      std::vector<int64_t> cand = c.values;
      cand[i] += 1;
      if (optional_bytes(in, cand) > in.room_bytes) continue;
      const double r = modelled_rate(in, cand);
      const double gain = std::isinf(rate) ? 0 : (rate > 0 ? r / rate - 1 : (r > 0 ? 1 : 0));
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<int>(i);
        best_rate = r;
      }
    }
    if (best < 0 || best_gain < kMinGain) break;
    c.values[best] += 1;
    rate = best_rate;
  }
  c.rate = rate;

  // One sentence per parameter: what it holds, what the model says of it, and why it is not higher.
  const Evaluated e = evaluate(in, c.values);
  c.reasons.resize(k);
  for (const ModelStage& s : in.stages) {
    if (s.knob < 0) continue;
    const size_t i = static_cast<size_t>(s.knob);
    const int64_t v = c.values[i];
    const size_t si = static_cast<size_t>(&s - in.stages.data());
    std::string what;
    const double share = e.total_work > 0 ? 100.0 * e.work_ns[si] / e.total_work : 0;
    switch (s.role) {
      case ModelStage::Role::Map:
        what = v <= 1
                   ? fmt::format("runs on the thread that pulls from it ({:.0f}% of the pipeline's work)", share)
                   : fmt::format(
                         "{} of {} threads work on it ({:.0f}% of the pipeline's work) and up to {} results wait ready",
                         std::min<int64_t>(v, in.threads), in.threads, share, v);
        break;
      case ModelStage::Role::Prefetch: {
        auto [up, down] = prefetch_sides(in, e, s);
        what = fmt::format("the stages before it make {} and those after it take {}", rate_text(up), rate_text(down));
        break;
      }
      case ModelStage::Role::Reader:
        what = v <= 0 ? std::string("files are read on the thread that parses them")
                      : fmt::format("{} file{} read on threads of their own", v, v == 1 ? " is" : "s are");
        break;
      default: break;
    }
    std::string why;
    std::vector<int64_t> cand = c.values;
    cand[i] += 1;
    if (v >= ranges[i].max) {
      why = s.role == ModelStage::Role::Reader && s.cycle <= 1
                ? "files are read one after another, in order, so one is read at a time"
                : fmt::format("{} is the most it may take", ranges[i].max);
    } else if (optional_bytes(in, cand) > in.room_bytes) {
      why = fmt::format("one more ({}) does not fit in what the memory budget leaves ({})", mb(s.item_bytes),
                        mb(std::max(0.0, in.room_bytes - optional_bytes(in, c.values))));
    } else {
      const double gain = rate > 0 && !std::isinf(rate) ? modelled_rate(in, cand) / rate - 1 : 0;
      why =
          fmt::format("one more would add {} for {:.1f}% more throughput", mb(s.item_bytes), 100 * std::max(0.0, gain));
    }
    c.reasons[i] = what + "; " + why;
  }
  return c;
}

}  // namespace pipec
