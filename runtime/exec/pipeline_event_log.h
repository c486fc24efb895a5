// The TensorBoard event file of a pipeline run (`pipec run --logdir DIR` on a pipeline):
// DIR/pipeline/events.out.tfevents.*, one event per report (about every second, and at the end), at
// step = output elements (batches when the pipeline batches) so far:
//
//   examples_per_second          examples / seconds since the run started
//   stage_share/<index>_<stage>  each stage's share of the work so far, 0 to 1 (the run summary's
//                                `share` column: stage_share/3_map is its `#3 map`)
#pragma once

#include <cstdint>
#include <string>

#include "runtime/exec/pipeline_run.h"
#include "runtime/io/event_file_writer.h"

namespace pipec {

class PipelineEventLog {
 public:
  /// Makes DIR/pipeline and its event file. Throws DataError.
  explicit PipelineEventLog(const std::string& logdir, double flush_seconds = EventFileWriter::kDefaultFlushSeconds);

  /// One report of `run` after `elements` output elements of `examples` examples in `seconds`. Throws
  /// DataError.
  void report(const PipelineRun& run, int64_t elements, int64_t examples, double seconds);
  void close() { file_.close(); }

 private:
  EventFileWriter file_;
};

}  // namespace pipec
