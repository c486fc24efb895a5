// Chrome trace events for a run (`pipec run --trace FILE.json`; open the file in Perfetto or
// chrome://tracing): a track per thread, a span per chunk per stage, counters for queue depths and
// memory, GPU copies and kernels on tracks of their own, and the spans a trainer records per step.
//
// Recording is off unless a trace was started, and every recording call first reads one relaxed
// atomic (`enabled()`), so code that records spans costs nothing measurable in a run without a trace.
// Each thread appends to a buffer of its own (registered once per thread), so recording threads do not
// contend; the buffers belong to the recorder and outlive the threads that filled them. An event is a
// small fixed record: its name is an interned id (`name()`, looked up once by whoever records it
// often, such as a stage for its spans) and its arguments are numbers, so recording one takes no
// allocation and no formatting; the text is made when the trace is written.
//
// The API for training code (one training step, each phase a span on the thread that runs it):
//
//   trace::StepTimer step(step_index);                  // a span "step N" around the whole step
//   { auto p = step.phase(trace::StepPhase::InputWait); batch = pipeline.next(); }
//   { auto p = step.phase(trace::StepPhase::Forward);   ... }
//   ...
//   trace::phase_span(trace::StepPhase::Backward, start_ns, dur_ns);  // a phase timed by its runner
//
// Without a trace these cost one relaxed load each: a trainer keeps its own phase times for its
// summary (runtime/train/loop/train_loop.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipec::trace {

namespace detail {
extern std::atomic<bool> g_enabled;
}

/// True while a trace is being recorded.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

/// The trace's clock: nanoseconds of the steady clock.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Starts recording (dropping anything recorded before). `process_name` names the CPU threads' group.
void start(const std::string& process_name = "pipec");
/// Stops recording; what was recorded stays until the next start().
void stop();
/// Everything recorded, as Chrome trace JSON: {"traceEvents": [...], "displayTimeUnit": "ms"}.
std::string to_json();
/// Writes to_json() to `path`; false (and `error` says why) when the file cannot be written.
bool write_json(const std::string& path, std::string* error);

/// Names the calling thread's track ("main", "prefetch #5", "pool worker 2").
void set_thread_name(const std::string& name);

/// An interned name: the same text gives the same id for the process's life. 0 is no name.
using NameId = uint32_t;
NameId name(std::string_view text);

/// A numeric argument of an event ("rows" = 16); a null key is none.
struct Arg {
  const char* key = nullptr;  // a string that outlives the trace (a literal)
  double value = 0;
};

/// A span on the calling thread's track, from `start_ns` for `dur_ns`. `category` groups spans
/// ("stage", "task", "train", "gpu") and must outlive the trace (a literal).
void complete(const char* category, NameId name, int64_t start_ns, int64_t dur_ns, Arg a = {}, Arg b = {});
/// The same for an occasional span: the name is interned here, `args_json` (an object's members
/// without braces, or empty) kept as text.
void complete(const char* category, std::string_view name, int64_t start_ns, int64_t dur_ns,
              std::string args_json = {});
/// A counter sample ("prefetch #5 queue" = 3): Perfetto draws each counter name as a track of its own.
void counter(NameId name, int64_t ts_ns, double value);
void counter(std::string_view name, int64_t ts_ns, double value);
/// A moment on the calling thread's track (an autotune decision).
void instant(const char* category, std::string_view name, int64_t ts_ns, std::string args_json = {});

/// A track that is not a thread: `group` is its process row ("GPU"), `name` the track ("kernels").
/// The same (group, name) gives the same track.
int track(const std::string& group, const std::string& name);
/// A span on such a track.
void complete_on(int track, const char* category, NameId name, int64_t start_ns, int64_t dur_ns, Arg a = {});

/// JSON string quoting (quotes included), for args_json.
std::string quote(std::string_view s);

/// A span on the calling thread from construction to destruction (when a trace is recording).
class Span {
 public:
  Span(const char* category, std::string_view name) : category_(category) {
    if (enabled()) {
      name_ = std::string(name);
      start_ = now_ns();
    }
  }
  ~Span() {
    if (start_ >= 0) complete(category_, std::move(name_), start_, now_ns() - start_);
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* category_;
  std::string name_;
  int64_t start_ = -1;
};

// ---- training steps ---------------------------------------------------------------------------------

enum class StepPhase { InputWait, Forward, Loss, Backward, AllReduce, Optimizer };
constexpr int kStepPhases = 6;
/// "input wait", "forward", "loss", "backward", "all-reduce", "optimizer".
const char* phase_name(StepPhase p);
/// A span of phase `p` on the calling thread, for code that times the phase itself (an executor
/// running a step's nodes).
void phase_span(StepPhase p, int64_t start_ns, int64_t dur_ns);

/// One training step: a span "step N" on the calling thread, and its phases (see the top of this file).
class StepTimer {
 public:
  explicit StepTimer(int64_t step) : step_(step), start_(enabled() ? now_ns() : -1) {}
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  class Phase {
   public:
    Phase(Phase&& other) noexcept : phase_(other.phase_), start_(other.start_) { other.start_ = -1; }
    ~Phase() {
      if (start_ >= 0) phase_span(phase_, start_, now_ns() - start_);
    }
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;

   private:
    friend class StepTimer;
    explicit Phase(StepPhase p) : phase_(p), start_(enabled() ? now_ns() : -1) {}
    StepPhase phase_;
    int64_t start_;
  };
  /// Times `p` until the returned object goes away.
  Phase phase(StepPhase p) { return Phase(p); }
  /// Records no "step" span: the step did not happen (the data ended while it waited for input).
  void discard() { start_ = -1; }

 private:
  int64_t step_;
  int64_t start_;  // -1: no trace was recording when the step began
};

}  // namespace pipec::trace
