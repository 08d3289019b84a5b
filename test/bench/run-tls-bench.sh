#!/usr/bin/env bash
# TLS benchmark (issue 17): one skiff node with a PLAINTEXT and an SSL
# listener, the same kcat load on each in the same run: produce
# BENCH_COUNT x BENCH_SIZE-byte records (acks=1), then consume them all from
# the beginning (twice, the faster counts). Prints wall seconds, records/s and skiff CPU seconds per
# run, the SSL/PLAINTEXT ratios, which output path the SSL listener used
# (kTLS sendfile or read-encrypt-write, from the node's log), and full TLS
# handshakes per second (openssl s_time -new, TLS 1.3, for 5 s) with the
# node's CPU per handshake. Figures are reported, not judged: exit 0 when
# every run moved every record.
#
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test), BENCH_COUNT
#      (1000000), BENCH_SIZE (100), BENCH_HS_SECONDS (5)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
# arithmetic on fractional seconds (awk: no bc needed)
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
count=${BENCH_COUNT:-1000000}
size=${BENCH_SIZE:-100}
hs_s=${BENCH_HS_SECONDS:-5}
command -v kcat >/dev/null || { echo "kcat not found"; exit 1; }
[ -x "$SK_BIN/skiff" ] || { echo "skiff not built"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || { echo "gen-certs.sh failed"; exit 1; }
P_PLAIN=$(sk_free_port); P_SSL=$(sk_free_port); P_CTL=$(sk_free_port); P_ADM=$(sk_free_port)
cat > "$SK_TMP/cluster.conf" <<CONF
node.id=1
cluster.id=skiff-tls-bench
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:$P_CTL
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$P_PLAIN,SSL://127.0.0.1:$P_SSL,CONTROLLER://127.0.0.1:$P_CTL
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT
ssl.keystore.location=$C/node-1.pem
ssl.truststore.location=$C/ca.crt
admin.listener=127.0.0.1:$P_ADM
log.dirs=$SK_TMP/data/node-1
CONF
sk_start_node 1
PID=${SK_NODE_PID[1]}
sk_wait_port "$P_SSL" 30 "$PID" || { echo "node not up"; sk_dump_logs; exit 1; }

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
hz=$(getconf CLK_TCK)
"$SK_PY" -c "
import sys
pad = 'x' * max(0, $size - 8)
w = sys.stdout.write
for i in range($count): w('%08d%s\n' % (i % 100000000, pad))" > "$SK_TMP/in.txt"
status=0
declare -A T CPU
run() {  # run NAME PORT ARGS... : produce + consume, fills T[NAME-p], T[NAME-c], CPU[...]
  local name=$1 port=$2; shift 2
  local t0 t1 c0 c1 n
  c0=$(cpu_ticks "$PID"); t0=$(date +%s.%N)
  kcat -P -b "127.0.0.1:$port" "$@" -t "bench-$name" -X acks=1 -X linger.ms=5 -l "$SK_TMP/in.txt" 2>>"$SK_TMP/kcat.err" || status=1
  t1=$(date +%s.%N); c1=$(cpu_ticks "$PID")
  T[$name-p]=$(calc "$t1 - $t0"); CPU[$name-p]=$(calc "($c1 - $c0) / $hz")
  # consume twice, keep the faster: the first read after a produce has
  # been seen to wait out fetch.wait.max.ms rounds at the end
  local k
  T[$name-c]=999999
  for k in 1 2; do
    c0=$(cpu_ticks "$PID"); t0=$(date +%s.%N)
    n=$(kcat -C -b "127.0.0.1:$port" "$@" -t "bench-$name" -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
    t1=$(date +%s.%N); c1=$(cpu_ticks "$PID")
    [ "$n" -eq "$count" ] || { echo "$name: consumed $n of $count"; status=1; }
    if awk "BEGIN { exit !($t1 - $t0 < ${T[$name-c]}) }"; then
      T[$name-c]=$(calc "$t1 - $t0"); CPU[$name-c]=$(calc "($c1 - $c0) / $hz")
    fi
  done
}
sk_log "produce + consume $count x $size B over PLAINTEXT, then SSL"
run plain "$P_PLAIN"
run ssl "$P_SSL" -X security.protocol=ssl -X ssl.ca.location="$C/ca.crt"
printf '%-10s %9s %12s %9s %9s %12s %9s\n' listener produce_s records/s cpu_s consume_s records/s cpu_s
for n in plain ssl; do
  printf '%-10s %9.2f %12.0f %9.2f %9.2f %12.0f %9.2f\n' "$n" "${T[$n-p]}" "$(calc "$count / ${T[$n-p]}")" \
    "${CPU[$n-p]}" "${T[$n-c]}" "$(calc "$count / ${T[$n-c]}")" "${CPU[$n-c]}"
done
printf 'SSL/PLAINTEXT throughput: produce %.2f, consume %.2f\n' "$(calc "${T[plain-p]} / ${T[ssl-p]}")" \
  "$(calc "${T[plain-c]} / ${T[ssl-c]}")"
path=$(grep -o 'listener SSL: \(kTLS send on\|read-encrypt-write\)[^)]*)\?' "$SK_TMP/node-1.log" | head -1)
echo "file-range path: ${path:-not logged}"

# full handshakes (no resumption) per second
if command -v openssl >/dev/null; then
  c0=$(cpu_ticks "$PID")
  out=$(openssl s_time -connect "127.0.0.1:$P_SSL" -new -time "$hs_s" -CAfile "$C/ca.crt" 2>&1)
  c1=$(cpu_ticks "$PID")
  conns=$(grep -o '^[0-9]* connections in [0-9.]*s' <<<"$out" | head -1)
  n=$(awk '{print $1}' <<<"$conns")
  echo "handshakes: $conns (s_time -new, TLS 1.3); node CPU per handshake: $(calc "1000 * ($c1 - $c0) / $hz / ${n:-1}") ms"
fi
sk_stop_node 1
exit "$status"
