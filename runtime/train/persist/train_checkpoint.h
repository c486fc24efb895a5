// Training checkpoints (`pipec run --checkpoint DIR` on a spec with a train block): everything a run
// needs to go on exactly where it was, so that a run killed and resumed ends with the weights of a run
// that never stopped, bit for bit (same executor and thread count).
//
// DIR holds two files:
//   weights-<step>.safetensors  the parameters and state tensors, named as `pipec explain` (and --save)
//                               names them, then the optimizer's slots as `optimizer.m/<name>` and
//                               `optimizer.v/<name>` (adam's moments; sgd's velocity in m), all F32;
//                               readable by the safetensors package like any --save file
//   train.ckpt                  a state file (runtime/exec/checkpoint_io.h: magic, version, CRC32) with,
//                               in order: the string "pipec train checkpoint", the train block's and the
//                               model's names, the optimizer's kind, the precision, the seed, the step
//                               count, the optimizer's iteration count, the epoch, the total steps (-1 when
//                               not known yet), the smoothed-loss sum, the first and the last loss, the
//                               number of finite losses, the loss scale with its good-step and skipped-step
//                               counts, the weights file's name, byte size and CRC32, the input pipeline's
//                               state (PipelineRun::save_state), and the batches of the pipeline's last
//                               chunk not trained on yet (a flag, then the chunk).
// Dropout and the pipeline's random ops are keyed by (seed, step or element index), so the seed and the
// counts are the whole random state.
//
// A save writes the weights file, then train.ckpt, each atomically (write_file_atomic: a temporary
// file, fsync, rename), then removes older weights files. train.ckpt names the weights file it goes
// with, so a kill at any point leaves the previous checkpoint whole: until the rename of train.ckpt it
// still names the previous weights file, which is removed only after.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/core/chunk.h"
#include "runtime/exec/checkpoint_io.h"
#include "runtime/model/model_graph.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// What a training checkpoint holds beside the tensors.
struct TrainCheckpointState {
  uint64_t seed = 0;
  int64_t step = 0;   // steps done
  int64_t epoch = 0;  // the data pass of the last batch
  std::optional<int64_t> total_steps;
  double loss_sum = 0;                // the smoothed loss's moving sum before bias correction
  double first_loss = 0;              // of step 1
  double last_loss = 0;               // of the last step
  int64_t finite_steps = 0;           // steps whose loss entered the smoothed loss (mixed_fp16 skips others)
  double loss_scale = 1;              // mixed_fp16's dynamic loss scale (1 otherwise)
  int64_t loss_scale_good_steps = 0;  // mixed_fp16: finite steps since the scale last changed
  int64_t skipped_steps = 0;          // mixed_fp16: steps skipped so far
  std::string pipeline_state;         // PipelineRun::save_state() of the data pipeline
  std::optional<Chunk> pending;       // rows (batches) of the last chunk pulled that no step has used yet
};

/// The state file inside a checkpoint folder.
std::filesystem::path train_checkpoint_file(const std::filesystem::path& dir);

/// Saves a checkpoint of train `train_name` into `dir` (created when missing). Throws CheckpointError.
void save_train_checkpoint(const std::filesystem::path& dir, const ModelGraph& g, const std::string& train_name,
                           const FlatBuffers<float>& buffers, const OptimizerSlots<float>& slots,
                           const TrainCheckpointState& state);

/// Loads the checkpoint in `dir` into `buffers` and `slots` and returns the rest. A checkpoint that is
/// missing, truncated, damaged (CRC), of another model (tensor names or shapes), of another optimizer
/// or of another seed is refused with a CheckpointError naming the file and what is wrong; nothing is
/// changed then. The pipeline state is the caller's to restore (PipelineRun::restore_state checks that
/// it is the same pipeline's).
TrainCheckpointState load_train_checkpoint(const std::filesystem::path& dir, const ModelGraph& g, uint64_t seed,
                                           FlatBuffers<float>& buffers, OptimizerSlots<float>& slots);

}  // namespace pipec
