#!/usr/bin/env bash
# End-to-end suite. Filled in by the e2e work (see docs/testing.md).
set -euo pipefail
echo "e2e: no end-to-end tests yet"
