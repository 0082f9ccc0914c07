#!/usr/bin/env bash
# bench/placement_suite.sh - the py-spy placement benchmark (issue 21,
# BENCHMARKS.md section 15) under `make bench`.
cd "$(dirname "$0")/.." && exec python3 bench/placement_suite.py "$@"
