#!/usr/bin/env bash
# gpu_guard: on one GPU node, the guard judging an unmodified PyTorch job (bench/gpu_trainer.py,
# ResNet-50, no cosched import) by the steps the injected hook reports, against the same guard
# judging it by its GPU's busy time, beside cosched-noise stream through coschedd (bench/gpu_guard.py
# says what is measured). One round of the three arms takes about 7 minutes.
#
# On a GPU node (H100/H200, NVIDIA driver, a python3 with a CUDA torch, torchvision, numpy, PIL),
# as root, from the source tree:
#     bash bench/gpu_guard.sh [--rounds N] [--out DIR] [-- TRAINER OPTIONS]
# It runs packaging/setup.sh --tests first (Debian's packages, the build in build/ with the tests).
# Without a GPU, the same flow with the fake NVML and a tiny CPU trainer, to see that it runs:
#     bash bench/gpu_guard.sh --cpu-dry-run
# COSCHED_BUILD=DIR uses that build (with the tests) instead, and skips the setup.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${COSCHED_BUILD:-}" ]; then
	bash packaging/setup.sh --tests >/dev/null
	COSCHED_BUILD=build
fi
exec python3 bench/gpu_guard.py --build "$COSCHED_BUILD" --root . "$@"
