#!/usr/bin/env bash
# Creates a virtual environment with Hugging Face's `tokenizers` (PyPI) on top of Debian's
# python3-torch, for examples/gpt_bpe.py and its tests (Debian 12 has no python3-tokenizers):
#   scripts/tokenizers-venv.sh [DIR]      (default: build/tokenizers-venv, where the tests look)
#   DIR/bin/python examples/gpt_bpe.py --config untied
set -euo pipefail

dir=${1:-build/tokenizers-venv}
if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "tokenizers-venv: /usr/bin/python3 cannot create a virtual environment with pip (install python3-venv: scripts/install-deps.sh)" >&2
  exit 2
fi
if [[ ! -x "$dir/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$dir"
fi
"$dir/bin/python" -m pip install --quiet tokenizers
"$dir/bin/python" -c 'import tokenizers, torch; print("tokenizers-venv: %s: tokenizers %s, torch %s" % (__import__("sys").executable, tokenizers.__version__, torch.__version__))'
