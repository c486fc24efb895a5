#include "runtime/dist/mpi_communicator.h"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace pipec {

namespace fs = std::filesystem;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 && x < (1L << 30) ? static_cast<int>(x) : fallback;
}

const PipecMpiApi* open_plugin(std::string& why) {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("PIPEC_MPI_LIBRARY"); p && *p) candidates.push_back(p);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    for (const fs::path& p : {dir / "libpipec_mpi.so", dir / "lib" / "libpipec_mpi.so",
                              dir.parent_path() / "lib" / "pipec" / "libpipec_mpi.so"})
      if (fs::exists(p, ec)) candidates.push_back(p.string());
  }
  candidates.push_back("libpipec_mpi.so");
  std::string tried;
  for (const std::string& c : candidates) {
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char* e = dlerror();
      tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", c, e ? e : "not opened");
      continue;
    }
    auto fn = reinterpret_cast<PipecMpiApiFn>(dlsym(h, "pipec_mpi_api"));
    const PipecMpiApi* api = fn ? fn() : nullptr;
    if (!api) {
      tried += fmt::format("{}{}: no pipec_mpi_api", tried.empty() ? "" : "; ", c);
      continue;
    }
    if (api->abi_version != PIPEC_MPI_ABI_VERSION) {
      tried += fmt::format("{}{}: interface version {}, this pipec needs {}", tried.empty() ? "" : "; ", c,
                           api->abi_version, PIPEC_MPI_ABI_VERSION);
      continue;
    }
    return api;
  }
  why = "libpipec_mpi.so (built with pipec when Open MPI's libopenmpi-dev is installed) could not be opened: " + tried;
  return nullptr;
}

// Messages of one collective go in pieces below 2^31 bytes (MPI counts are ints).
constexpr size_t kMaxMessage = size_t{1} << 30;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const PipecMpiApi& api, const CollectiveOptions& o) : api_(api), options_(o) {
    if (int rc = api_.init(&rank_, &size_); rc != 0)
      throw CollectiveError("MPI could not start (MPI_Init_thread): " + error_text(rc));
    char version[256] = {0};
    if (api_.library_version(version, sizeof version) == 0) version_ = version;
    tags_ = std::max(api_.tag_upper_bound(), 32767) + 1;
  }
  ~MpiCommunicator() override {
    if (!aborted_) api_.finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return fmt::format("{}, {} rank{}, reduction in {}", version_.empty() ? "MPI" : version_, size_,
                       size_ == 1 ? "" : "s",
                       options_.order == ReductionOrder::Ranks ? "rank order" : "MPI's own order (MPI_Allreduce)");
  }

  void all_reduce(float* data, size_t n, std::string_view what) override {
    std::lock_guard<std::mutex> lock(m_);
    if (size_ == 1 || n == 0) return;
    if (options_.order == ReductionOrder::Library) return library_all_reduce(data, n, what);
    const int tag = next_tag();
    // Reduce-scatter: rank k receives slice k of every other rank's buffer.
    auto slice = [&](int k) { return std::pair<size_t, size_t>{n * k / size_, n * (k + 1) / size_}; };
    const auto [begin, end] = slice(rank_);
    const size_t mine = end - begin;
    scratch_.resize(mine * size_);
    std::vector<Pending> pending;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      const auto [b, e] = slice(p);
      post_send(pending, data + b, (e - b) * sizeof(float), p, tag);
      post_recv(pending, scratch_.data() + mine * p, mine * sizeof(float), p, tag);
    }
    wait(pending, what);
    // The sums in rank order, this rank's own slice at its place in the order.
    for (size_t i = 0; i < mine; ++i) {
      float s = rank_ == 0 ? data[begin + i] : scratch_[i];
      for (int r = 1; r < size_; ++r) s += r == rank_ ? data[begin + i] : scratch_[mine * r + i];
      data[begin + i] = s;
    }
    // All-gather of the sums.
    const int tag2 = next_tag();
    pending.clear();
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      const auto [b, e] = slice(p);
      post_send(pending, data + begin, mine * sizeof(float), p, tag2);
      post_recv(pending, data + b, (e - b) * sizeof(float), p, tag2);
    }
    wait(pending, what);
  }

  std::vector<double> all_gather(const double* mine, size_t n, std::string_view what) override {
    std::lock_guard<std::mutex> lock(m_);
    std::vector<double> out(n * size_);
    std::copy_n(mine, n, out.data() + n * rank_);
    if (size_ == 1) return out;
    const int tag = next_tag();
    std::vector<Pending> pending;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      post_send(pending, mine, n * sizeof(double), p, tag);
      post_recv(pending, out.data() + n * p, n * sizeof(double), p, tag);
    }
    wait(pending, what);
    return out;
  }

  void broadcast(void* data, size_t bytes, int root, std::string_view what) override {
    std::lock_guard<std::mutex> lock(m_);
    check_root(root, what);
    if (size_ == 1 || bytes == 0) return;
    const int tag = next_tag();
    std::vector<Pending> pending;
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p)
        if (p != root) post_send(pending, data, bytes, p, tag);
    } else {
      post_recv(pending, data, bytes, root, tag);
    }
    wait(pending, what);
  }

  std::vector<std::string> gather(const std::string& mine, int root, std::string_view what) override {
    std::lock_guard<std::mutex> lock(m_);
    check_root(root, what);
    std::vector<std::string> out;
    if (rank_ == root) {
      out.resize(size_);
      out[rank_] = mine;
    }
    if (size_ == 1) return out;
    const int tag = next_tag();
    std::vector<Pending> pending;
    // The sizes first, then the bytes.
    uint64_t my_size = mine.size();
    std::vector<uint64_t> sizes(size_, 0);
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p)
        if (p != root) post_recv(pending, &sizes[p], sizeof(uint64_t), p, tag);
    } else {
      post_send(pending, &my_size, sizeof my_size, root, tag);
    }
    wait(pending, what);
    pending.clear();
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p)
        if (p != root) {
          out[p].resize(sizes[p]);
          post_recv(pending, out[p].data(), sizes[p], p, tag);
        }
    } else {
      post_send(pending, mine.data(), mine.size(), root, tag);
    }
    wait(pending, what);
    return out;
  }

  std::string scatter(const std::vector<std::string>& parts, int root, std::string_view what) override {
    std::lock_guard<std::mutex> lock(m_);
    check_root(root, what);
    if (rank_ == root && parts.size() != static_cast<size_t>(size_))
      throw std::logic_error(fmt::format("{}: {} parts to scatter over {} ranks", what, parts.size(), size_));
    if (size_ == 1) return parts.at(0);
    const int tag = next_tag();
    std::vector<Pending> pending;
    // The sizes first, then the bytes (gather's protocol, the other way).
    std::vector<uint64_t> sizes(size_, 0);
    uint64_t my_size = 0;
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p) {
        sizes[p] = parts[p].size();
        if (p != root) post_send(pending, &sizes[p], sizeof(uint64_t), p, tag);
      }
    } else {
      post_recv(pending, &my_size, sizeof my_size, root, tag);
    }
    wait(pending, what);
    pending.clear();
    std::string out;
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p)
        if (p != root) post_send(pending, parts[p].data(), parts[p].size(), p, tag);
      out = parts[rank_];
    } else {
      out.resize(my_size);
      post_recv(pending, out.data(), my_size, root, tag);
    }
    wait(pending, what);
    return out;
  }

  void barrier(std::string_view what) override {
    const double zero = 0;
    all_gather(&zero, 1, what);
  }

  void abort(const std::string&) override {
    aborted_ = true;
    api_.abort(1);
  }

 private:
  struct Pending {
    void* request = nullptr;
    int peer = -1;
    bool done = false;
  };

  std::string error_text(int rc) const {
    char text[512] = {0};
    api_.error_string(rc, text, sizeof text);
    return fmt::format("{} (MPI error {})", text, rc);
  }

  void check_root(int root, std::string_view what) const {
    if (root < 0 || root >= size_)
      throw std::logic_error(fmt::format("{}: root {} is not a rank of {}", what, root, size_));
  }

  int next_tag() { return static_cast<int>(sequence_++ % static_cast<uint64_t>(tags_)); }

  void post_send(std::vector<Pending>& pending, const void* data, size_t bytes, int peer, int tag) {
    for (size_t at = 0; at < bytes || (bytes == 0 && at == 0); at += kMaxMessage) {
      const size_t piece = std::min(kMaxMessage, bytes - at);
      Pending p{nullptr, peer, false};
      if (int rc = api_.isend(static_cast<const char*>(data) + at, static_cast<int32_t>(piece), peer, tag, &p.request);
          rc != 0)
        throw CollectiveError(fmt::format("MPI_Isend to rank {} failed: {}", peer, error_text(rc)), peer);
      pending.push_back(p);
      if (bytes == 0) break;
    }
  }

  void post_recv(std::vector<Pending>& pending, void* data, size_t bytes, int peer, int tag) {
    for (size_t at = 0; at < bytes || (bytes == 0 && at == 0); at += kMaxMessage) {
      const size_t piece = std::min(kMaxMessage, bytes - at);
      Pending p{nullptr, peer, false};
      if (int rc = api_.irecv(static_cast<char*>(data) + at, static_cast<int32_t>(piece), peer, tag, &p.request);
          rc != 0)
        throw CollectiveError(fmt::format("MPI_Irecv from rank {} failed: {}", peer, error_text(rc)), peer);
      pending.push_back(p);
      if (bytes == 0) break;
    }
  }

  // Polls until every request completed. MPI progresses only inside its calls, so the first
  // microseconds spin; a long wait (a peer still computing) yields, then sleeps briefly, so that a
  // rank waiting for a slower one does not take a core from the compute. Past the timeout: the peers
  // whose messages did not complete are named.
  void wait(std::vector<Pending>& pending, std::string_view what) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(options_.timeout_seconds));
    for (int round = 0;; ++round) {
      bool all = true;
      for (Pending& p : pending) {
        if (p.done) continue;
        int done = 0;
        if (int rc = api_.test(p.request, &done); rc != 0)
          throw CollectiveError(
              fmt::format("{}: MPI_Test failed for a message with rank {}: {}", what, p.peer, error_text(rc)), p.peer);
        p.done = done != 0;
        all = all && p.done;
      }
      if (all) return;
      const auto now = clock::now();
      if (now > deadline) throw timeout(pending, what);
      if (round < 64) continue;
      if (now - start < std::chrono::milliseconds(2)) sched_yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  CollectiveError timeout(const std::vector<Pending>& pending, std::string_view what) const {
    std::vector<int> missing;
    for (const Pending& p : pending)
      if (!p.done && std::find(missing.begin(), missing.end(), p.peer) == missing.end()) missing.push_back(p.peer);
    std::sort(missing.begin(), missing.end());
    std::string names;
    for (int r : missing) names += fmt::format("{}{}", names.empty() ? "" : ", ", r);
    return CollectiveError(fmt::format("rank {}: {} did not complete within {:g} s: rank{} {} did not answer (stopped, "
                                       "hung, or unreachable)",
                                       rank_, what, options_.timeout_seconds, missing.size() == 1 ? "" : "s", names),
                           missing.empty() ? -1 : missing.front());
  }

  void library_all_reduce(float* data, size_t n, std::string_view what) {
    constexpr size_t kPiece = kMaxMessage / sizeof(float);
    for (size_t at = 0; at < n; at += kPiece) {
      Pending p{nullptr, -1, false};
      if (int rc = api_.iallreduce_sum_f32(data + at, static_cast<int32_t>(std::min(kPiece, n - at)), &p.request);
          rc != 0)
        throw CollectiveError(fmt::format("{}: MPI_Iallreduce failed: {}", what, error_text(rc)));
      std::vector<Pending> one{p};
      try {
        wait(one, what);
      } catch (const CollectiveError&) {
        throw CollectiveError(
            fmt::format("rank {}: {} did not complete within {:g} s: a rank did not take part (MPI's "
                        "own all-reduce cannot say which; --reduction ranks names it)",
                        rank_, what, options_.timeout_seconds));
      }
    }
  }

  const PipecMpiApi& api_;
  CollectiveOptions options_;
  int rank_ = 0, size_ = 1;
  int tags_ = 32768;
  std::string version_;
  std::mutex m_;
  uint64_t sequence_ = 0;
  std::vector<float> scratch_;
  bool aborted_ = false;
};

}  // namespace

MpiLaunch mpi_launch_from_environment() {
  MpiLaunch l;
  const int size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", -1));
  if (size < 1) return l;
  l.under_mpirun = true;
  l.size = size;
  l.rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMIX_RANK", env_int("PMI_RANK", 0)));
  return l;
}

const PipecMpiApi* mpi_plugin(std::string* why) {
  static std::once_flag once;
  static const PipecMpiApi* api = nullptr;
  static std::string reason;
  std::call_once(once, [] { api = open_plugin(reason); });
  if (!api && why) *why = reason;
  return api;
}

std::unique_ptr<Communicator> make_mpi_communicator(const PipecMpiApi& api, const CollectiveOptions& options) {
  return std::make_unique<MpiCommunicator>(api, options);
}

}  // namespace pipec
