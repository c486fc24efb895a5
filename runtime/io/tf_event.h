// TensorBoard's event records, encoded by hand (tensorflow/core/util/event.proto and
// tensorflow/core/framework/summary.proto, the fields TensorBoard reads for scalars):
//
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
//
// An event file is a TFRecord file of such records, the first of them the file version
// (runtime/io/event_file_writer.h writes it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipec::tfevent {

/// The version every event file starts with; TensorBoard's readers accept "brain.Event:" followed by 1 or 2.
inline constexpr const char* kFileVersion = "brain.Event:2";

/// Field numbers, for encoders and for tests that decode what they wrote.
enum EventField : uint32_t { kWallTime = 1, kStep = 2, kFileVersionField = 3, kSummary = 5 };
enum SummaryField : uint32_t { kValue = 1 };
enum ValueField : uint32_t { kTag = 1, kSimpleValue = 2 };

struct Scalar {
  std::string tag;
  float value = 0;
};

/// Event{wall_time, file_version: kFileVersion}: the first record of an event file.
std::string file_version_event(double wall_time);

/// Event{wall_time, step, summary: one Value{tag, simple_value} per scalar}.
std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars);

/// Seconds since 1970 (UTC), as TensorBoard's wall_time counts them.
double wall_time_now();

}  // namespace pipec::tfevent
