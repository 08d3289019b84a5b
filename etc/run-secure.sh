#!/usr/bin/env bash
# `make run-secure`: the three-node cluster of etc/secure-cluster.conf, TLS
# and SASL on every port. Idempotent first-time steps, then run-cluster.sh:
#   1. ./data/certs: etc/gen-certs.sh (CA, node-1..3, client, admin), once;
#   2. each node whose data directory does not exist yet: `skiff format
#      --add-scram` with the first admin user (SCRAM-SHA-512, the password
#      below or $SKIFF_ADMIN_PASSWORD), applied once by the first controller;
#   3. etc/run-cluster.sh, polling the admin ports over HTTPS as that user.
# Run from the repository root (the config's paths are relative to it).
#   env: SKIFF_BIN (bin/skiff), SKIFF_ADMIN_PASSWORD (admin-secret)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bin=${SKIFF_BIN:-$here/bin/skiff}
conf=etc/secure-cluster.conf
pw=${SKIFF_ADMIN_PASSWORD:-admin-secret}
[ -x "$bin" ] || { echo "run-secure: $bin not built (run make)" >&2; exit 1; }
if [ ! -f data/certs/ca.crt ]; then
  bash etc/gen-certs.sh data/certs
fi
for n in 1 2 3; do
  if [ ! -d "data/secure/node-$n" ]; then
    "$bin" format --config "$conf" --node "$n" --add-scram "SCRAM-SHA-512=[name=admin,password=$pw]"
  fi
done
echo "run-secure: kcat -b 127.0.0.1:9092 -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512" \
     "-X sasl.username=admin -X sasl.password=$pw -X ssl.ca.location=data/certs/ca.crt -L"
SKIFF_BIN=$bin SKIFF_ADMIN_CURL="--cacert data/certs/ca.crt -u admin:$pw" exec bash etc/run-cluster.sh "$conf"
