#include <fmt/format.h>

#include "runtime/model/train_program.h"

namespace pipec {

std::string print_train_program(const TrainProgram& t) {
  std::string out = fmt::format("train {}\n", t.name);
  out += fmt::format("  data {}, loss {}, optimizer {}\n", t.data_pipeline.empty() ? "(inline pipeline)" : t.data_pipeline,
                     t.loss_text, t.optimizer_text);
  std::string length;
  if (t.steps) length += fmt::format("steps {}", *t.steps);
  if (t.epochs) length += fmt::format("{}epochs {}", length.empty() ? "" : ", ", *t.epochs);
  if (length.empty()) length = "one epoch";
  out += fmt::format("  {}, precision {}, strategy {}\n", length, t.precision, t.strategy);
  return out + print_model_graph(t.step);
}

}  // namespace pipec
