// The in-process communicator: every collective's result against a serial computation, in rank order,
// bit for bit; and the failures a collective must turn into an error instead of a hang: a replica that
// never arrives (the watchdog names it), one that aborts (its message reaches the others), and
// replicas that call different collectives.
#include "runtime/dist/thread_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

namespace pipec {

namespace {

// Runs body(communicator) on one thread per replica; returns each replica's error message ("" if none).
std::vector<std::string> run_replicas(std::vector<std::unique_ptr<Communicator>>& comms,
                                      const std::function<void(Communicator&)>& body) {
  std::vector<std::string> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        body(*comms[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(ThreadCommunicator, AllReduceSumsEveryElementInRankOrderOnEveryReplica) {
  for (int ranks : {1, 2, 3, 4}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}, size_t{4099}}) {
      auto comms = make_thread_communicators(ranks);
      std::vector<std::vector<float>> buffers;
      for (int r = 0; r < ranks; ++r) buffers.push_back(random_floats(n, 17u * r + static_cast<uint32_t>(n)));
      // The serial sum, ((x0 + x1) + x2) + x3: floats are not associative, so the order is the contract.
      std::vector<float> expected = buffers[0];
      for (int r = 1; r < ranks; ++r)
        for (size_t i = 0; i < n; ++i) expected[i] += buffers[r][i];
      auto errors = run_replicas(comms, [&](Communicator& c) {
        c.all_reduce(buffers[c.rank()].data(), n, "test");
        c.all_reduce(buffers[c.rank()].data(), 0, "empty");
      });
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(errors[r], "");
        EXPECT_TRUE(same_bits(buffers[r], expected)) << ranks << " ranks, " << n << " elements, replica " << r;
      }
    }
  }
}

TEST(ThreadCommunicator, AllGatherBroadcastGatherAndBarrier) {
  auto comms = make_thread_communicators(3);
  std::vector<std::vector<double>> gathered(3);
  std::vector<std::string> received(3), broadcast_text(3);
  std::vector<std::vector<std::string>> gathered_bytes(3);
  std::vector<std::string> scattered(3);
  auto errors = run_replicas(comms, [&](Communicator& c) {
    const double mine[2] = {static_cast<double>(c.rank()), 10.0 * c.rank()};
    gathered[c.rank()] = c.all_gather(mine, 2, "facts");
    char word[6] = {0};
    if (c.rank() == 1) std::strcpy(word, "hello");
    c.broadcast(word, sizeof word, 1, "word");
    received[c.rank()] = word;
    broadcast_text[c.rank()] = broadcast_string(c, c.rank() == 2 ? std::string(1000, 'x') : "", 2, "text");
    gathered_bytes[c.rank()] = c.gather(std::string(c.rank(), 'a' + c.rank()), 0, "states");
    // Only the root's parts are read: the others pass none.
    const std::vector<std::string> parts =
        c.rank() == 1 ? std::vector<std::string>{"zero", "", std::string(5000, 'z')} : std::vector<std::string>{};
    scattered[c.rank()] = c.scatter(parts, 1, "positions");
    c.barrier("end");
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(gathered[r], (std::vector<double>{0, 0, 1, 10, 2, 20}));
    EXPECT_EQ(received[r], "hello");
    EXPECT_EQ(broadcast_text[r], std::string(1000, 'x'));
  }
  EXPECT_EQ(gathered_bytes[0], (std::vector<std::string>{"", "b", "cc"}));
  EXPECT_EQ(scattered, (std::vector<std::string>{"zero", "", std::string(5000, 'z')}));
  EXPECT_TRUE(gathered_bytes[1].empty());
}

TEST(ThreadCommunicator, WatchdogNamesTheReplicaThatNeverArrives) {
  CollectiveOptions o;
  o.timeout_seconds = 0.2;
  auto comms = make_thread_communicators(3, o);
  const auto start = std::chrono::steady_clock::now();
  auto errors = run_replicas(comms, [&](Communicator& c) {
    if (c.rank() == 2) return;  // stopped answering
    float x = 1;
    c.all_reduce(&x, 1, "gradient bucket 1 of 2, step 7");
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  for (int r : {0, 1}) {
    EXPECT_NE(errors[r].find("gradient bucket 1 of 2, step 7 did not complete within 0.2 s"), std::string::npos)
        << errors[r];
    EXPECT_NE(errors[r].find("replica 2 did not take part"), std::string::npos) << errors[r];
  }
}

TEST(ThreadCommunicator, AbortReachesTheOthersWithTheFailingReplicasMessage) {
  auto comms = make_thread_communicators(3);
  auto errors = run_replicas(comms, [&](Communicator& c) {
    if (c.rank() == 1) {
      c.abort("step 4: field `board` is NaN");
      return;
    }
    float x = 1;
    for (int i = 0; i < 3; ++i) c.all_reduce(&x, 1, "bucket");
  });
  for (int r : {0, 2}) EXPECT_NE(errors[r].find("replica 1 failed: step 4: field `board` is NaN"), std::string::npos);
  EXPECT_EQ(errors[1], "");
}

TEST(ThreadCommunicator, ReplicasCallingDifferentCollectivesFailInsteadOfReadingOutOfBounds) {
  auto comms = make_thread_communicators(2);
  auto errors = run_replicas(comms, [&](Communicator& c) {
    std::vector<float> v(4 + c.rank());
    c.all_reduce(v.data(), v.size(), "bucket 0");
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("replica 1 called all_reduce of 5"), std::string::npos) << e;
}

}  // namespace pipec
