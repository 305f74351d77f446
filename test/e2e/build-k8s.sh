#!/usr/bin/env bash
# Builds kube-apiserver and kube-scheduler from Debian's `kubernetes` source
# package (v1.20.x) once, and caches them outside the repo. Reused afterwards.
# Needs root for apt-get the first time; prints the cache directory.
set -euo pipefail

CACHE=${AI_SCHED_CACHE:-$HOME/.cache/ai-scheduler}
BIN=$CACHE/bin
mkdir -p "$BIN"
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-scheduler" ]; then
    echo "$BIN"; exit 0
fi

log() { echo "build-k8s: $*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ai-scheduler-src.sources; then
    log "adding a deb-src entry for bookworm"
    $SUDO tee /etc/apt/sources.list.d/ai-scheduler-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    $SUDO apt-get update -qq >&2
fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev >&2

SRCDIR=$CACHE/src
if [ ! -d "$SRCDIR/kubernetes" ]; then
    rm -rf "$SRCDIR.tmp"; mkdir -p "$SRCDIR.tmp"
    (cd "$SRCDIR.tmp" && apt-get source -qq kubernetes >&2)
    d=$(find "$SRCDIR.tmp" -maxdepth 1 -mindepth 1 -type d -name 'kubernetes-*' | head -1)
    mkdir -p "$SRCDIR"
    mv "$d" "$SRCDIR/kubernetes"
    rm -rf "$SRCDIR.tmp"
fi
K=$SRCDIR/kubernetes

# Go 1.19 + vendored reflect2 v1.0.1 crash at random: use Debian's 1.0.2.
R=/usr/share/gocode/src/github.com/modern-go/reflect2
if [ -d "$K/vendor/github.com/modern-go/reflect2" ] && [ -d "$R" ]; then
    rm -rf "$K/vendor/github.com/modern-go/reflect2"
    cp -r "$R" "$K/vendor/github.com/modern-go/reflect2"
fi

# As debian/rules does: the tree linked into a GOPATH.
GP=$CACHE/gopath
mkdir -p "$GP/src/k8s.io"
ln -sfn "$K" "$GP/src/k8s.io/kubernetes"
log "building kube-apiserver and kube-scheduler (several minutes)"
(cd "$GP/src/k8s.io/kubernetes" && \
    GOPATH=$GP GO111MODULE=off GOFLAGS=-mod=vendor GOCACHE=$CACHE/gocache \
    make WHAT="cmd/kube-apiserver cmd/kube-scheduler" >&2)
out=$K/_output/local/bin/linux/$(go env GOARCH)
[ -d "$out" ] || out=$K/_output/bin
cp "$out/kube-apiserver" "$out/kube-scheduler" "$BIN/"
echo "$BIN"
