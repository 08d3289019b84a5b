#!/usr/bin/env bash
# Issue 17, kcat (librdkafka) over every security protocol: produce and
# consume back over SSL, SASL_PLAINTEXT and SASL_SSL with PLAIN,
# SCRAM-SHA-256 and SCRAM-SHA-512; on SASL_SSL + SCRAM-SHA-512 also a
# balanced consumer group (-G) and the metadata listing (kcat's admin
# call); mutual TLS with a client certificate on the SSL port. One node
# (test/integration/sec_lib.sh); it stays ready throughout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sec_lib.sh"
command -v kcat >/dev/null || { echo "t_sec_kcat: kcat missing"; exit 1; }
sec_start

N=200
for ((i = 0; i < N; i++)); do printf 'k%d:v%d\n' "$i" "$i"; done > "$SK_TMP/in.txt"

# roundtrip PROTO MECH [extra kcat args] -> produce N keyed messages to a
# fresh topic and read them back from the beginning
roundtrip() {
  local proto=$1 mech=$2 t; shift 2
  t="kc-${proto,,}-${mech,,}-$#"; t=${t//_/-}
  sec_kcat "$proto" "$mech" "$@" -P -t "$t" -K: -l "$SK_TMP/in.txt" 2> "$SK_TMP/p.err" ||
    { echo "produce: $(tail -n 3 "$SK_TMP/p.err")"; return 1; }
  sec_kcat "$proto" "$mech" "$@" -C -t "$t" -o beginning -e -q -f '%k:%s\n' > "$SK_TMP/out.txt" 2> "$SK_TMP/c.err" ||
    { echo "consume: $(tail -n 3 "$SK_TMP/c.err")"; return 1; }
  cmp -s "$SK_TMP/in.txt" "$SK_TMP/out.txt" || { echo "consumed $(wc -l < "$SK_TMP/out.txt") of $N lines, or different"; return 1; }
}

sk_check "SSL (server auth only): produce + consume $N" roundtrip SSL -
sk_check "SSL with a client certificate (mutual TLS): produce + consume $N" roundtrip SSL - \
  -X ssl.certificate.location="$SEC_CERTS/client.crt" -X ssl.key.location="$SEC_CERTS/client.key"
for proto in SASL_PLAINTEXT SASL_SSL; do
  for mech in PLAIN SCRAM-SHA-256 SCRAM-SHA-512; do
    sk_check "$proto $mech: produce + consume $N" roundtrip "$proto" "$mech"
  done
done

# metadata (kcat's admin call): the topics made above are listed on SASL_SSL
sec_kcat SASL_SSL SCRAM-SHA-512 -L -J > "$SK_TMP/md.json" 2> "$SK_TMP/md.err"
sk_check "SASL_SSL SCRAM-SHA-512: metadata lists the SASL_SSL topic" \
  jq -e '[.topics[].topic] | index("kc-sasl-ssl-scram-sha-512-0") != null' "$SK_TMP/md.json" > /dev/null
sk_check "SASL_SSL SCRAM-SHA-512: metadata advertises the SASL_SSL port" \
  jq -e --argjson p "$(sec_port SASL_SSL)" '[.brokers[].name] | map(endswith(":" + ($p|tostring))) | any' "$SK_TMP/md.json" > /dev/null

# a balanced consumer group over SASL_SSL + SCRAM-SHA-512: two members of
# one group on a 4-partition topic together read every message exactly once
# (the topic is made over PLAINTEXT: kcat has no CreateTopics)
"$SK_PY" - "127.0.0.1:$(sec_port PLAINTEXT)" <<'PY' || sk_fail "cannot create kc-grp-t"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
a.create_topics([NewTopic("kc-grp-t", 4, 1)])["kc-grp-t"].result(20)
PY
sec_kcat SASL_SSL SCRAM-SHA-512 -P -t kc-grp-t -K: -l "$SK_TMP/in.txt" 2>/dev/null
for g in 1 2; do
  sec_kcat SASL_SSL SCRAM-SHA-512 -G kc-grp -u -X auto.offset.reset=earliest -q -f '%k:%s\n' kc-grp-t \
    > "$SK_TMP/g$g.txt" 2> "$SK_TMP/g$g.err" &
  GP[g]=$!; SK_PIDS+=("$!")
done
t=0
while [ "$(cat "$SK_TMP/g1.txt" "$SK_TMP/g2.txt" | wc -l)" -lt $N ] && [ $t -lt 150 ]; do sleep 0.2; t=$((t + 1)); done
sleep 1   # anything read twice would show up now
kill -TERM "${GP[1]}" "${GP[2]}" 2>/dev/null; wait "${GP[1]}" "${GP[2]}" 2>/dev/null
sort "$SK_TMP/g1.txt" "$SK_TMP/g2.txt" > "$SK_TMP/g.txt"; sort "$SK_TMP/in.txt" > "$SK_TMP/in.sorted"
sk_check "SASL_SSL SCRAM-SHA-512: a 2-member group read all $N messages exactly once" cmp -s "$SK_TMP/g.txt" "$SK_TMP/in.sorted"
sk_check "both members got partitions ($(wc -l < "$SK_TMP/g1.txt") + $(wc -l < "$SK_TMP/g2.txt") messages)" \
  test -s "$SK_TMP/g1.txt" -a -s "$SK_TMP/g2.txt"
sk_check "node ready after the matrix" sec_ready
sk_stop_node 1
sk_summary t_sec_kcat
