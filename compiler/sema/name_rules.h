// What a name may mean where it is written: a stage after `|` on a dataset, a layer (then an op) in a
// model, an op in a function body, a source at the head of a pipeline, a loss in a train block's `loss`.
// The checker resolves names by these rules, and when asked (CheckOptions::name_probe) it lists every
// name it would accept at one place, which is what the language server offers as completion: the two
// cannot disagree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/sema/builtins.h"

namespace pipec {

/// Where an expression sits: decides which builtins a name means and which names are in scope.
enum class CheckContext { Const, Fn, Source, Pipeline, MapBody, Model, Train, Format };

/// What `x | name` feeds the name (None: the name is not on the right of a pipe).
enum class PipedInput { None, Dataset, Tensor, Unknown };
PipedInput piped_input(const Type* piped_type);

/// The builtin families a called name is looked up in, in order: the first family with the name wins
/// (in a model a layer `relu` before the op `relu`).
std::vector<BuiltinKind> callable_kinds(CheckContext ctx, PipedInput input);

/// One entry of a train block: its key, whether it must be there and, for the entries whose value is a
/// builtin call (`loss = mse(label)`), which family that builtin must be of.
struct TrainEntrySpec {
  const char* key;
  bool required;
  std::optional<BuiltinKind> kind;
};
const std::vector<TrainEntrySpec>& train_entry_specs();
const TrainEntrySpec* find_train_entry(std::string_view key);
/// The words `precision = ...` accepts.
const std::vector<std::string>& precision_words();
/// The metrics a train block's `metrics` list may name: the METRIC rows of runtime/model/model_ops.def.
const std::vector<std::string>& metric_words();

/// A name the checker accepts at the probed place. `builtin` points into the registry, `decl` into the
/// checked program (which must outlive the candidate).
struct NameCandidate {
  enum Kind { Builtin, Cast, Fn, Model, Const, Dataset, Local, Field, Option };
  Kind kind = Local;
  std::string name;
  const pipec::Builtin* builtin = nullptr;  // Builtin
  const Decl* decl = nullptr;               // Fn, Model, Const, Dataset (a source or pipeline)
  Type type;                                // Local, Field: the value's type
};

/// What the checker knew at the probed name (CheckOptions::name_probe).
struct NameSite {
  CheckContext context = CheckContext::Const;
  PipedInput input = PipedInput::None;
  bool callee = false;  // called, `name(...)`, or applied, `x | name`
  /// Everything the name could be there without an error the checker knows of before seeing the
  /// arguments, in the order to offer them (the family the checker tries first comes first).
  std::vector<NameCandidate> candidates;
};

}  // namespace pipec
