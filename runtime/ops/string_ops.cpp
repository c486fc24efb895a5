// Byte-string kernels with tf.strings' semantics (TensorFlow 2.21; the strings_* conformance fixtures
// pin them): strip, split and to_number. They are PerRow: the interpreter calls them once per element
// with that element's tensor (split's result has a length that depends on the data).
// Whitespace and numbers are read as runtime/ops/string_text.h says.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/ops/kernel.h"
#include "runtime/ops/string_text.h"

namespace pipec {

namespace {

const Tensor& bytes_operand(const KernelArgs& a, const char* op) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() != DType::Bytes) throw OpError(fmt::format("{} needs byte strings, not {}", op, dtype_name(x.dtype())));
  return x;
}

// A Bytes tensor of `shape` from its strings.
Tensor bytes_tensor(const std::vector<std::string_view>& pieces, Shape shape) {
  std::string blob;
  std::vector<int64_t> offsets{0};
  offsets.reserve(pieces.size() + 1);
  for (std::string_view p : pieces) {
    blob.append(p);
    offsets.push_back(static_cast<int64_t>(blob.size()));
  }
  Tensor out = Tensor::empty(DType::Bytes, std::move(shape));
  out.set_strings(std::move(blob), std::move(offsets));
  return out;
}

// strip(s): every string of s without its leading and trailing whitespace (tf.strings.strip).
Tensor strip_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "strip");
  std::vector<std::string_view> out;
  out.reserve(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i) out.push_back(trim_ascii_space(x.str(i)));
  return bytes_tensor(out, x.shape());
}

// split(s, sep): the pieces of one string (tf.strings.split on a scalar). With a separator, every
// occurrence (left to right, not overlapping) ends a piece and empty pieces are kept: "a,,b" is
// ["a", "", "b"], "" is [""]. Without one (or with ""), runs of whitespace separate the pieces and
// there are no empty ones: " a  b " is ["a", "b"], "" and "  " are [].
Tensor split_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "split");
  if (x.num_elements() != 1)
    throw OpError(fmt::format("split takes one string, not {} of them", shape_to_string(x.shape())));
  const std::string_view s = x.str(0);
  const Value* sep_attr = find_attr(a.instr, "sep");
  const std::string sep = sep_attr ? sep_attr->s : std::string();
  std::vector<std::string_view> pieces;
  if (sep.empty()) {
    for (size_t i = 0; i < s.size();) {
      while (i < s.size() && is_ascii_space(s[i])) ++i;
      const size_t b = i;
      while (i < s.size() && !is_ascii_space(s[i])) ++i;
      if (i > b) pieces.push_back(s.substr(b, i - b));
    }
  } else {
    size_t b = 0;
    for (size_t at; (at = s.find(sep, b)) != std::string_view::npos; b = at + sep.size())
      pieces.push_back(s.substr(b, at - b));
    pieces.push_back(s.substr(b));
  }
  const auto n = static_cast<int64_t>(pieces.size());
  return bytes_tensor(pieces, {n});
}

// "string [1, 0] " for an element of a tensor, "" for the one string of a scalar.
std::string position(const Shape& shape, int64_t k) {
  if (shape.empty()) return "";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
  return fmt::format("string [{}] ", fmt::join(idx, ", "));
}

// to_number(s, dtype): each string as a number of the result's dtype (tf.strings.to_number).
Tensor to_number_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "to_number");
  const DType dt = a.out_dtype();
  Tensor out = Tensor::empty(dt, x.shape());
  if (dt != DType::F32 && dt != DType::F64 && dt != DType::I32 && dt != DType::I64)
    throw OpError(fmt::format("to_number makes f32, f64, i32 or i64, not {}", dtype_name(dt)));
  for (int64_t k = 0; k < x.num_elements(); ++k)
    if (std::optional<std::string> why = parse_number(x.str(k), dt, out.raw() + k * dtype_size(dt)))
      throw OpError(position(x.shape(), k) + *why);
  return out;
}

}  // namespace

void register_string_ops(KernelTable& t) {
  t.set(OpKind::Strip, strip_kernel);
  t.set(OpKind::Split, split_kernel);
  t.set(OpKind::ToNumber, to_number_kernel);
}

}  // namespace pipec
