// `pipec fmt`: prints a parsed module in its canonical layout, keeping every comment.
//
// The layout: 2-space indentation; declarations separated by one blank line (two single-line
// declarations of the same kind may stay together when the user wrote them together); spaces around
// binary operators and `=`; a `|` chain or operator chain that does not fit in kFmtWidth columns gets one
// `| stage` (or `+ operand`) per line; block bodies one statement per line; a call or list too long for its
// line gets one element per line, except that a block, record or list argument may open on the call's
// line and close on its last (`map(r => {` ... `}, parallel = auto)`), and a long list of numbers or names
// is packed; parentheses only where the grammar needs them (and around `**` under a unary operator, for
// the reader). Literals keep their spelling.
//
// Comments: own-line comments stay on their own line before what follows them, at its indentation;
// trailing comments stay at the end of the line of what they follow, two spaces after it. A comment inside
// a construct printed on one line (say, between two index items) moves to the end of that line.
#pragma once

#include <string>

#include "compiler/front/ast.h"
#include "compiler/front/source.h"

namespace pipec {

/// The column limit the formatter keeps to where the language lets it.
constexpr int kFmtWidth = 100;

/// Formats `m`, which must have been parsed from `file` without syntax errors. Returns the whole file's new
/// text (ending in a newline unless empty).
std::string format_module(const Module& m, const SourceFile& file);

}  // namespace pipec
