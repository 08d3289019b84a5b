#!/usr/bin/env bash
# Raw-socket abuse of one node (clients/rawframes.py): garbage, truncated,
# zero, negative and oversized sizes, unknown API key, unsupported versions,
# ApiVersions v99 (the v0-layout UNSUPPORTED_VERSION answer), a pipelined
# burst. Afterwards the node must still be running and kcat must still work.
. "$(dirname "$0")/lib.sh"
NAME=t_malformed_frames
HERE=$(cd "$(dirname "$0")" && pwd)
REQ_MAX=1048576

sk_start_cluster 1 --set socket.request.max.bytes=$REQ_MAX
BOOT=$SK_BOOTSTRAP

sk_check_lines < <(timeout 120 "$SK_PY" "$HERE/clients/rawframes.py" "$BOOT" "$REQ_MAX" 2>&1)
sk_check "rawframes ran all its cases" test $((SK_PASS + SK_FAILS)) -ge 20

sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
timeout 30 kcat -b "$BOOT" -L -J > "$SK_TMP/meta.json" 2>"$SK_TMP/kcat.err"
sk_check "kcat -L still works" jq -e '.brokers | length == 1' "$SK_TMP/meta.json"
printf 'a:1\nb:2\n' | timeout 30 kcat -q -b "$BOOT" -P -t after-abuse -K: -p 0 2>>"$SK_TMP/kcat.err"
timeout 30 kcat -q -b "$BOOT" -C -t after-abuse -p 0 -o beginning -e -f '%k=%s\n' > "$SK_TMP/after" 2>>"$SK_TMP/kcat.err"
sk_check "kcat produce+consume still works" test "$(cat "$SK_TMP/after")" = $'a=1\nb=2'
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP/kcat.err"; sk_dump_logs; }
sk_summary "$NAME"
