#include "runtime/train/persist/weights_file.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace pipec {

std::vector<TensorSlot> weight_slots(const ModelGraph& g, FlatBuffers<float>& buffers) {
  std::vector<TensorSlot> out;
  for (int p : g.params)
    out.push_back({g.values[p].name, g.values[p].shape, buffers.params.data() + g.values[p].offset});
  for (int s : g.states)
    out.push_back({g.values[s].name, g.values[s].shape, buffers.states.data() + g.values[s].offset});
  return out;
}

std::vector<std::string> copy_tensors(const SafetensorsFile& f, const std::vector<TensorSlot>& into,
                                      const std::string& owner) {
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const TensorSlot& t : into) {
    expected.insert(t.name);
    auto it = f.tensors.find(t.name);
    if (it == f.tensors.end())
      problems.push_back(fmt::format("`{}` ({}) is missing", t.name, shape_to_string(t.shape)));
    else if (it->second.shape != t.shape)
      problems.push_back(fmt::format("`{}` is {} in the file but {} in the model", t.name,
                                     shape_to_string(it->second.shape), shape_to_string(t.shape)));
  }
  for (const std::string& name : f.order)
    if (!expected.count(name)) problems.push_back(fmt::format("`{}` is not {}", name, owner));
  if (!problems.empty()) return problems;
  for (const TensorSlot& t : into) {
    const std::vector<float>& data = f.tensors.at(t.name).data;
    std::copy(data.begin(), data.end(), t.data);
  }
  return problems;
}

std::string problems_text(const std::vector<std::string>& problems) {
  std::string list = fmt::format("({} problem{}):", problems.size(), problems.size() == 1 ? "" : "s");
  for (size_t i = 0; i < problems.size() && i < 8; ++i) list += "\n  " + problems[i];
  if (problems.size() > 8) list += fmt::format("\n  ... and {} more", problems.size() - 8);
  return list;
}

void load_weights(const ModelGraph& g, const std::string& path, FlatBuffers<float>& buffers) {
  SafetensorsFile f;
  try {
    f = read_safetensors(path);
  } catch (const std::runtime_error& e) {
    throw WeightsFileError(e.what());
  }
  std::vector<std::string> problems =
      copy_tensors(f, weight_slots(g, buffers), fmt::format("a parameter of model `{}`", g.name));
  if (!problems.empty())
    throw WeightsFileError(
        fmt::format("{}: the weights do not fit model `{}` {}", path, g.name, problems_text(problems)));
}

void save_weights(const ModelGraph& g, const std::string& path, const FlatBuffers<float>& buffers,
                  const std::string& train_name) {
  std::vector<SafetensorsEntry> entries;
  for (int p : g.params)
    entries.push_back({g.values[p].name, g.values[p].shape, buffers.params.data() + g.values[p].offset});
  for (int s : g.states)
    entries.push_back({g.values[s].name, g.values[s].shape, buffers.states.data() + g.values[s].offset});
  try {
    write_safetensors(path, entries, {{"format", "pipec"}, {"model", g.name}, {"train", train_name}});
  } catch (const std::runtime_error& e) {
    throw WeightsFileError(e.what());
  }
}

}  // namespace pipec
