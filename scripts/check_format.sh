#!/usr/bin/env bash
# CI's format check: fails (exit 1) listing every C/C++ source that .clang-format would change.
# scripts/format.sh rewrites them.
exec bash "$(dirname "$0")/format.sh" --check "$@"
