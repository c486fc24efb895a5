// Compile-time constant values: what `const` declarations, literals and folded expressions evaluate to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace pipec {

struct Value {
  enum Kind { Int, Float, Bool, String, List, Symbol } kind = Int;
  DType dtype = DType::I64;  // Int/Float/Bool: the dtype the constant has
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;             // String text or Symbol word
  std::vector<Value> items;  // List

  static Value make_int(int64_t v, DType dt = DType::I64) {
    Value x;
    x.kind = Int;
    x.dtype = dt;
    x.i = v;
    return x;
  }
  static Value make_float(double v, DType dt = DType::F64) {
    Value x;
    x.kind = Float;
    x.dtype = dt;
    x.f = v;
    return x;
  }
  static Value make_bool(bool v) {
    Value x;
    x.kind = Bool;
    x.dtype = DType::Bool;
    x.b = v;
    return x;
  }
  static Value make_string(std::string v) {
    Value x;
    x.kind = String;
    x.dtype = DType::Bytes;
    x.s = std::move(v);
    return x;
  }
  static Value make_symbol(std::string v) {
    Value x;
    x.kind = Symbol;
    x.s = std::move(v);
    return x;
  }
  static Value make_list(std::vector<Value> items = {}) {
    Value x;
    x.kind = List;
    x.items = std::move(items);
    return x;
  }

  bool is_number() const { return kind == Int || kind == Float || kind == Bool; }
  double as_double() const { return kind == Float ? f : kind == Bool ? (b ? 1.0 : 0.0) : static_cast<double>(i); }
  std::string to_string() const;
};

}  // namespace pipec
