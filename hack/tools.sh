#!/usr/bin/env bash
# Installs the pinned Go tools the build uses into _output/tools (cached:
# a tool already installed at the pinned version is not rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/_output/tools
mkdir -p "$bin"
install() { # name module@version
  local name=$1 mod=$2 stamp="$bin/.$1.version"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$mod" ]; then
    return
  fi
  echo "installing $mod"
  GOBIN="$bin" go install "$mod"
  echo "$mod" >"$stamp"
}
# golangci-lint runs staticcheck (and unused), errorlint and depguard:
# .golangci.yml.
install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
