// A ModelGraph as bytes: what `pipec build --train` embeds in a model library (the model's forward pass
// in inference mode) and what the library's pipe_model_open turns back into a graph to run.
//
// The framing and record codec are runtime/plan/blob_codec.h's (magic "PIPEMODL", kModelFormatVersion).
// Everything an executor reads is kept: the values (roles, shapes, flat-buffer offsets, initializers),
// the nodes in order with their kind (by name), typed attributes (every field of their model_attrs.def
// struct, enums by spelling), expr functions, layer names and spec locations, and the graph's inputs,
// output, loss and buffers. Compiled code does not travel: an expr node's native kernel comes back as
// its symbol, which the loader resolves again (none today: a built model runs expr nodes on the
// interpreter's loops), and its CUDA kernel is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/model/model_graph.h"
#include "runtime/plan/blob_codec.h"

namespace pipec {

/// Bumped whenever the payload layout changes; a decoder refuses other versions.
constexpr uint32_t kModelFormatVersion = 1;

/// The graph as a self-contained byte string.
std::string encode_model_graph(const ModelGraph& g);

/// The graph encoded in `blob`, verified (verify_model_graph). `source` names the blob in errors.
/// Throws BlobDecodeError for a blob that is truncated, corrupt, of another version, or whose graph
/// does not verify.
ModelGraph decode_model_graph(std::string_view blob, const std::string& source = "model");

}  // namespace pipec
