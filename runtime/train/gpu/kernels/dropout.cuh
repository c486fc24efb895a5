// ---- dropout: the CPU's Philox stream ----
// ref::dropout_mask on the device: example e of step `step` draws its values' uniform floats from
// RandomStream(seed, stream_id, e, step) (runtime/core/philox.h), value i taking word i of the stream
// (block i / 4, word i % 4), kept when its draw (the word's top 24 bits times 2^-24) is >= rate. Integer
// arithmetic and one exact conversion: the same bits as the CPU on any device.

// Philox4x32-10 (Random123's philox4x32_10): 10 rounds, the key bumped between rounds.
PIPEC_DEV void sk_philox(unsigned c[4], unsigned k0, unsigned k1) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = (unsigned long long)0xD2511F53u * c[0];
    const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c[2];
    const unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n1 = (unsigned)p1;
    const unsigned n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1, n3 = (unsigned)p0;
    c[0] = n0;
    c[1] = n1;
    c[2] = n2;
    c[3] = n3;
  }
}

// Item (e, g): the 4 values 4g .. 4g + 3 of example e, from block g of its stream. `step` points at two
// u64s in device memory, the step and the global index of the batch's first example (a replayed CUDA
// graph sees each step's values; data-parallel replicas offset their share's examples), so example e
// draws from the stream of example first + e. mask = keep (1 / (1 - rate) as an f32) or 0; y = x mask.
PIPEC_KERNEL void dropout_forward(long long items, const float* x, float* y, float* mask, long long per_example,
                                  double rate, float keep, unsigned long long seed, unsigned long long stream_id,
                                  const unsigned long long* step) {
  const long long groups = (per_example + 3) / 4;
  const unsigned long long epoch = step[0];
  const long long first = (long long)step[1];
  SK_FOR_ITEMS(i, items) {
    const long long e = sk_div(i, groups), g = i - e * groups, element = first + e;
    // The stream's key: philox({op lo, op hi, epoch hi, "key1"}, {seed lo, seed hi}), words 0 and 1.
    unsigned key[4] = {(unsigned)stream_id, (unsigned)(stream_id >> 32), (unsigned)(epoch >> 32), 0x6b657931u};
    sk_philox(key, (unsigned)seed, (unsigned)(seed >> 32));
    // Block g: counter {element lo, element hi, epoch lo, g}.
    unsigned words[4] = {(unsigned)element, (unsigned)((unsigned long long)element >> 32), (unsigned)epoch,
                         (unsigned)g};
    sk_philox(words, key[0], key[1]);
    for (int w = 0; w < 4; ++w) {
      const long long v = 4 * g + w;
      if (v >= per_example) break;
      const float draw = (float)(words[w] >> 8) * 5.9604644775390625e-08f;  // 2^-24: exact
      const float m = (double)draw >= rate ? keep : 0.0f;
      mask[e * per_example + v] = m;
      y[e * per_example + v] = x[e * per_example + v] * m;
    }
  }
}
