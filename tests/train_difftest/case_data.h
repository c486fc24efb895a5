// A training difftest case on disk and the random draws that fill it: the data of every step and the
// initial weights.
//
// A case folder (what a failure keeps, and what tests/train_difftest/regressions holds):
//
//   spec.pipe          the train block; its data pipeline reads data/<field>.npy
//   data/<field>.npy   every step's rows of each field (steps x batch rows)
//   init.safetensors   the initial weights, as `pipec run --init` reads them
//   case.json          the settings (seed, threads, conv algorithm, batch, steps) and, as written, what the
//                      machine was (oneDNN's ISA, the fast executor's description) and what was found
//
// So a kept case runs by hand too: `pipec run spec.pipe --init init.safetensors --seed S --threads N
// [--conv direct] --executor fast|reference --save w.safetensors` (case.json's "command").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/train/step_executor.h"
#include "tests/train_difftest/model_generator.h"

namespace pipec::train_difftest {

/// Every field's rows for all the steps (steps x batch rows each), drawn from the case's seed: inputs
/// uniform in [-scale, scale], targets as their kind says.
std::map<std::string, Tensor> draw_data(const TrainCase& c);

/// Initial weights for `g` that pipec's own initializer would not give: kernels drawn glorot-like
/// (uniform or normal, scaled by a gain between 0.5 and 2), biases nonzero (uniform in +-b, b between
/// 0.01 and 0.5), batch_norm's and layer_norm's gamma around 1 and beta around 0, moving statistics
/// away from 0 and 1.
FlatBuffers<float> draw_initial_weights(const ModelGraph& g, uint64_t seed);

/// A case as read back from its folder.
struct CaseFolder {
  std::filesystem::path dir;
  CaseSettings settings;
  std::map<std::string, Tensor> data;  // by field
  std::string note;                    // case.json's "found", when it has one
};

/// Writes spec.pipe, case.json (with `extra` fields merged in: "isa", "fast", "found") and data/*.npy.
void write_case_folder(const std::filesystem::path& dir, const std::string& spec, const CaseSettings& s,
                       const std::map<std::string, Tensor>& data, const std::map<std::string, std::string>& extra = {});

/// Writes (or rewrites) case.json alone.
void write_case_json(const std::filesystem::path& dir, const CaseSettings& s,
                     const std::map<std::string, std::string>& extra = {});

/// Reads a case folder written by write_case_folder (the spec is compiled from dir/spec.pipe).
/// Throws std::runtime_error naming the file for one that is missing or malformed.
CaseFolder read_case_folder(const std::filesystem::path& dir);

/// The command that runs a kept case by hand on one executor.
std::string pipec_command(const CaseSettings& s, const std::string& executor);

/// Rows [first, first + count) of `t` (its first axis), as a tensor of their own.
Tensor rows_of(const Tensor& t, int64_t first, int64_t count);

}  // namespace pipec::train_difftest
