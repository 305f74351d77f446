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

# deb-src entries are derived from the machine's own apt sources (same URIs,
# suites and keys), never from a hard-coded mirror; nothing is added when a
# deb-src entry already exists.
has_src() {
    grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list ||
    grep -Eqs '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources
}
derive_src() {
    # deb822 stanzas whose Types include deb: same stanza with Types: deb-src.
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'BEGIN{RS=""; ORS="\n\n"}
             /(^|\n)Types:[^\n]*(^|[ \t])deb([ \t]|\n|$)/ && !/Enabled:[ \t]*no/ {
                 sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f"
    done
    # one-line sources: deb -> deb-src
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
    done
}
if ! has_src; then
    src=$(derive_src)
    if [ -z "$src" ]; then
        log "no apt source to derive a deb-src entry from"; exit 1
    fi
    log "adding deb-src entries derived from the machine's apt sources"
    if printf '%s\n' "$src" | grep -q '^Types:'; then
        printf '%s\n' "$src" | grep -v '^deb-src ' | $SUDO tee /etc/apt/sources.list.d/ai-scheduler-src.sources >/dev/null
    fi
    if printf '%s\n' "$src" | grep -q '^deb-src '; then
        printf '%s\n' "$src" | grep '^deb-src ' | $SUDO tee /etc/apt/sources.list.d/ai-scheduler-src.list >/dev/null
    fi
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
