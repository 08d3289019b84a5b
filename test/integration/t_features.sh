#!/usr/bin/env bash
# Issue 20 (transactions-v2 side), raw frames against one node and then a
# 3-node cluster: ApiVersions v3/v4 supported and finalized features (a new
# cluster finalizes metadata.version 25, group.version 1 and
# transaction.version 2),
# UpdateFeatures v0-2 (every error rule, validate_only, downgrade and
# upgrade, v2 top-level errors), DescribeTopicPartitions v0 with its cursor
# (clients/features_raw.py); skiffctl feature list / upgrade; on 3 nodes
# UpdateFeatures sent to a node that is not the controller is forwarded and
# every node then advertises the new level.
. "$(dirname "$0")/lib.sh"
NAME=t_features
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1
sk_check_lines < <(cd "$HERE/clients" && timeout 120 "$SK_PY" features_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/raw.err")
sk_check "features_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 25
[ -s "$SK_TMP/raw.err" ] && tail -n 20 "$SK_TMP/raw.err"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"

# skiffctl feature: list (table, JSON), downgrade / upgrade, refusals
CTL="$SK_BIN/skiffctl"
level() {  # level BOOT FEATURE -> finalized level (0 = not finalized) from skiffctl's JSON
  "$CTL" feature list --json -b "$1" 2>/dev/null | jq -r --arg f "$2" '.features[] | select(.feature == $f) | .finalized'
}
out=$("$CTL" feature list -b "$SK_BOOTSTRAP")
sk_check "skiffctl feature list: table with group.version finalized at 1 ($out)" \
  bash -c 'grep -Eq "^group.version +0 +1 +1\$" <<<"$1" && grep -q "^finalized features epoch: [0-9]" <<<"$1"' _ "$out"
"$CTL" feature downgrade -b "$SK_BOOTSTRAP" --feature group.version=0 >/dev/null
sk_check "skiffctl feature downgrade group.version=0: not finalized" test "$(level "$SK_BOOTSTRAP" group.version)" = 0
"$CTL" feature upgrade -b "$SK_BOOTSTRAP" --feature group.version=1 >/dev/null
sk_check "skiffctl feature upgrade group.version=1" test "$(level "$SK_BOOTSTRAP" group.version)" = 1
err=$("$CTL" feature upgrade -b "$SK_BOOTSTRAP" --feature metadata.version=26 2>&1 >/dev/null); rc=$?
sk_check "skiffctl feature upgrade metadata.version=26: exit 1 with the broker's reason ($err)" \
  bash -c '[ "$1" = 1 ] && grep -q "INVALID_UPDATE_VERSION" <<<"$2" && grep -q "supported range" <<<"$2"' _ "$rc" "$err"
"$CTL" feature upgrade -b "$SK_BOOTSTRAP" --feature group.version=0 >/dev/null 2>&1; rc=$?
sk_check "skiffctl feature upgrade to a lower level is refused (exit 1), level kept" \
  bash -c '[ "$1" = 1 ] && [ "$2" = 1 ]' _ "$rc" "$(level "$SK_BOOTSTRAP" group.version)"
"$CTL" feature downgrade -b "$SK_BOOTSTRAP" --feature group.version=0 --validate-only >/dev/null
sk_check "skiffctl feature downgrade --validate-only changes nothing" test "$(level "$SK_BOOTSTRAP" group.version)" = 1
"$CTL" feature upgrade -b "$SK_BOOTSTRAP" --feature nonsense >/dev/null 2>&1; rc=$?
sk_check "skiffctl feature upgrade with a bad --feature: usage error (exit 2)" test "$rc" = 2

# 3 nodes: a quorum's controller finalizes the levels; UpdateFeatures sent
# to each node (two of them are not the controller: forwarded) reaches all.
sk_stop_node 1
rm -rf "$SK_TMP/data"   # a new 3-node cluster, not node 1 of the old one
sk_start_cluster 3
wait_level() {  # wait_level FEATURE LEVEL -> every node shows it within 15 s
  local i t
  for ((t = 0; t < 75; t++)); do
    for ((i = 1; i <= 3; i++)); do
      [ "$(level "127.0.0.1:${SK_KAFKA_PORT[i]}" "$1")" = "$2" ] || { sleep 0.2; continue 2; }
    done
    return 0
  done
  return 1
}
sk_check "3 nodes: group.version finalized at 1 on every node" wait_level group.version 1
for ((i = 1; i <= 3; i++)); do
  "$CTL" feature downgrade -b "127.0.0.1:${SK_KAFKA_PORT[i]}" --feature group.version=0 >/dev/null
  sk_check "3 nodes: downgrade sent to node $i reaches every node" wait_level group.version 0
  "$CTL" feature upgrade -b "127.0.0.1:${SK_KAFKA_PORT[i]}" --feature group.version=1 >/dev/null
  sk_check "3 nodes: upgrade sent to node $i reaches every node" wait_level group.version 1
done
for ((i = 1; i <= 3; i++)); do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done

# skiffctl checks the UpdateFeatures answer's result count (issue 19
# review): a fake broker (clients/fake_features_broker.py) answering none,
# or more than asked; before, skiffctl printed nothing and exited 0.
for nres in 0 2; do
  rm -f "$SK_TMP/fake.port"
  (cd "$HERE/clients" && exec "$SK_PY" fake_features_broker.py "$SK_TMP/fake.port" "$nres") &
  fake=$!
  SK_PIDS+=("$fake")
  for _ in $(seq 50); do [ -s "$SK_TMP/fake.port" ] && break; sleep 0.1; done
  out=$("$CTL" feature upgrade -b "127.0.0.1:$(cat "$SK_TMP/fake.port")" --feature group.version=1 2>&1)
  rc=$?
  sk_check "skiffctl feature upgrade, answer with $nres results for 1 feature: refused (exit $rc: $out)" \
    bash -c '[ "$1" -ne 0 ] && grep -q "result(s) for the 1 feature(s) asked" <<<"$2"' _ "$rc" "$out"
  kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null
done
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
