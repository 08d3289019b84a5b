#!/usr/bin/env bash
# kpdump's exit-code contract: 0 = decoded and re-encodes identically,
# 2 = decoded but re-encoding differs, 1 = cannot decode / bad usage.
set -u
tool="${SKIFF_TEST_DIR:-build/test}/tools/kpdump"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "t_kpdump: $*"; exit 1; }
# write FILE HEX...: a frame with its 4-byte size prefix
frame() { local f=$1; shift; local body; body=$(printf '%s' "$*" | tr -d ' ');
  printf '%08x%s' $(( ${#body} / 2 )) "$body" | xxd -r -p > "$f"; }
expect() { local want=$1; shift; "$tool" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?;
  [ "$rc" -eq "$want" ] || fail "$* -> exit $rc, want $want ($(cat "$tmp/err"))"; }

# ApiVersions v3 request, header v2, client "ab", flexible body
frame "$tmp/ok" 0012 0003 00000007 0002 6162 00 05 6b636174 04 312e30 00
expect 0 --frame "$tmp/ok"
grep -q '"client_software_name":"kcat"' "$tmp/out" || fail "JSON lacks client_software_name: $(cat "$tmp/out")"
grep -q '"correlation_id":7' "$tmp/out" || fail "JSON lacks correlation_id"
# same body with an unknown tag (5, 1 byte): decodes, re-encoding drops it
frame "$tmp/tag" 0012 0003 00000007 0002 6162 00 05 6b636174 04 312e30 01 05 01 ff
expect 2 --frame "$tmp/tag"
# truncated body, unknown api key, wrong size prefix, bad usage
frame "$tmp/short" 0012 0003 00000007 0002 6162 00 05 6b63
expect 1 --frame "$tmp/short"
frame "$tmp/unknown" 03e7 0000 00000007 0002 6162
expect 1 --frame "$tmp/unknown"
printf '\x00\x00\x00\x09\x00\x12' > "$tmp/badsize"
expect 1 --frame "$tmp/badsize"
expect 1 --frame "$tmp/does-not-exist"
expect 1 --bogus
# ApiVersions v0 response: error 0, [ {18, 0, 3} ]
frame "$tmp/resp" 00000007 0000 00000001 0012 0000 0003
expect 0 --response 18 0 "$tmp/resp"
grep -q '"api_keys":\[{"api_key":18,"min_version":0,"max_version":3}\]' "$tmp/out" || fail "bad response JSON: $(cat "$tmp/out")"
expect 1 --response 18 9 "$tmp/resp"
# --default-request: a Metadata v12 frame that decodes and re-encodes as is
"$tool" --default-request 3 12 >"$tmp/def.hex" || fail "--default-request 3 12 failed"
xxd -r -p "$tmp/def.hex" > "$tmp/def"
expect 0 --frame "$tmp/def"
grep -q '"api_key":3,"api_version":12,"correlation_id":7,"client_id":"kpdump"' "$tmp/out" || fail "default request JSON: $(cat "$tmp/out")"
expect 1 --default-request 3 99
expect 1 --default-request 999 0
echo "t_kpdump: ok"
