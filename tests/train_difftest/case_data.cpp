#include "tests/train_difftest/case_data.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/io/npy.h"
#include "runtime/ops/kernel.h"
#include "runtime/train/persist/weights_file.h"
#include "tests/difftest/gen_types.h"

namespace pipec::train_difftest {

namespace fs = std::filesystem;
using difftest::Rng;

namespace {

double log_uniform(Rng& r, double lo, double hi) { return std::exp(r.real(std::log(lo), std::log(hi))); }

// A standard normal draw (Box-Muller), so that the draws depend on the seed alone.
double normal(Rng& r) {
  const double u = r.real(1e-12, 1), v = r.real(0, 1);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void fill_target(Rng& r, const TrainCase& c, Tensor& t) {
  const int64_t n = t.num_elements();
  const int64_t len = c.target.shape.empty() ? 1 : c.target.shape.back();
  switch (c.target_kind) {
    case TargetKind::Values: {
      const double scale = log_uniform(r, 0.1, 3);
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(r.real(-scale, scale));
      return;
    }
    case TargetKind::Unit:
      for (int64_t i = 0; i < n; ++i) {
        const double p = r.chance(0.3) ? static_cast<double>(r.range(0, 1)) : r.real(0, 1);
        t.data<float>()[i] = static_cast<float>(p);
      }
      return;
    case TargetKind::OneHot:
      for (int64_t row = 0; row < n / len; ++row) {
        float* p = t.data<float>() + row * len;
        std::fill(p, p + len, 0.0f);
        p[r.range(0, len - 1)] = 1;
      }
      return;
    case TargetKind::Probabilities:
      for (int64_t row = 0; row < n / len; ++row) {
        float* p = t.data<float>() + row * len;
        double sum = 0;
        std::vector<double> w(static_cast<size_t>(len));
        for (double& x : w) sum += x = r.real(0, 1);
        for (int64_t j = 0; j < len; ++j) p[j] = static_cast<float>(w[static_cast<size_t>(j)] / sum);
      }
      return;
    case TargetKind::Labels:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = r.range(0, c.classes - 1);
      return;
  }
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::map<std::string, Tensor> draw_data(const TrainCase& c) {
  Rng r(c.settings.seed * 0xD1B54A32D192ED03ull + 5);
  const int64_t rows = c.settings.steps * c.settings.batch;
  std::map<std::string, Tensor> out;
  for (const DataField& f : c.inputs) {
    Shape s = f.shape;
    s.insert(s.begin(), rows);
    if (f.ids > 0) {  // embedding ids, drawn as i64 and stored in the field's integer type
      Tensor ids = Tensor::empty(DType::I64, s);
      for (int64_t i = 0; i < ids.num_elements(); ++i) ids.data<int64_t>()[i] = r.range(0, f.ids - 1);
      out[f.name] = f.dtype == DType::I64 ? ids : cast_tensor(ids, f.dtype);
      continue;
    }
    Tensor t = Tensor::empty(DType::F32, s);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(r.real(-f.scale, f.scale));
    out[f.name] = t;
  }
  Shape s = c.target.shape;
  s.insert(s.begin(), rows);
  Tensor t = Tensor::empty(c.target.dtype, s);
  fill_target(r, c, t);
  out[c.target.name] = t;
  return out;
}

FlatBuffers<float> draw_initial_weights(const ModelGraph& g, uint64_t seed) {
  Rng r(seed * 0xA24BAED4963EE407ull + 11);
  FlatBuffers<float> b;
  b.params.assign(static_cast<size_t>(g.param_elements()), 0.0f);
  b.grads.assign(b.params.size(), 0.0f);
  b.states.assign(static_cast<size_t>(g.state_elements()), 0.0f);
  for (const TensorSlot& slot : weight_slots(g, b)) {
    const int64_t n = shape_num_elements(slot.shape);
    auto uniform = [&](double lo, double hi) {
      for (int64_t i = 0; i < n; ++i) slot.data[i] = static_cast<float>(r.real(lo, hi));
    };
    if (ends_with(slot.name, "/kernel")) {
      // Keras' fans: [in, out] for dense; the receptive field times the last two axes for convolutions.
      const Shape& s = slot.shape;
      double receptive = 1;
      for (size_t i = 0; i + 2 < s.size(); ++i) receptive *= static_cast<double>(s[i]);
      const double fans = receptive * static_cast<double>(s[s.size() - 2] + s.back());
      const double gain = log_uniform(r, 0.5, 2);
      if (r.chance(0.5)) {
        const double limit = gain * std::sqrt(6 / fans);
        uniform(-limit, limit);
      } else {
        const double sd = gain * std::sqrt(2 / fans);
        for (int64_t i = 0; i < n; ++i) slot.data[i] = static_cast<float>(sd * normal(r));
      }
    } else if (ends_with(slot.name, "/bias")) {
      const double limit = log_uniform(r, 0.01, 0.5);
      uniform(-limit, limit);
    } else if (ends_with(slot.name, "/gamma")) {
      uniform(0.5, 1.5);
    } else if (ends_with(slot.name, "/beta")) {
      uniform(-0.3, 0.3);
    } else if (ends_with(slot.name, "/moving_mean")) {
      uniform(-0.5, 0.5);
    } else if (ends_with(slot.name, "/moving_variance")) {
      uniform(0.5, 2);
    } else {
      uniform(-0.1, 0.1);
    }
  }
  return b;
}

std::string pipec_command(const CaseSettings& s, const std::string& executor) {
  return fmt::format(
      "pipec run spec.pipe --init init.safetensors --seed {} --threads {}{}{} --executor {} --save {}.safetensors "
      "--metrics {}.jsonl",
      s.seed, s.threads, s.direct_conv ? " --conv direct" : "", s.emulated_bf16 ? " --cpu-bf16 emulated" : "", executor,
      executor, executor);
}

void write_case_folder(const fs::path& dir, const std::string& spec, const CaseSettings& s,
                       const std::map<std::string, Tensor>& data, const std::map<std::string, std::string>& extra) {
  fs::create_directories(dir / "data");
  std::ofstream(dir / "spec.pipe") << spec;
  for (const auto& [name, t] : data) write_npy((dir / "data" / (name + ".npy")).string(), t);
  write_case_json(dir, s, extra);
}

void write_case_json(const fs::path& dir, const CaseSettings& s, const std::map<std::string, std::string>& extra) {
  nlohmann::ordered_json j;
  j["seed"] = s.seed;
  j["threads"] = s.threads;
  j["conv"] = s.direct_conv ? "direct" : "auto";
  if (s.emulated_bf16) j["cpu_bf16"] = "emulated";
  j["batch"] = s.batch;
  j["steps"] = s.steps;
  if (s.replicas > 1) j["replicas"] = s.replicas;
  j["command"] = pipec_command(s, "fast");
  for (const auto& [k, v] : extra) j[k] = v;
  std::ofstream(dir / "case.json") << j.dump(2) << "\n";
}

CaseFolder read_case_folder(const fs::path& dir) {
  CaseFolder c;
  c.dir = dir;
  const fs::path json_path = dir / "case.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_all(json_path));
    c.settings.seed = j.at("seed").get<uint64_t>();
    c.settings.threads = j.at("threads").get<int>();
    const std::string conv = j.at("conv").get<std::string>();
    if (conv != "auto" && conv != "direct") throw std::runtime_error("\"conv\" must be auto or direct, not " + conv);
    c.settings.direct_conv = conv == "direct";
    if (j.contains("cpu_bf16")) {
      const std::string bf16 = j.at("cpu_bf16").get<std::string>();
      if (bf16 != "auto" && bf16 != "emulated")
        throw std::runtime_error("\"cpu_bf16\" must be auto or emulated, not " + bf16);
      c.settings.emulated_bf16 = bf16 == "emulated";
    }
    c.settings.batch = j.at("batch").get<int64_t>();
    c.settings.steps = j.at("steps").get<int64_t>();
    if (j.contains("replicas")) c.settings.replicas = j.at("replicas").get<int>();
    if (j.contains("found")) c.note = j.at("found").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(json_path.string() + ": " + e.what());
  }
  if (c.settings.threads < 1 || c.settings.batch < 1 || c.settings.steps < 1 || c.settings.replicas < 1)
    throw std::runtime_error(json_path.string() + ": threads, batch, steps and replicas must be at least 1");
  if (!fs::is_directory(dir / "data")) throw std::runtime_error((dir / "data").string() + ": no such folder");
  for (const auto& e : fs::directory_iterator(dir / "data"))
    if (e.path().extension() == ".npy") c.data[e.path().stem().string()] = read_npy(e.path().string());
  return c;
}

Tensor rows_of(const Tensor& t, int64_t first, int64_t count) {
  Shape s = t.shape();
  const int64_t per_row = s.at(0) > 0 ? t.num_elements() / s[0] : 0;
  if (first + count > s[0])
    throw std::runtime_error(fmt::format("rows {}..{} of a tensor of {} rows", first, first + count, s[0]));
  s[0] = count;
  Tensor out = Tensor::empty(t.dtype(), s);
  const size_t bytes = static_cast<size_t>(per_row) * dtype_size(t.dtype());
  std::memcpy(out.raw(), t.raw() + static_cast<size_t>(first) * bytes, static_cast<size_t>(count) * bytes);
  return out;
}

}  // namespace pipec::train_difftest
