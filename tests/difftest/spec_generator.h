// Random, type-correct pipelines: from a seed, a `.pipe` spec and the data files its source reads.
//
//   GeneratedCase c = generate_case(42);
//   write_case(c, "/tmp/case42");      // writes spec.pipe and data/...
//
// A spec has one source (range, npy files, a zip of two npy files, a concatenate, a choose_from or a
// sample_from of two npy files, text files read by text_lines, binary files read by
// fixed_length_records, or a tfrecord file written with the runtime's own writer) and a random chain of
// stages: maps with random bodies, filters, batch with and without drop_remainder, unbatch, shuffle
// with a seed, take, skip, shard, repeat, cache, prefetch, enumerate, window, scan, rebatch,
// bucket_by_length, group_by_window, rejection_resample, pack, flat_map and interleave (each element a
// range of one of its fields). Every pipeline is finite and small (at most a few hundred elements).
// Unbatched maps may also write twin fields (compare_twins in compare_outputs.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec::difftest {

struct GeneratedCase {
  uint64_t seed = 0;
  std::string spec;                                                         // the text of spec.pipe
  std::vector<std::pair<std::string, Tensor>> npy_files;                    // path relative to the case folder
  std::vector<std::pair<std::string, std::vector<std::string>>> tfrecords;  // path, serialized tf.Examples
  std::vector<std::pair<std::string, std::string>> raw_files;               // path, bytes (text lines, records)
};

/// `known_bugs`: also generate the patterns that hit known, reported runtime bugs (docs/design.md,
/// "Differential testing"); none is open at present, so it changes nothing today.
GeneratedCase generate_case(uint64_t seed, bool known_bugs = false);

/// Writes spec.pipe and the data files into `dir` (created if needed).
void write_case(const GeneratedCase& c, const std::filesystem::path& dir);

}  // namespace pipec::difftest
