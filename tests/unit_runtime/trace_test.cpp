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
  trace::instant("autotune", "#1 map parallel 4 -> 5", trace::now_ns(),
                 "\"reason\": " + trace::quote("a \"quoted\"\nline"));
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
    if (e["ph"] == "X" && e["name"] == "#0 range") {
      EXPECT_EQ(e["args"]["note"], "text args");
    }
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
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == gpu_pid)
      gpu_tracks.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(gpu_tracks, (std::set<std::string>{"copies host to device", "kernels"}));
  int spans = 0;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == gpu_pid) ++spans;
  EXPECT_EQ(spans, 2);
}

TEST(Trace, TrainingStepsAreSpansWithTheirPhasesNestedInThem) {
  trace::start("train");
  for (int step = 1; step <= 3; ++step) {
    trace::StepTimer t(step);
    { auto p = t.phase(trace::StepPhase::InputWait); }
    { auto p = t.phase(trace::StepPhase::Forward); }
    const int64_t b = trace::now_ns();
    trace::phase_span(trace::StepPhase::Backward, b, 1000);
    trace::phase_span(trace::StepPhase::Optimizer, b + 1000, 500);
  }
  const Json j = recorded();
  std::vector<double> steps;
  std::map<std::string, int> phases;
  double first_step_start = -1, first_step_end = -1;
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "train") continue;
    if (e["name"] == "step") {
      steps.push_back(e["args"]["step"].get<double>());
      if (first_step_start < 0) {
        first_step_start = e["ts"].get<double>();
        first_step_end = first_step_start + e["dur"].get<double>();
      }
    } else {
      ++phases[e["name"].get<std::string>()];
    }
  }
  EXPECT_EQ(steps, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(phases, (std::map<std::string, int>{{"input wait", 3}, {"forward", 3}, {"backward", 3}, {"optimizer", 3}}));
  // Each step's phases lie inside its span (the first step's input wait starts with it).
  bool found = false;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "input wait" && !found) {
      found = true;
      EXPECT_GE(e["ts"].get<double>(), first_step_start);
      EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), first_step_end);
    }
  EXPECT_STREQ(trace::phase_name(trace::StepPhase::AllReduce), "all-reduce");
  EXPECT_STREQ(trace::phase_name(trace::StepPhase::Loss), "loss");
}

TEST(Trace, TrainingStepsRecordNothingWithoutATrace) {
  trace::start();
  trace::stop();
  {
    trace::StepTimer t(1);
    auto p = t.phase(trace::StepPhase::Forward);
    trace::phase_span(trace::StepPhase::Backward, trace::now_ns(), 10);
  }
  // Held in a variable: a range-for over a member of a temporary reads it after it is destroyed.
  const Json events = recorded();
  for (const Json& e : events["traceEvents"]) EXPECT_NE(e["ph"], "X");
}

}  // namespace
}  // namespace pipec
