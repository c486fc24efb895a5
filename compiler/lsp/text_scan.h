// Looking at the raw text of a buffer that may not parse (the user is typing): the word around the
// cursor, the declaration it sits in, and which brackets are open there. Strings and `#` comments are
// skipped, so brackets inside them do not count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipec::lsp {

bool is_ident_char(char c);

/// [begin, end) of the identifier that `offset` touches (empty when none: begin == end == offset).
struct WordRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};
WordRange word_at(std::string_view text, uint32_t offset);

/// A top-level declaration as the text shows it: a line starting in column 0 with a declaration
/// keyword (`source`, `pipeline`, ...).
struct DeclLine {
  uint32_t begin = 0;   // the line's first byte
  std::string keyword;  // empty when there is none
};
/// The last declaration line that starts at or before `offset`.
DeclLine enclosing_decl_line(std::string_view text, uint32_t offset);
/// The first declaration line that starts after `offset`, or the text's size.
uint32_t next_decl_line(std::string_view text, uint32_t offset);

/// Where the brackets opened in [from, to) and not closed there are, innermost last.
std::vector<uint32_t> open_bracket_positions(std::string_view text, uint32_t from, uint32_t to);
/// The brackets opened in [from, to) and not closed there, innermost last ("({[" characters).
std::string open_brackets(std::string_view text, uint32_t from, uint32_t to);
/// The closing brackets for `open`, innermost first.
std::string closing_brackets(std::string_view open);

/// Which argument of the call whose `(` is at `open` the byte `offset` is in: its index among the
/// arguments, how many positional arguments come before it, and its name when it is written `name = ...`.
struct ArgumentAt {
  size_t index = 0;
  size_t positional_before = 0;
  std::string name;
};
ArgumentAt argument_at(std::string_view text, uint32_t open, uint32_t offset);

}  // namespace pipec::lsp
