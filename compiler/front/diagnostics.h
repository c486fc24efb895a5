// The diagnostics engine: every error and warning pipec reports, with its source range.
//
// Kinds are registered once in diagnostic_kinds.def. A diagnostic prints as
//   file:line:col: error[kind]: message
//     12 |   | batch(0)
//        |     ^~~~~~~~
//   note: ...
//   help: did you mean `flags`?
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/front/source.h"

namespace pipec {

enum class Severity { Error, Warning, Note };

enum class DiagKind {
#define X(name, severity, summary) name,
#include "compiler/front/diagnostic_kinds.def"
#undef X
};

struct DiagKindInfo {
  DiagKind kind;
  std::string_view name;
  Severity severity;
  std::string_view summary;
};

/// Every registered kind, in registration order.
const std::vector<DiagKindInfo>& all_diag_kinds();
const DiagKindInfo& diag_kind_info(DiagKind kind);

struct DiagNote {
  SourceRange range;  // may be invalid (a note without a location)
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<DiagNote> notes;
  std::string help;         // "did you mean `flags`?"
  std::string replacement;  // text that would replace `range` to fix it, when known
};

class Diagnostics {
 public:
  explicit Diagnostics(const SourceManager& sources) : sources_(sources) {}

  /// Records a diagnostic and returns it so the caller can add notes or help.
  Diagnostic& report(DiagKind kind, SourceRange range, std::string message);

  /// While muted, reports are neither stored nor counted (sema checking a declaration whose syntax is
  /// already reported as broken).
  void set_muted(bool muted) { muted_ = muted; }
  bool muted() const { return muted_; }

  const std::vector<Diagnostic>& all() const { return list_; }
  size_t error_count() const { return errors_; }
  size_t warning_count() const { return warnings_; }
  bool has_errors() const { return errors_ > 0; }
  const SourceManager& sources() const { return sources_; }

  /// Stable order: by file, then position, then report order.
  void sort();

  /// Renders one diagnostic in the clang-like format above.
  std::string render(const Diagnostic& d, bool color = false) const;
  /// Renders all diagnostics, then a summary line ("2 errors, 1 warning generated.") when any.
  void print(std::ostream& out, bool color = false) const;

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> list_;
  size_t errors_ = 0;
  size_t warnings_ = 0;
  Diagnostic overflow_;  // returned once the limit is reached (or while muted), so callers can still add notes
  bool muted_ = false;
};

/// The closest candidate to `name` by edit distance, or "" when none is close enough to suggest.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace pipec
