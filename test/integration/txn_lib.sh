# test/integration/txn_lib.sh — shared by the transaction tests; source it
# after lib.sh.

# txn_coord_node ASK TOPIC KEY NPARTS: the leader, as node ASK's admin port
# sees it, of KEY's partition of TOPIC. Kafka places a transactional id or a
# group on partition abs(String.hashCode(key)) % NPARTS (hashCode over UTF-16
# units, abs(MIN_VALUE) taken as 0).
txn_coord_node() {
  local p
  p=$($SK_PY -c 'import sys
h = 0
for ch in sys.argv[1]:
    for u in [ord(ch)] if ord(ch) < 0x10000 else [0xD800 + ((ord(ch) - 0x10000) >> 10), 0xDC00 + ((ord(ch) - 0x10000) & 0x3FF)]:
        h = (31 * h + u) & 0xFFFFFFFF
h = h - (1 << 32) if h >= (1 << 31) else h
print((0 if h == -(1 << 31) else abs(h)) % int(sys.argv[2]))' "$3" "$4") || return 1
  curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}/v1/topics/$2" |
    jq -r ".partitions[] | select(.partition == $p) | .leader"
}
