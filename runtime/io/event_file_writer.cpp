#include "runtime/io/event_file_writer.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/io/errors.h"
#include "runtime/io/tfrecord_format.h"

namespace pipec {

namespace {

// The host's name as it goes into a file name: TensorBoard's writers put it there to tell apart the
// files of runs on several machines that log into one shared folder.
std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == 0) return "localhost";
  std::string h = host;
  for (char& c : h)
    if (c == '/') c = '_';
  return h;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir, double flush_seconds) : flush_seconds_(flush_seconds) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw DataError(DataError::Kind::Io, "cannot make the directory: " + ec.message(), {.file = dir});
  // events.out.tfevents.<seconds, 10 digits>.<host> is TensorFlow's name (TensorBoard lists any file whose
  // name holds "tfevents"); the pid, and a counter, keep two writers from ever sharing a file.
  const std::string base =
      fmt::format("{}/events.out.tfevents.{:010d}.{}.{}", dir, static_cast<long long>(std::time(nullptr)), host_name(),
                  static_cast<long long>(::getpid()));
  for (int n = 0;; ++n) {
    path_ = n == 0 ? base : fmt::format("{}.{}", base, n);
    do fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    while (fd_ < 0 && errno == EINTR);
    if (fd_ >= 0) break;
    if (errno != EEXIST || n >= 1000)
      throw DataError(DataError::Kind::Io, std::string("cannot create: ") + std::strerror(errno), {.file = path_});
  }
  add_record(tfevent::file_version_event(tfevent::wall_time_now()));
  // On disk at once: a TensorBoard that is already running lists the run before its first step.
  write_pending();
  flusher_ = std::thread(&EventFileWriter::flush_loop, this);
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (const DataError&) {
    // Reported by the call that saw it first; a destructor must not throw.
  }
}

void EventFileWriter::add_scalars(int64_t step, const std::vector<tfevent::Scalar>& scalars, double wall_time) {
  add_record(tfevent::scalars_event(wall_time < 0 ? tfevent::wall_time_now() : wall_time, step, scalars));
}

void EventFileWriter::add_record(const std::string& event) {
  std::lock_guard<std::mutex> l(mu_);
  throw_if_failed();
  if (stop_) throw DataError(DataError::Kind::InvalidArgument, "write to a closed event file", {.file = path_});
  tfrecord::append_record(pending_, event);
  ++records_;
}

int64_t EventFileWriter::records() const {
  std::lock_guard<std::mutex> l(mu_);
  return records_;
}

void EventFileWriter::write_pending() {
  std::lock_guard<std::mutex> w(write_mu_);
  std::string out;
  {
    std::lock_guard<std::mutex> l(mu_);
    out.swap(pending_);
    if (!error_.empty()) return;
  }
  const char* p = out.data();
  size_t n = out.size();
  while (n > 0 && fd_ >= 0) {
    ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      std::lock_guard<std::mutex> l(mu_);
      error_ = std::string("write failed: ") + std::strerror(errno);
      return;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void EventFileWriter::flush_loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    wake_.wait_for(l, std::chrono::duration<double>(flush_seconds_), [&] { return stop_; });
    if (stop_) break;
    l.unlock();
    write_pending();
    l.lock();
  }
}

void EventFileWriter::flush() {
  write_pending();
  std::lock_guard<std::mutex> l(mu_);
  throw_if_failed();
}

void EventFileWriter::close() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  write_pending();
  const int fd = fd_;
  fd_ = -1;
  // close() can report a delayed write error (NFS); it is the run's last chance to say so.
  if (fd >= 0 && ::close(fd) != 0) {
    std::lock_guard<std::mutex> l(mu_);
    if (error_.empty()) error_ = std::string("close failed: ") + std::strerror(errno);
  }
  std::lock_guard<std::mutex> l(mu_);
  throw_if_failed();
}

void EventFileWriter::throw_if_failed() const {
  if (!error_.empty()) throw DataError(DataError::Kind::Io, error_, {.file = path_});
}

}  // namespace pipec
