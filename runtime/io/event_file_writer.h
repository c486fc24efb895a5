// EventFileWriter: a TensorBoard event file that a running TensorBoard follows, and that survives the
// process being killed.
//
//   EventFileWriter w("logs/train");           // logs/train/events.out.tfevents.<time>.<host>.<pid>
//   w.add_scalars(step, {{"batch_loss", 0.4f}});
//   w.close();                                 // or the destructor
//
// The file is a TFRecord file (runtime/io/tfrecord_format.h: lengths and data with masked CRC32C) of
// Event records (runtime/io/tf_event.h), the file version first. Unlike TFRecordWriter, which publishes
// a file only when it is complete, the file is written under its real name as it grows: records are
// framed whole in memory and handed to the OS together in one write(2), by a thread of the writer's
// every `flush_seconds`, on flush() and on close(). So the file always ends at a record boundary
// (unless the process dies inside that write, when a reader, TensorBoard's included, stops at the cut
// record), TensorBoard sees each record within `flush_seconds`, and a kill -9 loses at most the records
// of the last `flush_seconds`.
//
// Errors (a directory that cannot be made, a full disk) are DataError (Io) naming the file: from the
// constructor, and from every add_scalars(), flush() or close() after the write that failed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/io/tf_event.h"

namespace pipec {

class EventFileWriter {
 public:
  static constexpr double kDefaultFlushSeconds = 2.0;

  /// Makes `dir` (and its parents) and a new event file in it that starts with the file version.
  /// Throws DataError (Io) naming the path.
  explicit EventFileWriter(const std::string& dir, double flush_seconds = kDefaultFlushSeconds);
  /// close(), with any error dropped: a writer unwinding with an exception keeps what it wrote.
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// One Event at `step` holding every scalar as a Summary.Value (tag, simple_value), stamped
  /// `wall_time` (seconds since 1970; now when negative).
  void add_scalars(int64_t step, const std::vector<tfevent::Scalar>& scalars, double wall_time = -1);
  /// Hands every record added so far to the OS (not fsync: a reader sees them, a power cut may not).
  void flush();
  /// flush(), then stops the flushing thread and closes the file. Idempotent.
  void close();

  const std::string& path() const { return path_; }
  /// Records written or waiting to be, the file version included.
  int64_t records() const;

 private:
  void add_record(const std::string& event);
  void write_pending();  // the records added so far, in one write(2)
  void flush_loop();
  void throw_if_failed() const;  // callers hold mu_

  std::string path_;
  int fd_ = -1;
  double flush_seconds_;
  mutable std::mutex mu_;  // pending_, records_, error_, stop_
  std::condition_variable wake_;
  std::string pending_;  // whole framed records not yet written
  int64_t records_ = 0;
  std::string error_;  // the first write that failed, as its message
  bool stop_ = false;
  std::mutex write_mu_;  // one write(2) at a time, so records reach the file in the order they were added
  std::thread flusher_;
};

}  // namespace pipec
