#!/usr/bin/env bash
# Installs the Debian packages a target needs, when they are missing and we
# are root. `build`: compilers and -dev libraries. `e2e`: etcd, jq, valgrind.
# `fuzz`: clang and its libFuzzer runtime. `browser`: Debian's Chromium (and
# its driver), and node with npm unless some node is there already, for the
# dashboard's browser test (its npm packages: `npm ci` in test/browser).
# `lint`: clang-format and python3, plus shellcheck when apt has it.
# Quiet when everything is there.
set -euo pipefail
what=${1:-build}
pkgs_build="gcc make pkg-config libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libmicrohttpd-dev libgnutls28-dev libcmocka-dev libjemalloc-dev"
pkgs_e2e="etcd-server jq valgrind openssl curl python3 python3-yaml unzip"
pkgs_fuzz="clang libclang-rt-dev python3-yaml"
pkgs_browser="chromium chromium-driver"
pkgs_lint="clang-format python3"
pkgs_lint_optional="shellcheck"
optional=""
case "$what" in
  build) want=$pkgs_build ;;
  e2e)   want="$pkgs_build $pkgs_e2e" ;;
  fuzz)  want="$pkgs_build $pkgs_fuzz" ;;
  browser) want=$pkgs_browser; command -v npm >/dev/null || want="$want nodejs npm" ;;
  lint)  want=$pkgs_lint; optional=$pkgs_lint_optional ;;
  *) echo "deps.sh: unknown set $what" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Optional packages: only as root, and only those apt knows (no error otherwise).
if [ -n "$optional" ] && [ "$(id -u)" = 0 ]; then
    for p in $optional; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
        apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]' && missing="$missing $p"
    done
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || true
apt-get install -y -qq $missing >&2
