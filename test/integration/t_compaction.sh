#!/usr/bin/env bash
# Issue 15: the log cleaner runs in the broker. One node, compacted topics
# with small segment.ms written by confluent-kafka: after a pass a consumer
# from the beginning gets exactly the latest record per key (offsets,
# timestamps and headers unchanged), tombstones go after
# delete.retention.ms; every codec; committed and aborted transactions,
# their markers removed after delete.retention.ms once no data of theirs is
# left (read from the segment files).
# log.cleaner.threads changed by AlterConfigs stops and restarts the
# cleaner. The cleaner's series in /metrics and the partition's cleaner offset in
# /v1/topics/{name} must have moved.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1 --set log.cleaner.backoff.ms=200
BOOT=127.0.0.1:${SK_KAFKA_PORT[1]}
ADMIN=http://127.0.0.1:${SK_ADMIN_PORT[1]}

# The codec checks (their own topics) run meanwhile the transaction checks
# below: both mostly wait for segment.ms, cleaner passes and
# delete.retention.ms. Their lines are counted once the run ended.
timeout 120 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" codecs \
  none gzip snappy lz4 zstd > "$SK_TMP/codecs.out" 2>"$SK_TMP/codecs.err" &
codecs_pid=$!
sk_check_lines < <(timeout 60 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" txn 2>"$SK_TMP/txn.err")

# Transaction markers go after delete.retention.ms (6 s on cmp-txn) once no data of
# their transaction is left (KIP-98/534). cmp-txn now holds txn-1's COMMIT
# of c0..c3, its ABORT (its data removed) and its filler's COMMIT. A second
# producer commits c0..c3 twice (A, then B): A's COMMIT has nothing left and
# goes, as does the ABORT; the COMMITs of B and of both fillers stay (their
# records do). txn-1's first COMMIT is not checked: when segment.ms rolled
# the segment between its data and it, a producer snapshot shows that
# transaction open, and the marker is kept for a replay from there.
markers() {  # "offset type pid horizon" per control batch in cmp-txn's segment files
  "$SK_PY" - "$SK_TMP/data/node-1/cmp-txn-0" <<'PY'
import glob, struct, sys
def varint(b, i):
    shift = result = 0
    while True:
        c = b[i]; i += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return (result >> 1) ^ -(result & 1), i
        shift += 7
out = []
for path in sorted(glob.glob(sys.argv[1] + "/*.log")):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        b = data[pos:pos + 12 + length]
        pos += 12 + length
        attrs = struct.unpack_from(">h", b, 21)[0]
        if not attrs & 0x20 or len(b) < 62:
            continue
        pid = struct.unpack_from(">q", b, 43)[0]
        _, i = varint(b, 61)        # record length
        i += 1                      # record attributes
        _, i = varint(b, i)         # timestamp delta
        _, i = varint(b, i)         # offset delta
        _, i = varint(b, i)         # key length; key: version, type
        ctype = struct.unpack_from(">h", b, i + 2)[0]
        out.append((base, {0: "ABORT", 1: "COMMIT"}.get(ctype, str(ctype)), pid, 1 if attrs & 0x40 else 0))
for o in sorted(out):
    print("%d %s %d %d" % o)
PY
}
markers > "$SK_TMP/markers0.txt" 2>"$SK_TMP/markers.err"
sk_check "cmp-txn has 2 COMMIT markers and 1 ABORT ($(tr '\n' ';' < "$SK_TMP/markers0.txt"))" \
  test "$(grep -c ' COMMIT ' "$SK_TMP/markers0.txt")" = 2 -a "$(grep -c ' ABORT ' "$SK_TMP/markers0.txt")" = 1
timeout 40 "$SK_PY" - "$BOOT" > "$SK_TMP/recommit.txt" 2>"$SK_TMP/recommit.err" <<'PY'
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "cmp-txn-2", "linger.ms": 1})
p.init_transactions(20)
last = []
def cb(err, msg):
    if err is None:
        last.append(msg.offset())
for name in ("A", "B"):
    p.begin_transaction()
    for k in range(4):
        p.produce("cmp-txn", key=b"c%d" % k, value=b"recommitted-%s%d" % (name.encode(), k), on_delivery=cb)
    p.flush(20)
    p.commit_transaction(20)
    print("%s_COMMIT %d" % (name, max(last) + 1))   # no other producer writes here
    last.clear()
time.sleep(0.4)   # the next transaction rolls: A and B become cleanable
p.begin_transaction()
p.produce("cmp-txn", key=b"zz-filler2", value=b"roll")
p.commit_transaction(20)
print("DONE")
PY
a_commit=$(sed -n 's/^A_COMMIT //p' "$SK_TMP/recommit.txt")
b_commit=$(sed -n 's/^B_COMMIT //p' "$SK_TMP/recommit.txt")
sk_check "second producer committed c0..c3 twice (A's COMMIT at $a_commit, B's at $b_commit)" \
  grep -q DONE "$SK_TMP/recommit.txt"
ok=0
for _ in $(seq 1 40); do
  markers > "$SK_TMP/markers1.txt" 2>>"$SK_TMP/markers.err"
  if [ -n "$a_commit" ] && ! grep -q ' ABORT ' "$SK_TMP/markers1.txt" && ! grep -q "^$a_commit " "$SK_TMP/markers1.txt"; then
    ok=1; break
  fi
  sleep 0.5
done
sk_check "ABORT marker and A's COMMIT (records all superseded) removed ($(tr '\n' ';' < "$SK_TMP/markers1.txt"))" test "$ok" = 1
filler1=$(awk '$2 == "COMMIT" { c = $1 } END { print c }' "$SK_TMP/markers0.txt")
kept=1
for o in "$filler1" "$b_commit" "$((b_commit + 2))"; do
  grep -q "^$o COMMIT " "$SK_TMP/markers1.txt" || kept=0
done
sk_check "COMMIT markers of transactions with records left kept ($filler1, $b_commit, $((b_commit + 2)))" test "$kept" = 1
horizon=$(awk -v a="$filler1" '$1 == a { print $4 }' "$SK_TMP/markers1.txt")
sk_check "a kept marker below the active segment carries a delete horizon" test "$horizon" = 1
timeout 40 "$SK_PY" - "$BOOT" > "$SK_TMP/after.txt" 2>"$SK_TMP/after.err" <<'PY'
import sys
from confluent_kafka import Consumer, TopicPartition
for iso in ("read_committed", "read_uncommitted"):
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "cmp-after-" + iso, "isolation.level": iso,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition("cmp-txn", 0, 0)])
    recs = []
    while True:
        m = c.poll(10)
        if m is None:
            break
        if m.error():
            break  # partition EOF
        recs.append("%s=%s@%d" % (m.key().decode(), m.value().decode(), m.offset()))
    c.close()
    print(iso, " ".join(sorted(recs)))
PY
rc_line=$(sed -n 's/^read_committed //p' "$SK_TMP/after.txt")
ru_line=$(sed -n 's/^read_uncommitted //p' "$SK_TMP/after.txt")
sk_check "read_committed after marker removal: c0..c3 of B, fillers, nothing aborted ($rc_line)" \
  "$SK_PY" -c 'import sys; r = dict(x.split("@")[0].split("=") for x in sys.argv[1].split()); sys.exit(r != {"c0": "recommitted-B0", "c1": "recommitted-B1", "c2": "recommitted-B2", "c3": "recommitted-B3", "zz-filler": "roll", "zz-filler2": "roll"})' "$rc_line"
sk_check "read_uncommitted sees the same records at the same offsets" test -n "$rc_line" -a "$rc_line" = "$ru_line"

wait "$codecs_pid"
sk_check_lines < "$SK_TMP/codecs.out"
sk_check "codec checks all printed" test "$(grep -cE '^(PASS|FAIL) ' "$SK_TMP/codecs.out")" -ge 20

# the cleaner keys act at run time: log.cleaner.threads=0 (AlterConfigs)
# stops it, 1 starts it again
CC=("$SK_PY" "$HERE/clients/compact_check.py")
passes() { curl -s "$ADMIN/metrics" | sed -n 's/^skiff_cleaner_passes_total //p'; }
timeout 30 "${CC[@]}" "$BOOT" alter-broker 1 log.cleaner.threads=0 log.cleaner.backoff.ms=200 2>"$SK_TMP/alter.err" ||
  sk_check "AlterConfigs log.cleaner.threads=0 accepted" false
timeout 30 "${CC[@]}" "$BOOT" create dyn >/dev/null 2>>"$SK_TMP/alter.err"
timeout 30 "${CC[@]}" "$BOOT" produce dyn 200 0 >/dev/null 2>>"$SK_TMP/alter.err"
sleep 0.4
timeout 30 "${CC[@]}" "$BOOT" produce dyn 20 0 >/dev/null 2>>"$SK_TMP/alter.err"   # rolls: 200 records cleanable
dyn_cleaned() { curl -s "$ADMIN/v1/topics/dyn" | "$SK_PY" -c 'import json,sys; sys.exit(json.load(sys.stdin)["partitions"][0]["cleaner_offset"] == 0)'; }
p0=$(passes); sleep 2; p1=$(passes)
sk_check "log.cleaner.threads=0 at run time: no pass ($p0 -> $p1)" test "$p0" = "$p1"
c0=1; dyn_cleaned || c0=0
sk_check "log.cleaner.threads=0 at run time: dyn not cleaned" test "$c0" = 0
timeout 30 "${CC[@]}" "$BOOT" alter-broker 1 log.cleaner.threads=1 log.cleaner.backoff.ms=200 2>>"$SK_TMP/alter.err"
ok=0
for _ in $(seq 1 25); do dyn_cleaned && { ok=1; break; }; sleep 0.2; done
sk_check "log.cleaner.threads=1 at run time: dyn cleaned" test "$ok" = 1

curl -s "$ADMIN/metrics" > "$SK_TMP/metrics.txt"
val() { sed -n "s/^$1 //p" "$SK_TMP/metrics.txt"; }
sk_check "skiff_cleaner_passes_total > 0 ($(val skiff_cleaner_passes_total))" \
  awk -v v="$(val skiff_cleaner_passes_total)" 'BEGIN { exit !(v > 0) }'
sk_check "skiff_cleaner_records_removed_total > 0" \
  awk -v v="$(val skiff_cleaner_records_removed_total)" 'BEGIN { exit !(v > 0) }'
rd=$(val skiff_cleaner_bytes_read_total)
wr=$(val skiff_cleaner_bytes_written_total)
sk_check "skiff_cleaner_bytes_read_total > written ($rd > $wr)" awk -v r="$rd" -v w="$wr" 'BEGIN { exit !(r > 0 && w > 0 && r > w) }'
last=$(val skiff_cleaner_last_pass_timestamp_seconds)
now=$(date +%s)
sk_check "skiff_cleaner_last_pass_timestamp_seconds recent ($last, now $now)" \
  awk -v v="$last" -v now="$now" 'BEGIN { exit !(v > now - 120 && v <= now + 1) }'
sk_check "skiff_cleaner_uncleanable_logs 0" test "$(val skiff_cleaner_uncleanable_logs)" = 0
curl -s "$ADMIN/v1/topics/cmp-none" > "$SK_TMP/topic.json"
sk_check "/v1/topics shows a cleaner offset > 0 and a dirty ratio ($(cat "$SK_TMP/topic.json" | head -c 300))" \
  "$SK_PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["partitions"][0]; sys.exit(not (p["cleaner_offset"] > 0 and 0 <= p["dirty_ratio"] <= 1))' "$SK_TMP/topic.json"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/codecs.err" "$SK_TMP/txn.err" "$SK_TMP/markers.err" "$SK_TMP/recommit.err" "$SK_TMP/after.err"; sk_dump_logs; }
sk_summary "$NAME"
