#include "runtime/train/loop/train_memory_plan.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/exec/footprint.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/model/step_memory.h"
#include "runtime/train/loop/batch_view.h"

namespace pipec {

namespace {

// A field of /proc/self/status in bytes ("VmRSS:    1234 kB"); -1 when it is not there.
int64_t status_bytes(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  const size_t n = std::char_traits<char>::length(field);
  while (std::fgets(line, sizeof line, f))
    if (std::char_traits<char>::compare(line, field, n) == 0 && line[n] == ':') {
      if (std::sscanf(line + n + 1, "%lld", &kb) != 1) kb = -1;
      break;
    }
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

int64_t value_bytes(const ModelGraph& g, int v, int64_t rows) {
  return static_cast<int64_t>(dtype_size(g.values[v].dtype)) *
         std::max<int64_t>(shape_num_elements(g.full_shape(v, rows)), 1);
}

// The examples in the largest batch of a plan's last batch stage, when the plan tells: its size, or
// fewer when one pass of its input has fewer (a batch of held-out examples that all fit in one).
int64_t plan_batch_size(const Plan& plan) {
  int64_t batch = 0;
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Batch)
      if (const Value* v = s.arg("size"); v && v->kind == Value::Int) {
        batch = v->i;
        if (auto pass = pass_length(plan, s.inputs.at(0), nullptr); pass && *pass > 0) batch = std::min(batch, *pass);
      }
  return batch;
}

// The chunk the loop holds while a step reads it (one batch of every field of the data's element), and a
// copy of each input the step converts to the graph's dtype (the target to f32).
int64_t batch_bytes(const ModelGraph& g, const Plan& plan, int64_t chunk_rows, int64_t rows) {
  const int last = static_cast<int>(plan.stages.size()) - 1;
  const ElementInfo& element = plan.stages.back().element;
  int64_t bytes = 0;
  if (auto chunk = chunk_bytes_of(plan, last, chunk_rows)) {
    bytes = static_cast<int64_t>(*chunk);
  } else {
    for (int v : g.inputs) bytes += value_bytes(g, v, rows);
    if (g.target >= 0) bytes += value_bytes(g, g.target, rows);
  }
  auto converted = [&](const std::string& field, int v, DType want) {
    const Field& f = element.fields.at(field_index(element, field));
    if (f.type && f.type->kind == TypeKind::Tensor && f.type->dtype != want) bytes += value_bytes(g, v, rows);
  };
  for (size_t k = 0; k < g.inputs.size() && k < g.input_fields.size(); ++k)
    converted(g.input_fields[k], g.inputs[k], g.values[g.inputs[k]].dtype);
  if (g.target >= 0 && !g.target_field.empty()) converted(g.target_field, g.target, DType::F32);
  return bytes;
}

}  // namespace

int64_t TrainMemoryPlan::kernel_bytes() const {
  int64_t total = 0;
  for (const auto& [name, bytes] : kernels) total += bytes;
  return total;
}

int64_t TrainMemoryPlan::total() const {
  return process + flat + values + kernel_bytes() + batch + input_pipeline + evaluation;
}

std::string TrainMemoryPlan::text() const {
  std::string out =
      fmt::format("{} for steps of {}: process {}, weights and optimizer {}, activations and gradients {}",
                  bytes_text(total()), rows, bytes_text(process), bytes_text(flat), bytes_text(values));
  if (!kernels.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, bytes] : kernels)
      if (bytes > 0) parts.push_back(fmt::format("{} {}", name, bytes_text(bytes)));
    out += fmt::format(", kernels {}", bytes_text(kernel_bytes()));
    if (!parts.empty()) out += fmt::format(" ({})", fmt::join(parts, ", "));
  }
  out += fmt::format(", batch {}, input pipeline {}", bytes_text(batch), bytes_text(input_pipeline));
  if (!unknown.empty())
    out += fmt::format(" (not counted: {}, sizes known only while running)", fmt::join(unknown, ", "));
  if (evaluation > 0) out += fmt::format(", evaluation {}", bytes_text(evaluation));
  return out;
}

TrainMemoryPlan plan_train_memory(const TrainProgram& t, StepExecutor& executor, const PipelineRun& data,
                                  const Plan* validation, int64_t process_bytes) {
  const ModelGraph& g = t.step;
  TrainMemoryPlan p;
  p.rows = g.batch;
  p.process = std::max<int64_t>(process_bytes, 0);
  const StepMemory m = step_memory(g, g.batch);
  p.flat = m.flat_bytes;
  if (std::optional<ExecutorMemory> e = executor.prepare_memory(g.batch)) {
    p.values = e->arena_bytes;
    p.kernels = e->kernels;
  } else {
    p.values = m.arena_bytes;
  }
  p.batch = batch_bytes(g, data.plan(), data.context().chunk_rows, g.batch);
  const SteadyHoldings held = data.steady_holdings();
  p.input_pipeline = static_cast<int64_t>(held.bytes);
  p.unknown = held.unknown;
  if (t.eval && validation) {
    const ModelGraph& eg = t.eval->graph;
    const int64_t rows = plan_batch_size(*validation) > 0 ? plan_batch_size(*validation) : eg.batch;
    const StepMemory em = step_memory(eg, rows);
    p.evaluation = em.flat_bytes + em.arena_bytes + em.input_bytes;
  }
  return p;
}

int64_t resident_bytes() { return status_bytes("VmRSS"); }
int64_t peak_resident_bytes() { return status_bytes("VmHWM"); }

}  // namespace pipec
