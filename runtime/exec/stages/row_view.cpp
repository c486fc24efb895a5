#include "runtime/exec/stages/row_view.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

Chunk batches_as_rows(const Chunk& batches, int64_t batch_size) {
  Chunk out;
  out.epoch = batches.epoch;
  out.first_index = batches.first_index * batch_size;
  if (batches.columns.empty()) throw std::runtime_error("per-row map: a chunk of batches without columns");
  int64_t k = -1;
  for (const Column& c : batches.columns) {
    if (c.ragged || c.dense.rank() < 2 || c.dense.shape()[0] != batches.rows)
      throw std::runtime_error("per-row map: the input is not a chunk of dense batches");
    int64_t rows_in_batch = c.dense.shape()[1];
    if (k >= 0 && rows_in_batch != k) throw std::runtime_error("per-row map: the fields of a batch differ in length");
    k = rows_in_batch;
    Shape s(c.dense.shape().begin() + 1, c.dense.shape().end());
    s[0] = batches.rows * k;
    out.columns.push_back(Column{false, c.dense.reshaped(s), {}});
  }
  // Only the last batch of an epoch may be short, and it comes on its own: the numbering b*n + i
  // holds for every row only then.
  if (batches.rows > 1 && k != batch_size)
    throw std::runtime_error(fmt::format("per-row map: a chunk of {} batches of {} rows, the batch size is {}",
                                         batches.rows, k, batch_size));
  out.rows = batches.rows * k;
  return out;
}

std::vector<Column> rows_as_batches(std::vector<Column> rows, int64_t batches) {
  for (Column& c : rows) {
    if (c.ragged) throw std::runtime_error("per-row map: a result with rows of different shapes cannot form a batch");
    Shape s = c.dense.shape();
    const int64_t total = s.at(0);
    s[0] = batches > 0 ? total / batches : 0;
    s.insert(s.begin(), batches);
    c.dense = c.dense.reshaped(s);
  }
  return rows;
}

}  // namespace pipec
