#!/usr/bin/env bash
# Fails (listing the files) when a C/C++ source does not follow .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' 2>/dev/null || find core backends server client tests bench -name '*.cc' -o -name '*.h' -o -name '*.c')
clang-format --dry-run --Werror --style=file "${files[@]}"
echo "format: ${#files[@]} files follow .clang-format"
