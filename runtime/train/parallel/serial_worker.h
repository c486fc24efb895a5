// A thread that runs posted jobs one after another, in the order posted: each data-parallel replica
// has one for its step (replica 0's runs on the caller's thread instead) and one for its gradient
// buckets, whose all-reduces go on while the replica's backward pass computes the next bucket. The
// threads live as long as the worker: a step posts several jobs, and starting threads for each would
// cost more than a small model's step.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace pipec {

class SerialWorker {
 public:
  SerialWorker();
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  /// Queues `job`. A job posted after one that threw is skipped (its inputs are not what it expects).
  void post(std::function<void()> job);
  /// Waits until every posted job has run (or been skipped); rethrows the first job's exception, once.
  void drain();

 private:
  void loop();

  std::mutex m_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;  // a job is being run
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace pipec
