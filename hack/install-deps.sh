#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian). Idempotent and
# quick when everything is already there. `make unit` (so `make test`) runs
# it first: on a fresh machine the LLDP tests would otherwise skip, unit
# and multi-node alike. Not root: it says what is missing and returns 0
# (the tests that need it skip, saying why).
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
# lldpd plays the leaf switches for the LLDP tests (internal/lldp).
command -v lldpd >/dev/null || need+=(lldpd)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" != 0 ]; then
  echo "install-deps: not root: ${need[*]} not installed; the tests that need them will skip"
  exit 0
fi
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
