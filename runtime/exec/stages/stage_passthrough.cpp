// Stages that change nothing in the data here: ignore_errors (its work is done by the stages before it,
// which run tolerant and count what they drop) and to(device): the chunks stay in host memory and the
// maps after to(gpu) copy them in themselves (stage_gpu_map.cpp); with no GPU they run on the CPU,
// after one warning that says why.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Passthrough : public ChunkIterator {
 public:
  Passthrough(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    if (s.kind == StageKind::To && s.arg("device") && s.arg("device")->s == "gpu" && !ctx.gpu &&
        !ctx.gpu_unavailable.empty()) {
      ctx.warn_once((s.loc.valid() ? s.loc.to_string() + ": " : std::string()) + "warning: to(gpu): no GPU (" +
                    ctx.gpu_unavailable + "), so the stages after it run on the CPU");
    }
  }
  void save(StateWriter& w) const override { input_->save(w); }
  void restore(StateReader& r) override { input_->restore(r); }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

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
