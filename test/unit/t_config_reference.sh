#!/usr/bin/env bash
# The committed configuration reference (broker/config/CONFIGURATION.md) is
# exactly what broker/config/gen/cfgkeys.py makes of the key table
# (broker/config/kafka_keys.tsv), so the two cannot drift; after a check
# that the comparison can fail (a changed table must change the page).
# Run by `make test-unit` from the repository root; exit 0 = pass.
set -eu
cd "$(dirname "$0")/../.."
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" broker/config/gen/cfgkeys.py --tsv broker/config/kafka_keys.tsv --md "$tmp/ref.md"
if ! cmp -s "$tmp/ref.md" broker/config/CONFIGURATION.md; then
  diff -u broker/config/CONFIGURATION.md "$tmp/ref.md" | head -40
  echo "FAIL: broker/config/CONFIGURATION.md is not what cfgkeys.py makes of kafka_keys.tsv;"
  echo "      regenerate it: $py broker/config/gen/cfgkeys.py --tsv broker/config/kafka_keys.tsv --md broker/config/CONFIGURATION.md"
  exit 1
fi
# self-test: a table with one more key must give another page
cp broker/config/kafka_keys.tsv "$tmp/more.tsv"
printf 'zz.self.test\tbroker\tint\t1\tread-only\tstored\t\t\t\n' >> "$tmp/more.tsv"
"$py" broker/config/gen/cfgkeys.py --tsv "$tmp/more.tsv" --md "$tmp/more.md"
if cmp -s "$tmp/more.md" broker/config/CONFIGURATION.md; then
  echo "FAIL: self-test: a changed table gave the same page"
  exit 1
fi
# a malformed table is refused, not turned into a page
printf 'bad\tnowhere\n' >> "$tmp/more.tsv"
if "$py" broker/config/gen/cfgkeys.py --tsv "$tmp/more.tsv" --md "$tmp/bad.md" 2>/dev/null; then
  echo "FAIL: self-test: a malformed table was accepted"
  exit 1
fi
echo "t_config_reference: CONFIGURATION.md matches kafka_keys.tsv ($(grep -vc '^#' broker/config/kafka_keys.tsv) keys)"
