#!/usr/bin/env bash
# skiffctl over SSL, SASL_PLAINTEXT and SASL_SSL (issue 17), with
# --command-config FILE (librdkafka's key names). Three single-node
# clusters, one per protocol, each with one client listener (its only
# advertised endpoint), certificates from etc/gen-certs.sh:
#  SSL (mutual TLS required): topic create/list, produce, consume, kcat
#    reads what skiffctl wrote; an encrypted client key with
#    ssl.key.password; refused: a CA that did not sign the broker
#    (exit 3, "certificate verify failed"), no client certificate, a
#    plaintext client (exit 3), a wrong key password (exit 2), an expired
#    client certificate (the broker's alert named).
#  SASL_PLAINTEXT: a PLAIN admin from the jaas config creates, produces,
#    consumes; `user add bob` (SCRAM-SHA-256), then kcat and skiffctl log in
#    as bob, `user list` shows him with 4096 iterations, `user delete`, and
#    then both logins fail; a wrong password exits 1 with the broker's
#    "SASL authentication failed" message.
#  SASL_SSL: the same with SCRAM-SHA-512 (carol, 8192 iterations) and
#    SCRAM-SHA-256 (dave); carol produces and consumes with skiffctl and kcat,
#    and joins a group (the coordinator's connection logs in too).
# Every refusal is checked for its exit code AND its message.
. "$(dirname "$0")/lib.sh"
NAME=t_skiffctl_secure
CTL="$SK_BIN/skiffctl"
[ -x "$CTL" ] || sk_fail "no $CTL"
command -v kcat >/dev/null || sk_fail "kcat missing"
command -v jq >/dev/null || sk_fail "jq missing"
export SKIFF_ADMIN=127.0.0.1:1
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "etc/gen-certs.sh"
JAAS='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";'

# node I PROTO: a one-node cluster whose client listener speaks PROTO
start_node() {
  local i=$1 proto=$2 lname
  lname=$(tr '[:upper:]' '[:lower:]' <<<"$proto")
  PORT[i]=$(sk_free_port); local c a; c=$(sk_free_port); a=$(sk_free_port)
  {
    echo "node.id=1"
    echo "cluster.id=skiff-secure-$i"
    echo "process.roles=broker,controller"
    echo "controller.quorum.voters=1@127.0.0.1:$c"
    echo "controller.listener.names=CONTROLLER"
    echo "listeners=$proto://127.0.0.1:${PORT[i]},CONTROLLER://127.0.0.1:$c"
    echo "listener.security.protocol.map=$proto:$proto,CONTROLLER:PLAINTEXT"
    echo "admin.listener=127.0.0.1:$a"
    echo "log.dirs=$SK_TMP/data/node-$i"
    echo "group.initial.rebalance.delay.ms=0"
    case $proto in *SSL)
      echo "ssl.keystore.type=PEM"
      echo "ssl.keystore.location=$C/node-1.pem"
      echo "ssl.truststore.type=PEM"
      echo "ssl.truststore.location=$C/ca.crt" ;;
    esac
    [ "$proto" = SSL ] && echo "listener.name.ssl.ssl.client.auth=required"
    case $proto in SASL_*)
      echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
      echo "listener.name.$lname.plain.sasl.jaas.config=$JAAS"
      echo "super.users=User:admin" ;;
    esac
  } > "$SK_TMP/node-$i.conf"
  "$SK_BIN/skiff" --config "$SK_TMP/node-$i.conf" "${SK_NET_ARGS[@]}" >> "$SK_TMP/node-$i.log" 2>&1 &
  SK_NODE_PID[i]=$!
  SK_PIDS+=("$!")
}
start_node 1 SSL
start_node 2 SASL_PLAINTEXT
start_node 3 SASL_SSL
for i in 1 2 3; do
  sk_wait_port "${PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i (port ${PORT[i]}) not up"
done

# props FILE key=value... : a --command-config file
props() { local f=$SK_TMP/$1; shift; printf '%s\n' "# $NAME" "$@" > "$f"; echo "$f"; }
# ctl PORT PROPS args... : skiffctl against one node; stdout to $SK_TMP/out, stderr to $SK_TMP/err
ctl() {
  local port=$1 p=$2; shift 2
  "$CTL" "$@" --brokers "127.0.0.1:$port" --command-config "$p" --timeout-ms 8000 > "$SK_TMP/out" 2> "$SK_TMP/err"
}
# expect WHAT CODE NEEDLE: the last ctl exited CODE and its stderr holds NEEDLE
expect() {
  local what=$1 code=$2 needle=$3 got=$4
  if [ "$got" -ne "$code" ]; then
    sk_check "$what: exit $got, want $code ($(head -c 300 "$SK_TMP/err"))" false
  else
    sk_check "$what: exit $code, stderr names '$needle' ($(head -c 300 "$SK_TMP/err"))" grep -qF -- "$needle" "$SK_TMP/err"
  fi
}
# round trip PORT PROPS TOPIC: create, list, produce 50 lines, consume them back
round_trip() {
  local port=$1 p=$2 t=$3 what=$4
  ctl "$port" "$p" topic create "$t" -p 2 -r 1; rc=$?; sk_check "$what: topic create $t ($(cat "$SK_TMP/err"))" test $rc -eq 0
  ctl "$port" "$p" topic list; sk_check "$what: topic list names $t" grep -qw "$t" "$SK_TMP/out"
  seq 1 50 | sed "s/^/$t-/" > "$SK_TMP/in-$t"
  ctl "$port" "$p" produce "$t" < "$SK_TMP/in-$t"
  sk_check "$what: produce 50 ($(cat "$SK_TMP/err"))" grep -q "produced 50 records" "$SK_TMP/out"
  ctl "$port" "$p" consume "$t" --from-beginning -n 50
  sk_check "$what: consume returns the 50 records" cmp -s <(sort "$SK_TMP/out") <(sort "$SK_TMP/in-$t")
}
# kc PORT PROTO MECH USER PW kcat-args... (MECH "-" for SSL). Its consumers
# (-C -e) ask for fetch.wait.max.ms=20: -e ends on an empty Fetch at the
# log end, which the broker would otherwise hold librdkafka's default 0.5 s
kc() {
  local port=$1 proto=$2 m=$3 u=$4 pw=$5; shift 5
  local x=(-X "security.protocol=$proto")
  case $proto in *SSL) x+=(-X "ssl.ca.location=$C/ca.crt") ;; esac
  [ "$proto" = SSL ] && x+=(-X "ssl.certificate.location=$C/client.crt" -X "ssl.key.location=$C/client.key")
  case $proto in SASL_*) x+=(-X "sasl.mechanisms=$m" -X "sasl.username=$u" -X "sasl.password=$pw") ;; esac
  timeout 20 kcat -b "127.0.0.1:$port" "${x[@]}" "$@"
}

# ---- SSL, mutual TLS -------------------------------------------------------------
sk_log "SSL (mutual TLS required)"
P1=${PORT[1]}
SSLP=$(props ssl.conf security.protocol=SSL "ssl.ca.location=$C/ca.crt" \
  "ssl.certificate.location=$C/client.crt" "ssl.key.location=$C/client.key")
round_trip "$P1" "$SSLP" s1 "SSL"
got=$(kc "$P1" SSL - - - -C -X fetch.wait.max.ms=20 -t s1 -o beginning -e -q 2>/dev/null | sort)
sk_check "SSL: kcat reads what skiffctl wrote" test "$got" = "$(sort "$SK_TMP/in-s1")"
ENC=$(props enc.conf security.protocol=ssl "ssl.ca.location=$C/ca.crt" "ssl.certificate.location=$C/node-1.crt" \
  "ssl.key.location=$C/node-1-enc.key" "ssl.key.password=$(cat "$C/key-password.txt")")
ctl "$P1" "$ENC" topic list; rc=$?
sk_check "SSL: encrypted client key with ssl.key.password ($(cat "$SK_TMP/err"))" test $rc -eq 0
BADPW=$(props badpw.conf security.protocol=ssl "ssl.ca.location=$C/ca.crt" "ssl.certificate.location=$C/node-1.crt" \
  "ssl.key.location=$C/node-1-enc.key" "ssl.key.password=not-the-password")
ctl "$P1" "$BADPW" topic list; expect "SSL: wrong ssl.key.password" 2 "cannot load ssl.key.location" "$?"
ROGUE=$(props rogue.conf security.protocol=SSL "ssl.ca.location=$C/rogue-ca.crt" \
  "ssl.certificate.location=$C/client.crt" "ssl.key.location=$C/client.key")
ctl "$P1" "$ROGUE" topic list; expect "SSL: broker certificate from another CA" 3 "TLS: certificate verify failed" "$?"
NOCERT=$(props nocert.conf security.protocol=SSL "ssl.ca.location=$C/ca.crt")
ctl "$P1" "$NOCERT" topic list; rc=$?
sk_check "SSL: no client certificate on a client.auth=required listener fails (exit $rc: $(cat "$SK_TMP/err"))" \
  test "$rc" -ne 0
sk_check "SSL: ... and names the broker's TLS alert" grep -q "TLS: .*alert certificate required" "$SK_TMP/err"
EXPIRED=$(props expired.conf security.protocol=SSL "ssl.ca.location=$C/ca.crt" \
  "ssl.certificate.location=$C/expired.crt" "ssl.key.location=$C/expired.key")
ctl "$P1" "$EXPIRED" topic list; expect "SSL: an expired client certificate" 3 "alert certificate expired" "$?"
PLAIN=$(props plain.conf security.protocol=PLAINTEXT)
ctl "$P1" "$PLAIN" topic list; rc=$?
sk_check "SSL: a plaintext client cannot talk to the TLS port (exit $rc)" test "$rc" -eq 3 -o "$rc" -eq 1
ctl "$P1" "$SK_TMP/missing.conf" topic list; expect "SSL: a missing --command-config file" 2 "missing.conf" "$?"
BADKEY=$(props badkey.conf security.protocol=SSL "ssl.ca.location=$C/ca.crt" "ssl.truststore.location=$C/ca.crt")
ctl "$P1" "$BADKEY" topic list; expect "a Java key" 2 "badkey.conf:4: unknown key 'ssl.truststore.location' (Java's name; use ssl.ca.location" "$?"

# ---- SASL_PLAINTEXT -------------------------------------------------------------------
sk_log "SASL_PLAINTEXT"
P2=${PORT[2]}
ADM2=$(props adm2.conf security.protocol=sasl_plaintext sasl.mechanism=PLAIN sasl.username=admin sasl.password=admin-secret)
round_trip "$P2" "$ADM2" p1 "SASL_PLAINTEXT PLAIN"
WRONG2=$(props wrong2.conf security.protocol=sasl_plaintext sasl.mechanism=PLAIN sasl.username=admin sasl.password=nope)
ctl "$P2" "$WRONG2" topic list; expect "SASL_PLAINTEXT: wrong password" 1 "SASL authentication failed" "$?"
ctl "$P2" "$PLAIN" topic list; expect "SASL_PLAINTEXT: a client without SASL" 1 "a SASL or TLS listener? see --command-config" "$?"
ctl "$P2" "$ADM2" user add bob --mechanism SCRAM-SHA-256 --password bob-pw
sk_check "user add bob SCRAM-SHA-256 ($(cat "$SK_TMP/err"))" grep -q "user 'bob': SCRAM-SHA-256 credential set (4096 iterations)" "$SK_TMP/out"
BOB=$(props bob.conf security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-256 sasl.username=bob sasl.password=bob-pw)
ctl "$P2" "$BOB" topic list; sk_check "skiffctl logs in as bob (SCRAM-SHA-256) ($(cat "$SK_TMP/err"))" grep -qw p1 "$SK_TMP/out"
got=$(kc "$P2" SASL_PLAINTEXT SCRAM-SHA-256 bob bob-pw -C -X fetch.wait.max.ms=20 -t p1 -o beginning -e -q 2>"$SK_TMP/kc.err" | wc -l)
sk_check "kcat logs in as bob and reads p1 ($got; $(head -c 200 "$SK_TMP/kc.err"))" test "$got" -eq 50
ctl "$P2" "$ADM2" user list --json
sk_check "user list: bob SCRAM-SHA-256 4096 ($(cat "$SK_TMP/out"))" \
  test "$(jq -r '.[] | select(.user == "bob") | "\(.mechanism) \(.iterations)"' "$SK_TMP/out")" = "SCRAM-SHA-256 4096"
ctl "$P2" "$ADM2" user delete bob --mechanism SCRAM-SHA-256
sk_check "user delete bob ($(cat "$SK_TMP/err"))" grep -q "user 'bob': SCRAM-SHA-256 credential deleted" "$SK_TMP/out"
ctl "$P2" "$ADM2" user list --json
sk_check "user list no longer has bob" test "$(jq '[.[] | select(.user == "bob")] | length' "$SK_TMP/out")" = 0
# kcat -L waits its whole metadata timeout (-m, 5 s by default) after
# the refusal it logs at once: 3 s is still ~10x the handshake
out=$(kc "$P2" SASL_PLAINTEXT SCRAM-SHA-256 bob bob-pw -L -m 3 2>&1)
sk_check "kcat login as deleted bob fails" grep -q "SASL authentication error" <<<"$out"
ctl "$P2" "$BOB" topic list; expect "skiffctl login as deleted bob" 1 "SASL authentication failed" "$?"
ctl "$P2" "$ADM2" user delete bob --mechanism SCRAM-SHA-256; expect "deleting bob again" 1 "RESOURCE_NOT_FOUND" "$?"

# ---- SASL_SSL ---------------------------------------------------------------------------------
sk_log "SASL_SSL"
P3=${PORT[3]}
ADM3=$(props adm3.conf security.protocol=SASL_SSL "ssl.ca.location=$C/ca.crt" sasl.mechanisms=PLAIN \
  sasl.username=admin sasl.password=admin-secret)
round_trip "$P3" "$ADM3" x1 "SASL_SSL PLAIN"
ctl "$P3" "$ADM3" user add carol --mechanism SCRAM-SHA-512 --password carol-pw --iterations 8192
sk_check "user add carol SCRAM-SHA-512 8192 ($(cat "$SK_TMP/err"))" grep -q "SCRAM-SHA-512 credential set (8192" "$SK_TMP/out"
ctl "$P3" "$ADM3" user add dave --mechanism SCRAM-SHA-256 --password dave-pw
sk_check "user add dave SCRAM-SHA-256 ($(cat "$SK_TMP/err"))" test -s "$SK_TMP/out"
CAROL=$(props carol.conf security.protocol=SASL_SSL "ssl.ca.location=$C/ca.crt" sasl.mechanism=SCRAM-SHA-512 \
  sasl.username=carol sasl.password=carol-pw)
DAVE=$(props dave.conf security.protocol=SASL_SSL "ssl.ca.location=$C/ca.crt" sasl.mechanism=SCRAM-SHA-256 \
  sasl.username=dave sasl.password=dave-pw)
round_trip "$P3" "$CAROL" x2 "SASL_SSL SCRAM-SHA-512 (carol)"
round_trip "$P3" "$DAVE" x3 "SASL_SSL SCRAM-SHA-256 (dave)"
ctl "$P3" "$CAROL" consume x2 --from-beginning -g gx --join -n 50
sk_check "SASL_SSL: group member (coordinator connection) reads 50 ($(head -c 200 "$SK_TMP/err"))" \
  test "$(wc -l < "$SK_TMP/out")" -eq 50
ctl "$P3" "$CAROL" group list
sk_check "SASL_SSL: group list names gx" grep -qw gx "$SK_TMP/out"
got=$(kc "$P3" SASL_SSL SCRAM-SHA-512 carol carol-pw -C -X fetch.wait.max.ms=20 -t x2 -o beginning -e -q 2>"$SK_TMP/kc.err" | sort)
sk_check "kcat as carol over SASL_SSL reads x2 ($(head -c 200 "$SK_TMP/kc.err"))" test "$got" = "$(sort "$SK_TMP/in-x2")"
ctl "$P3" "$ADM3" user list
sk_check "user list table: carol SCRAM-SHA-512 8192" grep -Eq '^carol +SCRAM-SHA-512 +8192' "$SK_TMP/out"
sk_check "user list table: dave SCRAM-SHA-256 4096" grep -Eq '^dave +SCRAM-SHA-256 +4096' "$SK_TMP/out"
ctl "$P3" "$ADM3" user delete carol --mechanism SCRAM-SHA-512; rc=$?
sk_check "user delete carol ($(cat "$SK_TMP/err"))" test $rc -eq 0
out=$(kc "$P3" SASL_SSL SCRAM-SHA-512 carol carol-pw -L -m 3 2>&1)
sk_check "kcat login as deleted carol fails" grep -q "SASL authentication error" <<<"$out"
ctl "$P3" "$CAROL" topic list; expect "skiffctl login as deleted carol" 1 "SASL authentication failed" "$?"
ctl "$P3" "$DAVE" topic list; sk_check "dave still logs in" grep -qw x3 "$SK_TMP/out"
NOCA=$(props noca.conf security.protocol=SASL_SSL "ssl.ca.location=$C/rogue-ca.crt" sasl.mechanism=PLAIN \
  sasl.username=admin sasl.password=admin-secret)
ctl "$P3" "$NOCA" topic list; expect "SASL_SSL: untrusted broker certificate" 3 "certificate verify failed" "$?"

for i in 1 2 3; do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
sk_summary "$NAME"
