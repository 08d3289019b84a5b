#!/usr/bin/env bash
# Issue 17, what must fail, fail clearly, and leave the node healthy: wrong
# password, unknown user, a mechanism the listener does not enable, a server
# certificate from a CA the client does not trust, an untrusted and an
# expired client certificate, a plaintext client on a TLS port, a TLS
# client on a plaintext port, a TLS handshake that stalls half way, and
# garbage inside a SASL exchange (clients/sec_raw.py). Each case is checked
# for the client's error text and followed by /readyz = 200 and a good
# SASL_SSL login. One node (sec_lib.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sec_lib.sh"
command -v kcat >/dev/null || { echo "t_sec_negative: kcat missing"; exit 1; }
sec_start
RAW="$SK_PY $SK_ROOT/test/integration/clients/sec_raw.py"

# refused WHAT PATTERN kcat-args... -> kcat -L, started in the background
# (the cases run together: each waits out its metadata timeout); `judge`
# then checks each failed and said PATTERN
NCASE=0
declare -a CASE_WHAT CASE_PAT CASE_PID
refused() {
  local what=$1 pat=$2; shift 2
  NCASE=$((NCASE + 1))
  CASE_WHAT[NCASE]=$what; CASE_PAT[NCASE]=$pat
  timeout 20 kcat "$@" -L -m 4 > "$SK_TMP/r$NCASE.out" 2> "$SK_TMP/r$NCASE.err" &
  CASE_PID[NCASE]=$!; SK_PIDS+=("$!")
}
judge() {
  local i rc
  for ((i = 1; i <= NCASE; i++)); do
    wait "${CASE_PID[i]}"; rc=$?
    sk_check "${CASE_WHAT[i]}: kcat failed (exit $rc)" test "$rc" -ne 0
    sk_check "${CASE_WHAT[i]}: the client says '${CASE_PAT[i]}'" \
      grep -qiE "${CASE_PAT[i]}" "$SK_TMP/r$i.err"
  done
}

B="127.0.0.1"
SP=$(sec_port SASL_PLAINTEXT); SS=$(sec_port SASL_SSL); SL=$(sec_port SSL); PT=$(sec_port PLAINTEXT)
CA="$SEC_CERTS/ca.crt"
for mech in PLAIN SCRAM-SHA-512; do
  refused "$mech wrong password" "Authentication failed during authentication due to invalid credentials" -b "$B:$SS" \
    -X security.protocol=SASL_SSL -X ssl.ca.location="$CA" -X sasl.mechanisms=$mech \
    -X sasl.username=alice -X sasl.password=wrong
  refused "$mech unknown user" "Authentication failed during authentication due to invalid credentials" -b "$B:$SP" \
    -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=$mech -X sasl.username=mallory -X sasl.password=x
done
refused "SCRAM-SHA-256 on a PLAIN-only listener" "Unsupported SASL mechanism: broker.s supported mechanisms: PLAIN" \
  -b "$B:$(sec_port LIMITED)" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-256 \
  -X sasl.username=alice -X sasl.password=alice-secret
refused "server certificate of a CA the client does not trust" "certificate verify failed" \
  -b "$B:$SL" -X security.protocol=SSL -X ssl.ca.location="$SEC_CERTS/rogue-ca.crt"
refused "client certificate of an untrusted CA" "alert unknown ca" \
  -b "$B:$SL" -X security.protocol=SSL -X ssl.ca.location="$CA" \
  -X ssl.certificate.location="$SEC_CERTS/rogue.crt" -X ssl.key.location="$SEC_CERTS/rogue.key"
refused "expired client certificate" "alert certificate expired" \
  -b "$B:$SL" -X security.protocol=SSL -X ssl.ca.location="$CA" \
  -X ssl.certificate.location="$SEC_CERTS/expired.crt" -X ssl.key.location="$SEC_CERTS/expired.key"
refused "plaintext client on the SSL port" "Disconnected while requesting ApiVersion" \
  -b "$B:$SL" -X security.protocol=PLAINTEXT
refused "TLS client on the PLAINTEXT port" "SSL handshake failed" \
  -b "$B:$PT" -X security.protocol=SSL -X ssl.ca.location="$CA"
refused "SASL client on the PLAINTEXT port" "SASL PLAIN mechanism handshake failed" \
  -b "$B:$PT" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X sasl.username=alice -X sasl.password=alice-secret
judge
sk_check "node ready after the refused clients" sec_ready

sec_lines "sec_raw plain-on-tls SSL" $RAW plain-on-tls "$B:$SL"
sec_lines "sec_raw plain-on-tls SASL_SSL" $RAW plain-on-tls "$B:$SS"
sec_lines "sec_raw garbage" $RAW garbage "$B:$SP" alice alice-secret
sk_check "node ready after garbage SASL exchanges" sec_ready

meta_ok() { sec_kcat SASL_SSL SCRAM-SHA-512 -L -m 8 > /dev/null 2>&1; }
# a TLS handshake that stalls half way: two connections hold a partial
# ClientHello open while a full SASL_SSL client works
exec 7<>"/dev/tcp/127.0.0.1/$SS"; printf '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' >&7
exec 8<>"/dev/tcp/127.0.0.1/$SL"; printf '\x16\x03\x01' >&8
sk_check "stalled handshakes open: a SASL_SSL SCRAM-SHA-512 client still gets metadata" \
  meta_ok
exec 7>&- 8>&-
sk_check "node ready at the end" sec_ready
sk_check "no crash: node process alive" kill -0 "${SK_NODE_PID[1]}"
sk_stop_node 1
sk_summary t_sec_negative
