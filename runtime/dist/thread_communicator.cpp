#include "runtime/dist/thread_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

namespace pipec {

namespace {

// What a replica publishes at a collective's first barrier.
struct Published {
  const char* kind = nullptr;  // "all_reduce", "broadcast", ...: all replicas must call the same
  void* data = nullptr;
  size_t count = 0;  // elements or bytes: all replicas must agree (except gather's and scatter's strings)
  const std::string* text = nullptr;
  const std::vector<std::string>* parts = nullptr;  // scatter's, on the root
};

// The state the replicas of one group share.
class Rendezvous {
 public:
  Rendezvous(int n, CollectiveOptions o) : n_(n), options_(o), arrived_(n, false), published_(n) {}

  int size() const { return n_; }
  const CollectiveOptions& options() const { return options_; }
  const Published& published(int rank) const { return published_[rank]; }

  // Waits until every replica has arrived at this barrier; `p` (when given) is published first and
  // checked against the others' once all are there. Throws CollectiveError after an abort or timeout.
  void arrive(int rank, const Published* p, std::string_view what) {
    std::unique_lock<std::mutex> lock(m_);
    throw_if_aborted(rank);
    if (p) published_[rank] = *p;
    const uint64_t gen = generation_;
    arrived_[rank] = true;
    if (++count_ == n_) {
      count_ = 0;
      std::fill(arrived_.begin(), arrived_.end(), false);
      ++generation_;
      if (p) check_same_call(what);
      cv_.notify_all();
      throw_if_aborted(rank);
      return;
    }
    const auto timeout = std::chrono::duration<double>(options_.timeout_seconds);
    if (!cv_.wait_for(lock, timeout, [&] { return generation_ != gen || aborted_; })) {
      std::string missing;
      int first = -1;
      for (int r = 0; r < n_; ++r)
        if (!arrived_[r]) {
          missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
          if (first < 0) first = r;
        }
      abort_locked(first,
                   fmt::format("{} did not complete within {:g} s: replica{} {} did not take part", what,
                               options_.timeout_seconds, missing.find(',') == std::string::npos ? "" : "s", missing));
    }
    throw_if_aborted(rank);
  }

  void abort(int rank, const std::string& message) {
    std::lock_guard<std::mutex> lock(m_);
    if (!aborted_) abort_locked(rank, fmt::format("replica {} failed: {}", rank, message));
  }

 private:
  void abort_locked(int rank, std::string message) {
    aborted_ = true;
    abort_rank_ = rank;
    abort_message_ = std::move(message);
    cv_.notify_all();
  }

  void throw_if_aborted(int) const {
    if (aborted_) throw CollectiveError(abort_message_, abort_rank_);
  }

  // Every replica called the same collective with the same size (the last to arrive checks).
  void check_same_call(std::string_view what) {
    for (int r = 1; r < n_; ++r) {
      const Published &a = published_[0], &b = published_[r];
      if (std::strcmp(a.kind, b.kind) != 0 ||
          (a.count != b.count && std::strcmp(a.kind, "gather") != 0 && std::strcmp(a.kind, "scatter") != 0)) {
        abort_locked(r, fmt::format("{}: replica {} called {} of {} while replica 0 called {} of {}", what, r, b.kind,
                                    b.count, a.kind, a.count));
        return;
      }
    }
  }

  const int n_;
  const CollectiveOptions options_;
  std::mutex m_;
  std::condition_variable cv_;
  int count_ = 0;
  uint64_t generation_ = 0;
  std::vector<bool> arrived_;
  std::vector<Published> published_;
  bool aborted_ = false;
  int abort_rank_ = -1;
  std::string abort_message_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(int rank, std::shared_ptr<Rendezvous> group) : rank_(rank), group_(std::move(group)) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string description() const override {
    return fmt::format("{} in-process replica{} on threads", size(), size() == 1 ? "" : "s");
  }

  void all_reduce(float* data, size_t n, std::string_view what) override {
    const int ranks = size();
    if (ranks == 1) return;
    Published p{"all_reduce", data, n, nullptr, nullptr};
    group_->arrive(rank_, &p, what);
    // This replica's slice, summed in rank order (the same sum for both orders: in process there is no
    // library reduction to defer to) and written into every replica's buffer.
    const size_t begin = n * rank_ / ranks, end = n * (rank_ + 1) / ranks;
    std::vector<float*> buffers(ranks);
    for (int r = 0; r < ranks; ++r) buffers[r] = static_cast<float*>(group_->published(r).data);
    for (size_t i = begin; i < end; ++i) {
      float s = buffers[0][i];
      for (int r = 1; r < ranks; ++r) s += buffers[r][i];
      for (int r = 0; r < ranks; ++r) buffers[r][i] = s;
    }
    group_->arrive(rank_, nullptr, what);
  }

  std::vector<double> all_gather(const double* mine, size_t n, std::string_view what) override {
    std::vector<double> out(n * size());
    Published p{"all_gather", const_cast<double*>(mine), n, nullptr, nullptr};
    group_->arrive(rank_, &p, what);
    for (int r = 0; r < size(); ++r)
      std::copy_n(static_cast<const double*>(group_->published(r).data), n, out.data() + n * r);
    group_->arrive(rank_, nullptr, what);
    return out;
  }

  void broadcast(void* data, size_t bytes, int root, std::string_view what) override {
    check_root(root, what);
    Published p{"broadcast", data, bytes, nullptr, nullptr};
    group_->arrive(rank_, &p, what);
    if (rank_ != root && bytes > 0) std::memcpy(data, group_->published(root).data, bytes);
    group_->arrive(rank_, nullptr, what);
  }

  std::vector<std::string> gather(const std::string& mine, int root, std::string_view what) override {
    check_root(root, what);
    Published p{"gather", nullptr, mine.size(), &mine, nullptr};
    group_->arrive(rank_, &p, what);
    std::vector<std::string> out;
    if (rank_ == root)
      for (int r = 0; r < size(); ++r) out.push_back(*group_->published(r).text);
    group_->arrive(rank_, nullptr, what);
    return out;
  }

  std::string scatter(const std::vector<std::string>& parts, int root, std::string_view what) override {
    check_root(root, what);
    check_parts(parts, root, what);
    Published p{"scatter", nullptr, 0, nullptr, &parts};
    group_->arrive(rank_, &p, what);
    std::string out = group_->published(root).parts->at(static_cast<size_t>(rank_));
    group_->arrive(rank_, nullptr, what);
    return out;
  }

  void barrier(std::string_view what) override {
    Published p{"barrier", nullptr, 0, nullptr, nullptr};
    group_->arrive(rank_, &p, what);
  }

  void abort(const std::string& message) override { group_->abort(rank_, message); }

 private:
  void check_root(int root, std::string_view what) const {
    if (root < 0 || root >= size())
      throw std::logic_error(fmt::format("{}: root {} is not a rank of {}", what, root, size()));
  }
  void check_parts(const std::vector<std::string>& parts, int root, std::string_view what) const {
    if (rank_ == root && parts.size() != static_cast<size_t>(size()))
      throw std::logic_error(fmt::format("{}: {} parts to scatter over {} ranks", what, parts.size(), size()));
  }

  int rank_;
  std::shared_ptr<Rendezvous> group_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n, const CollectiveOptions& options) {
  if (n < 1) throw std::invalid_argument(fmt::format("{} replicas: at least one is needed", n));
  auto group = std::make_shared<Rendezvous>(n, options);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<ThreadCommunicator>(r, group));
  return out;
}

}  // namespace pipec
