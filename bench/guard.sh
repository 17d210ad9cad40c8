#!/usr/bin/env bash
# guard: the slowdown guard's figures on this machine — unguarded slowdown, guarded slowdown against
# a 5 % budget, the noise throughput kept under the guard as a share of unguarded, and the time to
# settle — measured side by side in interleaved rounds (bench/guard.py says how), for a trainer that
# reports its steps and for the Slurm-shaped case: one that reports nothing (its GPU's busy time)
# beside a co-tenant held in Slurm-shaped cgroups (bench/guard_slurm.py; needs root). --case mix:
# the trainer beside stream alone, busy alone and both on one core, under the guard off, one share
# for all (law 1), attribution (law 2) and the best fixed vector of pinned shares (a sweep first):
# slowdown with its interval, windows over budget, each co-tenant's work kept, time to settle.
# --case duty: stream held at share 0.25 by the freezer with duty periods of 20, 100 and 500 ms
# against the guard off: what bursts cost the trainer for the work they keep.
# Usage: bench/guard.sh [--rounds N] [--noise SECONDS] [--budget FRACTION] [--case reporting|slurm|both|mix|duty]
#                       [--mix-case stream|busy|both|all]
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh --tests >/dev/null
exec python3 bench/guard.py --build build --root . "$@"
