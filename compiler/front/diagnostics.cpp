#include "compiler/front/diagnostics.h"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

namespace pipec {

namespace {
// More than this many diagnostics from one run are noise; the rest are counted, not stored.
constexpr size_t kMaxDiagnostics = 100;
}  // namespace

const std::vector<DiagKindInfo>& all_diag_kinds() {
  static const std::vector<DiagKindInfo> kinds = {
#define X(name, severity, summary) {DiagKind::name, #name, Severity::severity, summary},
#include "compiler/front/diagnostic_kinds.def"
#undef X
  };
  return kinds;
}

const DiagKindInfo& diag_kind_info(DiagKind kind) { return all_diag_kinds()[static_cast<size_t>(kind)]; }

Diagnostic& Diagnostics::report(DiagKind kind, SourceRange range, std::string message) {
  Severity sev = diag_kind_info(kind).severity;
  if (muted_) {
    overflow_ = Diagnostic{kind, sev, range, std::move(message), {}, {}, {}};
    return overflow_;
  }
  if (sev == Severity::Error) ++errors_;
  if (sev == Severity::Warning) ++warnings_;
  if (list_.size() >= kMaxDiagnostics) {
    overflow_ = Diagnostic{kind, sev, range, std::move(message), {}, {}, {}};
    return overflow_;
  }
  list_.push_back(Diagnostic{kind, sev, range, std::move(message), {}, {}, {}});
  return list_.back();
}

void Diagnostics::sort() {
  std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.range.file != b.range.file) return a.range.file < b.range.file;
    return a.range.begin < b.range.begin;
  });
}

static std::string_view severity_word(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

// The source line with a caret under the whole range (clipped to the first line of the range). Lines
// longer than kMaxSnippet bytes show a window around the caret, marked with `...` where they are cut.
static std::string snippet(const SourceFile& file, SourceRange range, bool color) {
  constexpr uint32_t kMaxSnippet = 120;
  LineCol start = file.line_col(range.begin);
  std::string_view line = file.line_text(start.line);
  uint32_t line_begin = range.begin - (start.col - 1);
  uint32_t line_end = line_begin + static_cast<uint32_t>(line.size());
  uint32_t end = std::min(std::max(range.end, range.begin + 1), std::max(line_end, range.begin + 1));
  uint32_t caret_col = start.col - 1;  // where the caret starts in the printed text
  std::string prefix, suffix;
  if (line.size() > kMaxSnippet) {
    uint32_t from = caret_col > 40 ? caret_col - 40 : 0;
    uint32_t to = std::min<uint32_t>(static_cast<uint32_t>(line.size()), from + kMaxSnippet);
    if (from > 0) prefix = "...";
    if (to < line.size()) suffix = "...";
    line = line.substr(from, to - from);
    caret_col = caret_col - from + static_cast<uint32_t>(prefix.size());
    end = std::min(end, line_begin + to);
  }
  std::string gutter = fmt::format("{:>5} | ", start.line);
  std::string out = gutter + prefix;
  // Tabs are printed as single spaces so that the caret lines up.
  for (char c : line) out += c == '\t' ? ' ' : c;
  out += suffix + "\n";
  out += std::string(gutter.size() - 2, ' ') + "| ";
  out += std::string(caret_col, ' ');
  std::string marks = "^" + std::string(end > range.begin + 1 ? end - range.begin - 1 : 0, '~');
  out += color ? "\033[1;32m" + marks + "\033[0m" : marks;
  out += "\n";
  return out;
}

std::string Diagnostics::render(const Diagnostic& d, bool color) const {
  std::string out;
  std::string word(severity_word(d.severity));
  std::string kind(diag_kind_info(d.kind).name);
  std::string head = fmt::format("{}[{}]", word, kind);
  if (color) head = (d.severity == Severity::Error ? "\033[1;31m" : "\033[1;35m") + head + "\033[0m";
  if (d.range.valid()) {
    const SourceFile& f = sources_.file(d.range.file);
    LineCol lc = f.line_col(d.range.begin);
    out += fmt::format("{}:{}:{}: {}: {}\n", f.path(), lc.line, lc.col, head, d.message);
    out += snippet(f, d.range, color);
  } else {
    out += fmt::format("pipec: {}: {}\n", head, d.message);
  }
  for (const DiagNote& n : d.notes) {
    if (n.range.valid()) {
      const SourceFile& f = sources_.file(n.range.file);
      LineCol lc = f.line_col(n.range.begin);
      out += fmt::format("{}:{}:{}: note: {}\n", f.path(), lc.line, lc.col, n.message);
      out += snippet(f, n.range, color);
    } else {
      out += fmt::format("note: {}\n", n.message);
    }
  }
  if (!d.help.empty()) out += fmt::format("help: {}\n", d.help);
  return out;
}

void Diagnostics::print(std::ostream& out, bool color) const {
  for (const Diagnostic& d : list_) out << render(d, color);
  if (errors_ + warnings_ == 0) return;
  std::vector<std::string> parts;
  if (errors_) parts.push_back(fmt::format("{} error{}", errors_, errors_ == 1 ? "" : "s"));
  if (warnings_) parts.push_back(fmt::format("{} warning{}", warnings_, warnings_ == 1 ? "" : "s"));
  std::string line = parts[0];
  if (parts.size() > 1) line += " and " + parts[1];
  if (list_.size() < errors_ + warnings_) line += fmt::format(" ({} not shown)", errors_ + warnings_ - list_.size());
  out << line << " generated.\n";
}

// Edit distance where swapping two neighbouring letters counts as one edit (`scroe` -> `score`), the most
// common typo (optimal string alignment distance).
static size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    if (c == name) continue;
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Suggest only when at most a third of the name differs (and never for one-letter names).
  size_t limit = std::max<size_t>(1, name.size() / 3);
  if (best.empty() || best_d > limit || name.size() < 2) return "";
  return best;
}

}  // namespace pipec
