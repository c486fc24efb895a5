// ---- batch_norm, layer_norm, moving averages ----
// runtime/train/ref/ref_activation.cpp's normalization in f64, split into kernels that each have independent
// items:
//   batch_norm's statistics exactly as runtime/ops/batch_statistics.cpp computes them on the CPU: each
//   block of `block_rows` (kStatisticsBlock) rows' mean and sum of squared deviations per channel
//   (item: block x channel), then Chan's pairwise update over the blocks in order (item: channel). The
//   f64 mean and variance stay in scratch for the normalization; the outputs get them rounded to f32.
//   The forward kernels are the reference's bit for bit.
//   The backward kernels' sums over rows (batch_norm's sum(dy) and sum(dy xhat), both norms' dgamma and
//   dbeta) are f64 partials over fixed blocks of rows, added in block order: with one block the
//   reference's loop exactly, with more the same f64 sum regrouped.

// Item (block, c): block_mean[blk][c] and block_m2[blk][c] of rows [blk * block_rows, ...).
PIPEC_KERNEL void batch_norm_block_statistics(long long items, const float* x, double* block_mean, double* block_m2,
                                              long long rows, long long channels, long long block_rows) {
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, channels), c = i - blk * channels;
    const long long r0 = blk * block_rows, r1 = sk_min(rows, r0 + block_rows);
    double m = 0;
    for (long long r = r0; r < r1; ++r) m += (double)x[r * channels + c];
    const double inv = 1.0 / (double)(r1 - r0);
    m *= inv;
    double m2 = 0;
    for (long long r = r0; r < r1; ++r) {
      const double d = (double)x[r * channels + c] - m;
      m2 += d * d;
    }
    block_mean[i] = m;
    block_m2[i] = m2;
  }
}

// Item c: Chan's merge of the blocks in order; the f64 mean and biased variance to `stats` ([2][channels])
// and rounded to the f32 outputs.
PIPEC_KERNEL void batch_norm_merge_statistics(long long items, const double* block_mean, const double* block_m2,
                                              double* stats, float* mean_out, float* variance_out, long long rows,
                                              long long block_rows) {
  const long long channels = items;
  const long long blocks = (rows + block_rows - 1) / block_rows;
  SK_FOR_ITEMS(c, items) {
    double mean = 0, m2 = 0, n_a = 0;
    for (long long b = 0; b < blocks; ++b) {
      const double n_b = (double)(sk_min(rows, (b + 1) * block_rows) - b * block_rows);
      const double n_ab = n_a + n_b;
      const double delta = block_mean[b * channels + c] - mean;
      mean += delta * (n_b / n_ab);
      m2 += block_m2[b * channels + c] + delta * delta * (n_a * n_b / n_ab);
      n_a = n_ab;
    }
    const double variance = rows > 0 ? m2 / (double)rows : 0.0;
    stats[c] = mean;
    stats[channels + c] = variance;
    mean_out[c] = (float)mean;
    variance_out[c] = (float)variance;
  }
}

// y = (x - mean) / sqrt(variance + eps) gamma + beta with the f64 statistics of the batch ([2][channels]).
PIPEC_KERNEL void batch_norm_apply(long long items, const float* x, const float* gamma, const float* beta,
                                   const double* stats, float* y, long long channels, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long c = i - sk_div(i, channels) * channels;
    const double inv = 1.0 / sqrt(stats[channels + c] + epsilon);
    y[i] = (float)(((double)x[i] - stats[c]) * inv * (double)gamma[c] + (double)beta[c]);
  }
}

// Inference mode (Keras' training=False): normalized with the f32 moving statistics.
PIPEC_KERNEL void batch_norm_inference_apply(long long items, const float* x, const float* gamma, const float* beta,
                                             const float* moving_mean, const float* moving_variance, float* y,
                                             long long channels, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long c = i - sk_div(i, channels) * channels;
    const double inv = 1.0 / sqrt((double)moving_variance[c] + epsilon);
    y[i] = (float)(((double)x[i] - (double)moving_mean[c]) * inv * (double)gamma[c] + (double)beta[c]);
  }
}

// Item (block, c): partial[0][blk][c] = sum(dy), partial[1][blk][c] = sum(dy xhat) over the block's rows,
// xhat from the saved f32 statistics as the reference computes it.
PIPEC_KERNEL void batch_norm_backward_partial(long long items, const float* x, const float* dy, const float* mean,
                                              const float* variance, double* partial, long long rows,
                                              long long channels, long long block_rows, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, channels), c = i - blk * channels;
    const double inv = 1.0 / sqrt((double)variance[c] + epsilon);
    const long long r_end = sk_min(rows, (blk + 1) * block_rows);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (long long r = blk * block_rows; r < r_end; ++r) {
      const double xhat = ((double)x[r * channels + c] - (double)mean[c]) * inv;
      sum_dy += (double)dy[r * channels + c];
      sum_dy_xhat += (double)dy[r * channels + c] * xhat;
    }
    partial[i] = sum_dy;
    partial[items + i] = sum_dy_xhat;
  }
}

// Item c: the sums over the blocks in order to `sums` ([2][channels]: sum(dy), sum(dy xhat)), and
// dgamma = sum(dy xhat), dbeta = sum(dy).
PIPEC_KERNEL void batch_norm_backward_combine(long long items, const double* partial, long long blocks, double* sums,
                                              float* dgamma, float* dbeta) {
  const long long channels = items;
  SK_FOR_ITEMS(c, items) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (long long b = 0; b < blocks; ++b) {
      sum_dy += partial[b * channels + c];
      sum_dy_xhat += partial[(blocks + b) * channels + c];
    }
    sums[c] = sum_dy;
    sums[channels + c] = sum_dy_xhat;
    dgamma[c] = (float)sum_dy_xhat;
    dbeta[c] = (float)sum_dy;
  }
}

// dx = gamma inv / rows (rows dy - sum(dy) - xhat sum(dy xhat)).
PIPEC_KERNEL void batch_norm_backward_dx(long long items, const float* x, const float* dy, const float* gamma,
                                         const float* mean, const float* variance, const double* sums, float* dx,
                                         long long rows, long long channels, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long c = i - sk_div(i, channels) * channels;
    const double inv = 1.0 / sqrt((double)variance[c] + epsilon);
    const double xhat = ((double)x[i] - (double)mean[c]) * inv;
    const double n = (double)rows;
    dx[i] = (float)((double)gamma[c] * inv / n * (n * (double)dy[i] - sums[c] - xhat * sums[channels + c]));
  }
}

// layer_norm: item r, the row's f64 mean and biased variance (two passes, as the reference) to
// stats[r][2] and rounded to the f32 outputs.
PIPEC_KERNEL void layer_norm_statistics(long long items, const float* x, double* stats, float* mean_out,
                                        float* variance_out, long long channels) {
  SK_FOR_ITEMS(r, items) {
    const float* xr = x + r * channels;
    double m = 0, v = 0;
    for (long long c = 0; c < channels; ++c) m += (double)xr[c];
    m /= (double)channels;
    for (long long c = 0; c < channels; ++c) v += ((double)xr[c] - m) * ((double)xr[c] - m);
    v /= (double)channels;
    stats[2 * r] = m;
    stats[2 * r + 1] = v;
    mean_out[r] = (float)m;
    variance_out[r] = (float)v;
  }
}

PIPEC_KERNEL void layer_norm_apply(long long items, const float* x, const float* gamma, const float* beta,
                                   const double* stats, float* y, long long channels, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long r = sk_div(i, channels), c = i - r * channels;
    const double inv = 1.0 / sqrt(stats[2 * r + 1] + epsilon);
    y[i] = (float)(((double)x[i] - stats[2 * r]) * inv * (double)gamma[c] + (double)beta[c]);
  }
}

// Item r: the row's sum(dy gamma) and sum(dy gamma xhat) to sums[r][2].
PIPEC_KERNEL void layer_norm_backward_row_sums(long long items, const float* x, const float* dy, const float* gamma,
                                               const float* mean, const float* variance, double* sums,
                                               long long channels, double epsilon) {
  SK_FOR_ITEMS(r, items) {
    const float* xr = x + r * channels;
    const float* dr = dy + r * channels;
    const double inv = 1.0 / sqrt((double)variance[r] + epsilon);
    const double m = mean[r];
    double sum_g = 0, sum_g_xhat = 0;
    for (long long c = 0; c < channels; ++c) {
      const double xhat = ((double)xr[c] - m) * inv;
      const double gx = (double)dr[c] * (double)gamma[c];
      sum_g += gx;
      sum_g_xhat += gx * xhat;
    }
    sums[2 * r] = sum_g;
    sums[2 * r + 1] = sum_g_xhat;
  }
}

// dx = inv / channels (channels dy gamma - sum(dy gamma) - xhat sum(dy gamma xhat)).
PIPEC_KERNEL void layer_norm_backward_dx(long long items, const float* x, const float* dy, const float* gamma,
                                         const float* mean, const float* variance, const double* sums, float* dx,
                                         long long channels, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long r = sk_div(i, channels), c = i - r * channels;
    const double inv = 1.0 / sqrt((double)variance[r] + epsilon);
    const double xhat = ((double)x[i] - (double)mean[r]) * inv;
    const double gx = (double)dy[i] * (double)gamma[c];
    const double n = (double)channels;
    dx[i] = (float)(inv / n * (n * gx - sums[2 * r] - xhat * sums[2 * r + 1]));
  }
}

// Item (block, c): partial[0][blk][c] = sum(dy xhat) (dgamma), partial[1][blk][c] = sum(dy) (dbeta) over
// the block's rows.
PIPEC_KERNEL void layer_norm_backward_param_partial(long long items, const float* x, const float* dy, const float* mean,
                                                    const float* variance, double* partial, long long rows,
                                                    long long channels, long long block_rows, double epsilon) {
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, channels), c = i - blk * channels;
    const long long r_end = sk_min(rows, (blk + 1) * block_rows);
    double dg = 0, db = 0;
    for (long long r = blk * block_rows; r < r_end; ++r) {
      const double inv = 1.0 / sqrt((double)variance[r] + epsilon);
      const double xhat = ((double)x[r * channels + c] - (double)mean[r]) * inv;
      dg += (double)dy[r * channels + c] * xhat;
      db += (double)dy[r * channels + c];
    }
    partial[i] = dg;
    partial[items + i] = db;
  }
}

// state = state m + stat (1 - m) in f32 (batch_norm's moving statistics; m the momentum as a float).
PIPEC_KERNEL void moving_average(long long items, float* state, const float* stat, float momentum) {
  SK_FOR_ITEMS(i, items) state[i] = state[i] * momentum + stat[i] * (1.0f - momentum);
}
