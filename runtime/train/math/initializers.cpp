#include "runtime/train/math/initializers.h"

#include <cmath>

#include "runtime/core/philox.h"

namespace pipec {

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

template <class T>
void fill(const GraphValue& v, uint64_t seed, T* out) {
  const int64_t n = v.elements_per_example();
  switch (v.init) {
    case Init::None:
    case Init::Zeros:
      for (int64_t i = 0; i < n; ++i) out[i] = T(0);
      return;
    case Init::Ones:
      for (int64_t i = 0; i < n; ++i) out[i] = T(1);
      return;
    case Init::GlorotUniform:
    case Init::Uniform: {
      const double limit =
          v.init == Init::Uniform ? kUniformInitLimit : std::sqrt(6.0 / static_cast<double>(v.fan_in + v.fan_out));
      RandomStream r(seed, kInitStreamBase ^ fnv1a64(v.name), 0, 0);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>((2.0 * r.uniform_float() - 1.0) * limit);
      return;
    }
  }
}

}  // namespace

template <class T>
void initialize_parameters(const ModelGraph& g, uint64_t seed, std::vector<T>& params, std::vector<T>& states) {
  params.assign(g.param_elements(), T(0));
  states.assign(g.state_elements(), T(0));
  for (int p : g.params) fill(g.values[p], seed, params.data() + g.values[p].offset);
  for (int s : g.states) fill(g.values[s], seed, states.data() + g.values[s].offset);
}

template void initialize_parameters<float>(const ModelGraph&, uint64_t, std::vector<float>&, std::vector<float>&);
template void initialize_parameters<double>(const ModelGraph&, uint64_t, std::vector<double>&, std::vector<double>&);

}  // namespace pipec
