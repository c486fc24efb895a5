// Training checkpoints (`pipec run --checkpoint DIR` on a spec with a train block): everything a run
// needs to go on exactly where it was, so that a run killed and resumed ends with the weights of a run
// that never stopped, bit for bit (same executor and thread count).
//
// DIR holds:
//   weights-<step>.safetensors  the parameters and state tensors, named as `pipec explain` (and --save)
//                               names them, then the optimizer's slots as `optimizer.m/<name>` and
//                               `optimizer.v/<name>` (adam's moments; sgd's velocity in m), all F32;
//                               readable by the safetensors package like any --save file
//   train.ckpt                  a state file (runtime/exec/checkpoint_io.h: magic, version, CRC32) with,
//                               in order: the string "pipec train checkpoint", the train block's and the
//                               model's names, the optimizer's kind, the precision, the seed, the step
//                               count, the optimizer's iteration count, the epoch, the data's pass (version
//                               3), the total steps (-1 when not known yet), the smoothed-loss sum, the first and the
//                               last loss, the number of finite losses, the loss scale with its good-step and
//                               skipped-step counts, the weights file's name, byte size and CRC32, the number of
//                               processes that trained (a multi_worker run's ranks; 1 otherwise), then
//                               their input positions: one process's inline; a multi_worker run's as the
//                               name, byte size and CRC32 of each rank's position file, in rank order
//   input-<step>-rank-<k>.ckpt  a multi_worker run's rank k's input position
// An input position (input_position_bytes) is a state file of its own: the string "pipec input
// position", the rank, the number of processes, the step, the input pipeline's state
// (PipelineRun::save_state) and the batches of the pipeline's last chunk not trained on yet (a flag, then
// the chunk). Each rank of a multi_worker run reads its own shard, so each has its own; the weights, the
// slots and the counts are the same on every rank and are saved once.
// Dropout and the pipeline's random ops are keyed by (seed, step or element index), so the seed and the
// counts are the whole random state.
//
// A save writes the weights file and the position files, then train.ckpt, each atomically
// (write_file_atomic: a temporary file, fsync, rename), then removes older weights and position files.
// train.ckpt names the files it goes with, so a kill at any point leaves the previous checkpoint whole:
// until the rename of train.ckpt it still names the previous files, which are removed only after.
// Under multi_worker rank 0 alone writes: it gathers every rank's position through the communicator
// (the training loop does, runtime/train/loop/train_loop.h), and on a resume reads the checkpoint and
// sends each rank its position back (rank_share_bytes). The positions continue a run of the number of
// processes that wrote them only: another shards the data otherwise, and no position fits. Such a run
// takes the weights, the slots and the counts and restarts its epoch instead
// (runtime/train/loop/epoch_restart.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/exec/checkpoint_io.h"
#include "runtime/model/model_graph.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// One process's place in its data: what a rank of a multi_worker run keeps of its own.
struct InputPosition {
  std::string pipeline_state;    // PipelineRun::save_state() of the data pipeline
  std::optional<Chunk> pending;  // rows (batches) of the last chunk pulled that no step has used yet
};

/// `p` as a state file's bytes (framing, CRC32) that record it as rank `rank`'s of `world` after step
/// `step`: what a rank sends rank 0 at a checkpoint, and what the checkpoint keeps.
std::string input_position_bytes(const InputPosition& p, int rank, int world, int64_t step);
/// The position in `bytes` (input_position_bytes'), refused with a CheckpointError naming `source` when
/// damaged or when it is another rank's, another number of processes' or another step's.
InputPosition parse_input_position(std::string bytes, const std::string& source, int rank, int world, int64_t step);

/// What a training checkpoint holds beside the tensors.
struct TrainCheckpointState {
  uint64_t seed = 0;
  int64_t step = 0;       // steps done
  int64_t epoch = 0;      // the epoch of the last step (by steps per epoch: its span of steps)
  int64_t data_pass = 0;  // the pass over the data of the last batch (rank 0's under multi_worker)
  std::optional<int64_t> total_steps;
  double loss_sum = 0;                // the smoothed loss's moving sum before bias correction
  double first_loss = 0;              // of step 1
  double last_loss = 0;               // of the last step
  int64_t finite_steps = 0;           // steps whose loss entered the smoothed loss (mixed_fp16 skips others)
  double loss_scale = 1;              // mixed_fp16's dynamic loss scale (1 otherwise)
  int64_t loss_scale_good_steps = 0;  // mixed_fp16: finite steps since the scale last changed
  int64_t skipped_steps = 0;          // mixed_fp16: steps skipped so far
  /// Every process's input position (input_position_bytes), in rank order: one, or one per rank of a
  /// multi_worker run. Its size is the number of processes the checkpoint is for.
  std::vector<std::string> positions;
  /// Loaded: where each position was read ("DIR/train.ckpt", "DIR/input-40-rank-1.ckpt"), for errors.
  std::vector<std::string> position_sources;
  /// Loaded: the number of processes that wrote it (`positions.size()` where it was read; a rank's share
  /// holds its own position at most).
  int64_t writers = 0;
};

/// "one process" or "2 ranks (mpirun -np 2)": a number of processes in messages.
std::string process_count_text(int64_t processes);

/// The state file inside a checkpoint folder.
std::filesystem::path train_checkpoint_file(const std::filesystem::path& dir);

/// Saves a checkpoint of train `train_name` into `dir` (created when missing), for the
/// `state.positions.size()` processes whose positions it holds. Throws CheckpointError.
void save_train_checkpoint(const std::filesystem::path& dir, const ModelGraph& g, const std::string& train_name,
                           const FlatBuffers<float>& buffers, const OptimizerSlots<float>& slots,
                           const TrainCheckpointState& state);

/// Loads the checkpoint in `dir` into `buffers` and `slots` and returns the rest, with every writer's
/// position (`writers` of them, each checked to be its rank's of that many after the checkpoint's
/// step). A checkpoint that is missing, truncated, damaged (CRC), of another model (tensor names or
/// shapes), of another optimizer or of another seed, or whose weights or position files are missing or
/// damaged, is refused with a CheckpointError naming the file and what is wrong; nothing is changed
/// then. The positions are the caller's to parse and restore (PipelineRun::restore_state checks that a
/// state is the same pipeline's), or to leave when the run has another number of processes.
TrainCheckpointState load_train_checkpoint(const std::filesystem::path& dir, const ModelGraph& g, uint64_t seed,
                                           FlatBuffers<float>& buffers, OptimizerSlots<float>& slots);

/// What rank `rank` of a run of `world` processes needs of the checkpoint rank 0 loaded, as bytes (rank
/// 0 sends each rank its own with Communicator::scatter): the counts and the number of writers, and,
/// when that is `world`, its position with where it was read. The weights and the optimizer's slots go
/// to every rank with the executor's sync_to_device().
std::string rank_share_bytes(const TrainCheckpointState& s, int rank, int world);
/// The state in rank_share_bytes' bytes: the counts, `writers`, and `positions` and `position_sources`
/// holding that rank's alone, or nothing.
TrainCheckpointState parse_rank_share(std::string bytes);

}  // namespace pipec
