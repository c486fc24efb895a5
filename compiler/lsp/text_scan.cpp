#include "compiler/lsp/text_scan.h"

#include <algorithm>

namespace pipec::lsp {

namespace {

constexpr std::string_view kDeclKeywords[] = {"import", "const", "fn", "source", "pipeline", "model", "train"};

/// The declaration keyword `line` starts with (followed by a blank), or "".
std::string_view decl_keyword(std::string_view line) {
  for (std::string_view k : kDeclKeywords)
    if (line.size() > k.size() && line.substr(0, k.size()) == k && (line[k.size()] == ' ' || line[k.size()] == '\t'))
      return k;
  return {};
}

}  // namespace

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

WordRange word_at(std::string_view text, uint32_t offset) {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text.size()));
  WordRange w{offset, offset};
  while (w.begin > 0 && is_ident_char(text[w.begin - 1])) --w.begin;
  while (w.end < text.size() && is_ident_char(text[w.end])) ++w.end;
  return w;
}

DeclLine enclosing_decl_line(std::string_view text, uint32_t offset) {
  size_t pos = std::min<size_t>(offset, text.size());
  for (;;) {
    size_t line_start = pos == 0 ? 0 : text.rfind('\n', pos - 1);
    line_start = line_start == std::string_view::npos || pos == 0 ? 0 : line_start + 1;
    std::string_view kw = decl_keyword(text.substr(line_start));
    if (!kw.empty()) return {static_cast<uint32_t>(line_start), std::string(kw)};
    if (line_start == 0) return {};
    pos = line_start - 1;
  }
}

uint32_t next_decl_line(std::string_view text, uint32_t offset) {
  size_t pos = std::min<size_t>(offset, text.size());
  for (;;) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return static_cast<uint32_t>(text.size());
    pos = nl + 1;
    if (!decl_keyword(text.substr(pos)).empty()) return static_cast<uint32_t>(pos);
  }
}

namespace {

/// Calls `on_code(i)` for every byte of [from, to) outside strings and comments.
template <class F>
void scan_code(std::string_view text, uint32_t from, uint32_t to, F on_code) {
  to = std::min<uint32_t>(to, static_cast<uint32_t>(text.size()));
  for (uint32_t i = from; i < to; ++i) {
    char c = text[i];
    if (c == '#') {
      while (i < to && text[i] != '\n') ++i;
    } else if (c == '"') {
      for (++i; i < to && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\') ++i;
    } else {
      on_code(i);
    }
  }
}

/// The name of an argument written `name = value`; "" for a positional one.
std::string argument_name(std::string_view segment) {
  size_t i = 0;
  while (i < segment.size() && (segment[i] == ' ' || segment[i] == '\t' || segment[i] == '\n' || segment[i] == '\r'))
    ++i;
  size_t begin = i;
  while (i < segment.size() && is_ident_char(segment[i])) ++i;
  if (i == begin) return "";
  std::string name(segment.substr(begin, i - begin));
  while (i < segment.size() && (segment[i] == ' ' || segment[i] == '\t')) ++i;
  // `name = value`, not `a == b` or the lambda `r => ...`.
  if (i < segment.size() && segment[i] == '=' &&
      (i + 1 >= segment.size() || (segment[i + 1] != '=' && segment[i + 1] != '>')))
    return name;
  return "";
}

}  // namespace

std::vector<uint32_t> open_bracket_positions(std::string_view text, uint32_t from, uint32_t to) {
  std::vector<uint32_t> open;
  scan_code(text, from, to, [&](uint32_t i) {
    char c = text[i];
    if (c == '(' || c == '[' || c == '{') open.push_back(i);
    else if ((c == ')' || c == ']' || c == '}') && !open.empty()) open.pop_back();
  });
  return open;
}

std::string open_brackets(std::string_view text, uint32_t from, uint32_t to) {
  std::string open;
  for (uint32_t i : open_bracket_positions(text, from, to)) open += text[i];
  return open;
}

ArgumentAt argument_at(std::string_view text, uint32_t open, uint32_t offset) {
  ArgumentAt at;
  uint32_t segment_begin = open + 1;
  int depth = 0;
  scan_code(text, open + 1, offset, [&](uint32_t i) {
    char c = text[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ',' && depth == 0) {
      if (argument_name(text.substr(segment_begin, i - segment_begin)).empty()) ++at.positional_before;
      ++at.index;
      segment_begin = i + 1;
    }
  });
  // The current argument runs to the next comma or closing bracket of the call (the cursor may be in
  // the middle of its name).
  uint32_t segment_end = static_cast<uint32_t>(text.size());
  depth = 0;
  scan_code(text, offset, segment_end, [&](uint32_t i) {
    if (segment_end != text.size()) return;
    char c = text[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if ((c == ')' || c == ']' || c == '}') && depth-- == 0) segment_end = i;
    else if (c == ',' && depth == 0) segment_end = i;
  });
  at.name = argument_name(text.substr(segment_begin, segment_end - segment_begin));
  return at;
}

std::string closing_brackets(std::string_view open) {
  std::string close;
  for (auto it = open.rbegin(); it != open.rend(); ++it) close += *it == '(' ? ')' : *it == '[' ? ']' : '}';
  return close;
}

}  // namespace pipec::lsp
