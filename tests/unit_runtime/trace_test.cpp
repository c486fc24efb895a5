// Chrome trace events (runtime/trace/trace.h): nothing is recorded while off; while on, each thread
// gets a track named as it asked, spans and counters land on it with their times relative to the
// start, tracks that are not threads get a process row of their own, and the text is valid JSON.
#include "runtime/trace/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <thread>

namespace pipec {
namespace {

using Json = nlohmann::json;

// The events of the trace as JSON, after stopping it.
Json recorded() {
  trace::stop();
  return Json::parse(trace::to_json());
}

// tid -> thread name for pid 1 (the CPU threads).
std::map<int, std::string> thread_names(const Json& j) {
  std::map<int, std::string> out;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1) out[e["tid"].get<int>()] = e["args"]["name"];
  return out;
}

TEST(Trace, NamesAreInternedOnce) {
  const trace::NameId a = trace::name("#7 shuffle");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(trace::name("#7 shuffle"), a);
  EXPECT_NE(trace::name("#8 shuffle"), a);
}

TEST(Trace, NothingIsRecordedWhileOff) {
  trace::start();
  trace::stop();
  EXPECT_FALSE(trace::enabled());
  trace::complete("stage", "#0 range", trace::now_ns(), 10);
  trace::counter("queue", trace::now_ns(), 3);
  { trace::Span s("stage", "ignored"); }
  const Json j = Json::parse(trace::to_json());
  for (const Json& e : j["traceEvents"]) EXPECT_EQ(e["ph"], "M") << e.dump();
}

TEST(Trace, ThreadsGetNamedTracksWithTheirSpansAndCounters) {
  trace::start("test run");
  trace::set_thread_name("main (consumer)");
  const int64_t t0 = trace::now_ns();
  trace::complete("stage", trace::name("#1 map"), t0, 2000, {"rows", 16}, {"own_us", 1.5});
  trace::complete("stage", "#0 range", t0, 500, "\"note\": \"text args\"");
  std::thread worker([] {
    trace::set_thread_name("pool worker 0");
    trace::complete("task", "#1 map task", trace::now_ns(), 1500);
    trace::counter("#2 prefetch queue", trace::now_ns(), 3);
  });
  worker.join();
  trace::instant("autotune", "#1 map parallel 4 -> 5", trace::now_ns(), "\"reason\": " + trace::quote("a \"quoted\"\nline"));
  const Json j = recorded();
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  const auto names = thread_names(j);
  std::set<std::string> tracks;
  for (const auto& [tid, name] : names) tracks.insert(name);
  EXPECT_TRUE(tracks.count("main (consumer)"));
  EXPECT_TRUE(tracks.count("pool worker 0"));
  bool map_span = false, task_span = false, counter = false, instant = false;
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "#1 map") {
      map_span = true;
      EXPECT_EQ(names.at(e["tid"].get<int>()), "main (consumer)");
      EXPECT_EQ(e["cat"], "stage");
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.0);  // microseconds
      EXPECT_GE(e["ts"].get<double>(), 0.0);
      EXPECT_EQ(e["args"]["rows"], 16);
      EXPECT_DOUBLE_EQ(e["args"]["own_us"].get<double>(), 1.5);
    }
    if (e["ph"] == "X" && e["name"] == "#0 range") EXPECT_EQ(e["args"]["note"], "text args");
    if (e["ph"] == "X" && e["name"] == "#1 map task") {
      task_span = true;
      EXPECT_EQ(names.at(e["tid"].get<int>()), "pool worker 0");
    }
    if (e["ph"] == "C") {
      counter = true;
      EXPECT_EQ(e["name"], "#2 prefetch queue");
      EXPECT_EQ(e["args"]["value"], 3);
    }
    if (e["ph"] == "i") {
      instant = true;
      EXPECT_EQ(e["args"]["reason"], "a \"quoted\"\nline");
    }
  }
  EXPECT_TRUE(map_span && task_span && counter && instant);
}

TEST(Trace, TracksThatAreNotThreadsGetAProcessRowOfTheirOwn) {
  trace::start();
  const int copies = trace::track("GPU", "copies host to device");
  const int kernels = trace::track("GPU", "kernels");
  EXPECT_EQ(trace::track("GPU", "kernels"), kernels);
  trace::complete_on(copies, "gpu", trace::name("copy in"), trace::now_ns(), 100, {"rows", 8});
  trace::complete_on(kernels, "gpu", trace::name("kernel"), trace::now_ns(), 300);
  const Json j = recorded();
  int gpu_pid = -1;
  std::set<std::string> gpu_tracks;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "GPU") gpu_pid = e["pid"];
  ASSERT_GT(gpu_pid, 1);
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == gpu_pid) gpu_tracks.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(gpu_tracks, (std::set<std::string>{"copies host to device", "kernels"}));
  int spans = 0;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == gpu_pid) ++spans;
  EXPECT_EQ(spans, 2);
}

TEST(Trace, TrainingStepsAddUpPhasesWithOrWithoutATrace) {
  trace::reset_step_totals();
  for (int step = 0; step < 3; ++step) {
    trace::StepTimer t(step);
    { auto p = t.phase(trace::StepPhase::InputWait); }
    { auto p = t.phase(trace::StepPhase::Forward); }
  }
  const trace::StepTotals totals = trace::step_totals();
  EXPECT_EQ(totals.steps, 3);
  EXPECT_GE(totals.step_seconds, totals.phase(trace::StepPhase::InputWait) + totals.phase(trace::StepPhase::Forward));
  EXPECT_STREQ(trace::phase_name(trace::StepPhase::AllReduce), "all-reduce");
}

}  // namespace
}  // namespace pipec
