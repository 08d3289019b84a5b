#!/usr/bin/env bash
# controller_mutation_rate (KIP-599, issue 18) in a 3-node cluster: skiffctl
# sets 2 partitions/s for two client ids (AlterClientQuotas accepts the key);
# CreateTopics v7 / DeleteTopics v5 / CreatePartitions v3 over the quota
# answer THROTTLING_QUOTA_EXCEEDED, CreateTopics v5 is admitted and
# throttled, validate_only is not counted, the bucket refills; once sent to
# the controller (its handler counts) and once to another node (counted
# there, before forwarding). A client id without a quota is never refused.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_mutation_quota: jq missing"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 3 --set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
adm() { curl -s --max-time 5 "http://127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
L=""
for _ in $(seq 1 100); do
  L=$(adm 1 /v1/cluster | jq -r '.controller_id' 2>/dev/null)
  [ -n "$L" ] && [ "$L" != null ] && [ "$L" != -1 ] && break
  sleep 0.2
done
[ -n "$L" ] && [ "$L" != -1 ] || sk_fail "no controller"
F=$(( L % 3 + 1 ))
sk_log "controller node $L, other node $F"

ctl() { local c=$1 s=$2; shift 2; timeout 20 "$SK_BIN/skiffctl" "$c" "$s" --brokers "127.0.0.1:${SK_KAFKA_PORT[$F]}" "$@"; }
for c in mq-ctrl mq-fwd; do
  out=$(ctl quota set --client-id "$c" --controller-mutation-rate 2 2>&1); rc=$?
  sk_check "skiffctl quota set --client-id $c --controller-mutation-rate 2 ($out)" test $rc -eq 0
done
sleep 0.5
ctl quota list > "$SK_TMP/quotas.out" 2>&1
sk_check "skiffctl quota list shows the controller_mutation_rate" grep -q "controller_mutation_rate" "$SK_TMP/quotas.out"

sk_check_lines < <(cd "$HERE/clients" && timeout 60 "$SK_PY" mutation_quota.py "127.0.0.1:${SK_KAFKA_PORT[$L]}" mq-ctrl controller 1 2>&1)
sk_check_lines < <(cd "$HERE/clients" && timeout 60 "$SK_PY" mutation_quota.py "127.0.0.1:${SK_KAFKA_PORT[$F]}" mq-fwd forwarded 0 2>&1)
out=$(cd "$HERE/clients" && timeout 30 "$SK_PY" - "127.0.0.1:${SK_KAFKA_PORT[$F]}" <<'PY' 2>&1
import struct, sys
from kwire import call, cstr, uvarint
ts = [cstr(n) + struct.pack('>ih', 4, 1) + b'\1\1\0' for n in (b'free-a', b'free-b', b'free-c')]
r = call(sys.argv[1], 19, 7, uvarint(4) + b''.join(ts) + struct.pack('>i', 15000) + b'\0\0', client=b'free')
r.i32(); errs = []
for _ in range(r.count()):
    r.s(); r.take(16); errs.append(r.i16()); r.s(); r.i32(); r.i16()
    for _ in range(max(r.count(), 0)):
        r.s(); r.s(); r.i8(); r.i8(); r.i8(); r.tags()
    r.tags()
print(errs)
PY
)
sk_check "a client id without a quota creates 12 partitions at once ($out)" test "$out" = "[0, 0, 0]"
for i in 1 2 3; do sk_check "node $i alive" kill -0 "${SK_NODE_PID[i]}"; done
sk_summary t_mutation_quota
