// ---- embedding ----
// The ids are i64 (lowering casts them). Forward: one output element per item. An id outside
// [0, input_dim) makes its row NaN (the reference stops with an error naming the layer; on a GPU the
// step's loss becomes NaN, which the training loop reports, as for a class label out of range).
PIPEC_KERNEL void embedding_forward(long long items, const long long* ids, const float* table, float* y,
                                    long long input_dim, long long output_dim) {
  SK_FOR_ITEMS(i, items) {
    const long long p = sk_div(i, output_dim), d = i - p * output_dim;
    const long long id = ids[p];
    y[i] = id >= 0 && id < input_dim ? table[id * output_dim + d] : (float)sk_nan();
  }
}

// Backward without atomics, so that the sums do not depend on the grid: the positions are sorted by id
// (a counting sort, stable, by one thread: start[v] is where id v's positions begin in `order`,
// start[input_dim] the number of valid ids), then each element of the table's gradient sums dy over its
// id's positions in position order, in f64 from 0: runtime/train/ref/ref_embedding.cpp's sum, bit for bit.
// Ids out of range are left out (the forward pass has made the loss NaN already).
PIPEC_KERNEL void embedding_sort_ids(long long items, const long long* ids, long long positions, long long input_dim,
                                     long long* start, long long* order) {
  SK_FOR_ITEMS(one, items) {  // a single item: the whole sort
    for (long long v = 0; v <= input_dim; ++v) start[v] = 0;
    for (long long p = 0; p < positions; ++p)
      if (ids[p] >= 0 && ids[p] < input_dim) start[ids[p] + 1] += 1;
    for (long long v = 0; v < input_dim; ++v) start[v + 1] += start[v];
    // start[v] as v's cursor while filling; it then holds where v + 1 begins, so shift it back.
    for (long long p = 0; p < positions; ++p)
      if (ids[p] >= 0 && ids[p] < input_dim) order[start[ids[p]]++] = p;
    for (long long v = input_dim; v > 0; --v) start[v] = start[v - 1];
    start[0] = 0;
  }
}

PIPEC_KERNEL void embedding_backward(long long items, const float* dy, const long long* start, const long long* order,
                                     float* dtable, long long output_dim) {
  SK_FOR_ITEMS(i, items) {
    const long long v = sk_div(i, output_dim), d = i - v * output_dim;
    double s = 0;
    for (long long k = start[v]; k < start[v + 1]; ++k) s += (double)dy[order[k] * output_dim + d];
    dtable[i] = (float)s;
  }
}
