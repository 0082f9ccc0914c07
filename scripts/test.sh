#!/usr/bin/env bash
# scripts/test.sh - the whole test suite from a fresh machine: install what
# is missing, build, run every test.  The README's second command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -j2
make test
