#!/usr/bin/env bash
# Broker fetch.max.bytes (KIP-541): a consumer's Fetch answer carries at most
# min(request max_bytes, fetch.max.bytes) record bytes, but always at least
# one batch (KIP-74). One node, a topic of 2 partitions with ~100 KB each.
#  1. default (55 MiB): a raw Fetch v11 with max_bytes 1 MiB gets both
#     partitions' records;
#  2. restarted with --set fetch.max.bytes=1024: the same fetch gets the
#     first partition's first batch only (more than 1024 bytes: KIP-74) and
#     nothing from the second.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "t_fetch_max_bytes: missing $kload"; exit 1; }

sk_start_cluster 1
"$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic fmb --partitions 2 >/dev/null 2>>"$SK_TMP/kload.err" ||
  sk_fail "create-topic"
# 2000 x 100 B: kload fills partitions in turn, 1000 messages each
"$kload" produce --brokers "$SK_BOOTSTRAP" --topic fmb --count 2000 --size 100 --acks 1 \
  >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "produce"

# fetch -> "RECORD_BYTES_P0 RECORD_BYTES_P1" of one Fetch v11 (max_bytes 1 MiB)
fetch() {
  "$SK_PY" - "${SK_KAFKA_PORT[1]}" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
def string(x): return struct.pack(">h", len(x)) + x
def recv(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError
        b += c
    return b
body = struct.pack(">iiiibii", -1, 0, 1, 1 << 20, 0, 0, -1)
body += struct.pack(">i", 1) + string(b"fmb") + struct.pack(">i", 2)
for p in (0, 1):
    body += struct.pack(">iiqqi", p, -1, 0, -1, 1 << 20)
body += struct.pack(">i", 0) + string(b"")
hdr = struct.pack(">hhi", 1, 11, 7) + string(b"fmb")
s.sendall(struct.pack(">i", len(hdr + body)) + hdr + body)
r = recv(struct.unpack(">i", recv(4))[0])
pos = 14
got = {}
for _ in range(struct.unpack(">i", r[pos:pos + 4])[0]):
    pos += 4
    pos += 2 + struct.unpack(">h", r[pos:pos + 2])[0]
    n = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4
    for _ in range(n):
        part = struct.unpack(">i", r[pos:pos + 4])[0]
        pos += 4 + 2 + 8 + 8 + 8
        nab = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4 + max(nab, 0) * 16 + 4
        rl = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4 + max(rl, 0)
        got[part] = max(rl, 0)
print(got.get(0, 0), got.get(1, 0))
PY
}

read -r a0 a1 <<<"$(fetch)"
echo "default fetch.max.bytes: partition 0 $a0 B, partition 1 $a1 B"
sk_check "default: both partitions answered with records" test "${a0:-0}" -gt 1024 -a "${a1:-0}" -gt 1024

sk_stop_node 1
sk_start_node 1 --set fetch.max.bytes=1024
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "restart"
read -r b0 b1 <<<"$(fetch)"
echo "fetch.max.bytes=1024: partition 0 $b0 B, partition 1 $b1 B"
sk_check "capped: the first partition still gets a batch" test "${b0:-0}" -gt 0
sk_check "capped: fewer bytes than uncapped" test $((${b0:-0} + ${b1:-0})) -lt $((${a0:-0} + ${a1:-0}))
sk_check "capped: nothing for the second partition" test "${b1:-1}" = 0

sk_summary t_fetch_max_bytes
