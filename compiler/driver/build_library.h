// Turning a plan (and the object code of its kernels) into a shared library with the C ABI of
// runtime/capi/pipe.h: the plan is serialized into a generated C file, compiled by the system C
// compiler and linked with the PIC runtime and C ABI static libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

/// What a model library (`pipec build --train`) embeds besides its plan, which is then the served
/// preprocessing (runtime/serve/embedded_model.h).
struct ModelEmbedding {
  std::string graph_blob;    // encode_model_graph of the inference graph
  std::string weights_file;  // a safetensors file, included byte for byte
  std::string train_name;    // the train block
};

struct LibraryBuild {
  std::string output;                       // the .so to write
  std::string spec_dir;                     // absolute; relative data paths resolve here by default
  std::vector<std::string> kernel_objects;  // object files defining the plan's native kernel symbols
  std::string work_dir;                     // where the generated files go (an existing folder)
  std::optional<ModelEmbedding> model;      // set: a model library, linked with the served runtime
};

/// Builds `b.output` from `plan`. Returns "" on success, otherwise a message saying what failed (a
/// missing compiler or runtime library, the compiler's own output). Every symbol but the pipe_*
/// functions is hidden, so several built libraries can share a process.
///
/// The tools: $PIPEC_CC (default `cc`; its words split at spaces, so it may carry flags), started with
/// posix_spawn and an argument vector (no shell: paths with spaces or quotes are passed as they are); the static
/// libraries libpipec_runtime.a and libpipec_capi.a from $PIPEC_RUNTIME_LIB_DIR, or where this pipec was built.
std::string build_library(const Plan& plan, const LibraryBuild& b);

/// The generated C source that embeds `plan` as `plan_symbol` (pipec_embedded_plan, or a model
/// library's pipec_embedded_serving_plan) with its kernel table (exposed for tests).
std::string embedded_plan_source(const Plan& plan, const std::string& spec_dir,
                                 const std::string& plan_symbol = "pipec_embedded_plan");

/// The generated C source of a model library's graph, weights (by the assembler's .incbin of
/// `weights_copy`, a path without quotes or backslashes) and train name.
std::string embedded_model_source(const ModelEmbedding& m, const std::string& weights_copy, uint64_t weights_size);

}  // namespace pipec
