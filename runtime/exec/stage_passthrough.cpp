// Stages that change nothing in the data here: ignore_errors (its work is done by the stages before it,
// which run tolerant and count what they drop) and to(device) (without GPU support in this build the
// stages after to(gpu) run on the CPU, after one warning).
#include <algorithm>

#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Passthrough : public ChunkIterator {
 public:
  Passthrough(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    if (s.op == "to" && s.arg("device") && s.arg("device")->s == "gpu") {
      std::string w = (s.loc.valid() ? s.loc.to_string() + ": " : std::string()) +
                      "warning: to(gpu): this build runs without a GPU, so the stages after it run on the CPU";
      if (std::find(ctx.warnings.begin(), ctx.warnings.end(), w) == ctx.warnings.end()) ctx.warnings.push_back(w);
    }
  }
  void save(StateWriter& w) const override { input_->save(w); }
  void restore(StateReader& r) override { input_->restore(r); }

 protected:
  bool produce(Chunk& out) override { return pull(*input_, out); }

 private:
  IteratorPtr input_;
};

}  // namespace

IteratorPtr make_passthrough(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Passthrough>(ctx, stage, std::move(input));
}

}  // namespace pipec
