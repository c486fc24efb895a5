// one_hot_colors' colour table: CamVid's class_dict.csv (a header line, then `name,r,g,b` rows), read
// once per process and path. The interpreter reads it when the op first runs; `pipec run` reads it
// before compiling so that the map's kernel (JIT or CUDA) holds the colours as constants.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipec {

using Colors = std::vector<std::array<uint8_t, 3>>;

/// The colours of `path`, in file order. Throws OpError naming the file and line of a malformed row.
std::shared_ptr<const Colors> read_colors_csv(const std::string& path);

}  // namespace pipec
