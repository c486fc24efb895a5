#include "runtime/train/persist/train_checkpoint.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/le_codec.h"
#include "runtime/exec/iterator.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/persist/weights_file.h"

namespace pipec {

namespace fs = std::filesystem;

namespace {

// Version 2 added the number of processes and their positions (version 1 held one process's inline);
// version 3 the data's pass.
constexpr uint32_t kTrainCheckpointVersion = 3;
constexpr uint32_t kPositionVersion = 1;
constexpr const char* kKind = "pipec train checkpoint";
constexpr const char* kPositionKind = "pipec input position";
constexpr const char* kShareKind = "pipec checkpoint share";
constexpr const char* kWeightsPrefix = "weights-";
constexpr const char* kWeightsSuffix = ".safetensors";
constexpr const char* kPositionPrefix = "input-";
// More processes than any run has: a larger count in train.ckpt is damage.
constexpr uint32_t kMaxProcesses = 1u << 20;

// The optimizer of the step graph (every step graph has one optimizer_step node).
OptimizerKind optimizer_of(const ModelGraph& g) {
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::OptimizerStep) return OptimizerConfig::from_node(n).kind;
  return OptimizerKind::Sgd;
}

// The slots an optimizer keeps per parameter: m (sgd's velocity, adam's first moment), and v for adam.
std::vector<char> slot_letters(OptimizerKind kind) {
  return kind == OptimizerKind::Sgd ? std::vector<char>{'m'} : std::vector<char>{'m', 'v'};
}

std::string slot_name(char letter, const std::string& param) { return fmt::format("optimizer.{}/{}", letter, param); }

std::vector<float>& slot_buffer(OptimizerSlots<float>& s, char letter) { return letter == 'm' ? s.m : s.v; }

bool is_weights_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind(kWeightsPrefix, 0) == 0 && name.find(kWeightsSuffix) != std::string::npos;
}

bool is_position_file(const fs::path& p) { return p.filename().string().rfind(kPositionPrefix, 0) == 0; }

std::string position_file_name(int64_t step, int rank) {
  return fmt::format("{}{}-rank-{}.ckpt", kPositionPrefix, step, rank);
}

// A file that train.ckpt names, with the byte size and CRC32 it recorded for it.
struct NamedFile {
  std::string name;
  uint64_t size = 0;
  uint32_t crc = 0;
};

void write_file_entry(StateWriter& w, const std::string& name, const std::string& bytes) {
  w.write_string(name);
  w.write_u64(bytes.size());
  w.write_u32(crc32_zlib(bytes.data(), bytes.size()));
}

NamedFile read_file_entry(StateReader& r) {
  NamedFile f;
  f.name = r.read_string();
  f.size = r.read_u64();
  f.crc = r.read_u32();
  return f;
}

// The bytes of the file `f` names in `dir`, checked against the size and CRC32 train.ckpt (`state_file`)
// recorded for it.
std::string read_checked_file(const fs::path& dir, const NamedFile& f, const fs::path& state_file) {
  const fs::path path = dir / f.name;
  std::string bytes = read_file(path);
  if (bytes.size() != f.size)
    throw CheckpointError(fmt::format("{}: {} bytes, but {} says {}: truncated or replaced", path.string(),
                                      bytes.size(), state_file.string(), f.size));
  const uint32_t crc = crc32_zlib(bytes.data(), bytes.size());
  if (crc != f.crc)
    throw CheckpointError(fmt::format("{}: corrupt: CRC32 {:08x}, but {} recorded {:08x}", path.string(), crc,
                                      state_file.string(), f.crc));
  return bytes;
}

// The counts of a checkpoint, in train.ckpt's order (the optimizer's iteration count among them).
void write_counts(StateWriter& w, const TrainCheckpointState& s, int64_t iterations) {
  w.write_u64(s.seed);
  w.write_i64(s.step);
  w.write_i64(iterations);
  w.write_i64(s.epoch);
  w.write_i64(s.data_pass);
  w.write_i64(s.total_steps.value_or(-1));
  w.write_f64(s.loss_sum);
  w.write_f64(s.first_loss);
  w.write_f64(s.last_loss);
  w.write_i64(s.finite_steps);
  w.write_f64(s.loss_scale);
  w.write_i64(s.loss_scale_good_steps);
  w.write_i64(s.skipped_steps);
}

// Reads what write_counts wrote into `s`; returns the iteration count. Before version 3 there was no
// data pass: the epoch stands for it (it was the data's pass unless the run counted steps per epoch,
// whose data repeats without end, so any pass is one to restart at).
int64_t read_counts(StateReader& r, TrainCheckpointState& s, bool has_data_pass) {
  s.seed = r.read_u64();
  s.step = r.read_i64();
  const int64_t iterations = r.read_i64();
  s.epoch = r.read_i64();
  s.data_pass = has_data_pass ? r.read_i64() : s.epoch;
  const int64_t total = r.read_i64();
  if (total >= 0) s.total_steps = total;
  s.loss_sum = r.read_f64();
  s.first_loss = r.read_f64();
  s.last_loss = r.read_f64();
  s.finite_steps = r.read_i64();
  s.loss_scale = r.read_f64();
  s.loss_scale_good_steps = r.read_i64();
  s.skipped_steps = r.read_i64();
  return iterations;
}

}  // namespace

std::string process_count_text(int64_t n) {
  return n == 1 ? std::string("one process") : fmt::format("{} ranks (mpirun -np {})", n, n);
}

fs::path train_checkpoint_file(const fs::path& dir) { return dir / "train.ckpt"; }

std::string input_position_bytes(const InputPosition& p, int rank, int world, int64_t step) {
  StateWriter w(kPositionVersion);
  w.write_string(kPositionKind);
  w.write_u32(static_cast<uint32_t>(rank));
  w.write_u32(static_cast<uint32_t>(world));
  w.write_i64(step);
  w.write_string(p.pipeline_state);
  w.write_u32(p.pending ? 1 : 0);
  if (p.pending) save_chunk(w, *p.pending);
  return w.finish();
}

InputPosition parse_input_position(std::string bytes, const std::string& source, int rank, int world, int64_t step) {
  StateReader r(std::move(bytes), source);
  if (r.version() != kPositionVersion)
    throw r.error(fmt::format("input position version {} is not supported (this pipec writes version {})", r.version(),
                              kPositionVersion));
  std::string kind;
  try {
    kind = r.read_string();
  } catch (const CheckpointError&) {
  }
  if (kind != kPositionKind) throw r.error("not an input position of a training checkpoint");
  const uint32_t its_rank = r.read_u32(), its_world = r.read_u32();
  const int64_t its_step = r.read_i64();
  if (its_rank != static_cast<uint32_t>(rank) || its_world != static_cast<uint32_t>(world) || its_step != step)
    throw r.error(
        fmt::format("holds the input position of rank {} of {} after step {}, where rank {} of {} after "
                    "step {} was expected",
                    its_rank, its_world, its_step, rank, world, step));
  InputPosition p;
  p.pipeline_state = r.read_string();
  if (r.read_u32()) p.pending = restore_chunk(r);
  r.expect_end();
  return p;
}

std::string rank_share_bytes(const TrainCheckpointState& s, int rank, int world) {
  StateWriter w(kPositionVersion);
  w.write_string(kShareKind);
  write_counts(w, s, 0);  // the iteration count goes with the optimizer's slots
  w.write_i64(s.writers);
  // Another number of processes restarts the epoch: no position is any rank's.
  const bool position = s.writers == world;
  w.write_u32(position ? 1 : 0);
  if (position) {
    w.write_string(s.position_sources.at(static_cast<size_t>(rank)));
    w.write_string(s.positions.at(static_cast<size_t>(rank)));
  }
  return w.finish();
}

TrainCheckpointState parse_rank_share(std::string bytes) {
  StateReader r(std::move(bytes), "rank 0's share of the checkpoint");
  if (r.read_string() != kShareKind) throw r.error("not a share of a training checkpoint");
  TrainCheckpointState s;
  read_counts(r, s, true);
  s.writers = r.read_i64();
  if (r.read_u32()) {
    s.position_sources.push_back(r.read_string());
    s.positions.push_back(r.read_string());
  }
  r.expect_end();
  return s;
}

void save_train_checkpoint(const fs::path& dir, const ModelGraph& g, const std::string& train_name,
                           const FlatBuffers<float>& buffers, const OptimizerSlots<float>& slots,
                           const TrainCheckpointState& state) {
  const size_t world = state.positions.size();
  if (world < 1 || world > kMaxProcesses)
    throw std::logic_error(fmt::format("a training checkpoint of {} input positions", world));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointError(fmt::format("{}: cannot create the checkpoint folder: {}", dir.string(), ec.message()));
  const OptimizerKind kind = optimizer_of(g);
  const size_t n = buffers.params.size();
  std::vector<SafetensorsEntry> entries;
  for (int p : g.params)
    entries.push_back({g.values[p].name, g.values[p].shape, buffers.params.data() + g.values[p].offset});
  for (int s : g.states)
    entries.push_back({g.values[s].name, g.values[s].shape, buffers.states.data() + g.values[s].offset});
  // Slots are made by the first step; a checkpoint is only ever taken after one.
  std::vector<float> zeros;
  for (char letter : slot_letters(kind)) {
    const std::vector<float>& b = letter == 'm' ? slots.m : slots.v;
    const float* base = b.size() == n ? b.data() : (zeros.assign(n, 0.0f), zeros.data());
    for (int p : g.params)
      entries.push_back({slot_name(letter, g.values[p].name), g.values[p].shape, base + g.values[p].offset});
  }
  const std::string weights_name = fmt::format("{}{}{}", kWeightsPrefix, state.step, kWeightsSuffix);
  const std::string weights = safetensors_bytes(
      entries,
      {{"format", "pipec-checkpoint"}, {"model", g.name}, {"train", train_name}, {"step", std::to_string(state.step)}});
  write_file_atomic(dir / weights_name, weights);
  // A multi_worker run's positions, a file per rank, named by the step like the weights.
  std::vector<std::string> position_names;
  if (world > 1)
    for (size_t k = 0; k < world; ++k) {
      position_names.push_back(position_file_name(state.step, static_cast<int>(k)));
      write_file_atomic(dir / position_names.back(), state.positions[k]);
    }

  StateWriter w(kTrainCheckpointVersion);
  w.write_string(kKind);
  w.write_string(train_name);
  w.write_string(g.name);
  w.write_string(optimizer_kind_name(kind));
  w.write_string(enum_text(g.precision));
  write_counts(w, state, slots.iterations);
  write_file_entry(w, weights_name, weights);
  w.write_u32(static_cast<uint32_t>(world));
  if (world == 1) w.write_string(state.positions[0]);
  for (size_t k = 0; k < position_names.size(); ++k) write_file_entry(w, position_names[k], state.positions[k]);
  w.write_to_file(train_checkpoint_file(dir));

  // train.ckpt now names the new files: the older ones, and temporaries of saves killed half-way, go.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool stale_weights = is_weights_file(e.path()) && name != weights_name;
    const bool stale_position = is_position_file(e.path()) &&
                                std::find(position_names.begin(), position_names.end(), name) == position_names.end();
    const bool stale_temp = name.rfind("train.ckpt.tmp.", 0) == 0;
    if (stale_weights || stale_position || stale_temp) fs::remove(e.path(), ec);
  }
}

TrainCheckpointState load_train_checkpoint(const fs::path& dir, const ModelGraph& g, uint64_t seed,
                                           FlatBuffers<float>& buffers, OptimizerSlots<float>& slots) {
  const fs::path file = train_checkpoint_file(dir);
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw CheckpointError(fmt::format("{}: no training checkpoint to resume from", file.string()));
  StateReader r = StateReader::from_file(file);
  if (r.version() < 1 || r.version() > kTrainCheckpointVersion)
    throw r.error(fmt::format("training checkpoint version {} is not supported (this pipec writes version {})",
                              r.version(), kTrainCheckpointVersion));
  // A pipeline's state file has the same framing and version; its first field is no such string.
  std::string file_kind;
  try {
    file_kind = r.read_string();
  } catch (const CheckpointError&) {
  }
  if (file_kind != kKind) throw r.error("not a training checkpoint (a pipeline's iterator state?)");
  const std::string train_name = r.read_string();
  const std::string model_name = r.read_string();
  const std::string written_by = fmt::format("train `{}` (model `{}`)", train_name, model_name);
  const std::string optimizer = r.read_string();
  const OptimizerKind kind = optimizer_of(g);
  if (optimizer != optimizer_kind_name(kind))
    throw r.error(fmt::format("the checkpoint of {} was written with optimizer {}; this spec trains with {}",
                              written_by, optimizer, optimizer_kind_name(kind)));
  // The loss scale and the rounding belong to the precision: resuming in another would not continue the run.
  const std::string precision = r.read_string();
  if (enum_from_text<Precision>(precision) != g.precision)
    throw r.error(fmt::format("the checkpoint of {} was written with precision {}; this spec trains in {}", written_by,
                              precision, enum_text(g.precision)));
  TrainCheckpointState s;
  const int64_t iterations = read_counts(r, s, r.version() >= 3);
  if (s.seed != seed)
    throw r.error(fmt::format("the checkpoint was written with --seed {}; resume with the same seed", s.seed));
  const NamedFile weights_file = read_file_entry(r);
  // The positions: inline for one process (version 1 held its fields there without a framing of their own).
  std::vector<NamedFile> position_files;
  uint32_t processes = 1;
  if (r.version() == 1) {
    InputPosition p;
    p.pipeline_state = r.read_string();
    if (r.read_u32()) p.pending = restore_chunk(r);
    s.positions.push_back(input_position_bytes(p, 0, 1, s.step));
  } else {
    processes = r.read_u32();
    if (processes < 1 || processes > kMaxProcesses)
      throw r.error(fmt::format("corrupt training checkpoint: it holds the positions of {} processes", processes));
    if (processes == 1) s.positions.push_back(r.read_string());
    else
      for (uint32_t k = 0; k < processes; ++k) position_files.push_back(read_file_entry(r));
  }
  r.expect_end();
  if (s.step < 1 || iterations < 0)
    throw r.error(fmt::format("corrupt training checkpoint: step {}, iteration {}", s.step, iterations));
  s.writers = processes;

  // The files it names, checked against the sizes and CRCs recorded with them.
  if (fs::path(weights_file.name).filename().string() != weights_file.name || !is_weights_file(weights_file.name))
    throw r.error(fmt::format("corrupt training checkpoint: it names `{}` as its weights", weights_file.name));
  for (const NamedFile& p : position_files) {
    if (fs::path(p.name).filename().string() != p.name || !is_position_file(p.name))
      throw r.error(fmt::format("corrupt training checkpoint: it names `{}` as an input position", p.name));
    s.positions.push_back(read_checked_file(dir, p, file));
  }
  for (uint32_t k = 0; k < processes; ++k) {
    s.position_sources.push_back(processes == 1 ? file.string() : (dir / position_files[k].name).string());
    // Each position is checked here, on the process that read the files, before any rank restores one.
    parse_input_position(s.positions[k], s.position_sources[k], static_cast<int>(k), static_cast<int>(processes),
                         s.step);
  }
  const fs::path weights_path = dir / weights_file.name;
  const std::string bytes = read_checked_file(dir, weights_file, file);
  SafetensorsFile f;
  try {
    f = parse_safetensors(bytes, weights_path.string());
  } catch (const std::runtime_error& e) {
    throw CheckpointError(e.what());
  }

  // Into copies first, so that a refused checkpoint leaves the executor as it was.
  FlatBuffers<float> b = buffers;
  OptimizerSlots<float> o;
  const size_t n = b.params.size();
  std::vector<TensorSlot> into = weight_slots(g, b);
  for (char letter : slot_letters(kind)) {
    std::vector<float>& buffer = slot_buffer(o, letter);
    buffer.assign(n, 0.0f);
    for (int p : g.params)
      into.push_back({slot_name(letter, g.values[p].name), g.values[p].shape, buffer.data() + g.values[p].offset});
  }
  std::vector<std::string> problems = copy_tensors(f, into, fmt::format("model `{}` or its optimizer's slots", g.name));
  if (!problems.empty())
    throw CheckpointError(fmt::format("{}: the checkpoint of {} does not fit model `{}` {}", weights_path.string(),
                                      written_by, g.name, problems_text(problems)));
  o.iterations = iterations;
  buffers.params = std::move(b.params);
  buffers.states = std::move(b.states);
  slots = std::move(o);
  return s;
}

}  // namespace pipec
