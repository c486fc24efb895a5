#include "runtime/trace/trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace pipec::trace {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {

struct Event {
  char phase;     // 'X' complete, 'C' counter, 'i' instant
  int32_t track;  // -1: the buffer's thread; otherwise an index into Registry::tracks
  const char* category;
  NameId name;
  int64_t ts_ns, dur_ns;
  Arg a, b;       // a counter's value is a.value
  uint32_t text;  // 0: none; else 1 + an index into the buffer's texts (JSON args)
};

struct ThreadBuffer {
  int tid = 0;
  std::string name;
  std::mutex mu;  // the owner appends, to_json() reads: uncontended except while writing the file
  // Events in blocks of kBlockEvents, so recording never moves what it recorded (a growing vector
  // would copy it and touch twice the memory); a new trace reuses the blocks.
  static constexpr size_t kBlockEvents = 4096;
  std::vector<std::unique_ptr<Event[]>> blocks;
  size_t count = 0;

  Event& push(const Event& e) {
    // Not zeroed: every slot is written before it is read.
    if (count == blocks.size() * kBlockEvents) blocks.emplace_back(new Event[kBlockEvents]);
    Event& slot = blocks[count / kBlockEvents][count % kBlockEvents];
    slot = e;
    ++count;
    return slot;
  }
  const Event& at(size_t i) const { return blocks[i / kBlockEvents][i % kBlockEvents]; }
  std::vector<std::string> texts;
};

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> threads;
  std::vector<std::pair<std::string, std::string>> tracks;  // (group, name)
  int next_tid = 1;
  int64_t origin_ns = 0;
  std::string process_name = "pipec";
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may record during exit
  return *r;
}

// Interned names: id - 1 indexes `texts`.
struct Names {
  std::mutex mu;
  std::unordered_map<std::string, NameId> ids;
  std::vector<std::string> texts;
};

Names& names() {
  static Names* n = new Names;
  return *n;
}

std::string name_text(NameId id) {
  Names& n = names();
  std::lock_guard lock(n.mu);
  return id >= 1 && id <= n.texts.size() ? n.texts[id - 1] : std::string();
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buf;
  if (!buf) {
    buf = std::make_shared<ThreadBuffer>();
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    buf->tid = r.next_tid++;
    buf->name = "thread " + std::to_string(buf->tid);
    r.threads.push_back(buf);
  }
  return *buf;
}

void append(const Event& e, std::string text = {}) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard lock(b.mu);
  Event& slot = b.push(e);
  if (!text.empty()) {
    b.texts.push_back(std::move(text));
    slot.text = static_cast<uint32_t>(b.texts.size());
  }
}

std::string format_us(int64_t ns) {
  // Microseconds with three decimals: Chrome's unit, nanosecond resolution. A span that began just
  // before the trace started is clamped to its start.
  if (ns < 0) ns = 0;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

NameId name(std::string_view text) {
  Names& n = names();
  std::lock_guard lock(n.mu);
  auto [it, inserted] = n.ids.emplace(std::string(text), 0);
  if (inserted) {
    n.texts.emplace_back(text);
    it->second = static_cast<NameId>(n.texts.size());
  }
  return it->second;
}

void start(const std::string& process_name) {
  Registry& r = registry();
  {
    std::lock_guard lock(r.mu);
    for (auto& t : r.threads) {
      std::lock_guard tl(t->mu);
      t->count = 0;
      t->texts.clear();
    }
    r.origin_ns = now_ns();
    r.process_name = process_name;
  }
  detail::g_enabled.store(true, std::memory_order_relaxed);
}

void stop() { detail::g_enabled.store(false, std::memory_order_relaxed); }

void set_thread_name(const std::string& name) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard lock(b.mu);
  b.name = name;
}

void complete(const char* category, NameId name, int64_t start_ns, int64_t dur_ns, Arg a, Arg b) {
  if (!enabled()) return;
  append({'X', -1, category, name, start_ns, std::max<int64_t>(0, dur_ns), a, b, 0});
}

void complete(const char* category, std::string_view name_text, int64_t start_ns, int64_t dur_ns,
              std::string args_json) {
  if (!enabled()) return;
  append({'X', -1, category, name(name_text), start_ns, std::max<int64_t>(0, dur_ns), {}, {}, 0}, std::move(args_json));
}

void counter(NameId name, int64_t ts_ns, double value) {
  if (!enabled()) return;
  append({'C', -1, "counter", name, ts_ns, 0, {"value", value}, {}, 0});
}

void counter(std::string_view name_text, int64_t ts_ns, double value) {
  if (!enabled()) return;
  counter(name(name_text), ts_ns, value);
}

void instant(const char* category, std::string_view name_text, int64_t ts_ns, std::string args_json) {
  if (!enabled()) return;
  append({'i', -1, category, name(name_text), ts_ns, 0, {}, {}, 0}, std::move(args_json));
}

int track(const std::string& group, const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (size_t i = 0; i < r.tracks.size(); ++i)
    if (r.tracks[i].first == group && r.tracks[i].second == name) return static_cast<int>(i);
  r.tracks.emplace_back(group, name);
  return static_cast<int>(r.tracks.size()) - 1;
}

void complete_on(int track, const char* category, NameId name, int64_t start_ns, int64_t dur_ns, Arg a) {
  if (!enabled()) return;
  append({'X', track, category, name, start_ns, std::max<int64_t>(0, dur_ns), a, {}, 0});
}

std::string to_json() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  // Process ids: 1 for the CPU threads, 2.. for each group of other tracks, in order of first use.
  std::vector<std::string> groups;
  auto group_pid = [&](const std::string& g) {
    auto it = std::find(groups.begin(), groups.end(), g);
    if (it == groups.end()) {
      groups.push_back(g);
      return static_cast<int>(groups.size()) + 1;
    }
    return static_cast<int>(it - groups.begin()) + 2;
  };
  std::unordered_map<NameId, std::string> quoted;  // the names in use, quoted once
  auto quoted_name = [&](NameId id) -> const std::string& {
    auto it = quoted.find(id);
    if (it == quoted.end()) it = quoted.emplace(id, quote(name_text(id))).first;
    return it->second;
  };
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  emit("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": " +
       quote(r.process_name) + "}}");
  for (size_t i = 0; i < r.tracks.size(); ++i) {
    int pid = group_pid(r.tracks[i].first);
    emit("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": 0, \"args\": {\"name\": " + quote(r.tracks[i].first) + "}}");
    emit("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(i + 1) + ", \"args\": {\"name\": " + quote(r.tracks[i].second) + "}}");
  }
  for (const auto& t : r.threads) {
    std::lock_guard tl(t->mu);
    if (t->count == 0) continue;
    emit("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " + std::to_string(t->tid) +
         ", \"args\": {\"name\": " + quote(t->name) + "}}");
    for (size_t i = 0; i < t->count; ++i) {
      const Event& e = t->at(i);
      int pid = 1, tid = t->tid;
      if (e.track >= 0) {
        pid = group_pid(r.tracks.at(e.track).first);
        tid = e.track + 1;
      }
      std::string s = "{\"ph\": \"" + std::string(1, e.phase) + "\", \"cat\": " + quote(e.category) +
                      ", \"name\": " + quoted_name(e.name) + ", \"pid\": " + std::to_string(pid) +
                      ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + format_us(e.ts_ns - r.origin_ns);
      if (e.phase == 'X') s += ", \"dur\": " + format_us(e.dur_ns);
      if (e.phase == 'i') s += ", \"s\": \"t\"";
      std::string args;
      for (const Arg& a : {e.a, e.b})
        if (a.key) args += (args.empty() ? "" : ", ") + quote(a.key) + ": " + format_number(a.value);
      if (e.text) args += (args.empty() ? "" : ", ") + t->texts.at(e.text - 1);
      if (!args.empty()) s += ", \"args\": {" + args + "}";
      emit(s + "}");
    }
  }
  out += "\n]}\n";
  return out;
}

bool write_json(const std::string& path, std::string* error) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << to_json();
  if (!f || !f.flush()) {
    if (error) *error = "cannot write " + path;
    return false;
  }
  return true;
}

// ---- training steps ---------------------------------------------------------------------------------

const char* phase_name(StepPhase p) {
  switch (p) {
    case StepPhase::InputWait: return "input wait";
    case StepPhase::Forward: return "forward";
    case StepPhase::Loss: return "loss";
    case StepPhase::Backward: return "backward";
    case StepPhase::AllReduce: return "all-reduce";
    case StepPhase::Optimizer: return "optimizer";
  }
  return "?";
}

void phase_span(StepPhase p, int64_t start_ns, int64_t dur_ns) {
  if (!enabled()) return;
  // Interned once per phase for the process's life (names outlive every trace).
  static const NameId names[kStepPhases] = {
      name(phase_name(StepPhase::InputWait)), name(phase_name(StepPhase::Forward)),
      name(phase_name(StepPhase::Loss)),      name(phase_name(StepPhase::Backward)),
      name(phase_name(StepPhase::AllReduce)), name(phase_name(StepPhase::Optimizer))};
  complete("train", names[static_cast<int>(p)], start_ns, dur_ns);
}

StepTimer::~StepTimer() {
  if (start_ < 0 || !enabled()) return;
  static const NameId step_name = name("step");
  complete("train", step_name, start_, now_ns() - start_, {"step", static_cast<double>(step_)});
}

}  // namespace pipec::trace
