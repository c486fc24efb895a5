#!/usr/bin/env bash
# Formats the C and C++ sources with clang-format-14 and the repository's .clang-format.
#
#   scripts/format.sh                 # rewrites every tracked source that is not formatted
#   scripts/format.sh --check         # changes nothing: lists the files that are not formatted, exit 1 if any
#   scripts/format.sh [--check] FILE...   # only these files
#
# Which files: every tracked *.cpp, *.h and *.c except the golden CUDA outputs (tests/cuda/) and the
# X-macro tables (*.def, which are not C++ on their own). CLANG_FORMAT overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format="${CLANG_FORMAT:-clang-format-14}"
if ! command -v "$clang_format" >/dev/null; then
  echo "format: $clang_format not found; install clang-format-14 (scripts/setup.sh)" >&2
  exit 2
fi
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.c' ':!:tests/cuda/*')
fi

if [ "$check" = 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 -P "$(nproc 2>/dev/null || echo 2)" "$clang_format" -i --style=file
  exit 0
fi

# Each file: its name and how many of its lines clang-format would change (none printed when 0).
report=$(printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc 2>/dev/null || echo 2)" bash -c '
  for f; do
    n=$("$0" --style=file "$f" | diff "$f" - | grep -c "^<")
    [ "$n" -gt 0 ] && echo "$f: $n line(s) differ from .clang-format"
  done
  true' "$clang_format" | sort)
if [ -n "$report" ]; then
  echo "$report"
  bad=$(echo "$report" | wc -l)
  lines=$(echo "$report" | awk '{ s += $2 } END { print s }')
  echo "format: $bad of ${#files[@]} files not formatted ($lines lines); scripts/format.sh FILE... fixes them" >&2
  exit 1
fi
echo "format: all ${#files[@]} files formatted"
