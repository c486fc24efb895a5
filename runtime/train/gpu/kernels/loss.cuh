// ---- losses ----
// runtime/train/ref/ref_loss.cpp's formulas in f64 (Keras' losses: the mean over every position; the
// cross-entropies from logits in log-softmax / softplus form, from probabilities clipped to
// [1e-7, 1 - 1e-7]). The loss is a reduction: loss_partial sums the positions of fixed blocks in f64
// (item: block), loss_combine adds the blocks in order and scales (one block: the reference's loop bit
// for bit). The gradient has one position per item. A class label that is not a class (the reference
// throws naming the example) makes that position's loss and gradient NaN: never a silent number.
#define SK_LOSS_MSE 0
#define SK_LOSS_MAE 1
#define SK_LOSS_CROSS_ENTROPY 2
#define SK_LOSS_BINARY_CROSS_ENTROPY 3
#define SK_LOSS_HUBER 4

#define SK_LOSS_EPS 1e-7  // Keras' epsilon (ref::kProbabilityEpsilon)

PIPEC_DEV double sk_clip_probability(double p) {  // std::clamp(p, eps, 1 - eps)
  return p < SK_LOSS_EPS ? SK_LOSS_EPS : (1.0 - SK_LOSS_EPS) < p ? (1.0 - SK_LOSS_EPS) : p;
}
// TensorFlow's clip passes the gradient where lo <= p <= hi.
PIPEC_DEV bool sk_inside(double p) { return p >= SK_LOSS_EPS && p <= 1.0 - SK_LOSS_EPS; }

// One value of the element-wise losses: its loss and its derivative.
PIPEC_DEV void sk_elementwise_loss(int kind, int from_logits, double delta, double p, double t, double* loss,
                                   double* grad) {
  if (kind == SK_LOSS_MSE) {
    *loss = (p - t) * (p - t);
    *grad = 2 * (p - t);
  } else if (kind == SK_LOSS_MAE) {
    *loss = fabs(p - t);
    *grad = p > t ? 1.0 : p < t ? -1.0 : 0.0;
  } else if (kind == SK_LOSS_HUBER) {
    const double e = p - t, a = fabs(e);
    if (a <= delta) {
      *loss = 0.5 * e * e;
      *grad = e;
    } else {
      *loss = delta * (a - 0.5 * delta);
      *grad = e > 0 ? delta : -delta;
    }
  } else if (from_logits) {  // binary cross-entropy from logits: softplus form
    const double z = p;
    *loss = (z < 0.0 ? 0.0 : z) - z * t + log1p(exp(-fabs(z)));
    *grad = (z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z))) - t;
  } else {  // binary cross-entropy from probabilities
    const double q = sk_clip_probability(p);
    *loss = -(t * log(q) + (1 - t) * log(1 - q));
    *grad = sk_inside(p) ? -(t / q - (1 - t) / (1 - q)) : 0.0;
  }
}

// A class label: its index, or -1 when it is not one of 0 .. classes - 1.
PIPEC_DEV long long sk_label(const float* target, long long position, long long classes) {
  const double v = target[position];
  if (!(v >= 0 && v < (double)classes) || v != floor(v)) return -1;
  return (long long)v;
}

// One position of cross_entropy over `n` classes: its loss, and its gradient (times `scale`, then the
// loss scale when one is given, both as the reference) when `grad` is not null.
PIPEC_DEV double sk_cross_entropy_position(int from_logits, int sparse, long long n, const float* p,
                                           const float* target, long long position, float* grad, double scale,
                                           const float* loss_scale) {
  const float* z = p + position * n;
  float* gp = grad ? grad + position * n : 0;
  const float ls = loss_scale ? *loss_scale : 1.0f;
  long long label = 0;
  if (sparse) {
    label = sk_label(target, position, n);
    if (label < 0) {
      if (gp)
        for (long long c = 0; c < n; ++c) gp[c] = (float)sk_nan();
      return sk_nan();
    }
  }
  if (from_logits) {
    double m = sk_neg_inf();
    for (long long c = 0; c < n; ++c) m = sk_max_f64(m, (double)z[c]);
    double s = 0;
    for (long long c = 0; c < n; ++c) s += exp((double)z[c] - m);
    const double lse = m + log(s);
    if (sparse) {
      if (gp)
        for (long long c = 0; c < n; ++c) {
          float g = (float)(scale * (exp((double)z[c] - lse) - (c == label ? 1.0 : 0.0)));
          if (loss_scale) g *= ls;
          gp[c] = g;
        }
      return lse - (double)z[label];
    }
    const float* t = target + position * n;
    double st = 0, tz = 0;
    for (long long c = 0; c < n; ++c) {
      st += (double)t[c];
      tz += (double)t[c] * (double)z[c];
    }
    if (gp)
      for (long long c = 0; c < n; ++c) {
        float g = (float)(scale * (exp((double)z[c] - lse) * st - (double)t[c]));
        if (loss_scale) g *= ls;
        gp[c] = g;
      }
    return lse * st - tz;
  }
  if (sparse) {  // Keras: clip, then the log-softmax of the logarithms: -log(q_l / sum q)
    double sum = 0;
    for (long long c = 0; c < n; ++c) sum += sk_clip_probability((double)z[c]);
    if (gp)
      for (long long c = 0; c < n; ++c) {
        const double q = sk_clip_probability((double)z[c]);
        const double d = (c == label ? -1.0 / q : 0.0) + 1.0 / sum;
        float g = (float)(sk_inside((double)z[c]) ? scale * d : 0.0);
        if (loss_scale) g *= ls;
        gp[c] = g;
      }
    return -log(sk_clip_probability((double)z[label])) + log(sum);
  }
  // Keras: normalize the probabilities to sum to one, clip, then -sum(t log q).
  const float* t = target + position * n;
  double sum = 0;
  for (long long c = 0; c < n; ++c) sum += (double)z[c];
  double total = 0, gq = 0;
  for (long long c = 0; c < n; ++c) {
    const double q = (double)z[c] / sum;
    total -= (double)t[c] * log(sk_clip_probability(q));
    gq += (sk_inside(q) ? -(double)t[c] / sk_clip_probability(q) : 0.0) * q;
  }
  if (gp)
    for (long long c = 0; c < n; ++c) {
      const double q = (double)z[c] / sum;
      const double g_c = sk_inside(q) ? -(double)t[c] / sk_clip_probability(q) : 0.0;
      float g = (float)(scale * (g_c - gq) / sum);
      if (loss_scale) g *= ls;
      gp[c] = g;
    }
  return total;
}

// Item: a block of `block_positions` positions (values for the element-wise losses, class vectors for
// cross_entropy), its losses summed in order into partial[block].
PIPEC_KERNEL void loss_partial(long long items, const float* prediction, const float* target, double* partial,
                               long long positions, long long block_positions, int kind, int from_logits, int sparse,
                               long long classes, double delta) {
  SK_FOR_ITEMS(blk, items) {
    const long long end = sk_min(positions, (blk + 1) * block_positions);
    double total = 0;
    for (long long k = blk * block_positions; k < end; ++k) {
      if (kind == SK_LOSS_CROSS_ENTROPY) {
        total += sk_cross_entropy_position(from_logits, sparse, classes, prediction, target, k, 0, 0, 0);
      } else {
        double l, d;
        sk_elementwise_loss(kind, from_logits, delta, (double)prediction[k], (double)target[k], &l, &d);
        total += l;
      }
    }
    partial[blk] = total;
  }
}

// One item: the mean loss, the blocks added in order then times `scale` (1 / positions).
PIPEC_KERNEL void loss_combine(long long items, const double* partial, long long blocks, double scale, float* loss) {
  SK_FOR_ITEMS(i, items) {
    double total = 0;
    for (long long b = 0; b < blocks; ++b) total += partial[b];
    loss[i] = (float)(total * scale);
  }
}

// Item: one position; the gradient of the mean loss, times the loss scale when `loss_scale` is not null
// (mixed_fp16: the backward pass starts from loss * scale).
PIPEC_KERNEL void loss_backward(long long items, const float* prediction, const float* target, float* grad, int kind,
                                int from_logits, int sparse, long long classes, double delta, double scale,
                                const float* loss_scale) {
  SK_FOR_ITEMS(k, items) {
    if (kind == SK_LOSS_CROSS_ENTROPY) {
      sk_cross_entropy_position(from_logits, sparse, classes, prediction, target, k, grad, scale, loss_scale);
    } else {
      double l, d;
      sk_elementwise_loss(kind, from_logits, delta, (double)prediction[k], (double)target[k], &l, &d);
      float g = (float)(d * scale);
      if (loss_scale) g *= *loss_scale;
      grad[k] = g;
    }
  }
}
