// The MPI communicator's own logic (the rank-order reduce-scatter and all-gather, the small
// collectives, the watchdog) over a fake libpipec_mpi: an in-process "MPI" whose ranks are threads and
// whose messages go through a mailbox, so it runs in every build, sanitizers included. Its rank-order
// all_reduce is checked bit for bit against the thread communicator's on random data: the two
// implementations of one contract. The real plugin under mpirun: tests/dist (ctest dist_mpi_*).
#include "runtime/dist/mpi_communicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "runtime/dist/thread_communicator.h"

namespace pipec {

namespace {

// ---- the fake MPI: one world at a time, ranks are threads (thread_local rank) ------------------------
struct FakeRequest;
struct FakeWorld {
  ~FakeWorld();
  int size = 1;
  std::mutex m;
  std::map<std::tuple<int, int, int>, std::deque<std::string>> mailbox;  // (from, to, tag) -> messages
  std::map<uint64_t, std::vector<std::pair<float*, int32_t>>> allreduce_posted;
  std::map<uint64_t, std::vector<float>> allreduce_result;
  int iallreduce_calls = 0;
  std::vector<int> aborted;
  // Requests not completed yet: a communicator that gives up on a peer (the watchdog, abort) leaves
  // its requests pending, as it would with MPI, whose job then ends; the world frees them when it goes.
  std::set<FakeRequest*> pending;
};
FakeWorld* g_world = nullptr;
thread_local int t_rank = 0;
thread_local uint64_t t_allreduce_seq = 0;

struct FakeRequest {
  enum Kind { Send, Recv, AllReduce } kind;
  void* data;
  int32_t bytes;
  int peer, tag;
  uint64_t seq;
};
FakeWorld::~FakeWorld() {
  for (FakeRequest* r : pending) delete r;
}

// A new request, pending until fake_test finds it done.
void* new_request(FakeRequest r) {
  auto* p = new FakeRequest(r);
  std::lock_guard<std::mutex> l(g_world->m);
  g_world->pending.insert(p);
  return p;
}

int fake_init(int* rank, int* size) {
  *rank = t_rank;
  *size = g_world->size;
  return 0;
}
int fake_finalize() { return 0; }
void fake_abort(int) {
  std::lock_guard<std::mutex> l(g_world->m);
  g_world->aborted.push_back(t_rank);
}
int fake_version(char* out, int capacity) {
  std::snprintf(out, static_cast<size_t>(capacity), "Fake MPI");
  return 0;
}
int fake_error_string(int code, char* out, int capacity) {
  std::snprintf(out, static_cast<size_t>(capacity), "fake error %d", code);
  return 0;
}
int fake_isend(const void* data, int32_t bytes, int peer, int tag, void** request) {
  {
    std::lock_guard<std::mutex> l(g_world->m);
    g_world->mailbox[{t_rank, peer, tag}].emplace_back(static_cast<const char*>(data), static_cast<size_t>(bytes));
  }
  *request = new_request({FakeRequest::Send, nullptr, bytes, peer, tag, 0});
  return 0;
}
int fake_irecv(void* data, int32_t bytes, int peer, int tag, void** request) {
  *request = new_request({FakeRequest::Recv, data, bytes, peer, tag, 0});
  return 0;
}
int fake_iallreduce(float* data, int32_t n, void** request) {
  const uint64_t seq = t_allreduce_seq++;
  {
    std::lock_guard<std::mutex> l(g_world->m);
    ++g_world->iallreduce_calls;
    auto& posted = g_world->allreduce_posted[seq];
    posted.resize(g_world->size, {nullptr, 0});
    posted[t_rank] = {data, n};
  }
  *request = new_request({FakeRequest::AllReduce, data, n, -1, 0, seq});
  return 0;
}
int fake_test(void* request, int* done) {
  auto* r = static_cast<FakeRequest*>(request);
  std::lock_guard<std::mutex> l(g_world->m);
  *done = 0;
  if (r->kind == FakeRequest::Send) {
    *done = 1;
  } else if (r->kind == FakeRequest::Recv) {
    auto& q = g_world->mailbox[{r->peer, t_rank, r->tag}];
    if (q.empty()) return 0;
    if (q.front().size() != static_cast<size_t>(r->bytes)) return 99;  // a size mismatch is an MPI error
    if (r->bytes > 0) std::memcpy(r->data, q.front().data(), q.front().size());
    q.pop_front();
    *done = 1;
  } else {
    auto& posted = g_world->allreduce_posted[r->seq];
    for (auto& p : posted)
      if (!p.first) return 0;
    auto& result = g_world->allreduce_result[r->seq];
    if (result.empty()) {  // the "library's" order: reversed, unlike pipec's rank order
      result.assign(posted.back().first, posted.back().first + r->bytes);
      for (int k = g_world->size - 2; k >= 0; --k)
        for (int32_t i = 0; i < r->bytes; ++i) result[i] += posted[k].first[i];
    }
    std::memcpy(r->data, result.data(), result.size() * sizeof(float));
    *done = 1;
  }
  if (*done) {
    g_world->pending.erase(r);
    delete r;
  }
  return 0;
}
int fake_tag_ub() { return 32767; }

const PipecMpiApi kFake = {PIPEC_MPI_ABI_VERSION, fake_init,         fake_finalize, fake_abort,
                           fake_version,          fake_error_string, fake_isend,    fake_irecv,
                           fake_iallreduce,       fake_test,         fake_tag_ub};

// Runs body on `ranks` threads, each with its MPI communicator over the fake; returns the errors.
std::vector<std::string> run_ranks(FakeWorld& world, int ranks, const CollectiveOptions& o,
                                   const std::function<void(Communicator&)>& body) {
  world.size = ranks;
  g_world = &world;
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      t_rank = r;
      t_allreduce_seq = 0;
      try {
        auto c = make_mpi_communicator(kFake, o);
        EXPECT_EQ(c->rank(), r);
        EXPECT_EQ(c->size(), ranks);
        body(*c);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  g_world = nullptr;
  return errors;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The thread communicator's all_reduce of the same buffers: the reference.
std::vector<float> thread_all_reduce(std::vector<std::vector<float>> buffers) {
  auto comms = make_thread_communicators(static_cast<int>(buffers.size()));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < buffers.size(); ++r)
    threads.emplace_back([&, r] { comms[r]->all_reduce(buffers[r].data(), buffers[r].size(), "reference"); });
  for (auto& t : threads) t.join();
  return buffers[0];
}

}  // namespace

TEST(MpiCommunicator, RankOrderAllReduceGivesTheThreadCommunicatorsBits) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 24; ++trial) {
    const int ranks = 1 + trial % 4;
    const size_t n = trial % 3 == 0 ? rng() % 4 : rng() % 5000;
    std::vector<std::vector<float>> buffers;
    for (int r = 0; r < ranks; ++r) buffers.push_back(random_floats(n, static_cast<uint32_t>(trial * 31 + r)));
    const std::vector<float> expected = thread_all_reduce(buffers);
    FakeWorld world;
    auto errors = run_ranks(world, ranks, {}, [&](Communicator& c) {
      c.all_reduce(buffers[c.rank()].data(), n, "bucket");
      c.all_reduce(buffers[c.rank()].data(), n / 2, "half");  // a second one: tags keep them apart
    });
    // After the second: the first half summed again over the ranks (every rank holds `expected`).
    std::vector<float> twice = thread_all_reduce(std::vector<std::vector<float>>(ranks, expected));
    std::copy(expected.begin() + static_cast<long>(n / 2), expected.end(), twice.begin() + static_cast<long>(n / 2));
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(errors[r], "");
      EXPECT_EQ(std::memcmp(buffers[r].data(), twice.data(), n * sizeof(float)), 0)
          << ranks << " ranks, " << n << " elements, rank " << r;
    }
    EXPECT_EQ(world.iallreduce_calls, 0);
  }
}

TEST(MpiCommunicator, SmallCollectives) {
  FakeWorld world;
  std::vector<std::vector<double>> gathered(3);
  std::vector<std::string> text(3);
  std::vector<std::vector<std::string>> states(3);
  std::vector<std::string> positions(3);
  auto errors = run_ranks(world, 3, {}, [&](Communicator& c) {
    const double mine[1] = {1.5 * c.rank()};
    gathered[c.rank()] = c.all_gather(mine, 1, "agreement");
    text[c.rank()] = broadcast_string(c, c.rank() == 0 ? "the spec's fingerprint" : "", 0, "fingerprint");
    states[c.rank()] = c.gather(std::string(static_cast<size_t>(2 * c.rank()), 's'), 2, "iterator states");
    const std::vector<std::string> parts =
        c.rank() == 2 ? std::vector<std::string>{"", "p1", std::string(3000, 'q')} : std::vector<std::string>{};
    positions[c.rank()] = c.scatter(parts, 2, "input positions");
    c.barrier("end");
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(gathered[r], (std::vector<double>{0, 1.5, 3}));
    EXPECT_EQ(text[r], "the spec's fingerprint");
  }
  EXPECT_EQ(states[2], (std::vector<std::string>{"", "ss", "ssss"}));
  EXPECT_EQ(positions, (std::vector<std::string>{"", "p1", std::string(3000, 'q')}));
  EXPECT_TRUE(states[0].empty());
}

TEST(MpiCommunicator, LibraryOrderCallsMpiAllreduce) {
  FakeWorld world;
  CollectiveOptions o;
  o.order = ReductionOrder::Library;
  std::vector<std::vector<float>> buffers = {{1, 2}, {10, 20}, {100, 200}};
  auto errors = run_ranks(world, 3, o, [&](Communicator& c) { c.all_reduce(buffers[c.rank()].data(), 2, "b"); });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(buffers[r], (std::vector<float>{111, 222}));
  }
  EXPECT_EQ(world.iallreduce_calls, 3);
}

TEST(MpiCommunicator, WatchdogNamesTheRankThatDidNotAnswer) {
  FakeWorld world;
  CollectiveOptions o;
  o.timeout_seconds = 0.2;
  auto errors = run_ranks(world, 3, o, [&](Communicator& c) {
    if (c.rank() == 1) return;  // stopped
    std::vector<float> v(10, 1.0f);
    c.all_reduce(v.data(), v.size(), "gradient bucket 3 of 4, step 12");
  });
  for (int r : {0, 2}) {
    EXPECT_NE(errors[r].find("gradient bucket 3 of 4, step 12 did not complete within 0.2 s: rank 1 did not answer"),
              std::string::npos)
        << errors[r];
  }
  // MPI's own all-reduce cannot say who is missing, and says so.
  o.order = ReductionOrder::Library;
  FakeWorld world2;
  errors = run_ranks(world2, 2, o, [&](Communicator& c) {
    if (c.rank() == 1) return;
    float x = 1;
    c.all_reduce(&x, 1, "bucket 0");
  });
  EXPECT_NE(errors[0].find("cannot say which; --reduction ranks names it"), std::string::npos) << errors[0];
}

TEST(MpiCommunicator, AbortIsMpiAbort) {
  FakeWorld world;
  run_ranks(world, 2, {}, [&](Communicator& c) {
    if (c.rank() == 1) c.abort("disk full");
  });
  EXPECT_EQ(world.aborted, std::vector<int>{1});
}

TEST(MpiCommunicator, LaunchEnvironment) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_SIZE");
  EXPECT_FALSE(mpi_launch_from_environment().under_mpirun);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  MpiLaunch l = mpi_launch_from_environment();
  EXPECT_TRUE(l.under_mpirun);
  EXPECT_EQ(l.size, 4);
  EXPECT_EQ(l.rank, 3);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
}

}  // namespace pipec
