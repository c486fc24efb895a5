#include "runtime/train/parallel/serial_worker.h"

namespace pipec {

SerialWorker::SerialWorker() : thread_([this] { loop(); }) {}

SerialWorker::~SerialWorker() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SerialWorker::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(m_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void SerialWorker::drain() {
  std::unique_lock<std::mutex> lock(m_);
  idle_.wait(lock, [&] { return jobs_.empty() && !running_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void SerialWorker::loop() {
  std::unique_lock<std::mutex> lock(m_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    const bool skip = error_ != nullptr;
    running_ = true;
    lock.unlock();
    std::exception_ptr failed;
    if (!skip) {
      try {
        job();
      } catch (...) {
        failed = std::current_exception();
      }
    }
    job = nullptr;
    lock.lock();
    running_ = false;
    if (failed && !error_) error_ = failed;
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace pipec
