// Checkpoints of a multi_worker run (TrainOptions::ranks, runtime/train/persist/train_checkpoint.h): the
// ranks as threads, each compiled for its shard of the data and training a DataParallelExecutor replica
// over the in-process communicator, as `pipec run` does under mpirun with MPI's (the processes
// themselves, killed with SIGKILL, are tests/dist/multi_worker_run.py's). A run stopped after a
// checkpoint and resumed ends with the weights of one that never stopped, bit for bit; the checkpoint
// holds every rank's own input position once and the weights once; it resumes with its number of ranks
// only, and a damaged rank's position is refused naming its file.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/dist/thread_communicator.h"
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

// Rank k's compiled data and step graph.
std::vector<CompileResult> compile_ranks() {
  std::vector<CompileResult> out;
  for (int k = 0; k < kRanks; ++k) {
    CompileRequest request;
    request.path = "ranks.pipe";
    request.text = kSpec;
    request.target = CompileTarget::Train;
    request.options.shard = CompileOptions::WorkerShard{kRanks, k};
    out.push_back(compile(request));
    EXPECT_TRUE(out.back().ok()) << out.back().error;
  }
  return out;
}

struct RankResult {
  std::string error;
  std::vector<double> losses;
  int64_t resumed_from = 0;
};

// Trains every rank on a thread of its own with `base`'s options; `stop_after` > 0 makes every rank
// throw after that step (after its checkpoint), as a job killed there.
std::vector<RankResult> train_ranks(const std::vector<CompileResult>& compiled, const TrainOptions& base,
                                    int64_t stop_after = 0) {
  CollectiveOptions co;
  co.timeout_seconds = 30;
  std::vector<std::shared_ptr<Communicator>> comms = shared_communicators(make_thread_communicators(kRanks, co));
  std::vector<RankResult> results(kRanks);
  std::vector<std::thread> threads;
  for (int k = 0; k < kRanks; ++k)
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

// The library level: the number of ranks is part of the checkpoint, and each position is its rank's.
TEST(RankCheckpoint, ACheckpointResumesWithItsNumberOfRanksOnly) {
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
  for (int k = 0; k < 3; ++k) {
    InputPosition p;
    p.pipeline_state = fmt::format("rank {}'s pipeline", k);
    s.positions.push_back(input_position_bytes(p, k, 3, 6));
  }
  save_train_checkpoint(d.path(), g, "t", b, slots, s);

  for (int world : {1, 2, 4}) {
    FlatBuffers<float> into = b;
    OptimizerSlots<float> into_slots;
    try {
      load_train_checkpoint(d.path(), g, 0, into, into_slots, world);
      ADD_FAILURE() << "a checkpoint of 3 ranks loaded for " << world;
    } catch (const CheckpointError& e) {
      const std::string want =
          fmt::format("{}: the checkpoint was written by 3 ranks (mpirun -np 3) and this run has {}",
                      train_checkpoint_file(d.path()).string(),
                      world == 1 ? std::string("one process") : fmt::format("{} ranks (mpirun -np {})", world, world));
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_TRUE(into_slots.m.empty());
  }
  FlatBuffers<float> into = b;
  OptimizerSlots<float> into_slots;
  const TrainCheckpointState l = load_train_checkpoint(d.path(), g, 0, into, into_slots, 3);
  ASSERT_EQ(l.positions.size(), 3u);
  EXPECT_EQ(into_slots.m, slots.m);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(l.positions[k], s.positions[k]);
    EXPECT_EQ(l.position_sources[k], (d / fmt::format("input-6-rank-{}.ckpt", k)).string());
    // What rank 0 sends rank k: the counts and its position alone.
    const TrainCheckpointState share = parse_rank_share(rank_share_bytes(l, k));
    EXPECT_EQ(share.step, 6);
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
    load_train_checkpoint(d.path(), g, 0, into, into_slots, 3);
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
