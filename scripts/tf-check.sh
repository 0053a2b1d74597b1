#!/usr/bin/env bash
# Checks that deploy/terraform is formatted, with OpenTofu built from the Go
# module proxy (the Google provider cannot be fetched offline, so `validate`
# cannot run here; the HCL tests in deploy/ check the structure instead).
# The binary is built once, about 5 minutes on two cores, and cached outside
# the repository.
set -euo pipefail
version=1.12.6
cache="${XDG_CACHE_HOME:-$HOME/.cache}/egress"
tofu="$cache/tofu-$version"
if [ ! -x "$tofu" ]; then
  echo "tf-check: building OpenTofu $version into $tofu (once; a few minutes)" >&2
  mkdir -p "$cache"
  dir=$(go mod download -json "github.com/opentofu/opentofu@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  # Built inside its own module: its go.mod has replace directives.
  (cd "$dir" && go build -o "$tofu" ./cmd/tofu)
fi
cd "$(dirname "$0")/.."
"$tofu" fmt -check -diff -recursive deploy/terraform
echo "tf-check: deploy/terraform is formatted" >&2
