// Bit and index encodings: unpack_bits / pack_bits (most significant bit first, like numpy's
// packbits/unpackbits with bitorder='big') and one_hot.
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

// byte -> its 8 bits as 8 bytes of 0/1, bit 7 first, in memory order.
const std::array<std::array<uint8_t, 8>, 256>& unpack_table() {
  static const auto table = [] {
    std::array<std::array<uint8_t, 8>, 256> t{};
    for (int b = 0; b < 256; ++b)
      for (int k = 0; k < 8; ++k) t[b][k] = static_cast<uint8_t>((b >> (7 - k)) & 1);
    return t;
  }();
  return table;
}

Tensor unpack_bits_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() != DType::U8) throw OpError(fmt::format("needs u8, not {}", dtype_name(x.dtype())));
  if (x.rank() - a.lead < 1) throw OpError("needs a tensor of rank 1 or more");
  Shape shape = x.shape();
  shape.back() *= 8;
  Tensor out = Tensor::empty(DType::U8, shape);
  const auto& table = unpack_table();
  const uint8_t* p = x.data<uint8_t>();
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0, n = x.num_elements(); i < n; ++i) std::memcpy(o + 8 * i, table[p[i]].data(), 8);
  return out;
}

Tensor pack_bits_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  if (x.rank() - a.lead < 1) throw OpError("needs a tensor of rank 1 or more");
  if (x.shape().back() % 8 != 0)
    throw OpError(fmt::format("the last dimension ({}) is not a multiple of 8", x.shape().back()));
  Tensor bits = cast_tensor(x, DType::Bool);  // nonzero -> 1
  Shape shape = x.shape();
  shape.back() /= 8;
  Tensor out = Tensor::empty(DType::U8, shape);
  const bool* p = bits.data<bool>();
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i, p += 8) {
    unsigned v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 1) | (p[k] ? 1u : 0u);
    o[i] = static_cast<uint8_t>(v);
  }
  return out;
}

// one_hot(indices, depth): [...] -> [..., depth]; indices outside [0, depth) give a row of zeros.
Tensor one_hot_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  int64_t depth = attr_int(a.instr, "depth", a.instr.type.shape.empty() ? -1 : a.instr.type.shape.back());
  if (depth < 0) throw OpError("missing or negative depth");
  Tensor idx = cast_tensor(x, DType::I64);
  Shape shape = x.shape();
  shape.push_back(depth);
  DType rt = a.out_dtype();
  Tensor out = Tensor::zeros(rt, shape);
  const int64_t* p = idx.data<int64_t>();
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T one = convert<T>(1);
    for (int64_t i = 0, n = idx.num_elements(); i < n; ++i)
      if (p[i] >= 0 && p[i] < depth) o[i * depth + p[i]] = one;
  });
  return out;
}

}  // namespace

void register_bits(KernelTable& t) {
  t.set(OpKind::UnpackBits, unpack_bits_kernel);
  t.set(OpKind::PackBits, pack_bits_kernel);
  t.set(OpKind::OneHot, one_hot_kernel);
}

}  // namespace pipec
