#!/usr/bin/env bash
# CI stage for the PyTorch backend: a virtual environment under build-py/ with torch==2.11.0
# (pip's cache keeps the wheels between runs), this package built and installed with pip, then
# its tests. PYTEST_ARGS narrows the run (e.g. "-k collectives"); COLLCOMM_PREBUILT_DIR, a build
# folder of this repository, links the backend with the libcollcomm there instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TORCH_VENV:-build-py/venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
PY="$(cd "$VENV" && pwd)/bin/python"
"$VENV/bin/pip" install -q torch==2.11.0 numpy pytest wheel setuptools
if [ "${SKIP_LIGHTNING:-0}" != 1 ] && [ -f python/tests/test_lightning.py ]; then
  "$VENV/bin/pip" install -q pytorch-lightning
fi
"$VENV/bin/pip" install -q --no-build-isolation ./python
# From the tests folder, so the installed package (not the source tree) is imported. Exit code 5
# (no tests collected) is a failure here, as any non-zero code is.
cd python/tests
"$PY" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} .
