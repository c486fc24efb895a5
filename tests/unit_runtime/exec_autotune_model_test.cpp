// The autotuner's model (runtime/exec/autotune_model.h) on pipelines described by hand: what the hill
// climb picks and why, what it names as the bottleneck, and that the memory room bounds it.
#include "runtime/exec/autotune_model.h"

#include <gtest/gtest.h>

#include <random>

namespace pipec {
namespace {

// source -> map -> prefetch, the source and the map on the prefetch's thread (segment 1), the consumer
// on segment 0. Costs in ns per output element.
ModelInput source_map_prefetch(double source_ns, double map_task_ns, double consumer_ns, int threads, double cores) {
  ModelInput in;
  in.segments = 2;
  in.threads = threads;
  in.cores = cores;
  in.consumer_ns = consumer_ns;
  in.room_bytes = 1e12;
  ModelStage src;
  src.stage = 0;
  src.label = "#0 range";
  src.sync_ns = source_ns;
  src.segment = 1;
  ModelStage map;
  map.stage = 1;
  map.label = "#1 map";
  map.role = ModelStage::Role::Map;
  map.task_ns = map_task_ns;
  map.segment = 1;
  map.knob = 0;
  map.value = 4;
  map.item_bytes = 1e6;
  map.upstream = {0};
  ModelStage pf;
  pf.stage = 2;
  pf.label = "#2 prefetch";
  pf.role = ModelStage::Role::Prefetch;
  pf.segment = 0;
  pf.input_segment = 1;
  pf.knob = 1;
  pf.value = 4;
  pf.item_bytes = 1e6;
  pf.upstream = {0, 1};
  in.stages = {src, map, pf};
  return in;
}

const std::vector<KnobRange> kRanges = {{1, 16}, {1, 64}};

TEST(AutotuneModel, AnExpensiveMapGetsEveryThread) {
  const ModelInput in = source_map_prefetch(10, 1000, 0, 4, 4);
  const Choice c = hill_climb(in, kRanges);
  EXPECT_GE(c.values[0], 4);
  // Four threads on a map of 1 us per element, one core's worth of other work: close to 4 per us.
  EXPECT_GT(c.rate, 0.9 * 4e6);
  EXPECT_NE(c.reasons[0].find("4 of 4 threads work on it"), std::string::npos) << c.reasons[0];
}

TEST(AutotuneModel, OneThreadGainsNothingFromChunksInFlight) {
  const ModelInput in = source_map_prefetch(10, 1000, 0, 1, 1);
  const Choice c = hill_climb(in, kRanges);
  EXPECT_LE(c.values[0], 2);
  EXPECT_LE(c.values[1], 2);
  // With the values in use far above that, the climb gives the useless memory back.
  const Choice from_high = hill_climb(in, kRanges, {16, 64});
  EXPECT_LE(from_high.values[0], 2);
  EXPECT_LE(from_high.values[1], 2);
}

// The chess pipeline on a loaded machine: the source's side 97 us a batch, the map's tasks 54 us, one
// worker, and the run got 1.4 of its 2 cores. The map's tasks stay on the worker: 0.4 of a core more
// is a 40% higher CPU bound than running them on the source's thread. Rounded to 1 core, the climb
// gave them back, then took them up again once one busy thread got its core (the run flapped every
// decision); with exactly 1 core there is nothing to gain.
TEST(AutotuneModel, AFractionOfACoreStillPaysForAMapOnTheWorkers) {
  const std::vector<KnobRange> ranges = {{1, 4}, {1, 64, 4}};
  const ModelInput loaded = source_map_prefetch(97e3, 54e3, 0, 1, 1.4);
  EXPECT_GE(hill_climb(loaded, ranges, {1, 4}).values[0], 2) << "from the map on the source's thread";
  EXPECT_GE(hill_climb(loaded, ranges, {4, 4}).values[0], 2) << "from the map on the worker";
  const ModelInput one = source_map_prefetch(97e3, 54e3, 0, 1, 1);
  EXPECT_EQ(hill_climb(one, ranges, {4, 4}).values[0], 1);
}

// A prefetch's depth is given back down to its `keep` when it buys nothing, and below it only for
// the memory budget.
TEST(AutotuneModel, APrefetchKeepsItsStartingDepthUnlessMemoryIsShort) {
  ModelInput in = source_map_prefetch(10, 1000, 0, 1, 1);
  const std::vector<KnobRange> ranges = {{1, 16}, {1, 64, 4}};
  EXPECT_EQ(hill_climb(in, ranges, {4, 64}).values[1], 4);
  in.room_bytes = 1.5e6;  // the map's first item is fixed; one more item in all
  const Choice tight = hill_climb(in, ranges, {4, 64});
  EXPECT_LE(optional_bytes(in, tight.values), in.room_bytes);
  EXPECT_LE(tight.values[1], 2);
}

TEST(AutotuneModel, TheMemoryRoomBoundsTheChoiceAndTheReasonSaysSo) {
  ModelInput in = source_map_prefetch(10, 1000, 0, 8, 8);
  in.room_bytes = 2.5e6;  // two and a half more items of 1 MB
  const Choice c = hill_climb(in, kRanges, {16, 64});
  EXPECT_LE(optional_bytes(in, c.values), in.room_bytes);
  EXPECT_EQ(c.values[0], 3);  // the map wants 8 and gets its first item and two more
  EXPECT_NE(c.reasons[0].find("does not fit in what the memory budget leaves"), std::string::npos) << c.reasons[0];
}

TEST(AutotuneModel, PrefetchDepthGrowsWhenBothSidesRunAtTheSameRate) {
  // Producer and consumer both 1 us per element, with cores to spare: a deeper buffer smooths them.
  const ModelInput even = source_map_prefetch(500, 500, 1000, 4, 4);
  const Choice c = hill_climb(even, kRanges);
  EXPECT_GE(c.values[1], 4);
  EXPECT_GT(modelled_rate(even, c.values), modelled_rate(even, {c.values[0], 1}) * 1.1);
  // A producer 100 times slower than its consumer: one chunk ahead is all a buffer can do.
  const ModelInput slow = source_map_prefetch(100000, 1000, 1000, 4, 4);
  EXPECT_LE(hill_climb(slow, kRanges).values[1], 2);
}

// From 2 chunks in flight on (from 1 to 2 the map moves from the thread that pulls from it to the
// pool, which one core may not repay: the hand-off costs a buffer), and for every prefetch depth.
TEST(AutotuneModel, MoreParallelismNeverLowersThePredictedRate) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> cost(1, 5000);
  for (int trial = 0; trial < 200; ++trial) {
    const int threads = 1 + trial % 8;
    const ModelInput in = source_map_prefetch(cost(rng), cost(rng), cost(rng), threads, threads);
    for (int64_t depth : {1, 4, 16})
      for (int64_t p = 2; p < 16; ++p) {
        ASSERT_GE(modelled_rate(in, {p + 1, depth}) * (1 + 1e-9), modelled_rate(in, {p, depth})) << trial << " p=" << p;
        ASSERT_GE(modelled_rate(in, {p, depth + 1}) * (1 + 1e-9), modelled_rate(in, {p, depth}))
            << trial << " d=" << depth;
      }
  }
}

TEST(AutotuneModel, TheBottleneckIsTheStageThatBindsTheRate) {
  // The map runs on the prefetch's thread with the source (parallel = 1): that thread binds, and the
  // map is the larger part of it.
  {
    const ModelInput in = source_map_prefetch(200, 800, 0, 4, 4);
    const Bottleneck b = find_bottleneck(in, {1, 4});
    EXPECT_EQ(b.kind, Bottleneck::Kind::Segment);
    EXPECT_EQ(b.stage, 1);
    EXPECT_NEAR(b.share, 0.8, 1e-9);
    EXPECT_EQ(b.why, "runs on the thread of #2 prefetch with #0 range");
  }
  // Four chunks in flight on 2 cores: the CPU binds, and the map does most of the work.
  {
    const ModelInput in = source_map_prefetch(100, 2000, 0, 4, 2);
    const Bottleneck b = find_bottleneck(in, {4, 4});
    EXPECT_EQ(b.kind, Bottleneck::Kind::Cpu);
    EXPECT_EQ(b.stage, 1);
    EXPECT_EQ(b.why, "the CPU: the pipeline keeps 2 cores busy");
  }
  // Two chunks in flight out of 8 threads: the map's window binds.
  {
    const ModelInput in = source_map_prefetch(10, 2000, 0, 8, 8);
    const Bottleneck b = find_bottleneck(in, {2, 4});
    EXPECT_EQ(b.kind, Bottleneck::Kind::Map);
    EXPECT_EQ(b.why, "2 chunks in flight keep 2 of 8 threads on it");
  }
  // A consumer slower than everything the pipeline does.
  {
    const ModelInput in = source_map_prefetch(10, 100, 5000, 4, 4);
    EXPECT_EQ(find_bottleneck(in, {4, 4}).kind, Bottleneck::Kind::Consumer);
  }
}

TEST(AutotuneModel, FilesReadAheadPayWhenReadingBindsTheThread) {
  // A source that reads 1 of its 4 files ahead; reading costs 3 us per element, parsing 1 us.
  ModelInput in;
  in.segments = 1;
  in.threads = 4;
  in.cores = 4;
  in.room_bytes = 1e12;
  ModelStage src;
  src.label = "#0 tfrecord";
  src.role = ModelStage::Role::Reader;
  src.cycle = 4;
  src.value = 1;
  src.knob = 0;
  src.item_bytes = 1.8e6;
  // Measured with one file of four read ahead: a quarter of the reading on the reader thread.
  src.task_ns = 0.25 * 3000;
  src.sync_ns = 1000 + 0.75 * 3000;
  in.stages = {src};
  const Choice c = hill_climb(in, {{0, 4}}, {1});
  EXPECT_EQ(c.values[0], 4);
  EXPECT_GT(c.rate, 2 * modelled_rate(in, {0}));
}

// The chess pipeline on 2 cores, per batch: the prefetch's thread reads, parses and shuffles in 85 us,
// the map's task takes 55 us. One worker keeps up with that thread; a second would only share a core
// with it, so it is given back, and the parameters are then climbed for one worker.
TEST(AutotuneModel, AWorkerThatAddsNoCapacityIsGivenBack) {
  const ModelInput in = source_map_prefetch(85000, 55000, 0, 2, 2);
  const WorkersChoice w = choose_workers(in, kRanges, 2);
  EXPECT_EQ(w.workers, 1);
  EXPECT_NEAR(w.capacity, 1e9 / 85000, 1e-6);
  EXPECT_EQ(w.reason, "1 of 2 take its tasks; one more would add 0.0% to what the pipeline can make");
  // From one worker it stays at one.
  EXPECT_EQ(choose_workers(in, kRanges, 1).workers, 1);
}

// The map's window is held to what its workers take: the climb's M/M/1/K bound would widen the
// window of one worker past 4 (each step gains over 1% for tasks of random length), holding results
// that the caches hold too.
TEST(AutotuneModel, AMapsWindowIsHeldToItsWorkers) {
  ModelInput in = source_map_prefetch(85000, 55000, 0, 1, 2);
  const std::vector<KnobRange> ranges = {{1, 8}, {1, 64, 4}};
  EXPECT_GT(hill_climb(in, ranges, {4, 4}).values[0], 4);
  const std::vector<KnobRange> held = ranges_for_workers(in, ranges, 1);
  EXPECT_EQ(held[0].max, kMapWindowPerWorker);
  EXPECT_EQ(held[1].max, 64);  // a prefetch's depth is not a map's window
  const Choice c = hill_climb(in, held, {4, 4});
  EXPECT_GE(c.values[0], 2);  // the map runs on its worker, not on the thread that pulls from it
  EXPECT_LE(c.values[0], kMapWindowPerWorker);
  EXPECT_EQ(ranges_for_workers(in, ranges, 2)[0].max, 8);
  // Never outside the map's own range.
  EXPECT_EQ(ranges_for_workers(in, {{1, 2}, {1, 64}}, 4)[0].max, 2);
  EXPECT_EQ(ranges_for_workers(in, {{6, 8}, {1, 64}}, 1)[0].max, 6);
}

TEST(AutotuneModel, AMapThatBindsGetsTheWorkersItNeeds) {
  // 1 ms per element of map on 4 cores, next to a thread that makes 100 elements per ms: every worker
  // (that thread, with next to nothing of its own, does not count as one: the next test but one).
  const ModelInput in = source_map_prefetch(10, 1e6, 0, 4, 4);
  const WorkersChoice w = choose_workers(in, kRanges, 1);
  EXPECT_EQ(w.workers, 4);
  EXPECT_EQ(w.reason, "all 4 take its tasks");
  // A map of 2.5 us next to a thread of 1 us: three workers (2.5 / 3 < 1); the fourth adds nothing.
  const ModelInput three = source_map_prefetch(1000, 2500, 0, 4, 4);
  EXPECT_EQ(choose_workers(three, kRanges, 1).workers, 3);
  EXPECT_EQ(choose_workers(three, kRanges, 4).workers, 3);
  // The map can only use the workers its window allows: the capacity is judged at the window's most.
  EXPECT_EQ(choose_workers(in, {{1, 2}, {1, 64}}, 4).workers, 2);
}

// A worker that adds less than kMinGain is not taken, and one that loses more than half of it is not
// given back: the count does not flap between measurements that differ by a little.
TEST(AutotuneModel, TheWorkerCountDoesNotFlap) {
  // The second worker lifts the map's bound of 1 / 1008 ns to the thread's 1 / 1000 ns: 0.8%. (At most
  // 2 in flight, so the thread that pulls from the map does not help: the next test.)
  const ModelInput in = source_map_prefetch(1000, 1008, 0, 2, 4);
  const std::vector<KnobRange> two = {{1, 2}, {1, 64}};
  EXPECT_EQ(choose_workers(in, two, 1).workers, 1);
  EXPECT_EQ(choose_workers(in, two, 2).workers, 2);
}

// The thread that pulls from a map runs its spare tasks while it waits (ThreadPool::wait_helping), when
// more are in flight than twice the workers: its time left from its own stages counts as a worker's,
// while those stages are at least a worker's share of the tasks.
TEST(AutotuneModel, TheThreadThatPullsFromAMapHelpsItsWorkers) {
  // Chess on 2 cores, per element: 39 us of the source's thread's own stages, 49 us of map tasks. One
  // worker and that thread make as much as the two cores can; a second worker only shares a core.
  const ModelInput in = source_map_prefetch(39000, 49000, 0, 2, 2);
  EXPECT_EQ(choose_workers(in, kRanges, 2).workers, 1);
  EXPECT_EQ(choose_workers(in, kRanges, 1).workers, 1);
  // With at most 2 in flight the thread never helps: the map alone binds at 1 / 49 us, and the second
  // worker is taken.
  EXPECT_EQ(choose_workers(in, {{1, 2}, {1, 64}}, 1).workers, 2);
  // With one worker and plenty of cores, the map's bound is (1 + 1) / (49 + 39) us with 4 in flight
  // (the thread helps) against 1 / 49 us with 2: the modelled rate is that much higher.
  ModelInput one = in;
  one.threads = 1;
  one.cores = 8;
  EXPECT_GT(modelled_rate(one, {4, 4}), 1.2 * modelled_rate(one, {2, 4}));
  // A thread with next to nothing of its own (the seg benchmark: 43 ms tasks) does not count: two
  // workers on 2 cores.
  const ModelInput light = source_map_prefetch(10, 43e6, 0, 2, 2);
  EXPECT_EQ(choose_workers(light, kRanges, 1).workers, 2);
  EXPECT_EQ(choose_workers(light, kRanges, 2).workers, 2);
}

TEST(AutotuneModel, KnobFlagNamesRoundTrip) {
  for (KnobKind k : kKnobKinds) {
    KnobKind back;
    ASSERT_TRUE(knob_kind_from_flag(knob_flag_name(k), &back));
    EXPECT_EQ(back, k);
  }
  KnobKind unused;
  EXPECT_FALSE(knob_kind_from_flag("size", &unused));
}

}  // namespace
}  // namespace pipec
