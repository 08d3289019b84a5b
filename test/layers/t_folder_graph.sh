#!/usr/bin/env bash
# The folder graph of broker/ against the allowed arrows of broker/README.md
# ("Layers"), then the checker's self-test (it must be able to fail).
# Run by `make test-unit` from the repository root; exit 0 = pass.
set -eu
cd "$(dirname "$0")/../.."
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" test/layers/test_folder_graph.py
"$py" test/layers/folder_graph.py
