#include "runtime/train/persist/train_checkpoint.h"

#include <fmt/format.h>

#include "runtime/core/le_codec.h"
#include "runtime/exec/iterator.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/persist/weights_file.h"

namespace pipec {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kTrainCheckpointVersion = 1;
constexpr const char* kKind = "pipec train checkpoint";
constexpr const char* kWeightsPrefix = "weights-";
constexpr const char* kWeightsSuffix = ".safetensors";

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

}  // namespace

fs::path train_checkpoint_file(const fs::path& dir) { return dir / "train.ckpt"; }

void save_train_checkpoint(const fs::path& dir, const ModelGraph& g, const std::string& train_name,
                           const FlatBuffers<float>& buffers, const OptimizerSlots<float>& slots,
                           const TrainCheckpointState& state) {
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

  StateWriter w(kTrainCheckpointVersion);
  w.write_string(kKind);
  w.write_string(train_name);
  w.write_string(g.name);
  w.write_string(optimizer_kind_name(kind));
  w.write_string(enum_text(g.precision));
  w.write_u64(state.seed);
  w.write_i64(state.step);
  w.write_i64(slots.iterations);
  w.write_i64(state.epoch);
  w.write_i64(state.total_steps.value_or(-1));
  w.write_f64(state.loss_sum);
  w.write_f64(state.first_loss);
  w.write_f64(state.last_loss);
  w.write_i64(state.finite_steps);
  w.write_f64(state.loss_scale);
  w.write_i64(state.loss_scale_good_steps);
  w.write_i64(state.skipped_steps);
  w.write_string(weights_name);
  w.write_u64(weights.size());
  w.write_u32(crc32_zlib(weights.data(), weights.size()));
  w.write_string(state.pipeline_state);
  w.write_u32(state.pending ? 1 : 0);
  if (state.pending) save_chunk(w, *state.pending);
  w.write_to_file(train_checkpoint_file(dir));

  // train.ckpt now names the new weights: the older ones, and temporaries of saves killed half-way, go.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool stale_weights = is_weights_file(e.path()) && name != weights_name;
    const bool stale_temp = name.rfind("train.ckpt.tmp.", 0) == 0;
    if (stale_weights || stale_temp) fs::remove(e.path(), ec);
  }
}

TrainCheckpointState load_train_checkpoint(const fs::path& dir, const ModelGraph& g, uint64_t seed,
                                           FlatBuffers<float>& buffers, OptimizerSlots<float>& slots) {
  const fs::path file = train_checkpoint_file(dir);
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw CheckpointError(fmt::format("{}: no training checkpoint to resume from", file.string()));
  StateReader r = StateReader::from_file(file);
  if (r.version() != kTrainCheckpointVersion)
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
  s.seed = r.read_u64();
  if (s.seed != seed)
    throw r.error(fmt::format("the checkpoint was written with --seed {}; resume with the same seed", s.seed));
  s.step = r.read_i64();
  const int64_t iterations = r.read_i64();
  s.epoch = r.read_i64();
  const int64_t total = r.read_i64();
  if (total >= 0) s.total_steps = total;
  s.loss_sum = r.read_f64();
  s.first_loss = r.read_f64();
  s.last_loss = r.read_f64();
  s.finite_steps = r.read_i64();
  s.loss_scale = r.read_f64();
  s.loss_scale_good_steps = r.read_i64();
  s.skipped_steps = r.read_i64();
  const std::string weights_name = r.read_string();
  const uint64_t weights_size = r.read_u64();
  const uint32_t weights_crc = r.read_u32();
  s.pipeline_state = r.read_string();
  if (r.read_u32()) s.pending = restore_chunk(r);
  r.expect_end();
  if (s.step < 1 || iterations < 0)
    throw r.error(fmt::format("corrupt training checkpoint: step {}, iteration {}", s.step, iterations));

  // The weights file it names, checked against the size and CRC recorded with it.
  if (fs::path(weights_name).filename().string() != weights_name || !is_weights_file(weights_name))
    throw r.error(fmt::format("corrupt training checkpoint: it names `{}` as its weights", weights_name));
  const fs::path weights_path = dir / weights_name;
  const std::string bytes = read_file(weights_path);
  if (bytes.size() != weights_size)
    throw CheckpointError(fmt::format("{}: {} bytes, but {} says {}: truncated or replaced", weights_path.string(),
                                      bytes.size(), file.string(), weights_size));
  const uint32_t crc = crc32_zlib(bytes.data(), bytes.size());
  if (crc != weights_crc)
    throw CheckpointError(fmt::format("{}: corrupt: CRC32 {:08x}, but {} recorded {:08x}", weights_path.string(), crc,
                                      file.string(), weights_crc));
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
