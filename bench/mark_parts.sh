#!/usr/bin/env bash
# Where anchor_mark's nanoseconds go: the landed mark path beside copies
# with the lap CAS, the ledger count and the check word taken out
# (bench/mark_parts.py; the copies are built in a temp dir, never shipped).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bench/mark_parts.py "${MARK_PARTS_ROUNDS:-7}"
