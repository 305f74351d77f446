#!/usr/bin/env bash
# Rewrites every C file under pkg/, cmd/ and test/ in place to the style in
# .clang-format. `make lint` (test/lint.sh) checks the same files without
# touching them. CLANG_FORMAT picks another binary (the style assumes 14).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash test/deps.sh lint
cf=${CLANG_FORMAT:-clang-format}
find pkg cmd test -name '*.[ch]' -not -path '*/.work/*' -print0 | sort -z | xargs -0 -r "$cf" --style=file -i
echo "format.sh: formatted $(find pkg cmd test -name '*.[ch]' -not -path '*/.work/*' | wc -l) files with $("$cf" --version)"
