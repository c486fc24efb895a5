// The reference kernels of the embedding layer: a row lookup forward, a scatter-add of rows backward.
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/ref/ref_kernels.h"

namespace pipec::ref {

namespace {

// The first id of ids[begin, end) outside [0, input_dim) stops the step, naming the layer, the example
// and where in it the id is (a GPU makes that example's rows NaN instead: runtime/train/gpu/kernels).
void check_ids(int64_t begin, int64_t end, int64_t input_dim, const int64_t* ids, const std::string& layer,
               int64_t positions_per_example) {
  for (int64_t p = begin; p < end; ++p) {
    if (ids[p] >= 0 && ids[p] < input_dim) continue;
    const int64_t per = positions_per_example > 0 ? positions_per_example : 1;
    throw std::runtime_error(fmt::format(
        "embedding layer `{}`: example {} of the batch has id {} (position {} of the example), not one of 0..{} "
        "(input_dim = {})",
        layer, p / per, ids[p], p % per, input_dim - 1, input_dim));
  }
}

}  // namespace

template <class T>
void embedding(int64_t positions, int64_t input_dim, int64_t output_dim, const int64_t* ids, const T* table, T* y,
               const std::string& layer, int64_t positions_per_example, const ParallelFor& parallel) {
  check_ids(0, positions, input_dim, ids, layer, positions_per_example);
  run_split(parallel, positions, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* row = table + ids[p] * output_dim;
      T* out = y + p * output_dim;
      for (int64_t d = 0; d < output_dim; ++d) out[d] = row[d];
    }
  });
}

template <class T>
void embedding_backward(int64_t positions, int64_t input_dim, int64_t output_dim, const int64_t* ids, const T* dy,
                        T* dtable, const std::string& layer, int64_t positions_per_example,
                        const ParallelFor& parallel) {
  check_ids(0, positions, input_dim, ids, layer, positions_per_example);
  std::vector<double> sum(static_cast<size_t>(input_dim * output_dim), 0.0);
  // Columns split over the threads: each column's sums run over the positions in order.
  run_split(parallel, output_dim, [&](int64_t begin, int64_t end) {
    for (int64_t p = 0; p < positions; ++p) {
      double* row = sum.data() + ids[p] * output_dim;
      const T* d = dy + p * output_dim;
      for (int64_t c = begin; c < end; ++c) row[c] += static_cast<double>(d[c]);
    }
    for (int64_t v = 0; v < input_dim; ++v)
      for (int64_t c = begin; c < end; ++c) dtable[v * output_dim + c] = static_cast<T>(sum[v * output_dim + c]);
  });
}

#define PIPEC_INSTANTIATE(T)                                                                                       \
  template void embedding<T>(int64_t, int64_t, int64_t, const int64_t*, const T*, T*, const std::string&, int64_t, \
                             const ParallelFor&);                                                                  \
  template void embedding_backward<T>(int64_t, int64_t, int64_t, const int64_t*, const T*, T*, const std::string&, \
                                      int64_t, const ParallelFor&);
PIPEC_INSTANTIATE(float)
PIPEC_INSTANTIATE(double)
#undef PIPEC_INSTANTIATE

}  // namespace pipec::ref
