// The dataset graph IR: a pipeline as a list of stages, each with its constant arguments, its output
// element type and, for map and filter, its expression function. This is the plan that passes rewrite,
// that `pipec explain` prints and that the runtime executes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "runtime/plan/expr_function.h"
#include "runtime/plan/gpu_kernel.h"
#include "runtime/plan/native_kernel.h"
#include "runtime/plan/stage_kind.h"

namespace pipec {

/// One field a source reads (tfrecord, csv and npy schemas).
struct SchemaEntry {
  std::string name;
  Type type;                 // as the element sees it (bytes[194] is u8[194])
  bool fixed_bytes = false;  // a `bytes[N]` feature: one byte string of exactly N bytes
  std::optional<Value> default_value;
};

struct Plan;

struct Stage {
  StageKind kind = StageKind::Map;                  // Tfrecord, Map, Batch, Zip... (runtime/plan/stages.def)
  std::vector<std::pair<std::string, Value>> args;  // constant arguments in signature order
  std::vector<int> inputs;                          // earlier stages (zip has several; sources none)
  std::vector<SchemaEntry> schema;                  // sources with a schema
  std::shared_ptr<ExprFunction> fn;                 // map and filter
  /// Compiled code for `fn` when a code generator produced it; the interpreter runs `fn` otherwise.
  std::shared_ptr<const NativeKernel> native;
  /// CUDA source for a map after to(gpu), when the CUDA code generator could lower its body.
  std::shared_ptr<const GpuKernel> gpu;
  ElementInfo element;  // the element this stage produces
  SpecLoc loc;
  /// flat_map: the pipeline each input element becomes. Its `bind` argument names the arguments of
  /// this plan's stages that take a field of the element: [[stage, argument, field], ...].
  std::shared_ptr<const Plan> inner;

  const Value* arg(const std::string& name) const;
};

/// Stages whose function runs once per element and may become a compiled kernel: map, filter, scan,
/// map_filter (a map fused with the filter after it; the kernel computes the map's fields and the keep
/// flag) and map_batch (a map fused with the batch after it; the kernel is the map's):
/// StageFlag::ElementKernel.
bool has_element_kernel(const Stage& s);

struct Plan {
  std::string name;           // the pipeline's name
  std::vector<Stage> stages;  // topologically ordered; the last one is the output
};

/// The names stage `stage`'s function reads its inputs by, in order: the input element's fields, and
/// for scan the state's fields before them (its `initial = [[name, value], ...]`).
std::vector<std::string> function_input_fields(const Plan& plan, int stage);

/// `pipec explain`'s text: each stage with its arguments and element type, then each function.
std::string print_plan(const Plan& plan);

/// Structural checks: inputs refer to earlier stages, sources have none, map/filter have functions that
/// verify, element types agree with the function results. Empty when valid.
std::vector<std::string> verify_plan(const Plan& plan);

}  // namespace pipec
