#!/usr/bin/env bash
# `make lint`: C format (.clang-format), shell syntax and shellcheck, Python
# syntax, and doc links that stay inside the repository. Changes nothing;
# exits 1 if anything is found (test/format.sh fixes the C format).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
bash test/deps.sh lint || exit 1

found=0
finding() { found=1; echo "lint: $*" >&2; }

# Tracked files plus new, not ignored ones; a plain find without git.
list() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -co --exclude-standard -- "$@" | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done
    else
        find . -path ./build\* -prune -o -path ./bin -prune -o -path '*/.work' -prune -o -type f -print |
            sed 's|^\./||' | while IFS= read -r f; do
                for pat in "$@"; do
                    # shellcheck disable=SC2254 # $pat is a glob on purpose
                    case "$f" in $pat) echo "$f"; break ;; esac
                done
            done
    fi | sort -u
}

# C: the whole tree in the one style of .clang-format.
cf=${CLANG_FORMAT:-clang-format}
mapfile -t cfiles < <(list 'pkg/*.[ch]' 'cmd/*.[ch]' 'test/*.[ch]')
if ! command -v "$cf" >/dev/null; then
    finding "$cf not found (as root, test/deps.sh lint installs it)"
elif [ "${#cfiles[@]}" -gt 0 ]; then
    out=$("$cf" --style=file --dry-run -Werror "${cfiles[@]}" 2>&1)
    if [ -n "$out" ]; then
        n=$(printf '%s\n' "$out" | grep -c ': error:')
        printf '%s\n' "$out" | grep ': error:' | cut -d: -f1 | sort | uniq -c | sed 's/^/lint: clang-format: /' >&2
        finding "clang-format: $n places in ${#cfiles[@]} C files differ from .clang-format ($($cf --version | sed 's/.*version //')); run bash test/format.sh"
    fi
fi

# Shell: every *.sh and every script with a shell shebang.
mapfile -t shfiles < <({ list '*.sh'; list '.ci/*' 'test/*' | while IFS= read -r f; do
        head -1 "$f" 2>/dev/null | grep -qE '^#!.*\b(ba)?sh\b' && echo "$f"; done; } | sort -u)
for f in "${shfiles[@]}"; do
    bash -n "$f" || finding "bash -n: $f"
done
if command -v shellcheck >/dev/null; then
    # -x follows `source`; warnings and errors count, style notes do not.
    shellcheck -x -P SCRIPTDIR -S warning -f gcc "${shfiles[@]}" >&2 || finding "shellcheck (see above)"
else
    echo "lint: shellcheck not installed: shell scripts only get bash -n" >&2
fi

# Python: syntax, with the bytecode kept out of the tree.
mapfile -t pyfiles < <(list '*.py')
if [ "${#pyfiles[@]}" -gt 0 ]; then
    cache=$(mktemp -d "${TMPDIR:-/tmp}/ai-sched-lint.XXXXXX")
    PYTHONPYCACHEPREFIX=$cache python3 -m py_compile "${pyfiles[@]}" || finding "python3 -m py_compile"
    rm -rf "$cache"
fi

# Docs: relative links to files that exist inside the repository; nothing outside it.
mapfile -t mdfiles < <(list 'README.md' 'docs/*.md')
python3 - "${mdfiles[@]}" <<'PY' || finding "doc links (see above)"
import os, re, sys
root = os.path.realpath('.')
bad = 0
link = re.compile(r'\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)|<((?:https?|ftp)://[^>]+)>')
for md in sys.argv[1:]:
    fence = False
    for no, line in enumerate(open(md, encoding='utf-8'), 1):
        if line.lstrip().startswith('```'):
            fence = not fence
        if fence:
            continue
        for m in link.finditer(line):
            target = next(g for g in m.groups() if g)
            if target.startswith('#'):
                continue
            where = f'{md}:{no}: {target}'
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target) or target.startswith('/'):
                print(f'lint: link outside the repository: {where}', file=sys.stderr)
                bad = 1
                continue
            path = os.path.realpath(os.path.join(os.path.dirname(md), target.split('#')[0]))
            if os.path.commonpath([root, path]) != root:
                print(f'lint: link outside the repository: {where}', file=sys.stderr)
                bad = 1
            elif not os.path.exists(path):
                print(f'lint: link to a missing file: {where}', file=sys.stderr)
                bad = 1
sys.exit(bad)
PY

if [ "$found" = 0 ]; then
    echo "lint: ok (${#cfiles[@]} C, ${#shfiles[@]} shell, ${#pyfiles[@]} Python, ${#mdfiles[@]} Markdown files)"
fi
exit "$found"
