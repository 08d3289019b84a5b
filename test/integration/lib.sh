#!/usr/bin/env bash
# Shared helpers for integration tests that run real skiff processes.
# Source it from a t_*.sh script:   . "$(dirname "$0")/lib.sh"
#
# Every node runs on 127.0.0.1 with ports picked free at start (never the
# defaults of etc/*.conf, which a `make run` cluster may hold), data in a
# temp dir, and is stopped by pid when the script exits, pass or fail.
set -u

SK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SK_BIN=${SKIFF_BIN_DIR:-$SK_ROOT/bin}
# Under the build tree, not /tmp: on shared machines other jobs have been
# seen sweeping /tmp/skiff-* while a test ran.
SK_TMP_ROOT=${SKIFF_TEST_TMP:-$SK_ROOT/build/tmp}
mkdir -p "$SK_TMP_ROOT"
SK_TMP=$(mktemp -d "$SK_TMP_ROOT/skiff-it.XXXXXX")
SK_PIDS=()
SK_PY=/usr/bin/python3   # Debian's python: sees python3-kafka / confluent-kafka

# SKIFF_TEST_NET_THREADS=N (set by `make test-integration`, see test/README.md):
# every node a test runs gets num.network.threads=N, so the whole suite runs
# with one and with several network loops without a change to each script.
# "${SK_NET_ARGS[@]}" goes right after --config/--node on every command line
# that runs a node (not `skiff format` or --describe-config), before the
# script's own --set flags: a script that sets the key itself still wins.
SK_NET_ARGS=()
if [ -n "${SKIFF_TEST_NET_THREADS:-}" ]; then
  SK_NET_ARGS=(--set "num.network.threads=$SKIFF_TEST_NET_THREADS")
fi

sk_cleanup() {
  local p
  for p in "${SK_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${SK_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${SK_KEEP_TMP:-0}" = 1 ]; then echo "kept $SK_TMP"; else rm -rf "$SK_TMP"; fi
}
trap sk_cleanup EXIT

sk_log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
sk_fail() { echo "FAIL: $*"; sk_dump_logs; exit 1; }

sk_dump_logs() {
  local f
  for f in "$SK_TMP"/node-*.log; do
    [ -f "$f" ] || continue
    echo "---- $f (last 40 lines)"; tail -n 40 "$f"
  done
}

# A TCP port on 127.0.0.1 that nothing listens on right now.
# A free port below the kernel's ephemeral range (32768+ on Linux), so no
# outgoing connection of a client, proxy or peer can be holding it by the
# time a node binds it (both happened with port-0 picks on loaded runs), and
# never one this script already picked ($SK_TMP/ports).
# Picked in SK_PORT_LO..SK_PORT_HI (default 20000-31999): test/run-tests.sh
# gives each parallel lane its own slice, so two scripts running at once
# never pick the same port between one's check and its node's bind.
sk_free_port() {
  # Ports are checked in batches of 32 by one python (about 0.1 s each
  # start, a dozen ports per script) into $SK_TMP/ports.pool; each call
  # takes the first line. Called as $(sk_free_port), so the pool is a file,
  # not a variable. A pooled port was free when checked, and no other
  # script picks in this lane's slice.
  local pool=$SK_TMP/ports.pool rest port
  if [ ! -s "$pool" ]; then sk__port_batch 32 > "$pool" || return 1; fi
  { read -r port; rest=$(cat); } < "$pool"
  printf '%s' "$rest${rest:+$'\n'}" > "$pool"
  echo "$port"
}
# sk__port_batch N -> N ports free now, recorded as taken in $SK_TMP/ports
sk__port_batch() {
  "$SK_PY" - "$SK_TMP/ports" "${SK_PORT_LO:-20000}" "${SK_PORT_HI:-31999}" "$1" <<'PY'
import random, socket, sys
path = sys.argv[1]
lo, hi, want = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if not 1024 <= lo <= hi <= 65535:
    sys.exit("SK_PORT_LO/SK_PORT_HI %d-%d: not a port range above 1023" % (lo, hi))
try:
    taken = set(open(path).read().split())
except OSError:
    taken = set()
got = []
for _ in range(1000 * want):
    if len(got) == want:
        break
    port = random.randrange(lo, hi + 1)
    if str(port) in taken:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    taken.add(str(port))
    got.append(port)
if not got:
    sys.exit("no free port in %d-%d" % (lo, hi))
with open(path, "a") as f:
    f.write("".join("%d\n" % p for p in got))
print("\n".join(str(p) for p in got))
PY
}

# sk_write_cluster_conf N -> writes $SK_TMP/cluster.conf for N nodes and sets
# SK_KAFKA_PORT[i], SK_CTRL_PORT[i], SK_ADMIN_PORT[i] (i = 1..N) and
# SK_BOOTSTRAP (comma list of Kafka listeners).
sk_write_cluster_conf() {
  local n=$1 i voters="" boot=""
  SK_KAFKA_PORT=(); SK_CTRL_PORT=(); SK_ADMIN_PORT=()
  for ((i = 1; i <= n; i++)); do
    SK_KAFKA_PORT[i]=$(sk_free_port); SK_CTRL_PORT[i]=$(sk_free_port); SK_ADMIN_PORT[i]=$(sk_free_port)
    voters+="${voters:+,}$i@127.0.0.1:${SK_CTRL_PORT[i]}"
    boot+="${boot:+,}127.0.0.1:${SK_KAFKA_PORT[i]}"
  done
  SK_BOOTSTRAP=$boot
  {
    echo "# written by test/integration/lib.sh"
    echo "cluster.id=skiff-test-cluster"
    echo "controller.quorum.voters=$voters"
    echo "process.roles=broker,controller"
    echo "controller.listener.names=CONTROLLER"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    for ((i = 1; i <= n; i++)); do
      echo
      echo "[node.$i]"
      echo "listeners=PLAINTEXT://127.0.0.1:${SK_KAFKA_PORT[i]},CONTROLLER://127.0.0.1:${SK_CTRL_PORT[i]}"
      echo "admin.listener=127.0.0.1:${SK_ADMIN_PORT[i]}"
      echo "log.dirs=$SK_TMP/data/node-$i"
    done
  } > "$SK_TMP/cluster.conf"
}

# sk_start_node I [--set k=v ...] -> starts node I in the background; its
# pid is SK_NODE_PID[I]. Extra arguments go to skiff as they are.
sk_start_node() {
  local i=$1; shift
  "$SK_BIN/skiff" --config "$SK_TMP/cluster.conf" --node "$i" "${SK_NET_ARGS[@]}" "$@" \
    >> "$SK_TMP/node-$i.log" 2>&1 &
  SK_NODE_PID[i]=$!
  SK_PIDS+=("$!")
}

# sk_wait_port PORT [SECONDS [PID]] -> 0 once something accepts on
# 127.0.0.1:PORT; 1 on timeout or as soon as process PID (if given) is gone.
sk_wait_port() {
  local port=$1 limit=${2:-20} pid=${3:-} t=0
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1; t=$((t + 1))
    [ "$t" -lt $((limit * 10)) ] || return 1
  done
}

# sk_stop_node I -> SIGTERM and wait (graceful); SIGKILL after 15 s.
sk_stop_node() {
  local i=$1 pid=${SK_NODE_PID[$1]} t=0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.1; t=$((t + 1))
    if [ "$t" -ge 150 ]; then kill -KILL "$pid" 2>/dev/null; break; fi
  done
  wait "$pid" 2>/dev/null
}

sk_kill9_node() { kill -KILL "${SK_NODE_PID[$1]}" 2>/dev/null; wait "${SK_NODE_PID[$1]}" 2>/dev/null; true; }

# sk_start_cluster N [--set k=v ...] -> config, start, wait for every node's
# Kafka and admin ports.
sk_start_cluster() {
  local n=$1 i; shift
  sk_write_cluster_conf "$n"
  for ((i = 1; i <= n; i++)); do sk_start_node "$i" "$@"; done
  for ((i = 1; i <= n; i++)); do
    sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i kafka port ${SK_KAFKA_PORT[i]} not up"
    sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port ${SK_ADMIN_PORT[i]} not up"
  done
}

# Counters for the closing line.
SK_PASS=0; SK_FAILS=0
sk_check() {  # sk_check "what" command...
  local what=$1; shift
  if "$@"; then SK_PASS=$((SK_PASS + 1)); else SK_FAILS=$((SK_FAILS + 1)); echo "FAIL: $what"; fi
}
sk_summary() {  # sk_summary NAME -> prints the closing line, returns status
  echo "$1: $SK_PASS passed, $SK_FAILS failed"
  [ "$SK_FAILS" -eq 0 ] && [ "$SK_PASS" -gt 0 ]
}

# sk_check_lines < lines -> one check per "PASS what" / "FAIL what: why" line
# (the protocol of the helper programs in clients/); other lines are shown.
sk_check_lines() {
  local line
  while IFS= read -r line; do
    case $line in
      PASS\ *) sk_check "${line#PASS }" true ;;
      FAIL\ *) sk_check "${line#FAIL }" false ;;
      *) echo "$line" ;;
    esac
  done
}
