// The registry of everything a spec can call without defining it: tensor ops, dataset sources and
// stages, sinks, model layers, losses, optimizers, precision policies and strategies.
//
// Each builtin declares its parameters once; argument binding, "did you mean" suggestions, hover text,
// completion and the editor syntax files all read this one list. Type rules live next to their
// family (builtins_ops.cpp, builtins_stages.cpp, builtins_layers.cpp, builtins_train.cpp).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/plan/type.h"
#include "runtime/plan/value.h"

namespace pipec {

struct Expr;
struct CallContext;  // defined in compiler/sema/call_context.h

enum class BuiltinKind {
  Op,         // tensor op used inside map/filter/fn bodies: tanh, reshape, unpack_bits, decode_png...
  Source,     // dataset source: tfrecord, files, range, csv, npy, zip, concatenate, choose_from, sample_from...
  Stage,      // dataset stage after `|`: map, filter, batch, shuffle, ...
  Sink,       // write(...)
  Layer,      // model layer: conv2d, dense, relu, flatten, concat...
  Loss,       // mse, cross_entropy...
  Optimizer,  // adam, sgd...
  Strategy,   // single, mirrored, multi_worker
  Schedule,   // learning-rate schedules, the `lr` of an optimizer: cosine_decay, linear_warmup...
  Format,     // arguments of write(): tfrecord(...) as an output format
};

const char* builtin_kind_name(BuiltinKind k);

struct ParamSpec {
  std::string name;
  bool required = true;
  std::string default_text;          // shown in signatures: "true", "auto"
  std::vector<std::string> options;  // accepted bare words (padding = same|valid); empty = any value
  bool variadic = false;             // takes all remaining positional arguments (zip)
  bool tensor_list = false;          // a list literal whose items may differ in shape (concat)
  bool dataset_list = false;         // a list literal of datasets, bound item by item into `rest` (choose_from)
};

/// The type rule: computes the result type from the bound arguments, reporting errors through `ctx`.
using TypeRule = std::function<Type(CallContext& ctx)>;

struct Builtin {
  std::string name;
  BuiltinKind kind;
  std::vector<ParamSpec> params;
  std::string doc;  // one or two sentences; the first is the summary
  TypeRule rule;

  /// "batch(size, drop_remainder = false)"
  std::string signature() const;
};

/// Every builtin, in registration order. Names are unique within a kind; an Op and a Layer may share
/// a name (relu, tanh): the context (map body or model block) picks which.
const std::vector<Builtin>& all_builtins();

/// The builtin called `name` of one of `kinds`, or null; the kinds are tried in the order given.
const Builtin* find_builtin(std::string_view name, std::initializer_list<BuiltinKind> kinds);
const Builtin* find_builtin(std::string_view name, const std::vector<BuiltinKind>& kinds);

/// Names of every builtin of the given kinds (for suggestions and completion).
std::vector<std::string> builtin_names(std::initializer_list<BuiltinKind> kinds);

/// Option words that stand alone as values: `auto`, `memory`, `gpu`, precision policies...
const std::vector<std::string>& standalone_option_words();

// Registration, one function per family (each in its own file).
void register_op_builtins(std::vector<Builtin>& out);
void register_image_builtins(std::vector<Builtin>& out);
void register_string_builtins(std::vector<Builtin>& out);
void register_source_builtins(std::vector<Builtin>& out);
void register_stage_builtins(std::vector<Builtin>& out);
void register_layer_builtins(std::vector<Builtin>& out);
void register_train_builtins(std::vector<Builtin>& out);

}  // namespace pipec
