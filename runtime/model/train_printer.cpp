#include <fmt/format.h>

#include "runtime/model/train_program.h"

namespace pipec {

std::string print_train_program(const TrainProgram& t) {
  std::string out = fmt::format("train {}\n", t.name);
  out += fmt::format("  data {}, loss {}, optimizer {}\n",
                     t.data_pipeline.empty() ? "(inline pipeline)" : t.data_pipeline, t.loss_text, t.optimizer_text);
  std::string length;
  if (t.steps) length += fmt::format("steps {}", *t.steps);
  if (t.epochs) length += fmt::format("{}epochs {}", length.empty() ? "" : ", ", *t.epochs);
  if (length.empty()) length = "one epoch";
  std::string precision = enum_text(t.precision);
  // What a mixed precision does on the CPU (the mixed_precision step pass; docs/language.md, "Precision").
  if (t.precision == Precision::MixedBf16)
    precision +=
        " (rounded to bf16 where a GPU casts; on the CPU conv2d, conv2d_transpose and dense multiply in bf16 where it "
        "has bf16 instructions, the rest in f32)";
  if (t.precision == Precision::MixedFp16)
    precision += " (rounded to fp16 where a GPU casts, computed in f32 on the CPU; dynamic loss scale from 32768)";
  out += fmt::format("  {}, precision {}, strategy {}\n", length, precision, strategy_kind_name(t.strategy));
  if (t.eval) {
    std::string metrics;
    for (MetricKind m : t.eval->metrics) metrics += (metrics.empty() ? "" : ", ") + std::string(metric_kind_name(m));
    out += fmt::format(
        "  validation {}, {}, metrics: {}; inference graph of {} nodes (batch_norm with moving statistics, "
        "dropout off)\n",
        t.eval->pipeline.empty() ? "(inline pipeline)" : t.eval->pipeline,
        t.eval->every > 0 ? fmt::format("every {} steps and after the last", t.eval->every) : "after the last step",
        metrics.empty() ? "none" : metrics, t.eval->graph.nodes.size());
  }
  return out + print_model_graph(t.step);
}

}  // namespace pipec
