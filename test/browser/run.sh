#!/usr/bin/env bash
# The dashboard's browser test tools, then its fixtures mode (no API server):
# Debian's Chromium (test/deps.sh browser, as root) and playwright-core from
# package-lock.json (npm ci, only when node_modules lacks it). Used by make
# test and by test/e2e/t_dashboard_browser.sh (which passes --deps-only).
# Fails, never skips, when either cannot be had.
set -euo pipefail
cd "$(dirname "$0")"
bash ../deps.sh browser || { echo "browser: no Chromium (as root: bash test/deps.sh browser)" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "browser: no /usr/bin/chromium" >&2; exit 1; }
command -v npm >/dev/null || { echo "browser: no npm" >&2; exit 1; }
if [ ! -f node_modules/playwright-core/package.json ]; then
    npm ci --no-audit --no-fund >&2 || { echo "browser: npm ci failed" >&2; exit 1; }
fi
[ "${1:-}" = --deps-only ] && exit 0
exec node dashboard.mjs --fixtures
