#include "runtime/io/tf_event.h"

#include <chrono>

#include "runtime/io/proto_encoder.h"

namespace pipec::tfevent {

std::string file_version_event(double wall_time) {
  ProtoEncoder e;
  e.add_double(kWallTime, wall_time).add_bytes(kFileVersionField, kFileVersion);
  return e.bytes();
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  ProtoEncoder summary;
  for (const Scalar& s : scalars) {
    ProtoEncoder value;
    value.add_bytes(kTag, s.tag).add_float(kSimpleValue, s.value);
    summary.add_message(kValue, value);
  }
  ProtoEncoder e;
  e.add_double(kWallTime, wall_time).add_int64(kStep, step).add_message(kSummary, summary);
  return e.bytes();
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace pipec::tfevent
