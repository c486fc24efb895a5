#include "compiler/sema/builtins.h"

#include <algorithm>

namespace pipec {

const char* builtin_kind_name(BuiltinKind k) {
  switch (k) {
    case BuiltinKind::Op: return "op";
    case BuiltinKind::Source: return "source";
    case BuiltinKind::Stage: return "stage";
    case BuiltinKind::Sink: return "sink";
    case BuiltinKind::Layer: return "layer";
    case BuiltinKind::Loss: return "loss";
    case BuiltinKind::Optimizer: return "optimizer";
    case BuiltinKind::Strategy: return "strategy";
    case BuiltinKind::Schedule: return "learning-rate schedule";
    case BuiltinKind::Format: return "format";
  }
  return "?";
}

std::string Builtin::signature() const {
  std::string s = name + "(";
  bool first = true;
  for (const ParamSpec& p : params) {
    if (!first) s += ", ";
    first = false;
    s += p.variadic ? p.name + "..." : p.name;
    if (!p.required && !p.default_text.empty()) s += " = " + p.default_text;
    else if (!p.required) s += "?";
  }
  return s + ")";
}

const std::vector<Builtin>& all_builtins() {
  static const std::vector<Builtin> list = [] {
    std::vector<Builtin> v;
    register_op_builtins(v);
    register_image_builtins(v);
    register_string_builtins(v);
    register_source_builtins(v);
    register_stage_builtins(v);
    register_layer_builtins(v);
    register_train_builtins(v);
    return v;
  }();
  return list;
}

const Builtin* find_builtin(std::string_view name, std::initializer_list<BuiltinKind> kinds) {
  return find_builtin(name, std::vector<BuiltinKind>(kinds));
}

const Builtin* find_builtin(std::string_view name, const std::vector<BuiltinKind>& kinds) {
  // Kinds are searched in the order given, so the caller's context decides between same-named builtins.
  for (BuiltinKind k : kinds)
    for (const Builtin& b : all_builtins())
      if (b.kind == k && b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> builtin_names(std::initializer_list<BuiltinKind> kinds) {
  std::vector<std::string> out;
  for (const Builtin& b : all_builtins())
    if (std::find(kinds.begin(), kinds.end(), b.kind) != kinds.end() &&
        std::find(out.begin(), out.end(), b.name) == out.end())
      out.push_back(b.name);
  return out;
}

const std::vector<std::string>& standalone_option_words() {
  static const std::vector<std::string> words = {"auto", "memory",     "gpu",        "cpu", "none",     "gzip",
                                                 "zlib", "same",       "valid",      "all", "bilinear", "nearest",
                                                 "fp32", "mixed_fp16", "mixed_bf16", "u8",  "u16"};
  return words;
}

}  // namespace pipec
