#!/usr/bin/env bash
# Fetch below v10 converted inline on the state loop when the worker pool
# refuses the job (broker/api/h_fetch.c copy_continue): the answers are
# byte for byte those of the worker path, and
# skiff_fetch_converted_total{where="inline"} counts the work. One node
# with one worker thread and a pool queue of one job
# (num.io.threads=1, skiff.io.queued.max.jobs=1):
#  1. data: every codec and a transactional topic (clients/fetch_old.py),
#     and a large lz4 topic whose Fetch v2 conversion keeps the one thread
#     busy for a while;
#  2. references, on the worker path: raw Fetch v0, v2, v3, v4, v7, v9
#     (budgets of 1 byte and 50 MiB, read_committed) and the large Fetch
#     v2, each sent alone and taken only if the inline counter did not
#     move meanwhile;
#  3. the same requests again while another connection keeps the large
#     conversion on the pool, so that the queue is full when they arrive:
#     every answer (the large one included) equals its reference byte for
#     byte, and the inline counter moved.
. "$(dirname "$0")/lib.sh"
NAME=t_fetch_convert_inline
C="$SK_ROOT/test/integration/clients"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "$NAME: missing $kload"; exit 1; }

sk_start_cluster 1 --set num.io.threads=1 --set skiff.io.queued.max.jobs=1
B=$SK_BOOTSTRAP
PORT=${SK_KAFKA_PORT[1]}
ADMIN=${SK_ADMIN_PORT[1]}

"$kload" create-topic --brokers "$B" --topic old --partitions 6 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create old"
"$kload" create-topic --brokers "$B" --topic oldtx --partitions 1 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create oldtx"
"$kload" create-topic --brokers "$B" --topic oldbig --partitions 1 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create oldbig"
"$SK_PY" "$C/fetch_old.py" produce "$B" >"$SK_TMP/produce.out" 2>"$SK_TMP/produce.err" ||
  { cat "$SK_TMP/produce.err"; sk_fail "produce"; }
"$kload" produce --brokers "$B" --topic oldbig --count 20000 --size 1000 --compression lz4 --acks 1 \
  >"$SK_TMP/big.json" 2>>"$SK_TMP/kload.err" || sk_fail "produce oldbig"

"$SK_PY" - "$PORT" "$ADMIN" "$C" >"$SK_TMP/inline.out" 2>&1 <<'PY'
import socket, struct, sys, threading, time, urllib.request
sys.path.insert(0, sys.argv[3])
from fetch_old import request, roundtrip, parse
port, admin = int(sys.argv[1]), int(sys.argv[2])

def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    sys.stdout.flush()

def converted(where):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % admin, timeout=5).read().decode()
    p = 'skiff_fetch_converted_total{where="%s"} ' % where
    for line in text.splitlines():
        if line.startswith(p):
            return int(float(line[len(p):]))
    raise SystemExit("FAIL metric %s missing" % p.strip())

old6 = [("old", p, 0, 1 << 20) for p in range(6)]
# (name, version, parts, isolation, max_bytes)
REQS = [("v0 old", 0, old6, 0, 50 << 20), ("v2 old", 2, old6, 0, 50 << 20),
        ("v3 old", 3, old6, 0, 50 << 20), ("v3 old max_bytes=1", 3, old6, 0, 1),
        ("v4 old", 4, old6, 0, 50 << 20), ("v7 old", 7, old6, 0, 50 << 20),
        ("v9 old max_bytes=1", 9, old6, 0, 1), ("v4 oldtx read_committed", 4, [("oldtx", 0, 0, 1 << 20)], 1, 50 << 20),
        ("v0 oldtx", 0, [("oldtx", 0, 0, 1 << 20)], 0, 50 << 20)]
BIG = ("v2 oldbig 16 MiB", 2, [("oldbig", 0, 0, 16 << 20)], 0, 64 << 20)
frames = {r[0]: request(r[1], r[2], r[3], r[4], corr=100 + i) for i, r in enumerate(REQS + [BIG])}

# 2: references on the worker path (a request whose answer came while the
# inline counter moved is asked again)
s = socket.create_connection(("127.0.0.1", port), timeout=60)
ref = {}
for name in frames:
    for attempt in range(20):
        i0 = converted("inline")
        ans = roundtrip(s, frames[name])
        if converted("inline") == i0:
            ref[name] = ans
            break
check(len(ref) == len(frames), "references of %d requests taken on the worker path (inline counter still)" % len(frames))
w_ref = converted("worker")
check(w_ref > 0, "the references were converted by the worker pool (worker = %d)" % w_ref)
big = parse(2, ref[BIG[0]])[0]
check(big["error"] == 0 and len(big["records"]) > 1000 and {r[3] for r in big["records"]} == {1},
      "the large Fetch v2 answers %d magic 1 messages" % len(big["records"]))

# 3: the large conversion kept on the pool from another connection
stop = threading.Event()
big_answers = [0, 0]          # answers, answers equal to the reference
def blocker():
    b = socket.create_connection(("127.0.0.1", port), timeout=60)
    while not stop.is_set():
        a = roundtrip(b, frames[BIG[0]])
        big_answers[0] += 1
        big_answers[1] += a == ref[BIG[0]]
    b.close()
t = threading.Thread(target=blocker)
i_start = converted("inline")
t.start()
time.sleep(0.3)
answers = same = rounds = 0
diffs = []
deadline = time.time() + 15
while time.time() < deadline:
    rounds += 1
    for name, *_ in REQS:
        a = roundtrip(s, frames[name])
        answers += 1
        if a == ref[name]:
            same += 1
        elif len(diffs) < 3:
            diffs.append((name, len(a), len(ref[name]), next((k for k in range(min(len(a), len(ref[name]))) if a[k] != ref[name][k]), None)))
    if rounds >= 5 and converted("inline") - i_start >= 3 * len(REQS):
        break
stop.set()
t.join()
inline = converted("inline") - i_start
print("rounds %d, answers %d (+%d large), inline sets %d" % (rounds, answers, big_answers[0], inline))
check(inline > 0, "the full pool queue made conversions run inline (inline sets +%d)" % inline)
check(same == answers and answers > 0, "every answer byte-identical to the worker path's (%d of %d; first differences %r)" % (same, answers, diffs))
check(big_answers[0] > 0 and big_answers[1] == big_answers[0],
      "every large answer byte-identical too (%d of %d)" % (big_answers[1], big_answers[0]))
PY
sk_check_lines <"$SK_TMP/inline.out"
sk_check "the inline check ran all its checks" test "$(grep -c '^PASS\|^FAIL' "$SK_TMP/inline.out")" -ge 6
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
sk_stop_node 1
sk_check "graceful stop: stopped cleanly" grep -q "stopped cleanly" "$SK_TMP/node-1.log"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
