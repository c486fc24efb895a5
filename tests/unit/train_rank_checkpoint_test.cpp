// Checkpoints of a multi_worker run (TrainOptions::ranks, runtime/train/persist/train_checkpoint.h): the
// ranks as threads, each compiled for its shard of the data and training a DataParallelExecutor replica
// over the in-process communicator, as `pipec run` does under mpirun with MPI's (the processes
// themselves, killed with SIGKILL, are tests/dist/multi_worker_run.py's). A run stopped after a
// checkpoint and resumed ends with the weights of one that never stopped, bit for bit; the checkpoint
// holds every rank's own input position once and the weights once; a damaged rank's position is refused
// naming its file. Resumed by another number of ranks (or by one process), the run takes the weights,
// the optimizer's state and the step and restarts its epoch (runtime/train/loop/epoch_restart.h): as a
// reference executor fed the epoch's batches from the checkpoint's state by hand, to rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/dist/thread_communicator.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/train/loop/batch_view.h"
#include "runtime/train/loop/train_loop.h"
#include "runtime/train/parallel/data_parallel_executor.h"
#include "runtime/train/persist/train_checkpoint.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::ScratchDir;
using testing::write_file;

// Shuffled after the shard, so that each rank's position holds a buffer of its own; batch_norm's
// statistics are averaged over the ranks at every checkpoint (a collective each rank must join), and
// dropout draws by step and example.
const char* kSpec = R"(pipeline data = range(400)
  | shuffle(60, seed = 3)
  | map(r => { x = random_uniform([6]) { x, y: [sum(x) * 0.5] } })
  | batch(8, drop_remainder = true)
model net(x: f32[6]) -> f32[1] { x | dense(16) | batch_norm | relu | dropout(0.2) | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = 10, strategy = multi_worker() }
)";

constexpr int kRanks = 2;

// By epochs, in order (no shuffle, no random op): 48 examples, a global batch of 6 (3 per rank of 2, 2
// per rank of 3), 8 steps an epoch, 24 in all. Sharded by elements, the global batches of any number of
// ranks hold the same examples as one process's.
const char* kEpochSpec = R"(pipeline data = range(48)
  | map(r => { x: [f32(r.value) * 0.02, f32(r.value % 5) * 0.3, 1.0 - f32(r.value) * 0.01], y: [f32(r.value % 7) * 0.1] })
  | batch(6, drop_remainder = true)
model net(x: f32[3]) -> f32[1] { x | dense(8) | relu | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), epochs = 3, strategy = multi_worker() }
)";

// Rank k's compiled data and step graph, for each of `ranks` ranks (one: the data unsharded).
std::vector<CompileResult> compile_ranks(const char* spec = kSpec, int ranks = kRanks) {
  std::vector<CompileResult> out;
  for (int k = 0; k < ranks; ++k) {
    CompileRequest request;
    request.path = "ranks.pipe";
    request.text = spec;
    request.target = CompileTarget::Train;
    if (ranks > 1) request.options.shard = CompileOptions::WorkerShard{ranks, k};
    out.push_back(compile(request));
    EXPECT_TRUE(out.back().ok()) << out.back().error;
  }
  return out;
}

struct RankResult {
  std::string error;
  std::vector<double> losses;
  int64_t resumed_from = 0;
  TrainSummary summary;
};

// Trains every rank (one per compiled result) on a thread of its own with `base`'s options; `stop_after`
// > 0 makes every rank throw after that step (after its checkpoint), as a job killed there.
std::vector<RankResult> train_ranks(const std::vector<CompileResult>& compiled, const TrainOptions& base,
                                    int64_t stop_after = 0) {
  const int ranks = static_cast<int>(compiled.size());
  CollectiveOptions co;
  co.timeout_seconds = 30;
  std::vector<std::shared_ptr<Communicator>> comms = shared_communicators(make_thread_communicators(ranks, co));
  std::vector<RankResult> results(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int k = 0; k < ranks; ++k)
    threads.emplace_back([&, k] {
      const CompiledTrain& train = compiled[static_cast<size_t>(k)].trains.at(0);
      TrainOptions o = base;
      o.threads = 1;
      o.length = train.length;
      o.ranks = comms[static_cast<size_t>(k)];
      if (k != 0) o.save_path = base.save_path.empty() ? "" : base.save_path + ".not-rank-0";
      auto dp = std::make_shared<DataParallelExecutor*>(nullptr);
      std::shared_ptr<Communicator> comm = o.ranks;
      o.make_executor = [comm, dp](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
        auto ex = std::make_unique<DataParallelExecutor>(
            g, seed, std::vector<std::shared_ptr<Communicator>>{comm},
            [](const ModelGraph& rg, uint64_t s) -> std::unique_ptr<StepExecutor> {
              return std::make_unique<ReferenceExecutor<float>>(rg, s);
            });
        *dp = ex.get();
        return ex;
      };
      o.all_have_batch = [dp](bool have) { return (*dp)->all_have_batch(have); };
      o.step_examples = [dp](int64_t) { return (*dp)->step_rows(); };
      RankResult& r = results[static_cast<size_t>(k)];
      try {
        TrainSummary s = run_training(train.program, compiled[static_cast<size_t>(k)].pipelines.at(0).plan, o,
                                      [&](const TrainProgress& p) {
                                        if (stop_after > 0 && p.step == stop_after) throw std::runtime_error("stopped");
                                      });
        r.losses = s.losses;
        r.resumed_from = s.last.resumed_from;
        r.summary = std::move(s);
      } catch (const std::exception& e) {
        r.error = e.what();
        if (r.error != "stopped") comm->abort(r.error);
      }
    });
  for (std::thread& t : threads) t.join();
  return results;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(RankCheckpoint, StoppedAndResumedRanksEqualAnUninterruptedRun) {
  const std::vector<CompileResult> compiled = compile_ranks();
  ASSERT_TRUE(compiled[0].ok() && compiled[1].ok());
  ScratchDir d;
  TrainOptions base;
  base.checkpoint_every = 2;

  TrainOptions whole = base;
  whole.checkpoint_dir = (d / "whole").string();
  whole.save_path = (d / "whole.safetensors").string();
  const std::vector<RankResult> ref = train_ranks(compiled, whole);
  for (const RankResult& r : ref) ASSERT_EQ(r.error, "");
  ASSERT_EQ(ref[0].losses.size(), 10u);
  EXPECT_EQ(ref[1].losses, ref[0].losses) << "every rank has the step's loss over every rank";
  // The weights once (rank 0 alone writes), every rank's position in a file of its own; --save is rank 0's.
  EXPECT_EQ(files_in(d / "whole"), (std::vector<std::string>{"input-10-rank-0.ckpt", "input-10-rank-1.ckpt",
                                                             "train.ckpt", "weights-10.safetensors"}));
  EXPECT_FALSE(fs::exists(d / "whole.safetensors.not-rank-0"));
  EXPECT_NE(read_all(d / "whole" / "input-10-rank-0.ckpt"), read_all(d / "whole" / "input-10-rank-1.ckpt"));

  // Stopped after step 5: the checkpoint of step 4 is the last; the resumed run takes steps 5 to 10 again.
  TrainOptions part = base;
  part.checkpoint_dir = (d / "part").string();
  part.save_path = (d / "part.safetensors").string();
  for (const RankResult& r : train_ranks(compiled, part, 5)) ASSERT_EQ(r.error, "stopped");
  EXPECT_EQ(files_in(d / "part"), (std::vector<std::string>{"input-4-rank-0.ckpt", "input-4-rank-1.ckpt", "train.ckpt",
                                                            "weights-4.safetensors"}));
  fs::copy(d / "part", d / "damaged");
  part.resume = true;
  const std::vector<RankResult> resumed = train_ranks(compiled, part);
  for (const RankResult& r : resumed) {
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.resumed_from, 4);
    EXPECT_EQ(r.losses, std::vector<double>(ref[0].losses.begin() + 4, ref[0].losses.end()));
  }
  EXPECT_EQ(read_all(d / "part.safetensors"), read_all(d / "whole.safetensors"))
      << "the resumed ranks' weights differ from the uninterrupted run's";
  EXPECT_EQ(files_in(d / "part"), files_in(d / "whole")) << "the older checkpoint's files are gone";

  // Rank 1's position cut short: refused by rank 0, which read it, naming the file; rank 1 stops too.
  const fs::path cut = d / "damaged" / "input-4-rank-1.ckpt";
  write_file(cut, read_all(cut).substr(0, 40));
  TrainOptions damaged = part;
  damaged.checkpoint_dir = (d / "damaged").string();
  damaged.save_path.clear();
  const std::vector<RankResult> refused = train_ranks(compiled, damaged);
  EXPECT_NE(refused[0].error.find(cut.string() + ": 40 bytes"), std::string::npos) << refused[0].error;
  EXPECT_NE(refused[0].error.find("truncated or replaced"), std::string::npos) << refused[0].error;
  EXPECT_NE(refused[1].error, "");
}

// One pass of `plan`'s batches: the step graph's inputs and the target of each.
struct Batch {
  std::vector<Tensor> inputs;
  Tensor target;
};
std::vector<Batch> first_pass_batches(const Plan& plan, const ModelGraph& g) {
  RunOptions ro;
  ro.threads = 1;
  PipelineRun run(plan, ro);
  const ElementInfo& element = plan.stages.back().element;
  std::vector<Batch> out;
  Chunk c;
  while (run.next(c) && c.epoch == 0)
    for (int64_t r = 0; r < c.rows; ++r) {
      Batch b;
      for (const std::string& f : g.input_fields)
        b.inputs.push_back(batch_of(c.columns[field_index(element, f)], c.rows, r));
      b.target = batch_of(c.columns[field_index(element, g.target_field)], c.rows, r);
      out.push_back(std::move(b));
    }
  return out;
}

// The largest difference between the parameters in two --save files, and the largest change from `from`.
std::pair<double, double> weights_distance(const ModelGraph& g, const fs::path& a, const fs::path& b,
                                           const FlatBuffers<float>& from) {
  FlatBuffers<float> wa = from, wb = from;
  load_weights(g, a.string(), wa);
  load_weights(g, b.string(), wb);
  double apart = 0, moved = 0;
  for (size_t i = 0; i < from.params.size(); ++i) {
    apart = std::max(apart, static_cast<double>(std::fabs(wa.params[i] - wb.params[i])));
    moved = std::max(moved, static_cast<double>(std::fabs(wa.params[i] - from.params[i])));
  }
  return {apart, moved};
}

// A 2-rank checkpoint in the middle of epoch 2, resumed by one process and by 3 ranks: each takes the
// weights, the optimizer's state and the step, and trains epoch 2 from its first example, then epoch 3.
TEST(RankCheckpoint, AnotherNumberOfRanksRestartsTheEpochFromTheCheckpointsState) {
  const std::vector<CompileResult> two = compile_ranks(kEpochSpec, 2), three = compile_ranks(kEpochSpec, 3),
                                   one = compile_ranks(kEpochSpec, 1);
  ASSERT_TRUE(two[1].ok() && three[2].ok() && one[0].ok());
  const CompiledTrain& train = one[0].trains.at(0);
  const ModelGraph& g = train.program.step;
  ScratchDir d;
  TrainOptions base;
  base.checkpoint_every = 4;

  // Stopped after step 13: the checkpoint of step 12, 4 steps into epoch 2.
  TrainOptions part = base;
  part.checkpoint_dir = (d / "part").string();
  for (const RankResult& r : train_ranks(two, part, 13)) ASSERT_EQ(r.error, "stopped");
  for (const char* copy : {"one", "three", "three-cut"}) fs::copy(d / "part", d / copy);

  // By hand: a reference executor given the checkpoint's state, then epochs 2 and 3 from their first batch.
  ReferenceExecutor<float> ref(g, 0);
  const TrainCheckpointState cs = load_train_checkpoint(d / "part", g, 0, ref.buffers(), ref.optimizer_slots());
  EXPECT_EQ(cs.writers, 2);
  EXPECT_EQ(cs.step, 12);
  EXPECT_EQ(cs.data_pass, 1);
  const FlatBuffers<float> at_checkpoint = ref.buffers();
  ref.sync_to_device();
  const std::vector<Batch> batches = first_pass_batches(one[0].pipelines.at(0).plan, g);
  ASSERT_EQ(batches.size(), 8u);
  std::vector<double> want;
  for (int64_t step = 12; step < 28; ++step) {
    const Batch& b = batches[static_cast<size_t>((step - 12) % 8)];
    want.push_back(ref.run(b.inputs, &b.target, static_cast<uint64_t>(step), OpCategory::Loss));
    ref.resume(static_cast<uint64_t>(step), OpCategory::Update);
  }
  ref.sync_to_host();
  save_weights(g, (d / "by-hand.safetensors").string(), ref.buffers(), "t");

  // One process: the reference executor's losses and weights, bit for bit, and the note.
  TrainOptions o1 = base;
  o1.threads = 1;
  o1.length = train.length;
  o1.checkpoint_dir = (d / "one").string();
  o1.resume = true;
  o1.save_path = (d / "one.safetensors").string();
  std::vector<EpochRestart> notes;
  o1.on_epoch_restart = [&](const EpochRestart& r) { notes.push_back(r); };
  const TrainSummary s1 = run_training(train.program, one[0].pipelines.at(0).plan, o1);
  EXPECT_EQ(s1.last.resumed_from, 12);
  EXPECT_EQ(s1.last.step, 28) << "epoch 2 again from its first step, then epoch 3";
  EXPECT_EQ(s1.losses, want);
  EXPECT_EQ(read_all(d / "one.safetensors"), read_all(d / "by-hand.safetensors"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].writers, 2);
  EXPECT_EQ(notes[0].processes, 1);
  EXPECT_EQ(notes[0].pass, std::optional<int64_t>(1));
  EXPECT_TRUE(notes[0].epoch);
  EXPECT_EQ(notes[0].note,
            "resumed from " + train_checkpoint_file(d / "one").string() +
                " at step 12, written by 2 ranks; this run has one process: the weights and the optimizer continue, "
                "epoch 2 of 3 restarts from its first example (positions in 2 ranks' shards of the data have no place "
                "in the whole data)");
  ASSERT_EQ(s1.epochs.size(), 2u);
  EXPECT_EQ(s1.epochs[0].epoch, 2);
  EXPECT_EQ(s1.epochs[0].steps, 8);
  EXPECT_EQ(s1.epochs[1].epoch, 3);
  EXPECT_EQ(s1.epochs[1].step, 28);

  // Three ranks: the one process's losses to rounding on every rank (a rank without the checkpoint's
  // weights or optimizer state would be far off), the weights likewise.
  TrainOptions o3 = base;
  o3.checkpoint_dir = (d / "three").string();
  o3.resume = true;
  o3.save_path = (d / "three.safetensors").string();
  const std::vector<RankResult> r3 = train_ranks(three, o3);
  for (const RankResult& r : r3) {
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.resumed_from, 12);
    ASSERT_EQ(r.losses.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.losses[i], want[i], 1e-5 * std::fabs(want[i])) << i;
    ASSERT_TRUE(r.summary.epoch_restart);
    EXPECT_EQ(r.summary.epoch_restart->processes, 3);
    EXPECT_EQ(r.summary.epoch_restart->pass, std::optional<int64_t>(1));
  }
  const auto [apart, moved] = weights_distance(g, d / "three.safetensors", d / "one.safetensors", at_checkpoint);
  EXPECT_GT(moved, 1e-3);
  EXPECT_LE(apart, 1e-4 * moved) << "3 ranks' weights against one process's";

  // The restarted ranks' checkpoints are theirs: stopped after step 18 and resumed by the same 3 ranks,
  // they continue exactly where they were.
  TrainOptions cut = o3;
  cut.checkpoint_dir = (d / "three-cut").string();
  cut.save_path = (d / "three-cut.safetensors").string();
  for (const RankResult& r : train_ranks(three, cut, 18)) ASSERT_EQ(r.error, "stopped");
  EXPECT_EQ(files_in(d / "three-cut"),
            (std::vector<std::string>{"input-16-rank-0.ckpt", "input-16-rank-1.ckpt", "input-16-rank-2.ckpt",
                                      "train.ckpt", "weights-16.safetensors"}));
  for (const RankResult& r : train_ranks(three, cut)) {
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.resumed_from, 16);
    EXPECT_FALSE(r.summary.epoch_restart);
    EXPECT_EQ(r.losses, std::vector<double>(r3[0].losses.begin() + 4, r3[0].losses.end()));
  }
  EXPECT_EQ(read_all(d / "three-cut.safetensors"), read_all(d / "three.safetensors"));

  // A run that had ended: resumed by 3 ranks, nothing is left to train, and --save writes its weights.
  TrainOptions whole = base;
  whole.checkpoint_dir = (d / "whole").string();
  whole.save_path = (d / "whole.safetensors").string();
  for (const RankResult& r : train_ranks(two, whole)) ASSERT_EQ(r.error, "");
  TrainOptions ended = o3;
  ended.checkpoint_dir = whole.checkpoint_dir;
  ended.save_path = (d / "ended.safetensors").string();
  for (const RankResult& r : train_ranks(three, ended)) {
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(r.losses.empty());
    ASSERT_TRUE(r.summary.epoch_restart);
    EXPECT_TRUE(r.summary.epoch_restart->finished);
  }
  EXPECT_EQ(read_all(d / "ended.safetensors"), read_all(d / "whole.safetensors"));
}

// The library level: the checkpoint records how many processes wrote it, each position is its rank's,
// and a run of another number is sent the counts without a position.
TEST(RankCheckpoint, ACheckpointKeepsItsWritersPositionsAndSharesThemWithTheirNumberOnly) {
  const std::vector<CompileResult> compiled = compile_ranks();
  ASSERT_TRUE(compiled[0].ok());
  const ModelGraph& g = compiled[0].trains.at(0).program.step;
  ScratchDir d;
  FlatBuffers<float> b;
  b.params.assign(static_cast<size_t>(g.param_elements()), 0.5f);
  b.states.assign(static_cast<size_t>(g.state_elements()), 1.0f);
  OptimizerSlots<float> slots;
  slots.m.assign(b.params.size(), 0.25f);
  slots.v.assign(b.params.size(), 0.125f);
  slots.iterations = 6;
  TrainCheckpointState s;
  s.step = 6;
  s.epoch = 2;
  s.data_pass = 1;
  for (int k = 0; k < 3; ++k) {
    InputPosition p;
    p.pipeline_state = fmt::format("rank {}'s pipeline", k);
    s.positions.push_back(input_position_bytes(p, k, 3, 6));
  }
  save_train_checkpoint(d.path(), g, "t", b, slots, s);

  // Another number of processes gets the counts alone: every rank restarts the epoch.
  for (int world : {1, 2, 4}) {
    FlatBuffers<float> into = b;
    OptimizerSlots<float> into_slots;
    const TrainCheckpointState l = load_train_checkpoint(d.path(), g, 0, into, into_slots);
    EXPECT_EQ(l.writers, 3);
    EXPECT_EQ(l.positions.size(), 3u);
    EXPECT_EQ(into_slots.m, slots.m);
    EXPECT_EQ(into_slots.iterations, 6);
    for (int k = 0; k < world; ++k) {
      const TrainCheckpointState share = parse_rank_share(rank_share_bytes(l, k, world));
      EXPECT_EQ(share.writers, 3);
      EXPECT_EQ(share.step, 6);
      EXPECT_EQ(share.epoch, 2);
      EXPECT_EQ(share.data_pass, 1);
      EXPECT_TRUE(share.positions.empty() && share.position_sources.empty());
    }
  }
  FlatBuffers<float> into = b;
  OptimizerSlots<float> into_slots;
  const TrainCheckpointState l = load_train_checkpoint(d.path(), g, 0, into, into_slots);
  ASSERT_EQ(l.positions.size(), 3u);
  EXPECT_EQ(into_slots.m, slots.m);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(l.positions[k], s.positions[k]);
    EXPECT_EQ(l.position_sources[k], (d / fmt::format("input-6-rank-{}.ckpt", k)).string());
    // What rank 0 sends rank k: the counts and its position alone.
    const TrainCheckpointState share = parse_rank_share(rank_share_bytes(l, k, 3));
    EXPECT_EQ(share.step, 6);
    EXPECT_EQ(share.writers, 3);
    EXPECT_EQ(share.positions, std::vector<std::string>{s.positions[k]});
    EXPECT_EQ(share.position_sources, std::vector<std::string>{l.position_sources[k]});
    EXPECT_EQ(parse_input_position(share.positions[0], "here", k, 3, 6).pipeline_state,
              fmt::format("rank {}'s pipeline", k));
  }
  // A position restored on another rank, or of another step, is refused naming where it came from.
  EXPECT_THROW(
      {
        try {
          parse_input_position(s.positions[1], "input-6-rank-1.ckpt", 2, 3, 6);
        } catch (const CheckpointError& e) {
          EXPECT_NE(std::string(e.what()).find("input-6-rank-1.ckpt: holds the input position of rank 1 of 3 after "
                                               "step 6, where rank 2 of 3 after step 6 was expected"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      CheckpointError);
  EXPECT_THROW(parse_input_position(s.positions[1], "x", 1, 3, 7), CheckpointError);
  EXPECT_THROW(parse_input_position(s.positions[1].substr(0, 30), "x", 1, 3, 6), CheckpointError);

  // A position file gone: refused naming it.
  fs::remove(d / "input-6-rank-2.ckpt");
  try {
    load_train_checkpoint(d.path(), g, 0, into, into_slots);
    ADD_FAILURE() << "a checkpoint without rank 2's position loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find((d / "input-6-rank-2.ckpt").string()), std::string::npos) << e.what();
  }

  // The next save, of one process, leaves no position file behind.
  s.step = 7;
  s.positions = {input_position_bytes(InputPosition{}, 0, 1, 7)};
  save_train_checkpoint(d.path(), g, "t", b, slots, s);
  EXPECT_EQ(files_in(d.path()), (std::vector<std::string>{"train.ckpt", "weights-7.safetensors"}));
}

}  // namespace
}  // namespace pipec
