#!/usr/bin/env bash
# Every public identifier of a broker/ folder carries the folder's prefix
# (broker/README.md "Names"), after the checker's self-test (it must be able
# to fail, and rename_prefixes.py must fix what it finds).
# Run by `make test-unit` from the repository root; exit 0 = pass.
set -eu
cd "$(dirname "$0")/../.."
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" test/layers/test_check_prefixes.py
"$py" test/layers/check_prefixes.py
