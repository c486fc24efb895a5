#include "runtime/exec/auto_shard.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/exec/file_shard.h"
#include "runtime/exec/iterator.h"
#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"
#include "runtime/plan/shard_plan.h"

namespace pipec {

std::string ShardError::diagnostic() const {
  return loc_.valid() ? fmt::format("{}: error: {}", loc_.to_string(), what()) : fmt::format("error: {}", what());
}

namespace {

// "2nd", "3rd", "4th", "11th", "21st".
std::string ordinal(int64_t n) {
  const int64_t tens = n % 100, ones = n % 10;
  const char* suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
  return fmt::format("{}{}", n, suffix);
}

std::string files_text(int64_t n) { return fmt::format("{} file{}", n, n == 1 ? "" : "s"); }

std::string place(const Stage& s) { return s.loc.valid() ? fmt::format("{}:{}", s.loc.line, s.loc.col) : "?"; }

// The batches nearest the output: on each path from the output towards the sources, the first batch or
// padded_batch. A path that meets an unbatch first is not batched at the output: nothing on it divides.
std::vector<int> output_batches(const Plan& plan) {
  std::vector<int> found;
  std::vector<bool> seen(plan.stages.size(), false);
  std::vector<int> todo = {static_cast<int>(plan.stages.size()) - 1};
  while (!todo.empty()) {
    const int i = todo.back();
    todo.pop_back();
    if (i < 0 || seen[static_cast<size_t>(i)]) continue;
    seen[static_cast<size_t>(i)] = true;
    const Stage& s = plan.stages[static_cast<size_t>(i)];
    if (s.kind == StageKind::Batch || s.kind == StageKind::PaddedBatch) found.push_back(i);
    else if (s.kind != StageKind::Unbatch)
      for (int in : s.inputs) todo.push_back(in);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// A batch of fixed size whose dimension the stages after it carry in their element types.
struct FixedBatch {
  int64_t size;  // as written
  int stage;
};

// batch(B) -> batch(B / n) for each batch nearest the output, and B -> B / n in the leading dimension of
// the element types after it (a batch of fixed size: drop_remainder, or data that never ends). The
// report gets the global and per-worker size of the last such batch.
void divide_batches(Plan& plan, int64_t n, ShardReport& report) {
  std::vector<std::vector<FixedBatch>> carried(plan.stages.size());  // per stage: the batches it carries
  for (int b : output_batches(plan)) {
    Stage& s = plan.stages[static_cast<size_t>(b)];
    Value* size = nullptr;
    for (auto& [name, v] : s.args)
      if (name == "size") size = &v;
    if (!size || size->kind != Value::Int) throw std::logic_error("auto_shard: a batch without its size");
    const int64_t global = size->i;
    if (global % n != 0)
      throw ShardError(s.loc, fmt::format("the batch size {} does not divide among {} workers: under multi_worker "
                                          "each worker batches the global batch / {}; make it a multiple of {}",
                                          global, n, n, n));
    size->i = global / n;
    report.global_batch = global;
    report.worker_batch = global / n;
    const bool fixed = !s.element.fields.empty() && s.element.fields[0].type->rank() >= 1 &&
                       s.element.fields[0].type->shape[0] == global;
    if (fixed) carried[static_cast<size_t>(b)].push_back({global, b});
  }
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    Stage& s = plan.stages[j];
    std::vector<FixedBatch>& sizes = carried[j];
    if (s.kind != StageKind::Batch && s.kind != StageKind::PaddedBatch)
      for (int in : s.inputs)
        for (const FixedBatch& f : carried[static_cast<size_t>(in)]) sizes.push_back(f);
    if (sizes.empty()) continue;
    if (s.kind == StageKind::Unbatch) {  // the divided dimension ends here
      sizes.clear();
      continue;
    }
    // The function was typed (and would be compiled) for batches of exactly B rows.
    if (s.fn) {
      const Stage& batch = plan.stages[static_cast<size_t>(sizes[0].stage)];
      throw ShardError(s.loc,
                       fmt::format("the {} at {} reads batches of exactly {} elements (the batch at {}), "
                                   "but each of {} workers batches {}: write it before the batch",
                                   stage_name(s.kind), place(s), sizes[0].size, place(batch), n, sizes[0].size / n));
    }
    // Every field of a batched element has its batch dimensions first: the divided one is the leading one.
    for (Field& f : s.element.fields) {
      const Type& t = *f.type;
      if (t.rank() < 1) continue;  // enumerate's index
      const bool divided =
          std::any_of(sizes.begin(), sizes.end(), [&](const FixedBatch& b) { return b.size == t.shape[0]; });
      if (!divided) continue;
      Type nt = t;
      nt.shape[0] /= n;
      f.type = std::make_shared<const Type>(std::move(nt));
    }
  }
}

// A source that reads a list of files, and how many its pattern matches.
struct SourceFiles {
  int stage;
  int64_t files;
};

// Why the plan cannot be sharded by files among n workers, "" when it can. Counts the files of every
// source that reads a list of them into `sources` and `total`.
std::string by_files_refusal(const Plan& plan, int64_t n, const std::string& spec_dir,
                             std::vector<SourceFiles>& sources, int64_t& total) {
  // The shape of the graph is the first reason to give: more files would not change it.
  std::string structure, why;
  auto refuse = [&](std::string reason) {
    if (why.empty()) why = std::move(reason);
  };
  std::vector<bool> reads_tfrecord(plan.stages.size(), false);
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    bool tfrecord_input = false;
    for (int in : s.inputs) tfrecord_input = tfrecord_input || reads_tfrecord[static_cast<size_t>(in)];
    reads_tfrecord[i] = s.kind == StageKind::Tfrecord || tfrecord_input;
    if ((s.kind == StageKind::ChooseFrom || s.kind == StageKind::SampleFrom) && structure.empty())
      structure = fmt::format("a {} picks among its datasets by position", stage_name(s.kind));
    if (s.kind == StageKind::Zip && tfrecord_input && structure.empty())
      structure = "a zip joins tfrecord records by position, and files need not hold as many records as each other";
    if (!s.inputs.empty()) continue;
    const Value* pattern = file_list_pattern(s);
    if (!pattern || pattern->kind != Value::String) {
      const bool one_file = s.kind == StageKind::Csv || s.kind == StageKind::Npy;
      refuse(fmt::format("{} reads {}", stage_name(s.kind), one_file ? "one file" : "no files"));
      continue;
    }
    try {
      const int64_t count = static_cast<int64_t>(expand_glob(resolve_spec_path(spec_dir, pattern->s)).size());
      sources.push_back({static_cast<int>(i), count});
      total += count;
      if (count < n) refuse(fmt::format("\"{}\" matches {}, fewer than {} workers", pattern->s, files_text(count), n));
    } catch (const DataError&) {
      refuse(fmt::format("\"{}\" matches no file", pattern->s));
    }
  }
  return structure.empty() ? why : structure;
}

}  // namespace

AutoShard auto_shard(const Plan& plan, int64_t workers, int64_t index, const std::string& spec_dir) {
  AutoShard out;
  out.plan = plan;
  ShardReport& r = out.report;
  if (index < 0 || index >= std::max<int64_t>(workers, 1))
    throw std::invalid_argument(fmt::format("worker {} is not in [0, {})", index, std::max<int64_t>(workers, 1)));
  if (workers <= 1) {
    r.description = "one worker: not sharded";
    return out;
  }
  // The passes fuse and vectorize stages around the batch (map_batch, per_row = B); sharding comes first.
  for (const Stage& s : plan.stages)
    if (stage_has(s.kind, StageFlag::Fused) || s.arg("per_row"))
      throw std::logic_error("auto_shard takes the plan as lowered, before the optimizer passes");
  r.workers = workers;
  r.index = index;

  divide_batches(out.plan, workers, r);

  std::vector<SourceFiles> sources;
  const std::string why = by_files_refusal(out.plan, workers, spec_dir, sources, r.files);
  if (why.empty()) {
    r.policy = ShardPolicy::ByFiles;
    for (const SourceFiles& f : sources) {
      out.plan.stages[static_cast<size_t>(f.stage)].args.emplace_back(kFileShardArg, file_shard_value(workers, index));
      r.worker_files += files_in_share(f.files, workers, index);
    }
    r.description = fmt::format("sharded by files: {} over {} workers, worker {} reads {}", files_text(r.files),
                                workers, index, r.worker_files);
  } else {
    r.policy = ShardPolicy::ByElements;
    out.plan = shard_after_sources(out.plan, workers, index);
    r.description = fmt::format("sharded by elements ({}): every {} element from {}", why, ordinal(workers), index);
  }
  // A cache file holds one worker's share: another worker (or an unsharded run) must not replay it.
  for (Stage& s : out.plan.stages)
    for (auto& [name, v] : s.args)
      if (s.kind == StageKind::Cache && name == "where" && v.kind == Value::String)
        v.s = fmt::format("{}.worker-{}-of-{}", v.s, index, workers);
  if (r.global_batch) r.description += fmt::format("; batch {} is {} per worker", r.global_batch, r.worker_batch);
  return out;
}

}  // namespace pipec
