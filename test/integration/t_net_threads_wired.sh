#!/usr/bin/env bash
# Issue 19: `make test` runs the suite with 4 and with 1 network loops per
# node through SKIFF_TEST_NET_THREADS, which reaches a node only through
# lib.sh's "${SK_NET_ARGS[@]}" on its command line. This lint keeps it so:
# every `"$SK_BIN/skiff" --config ...` in test/integration that starts a node
# meant to stay up (run in the background with `&`, or `exec`'d) must carry
# "${SK_NET_ARGS[@]}"; a foreground run is a start that must be refused, and
# `skiff format` / --describe-config take no loop count. Then, with
# SKIFF_TEST_NET_THREADS=3, sk_start_node's node must show the flag in its
# command line. A self-test shows the lint rejects a start without it.
# 3 loops whatever the runner asks: only the command line is checked here
export SKIFF_TEST_NET_THREADS=3
. "$(dirname "$0")/lib.sh"
NAME=t_net_threads_wired

# lint FILE... -> prints FILE:LINE of each node start without SK_NET_ARGS
lint() {
  "$SK_PY" - "$@" <<'PY'
import re, sys
for path in sys.argv[1:]:
    lines = open(path).read().split('\n')
    i = 0
    while i < len(lines):
        start, cmd = i + 1, lines[i]
        while cmd.endswith('\\') and i + 1 < len(lines):   # join continuations
            i += 1
            cmd = cmd[:-1] + ' ' + lines[i]
        i += 1
        code = cmd.split(' #')[0].strip()
        if code.startswith('#') or not re.search(r'"\$SK_BIN/skiff" --config', code):
            continue
        background = re.search(r'(?<!&)&\s*$', code) is not None
        if (background or re.search(r'\bexec "\$SK_BIN/skiff"', code)) and 'SK_NET_ARGS[@]' not in code:
            print('%s:%d: %s' % (path, start, code[:120]))
PY
}

cd "$SK_ROOT/test/integration" || sk_fail "no test/integration"
scripts=(); for f in ./*.sh; do [ "$f" = "./$NAME.sh" ] || scripts+=("$f"); done   # not the sample below
bad=$(lint "${scripts[@]}")
sk_check "every node start in test/integration carries \"\${SK_NET_ARGS[@]}\"${bad:+: $bad}" test -z "$bad"

# self-test: the lint finds a background start without it, in a continuation
# too, and passes the same lines with it and a refused foreground start
cat > "$SK_TMP/sample.sh" <<'EOF'
"$SK_BIN/skiff" --config "$SK_TMP/a.conf" --node 1 > "$SK_TMP/a.log" 2>&1 &
  "$SK_BIN/skiff" --config "$SK_TMP/b.conf" --node "$i" \
    --set x=y >> "$SK_TMP/b.log" 2>&1 &
( exec "$SK_BIN/skiff" --config "$SK_TMP/c.conf" ) &
"$SK_BIN/skiff" --config "$SK_TMP/ok.conf" --node 1 "${SK_NET_ARGS[@]}" > "$SK_TMP/ok.log" 2>&1 &
"$SK_BIN/skiff" --config "$SK_TMP/refused.conf" > "$SK_TMP/r.out" 2>&1 && echo started
"$SK_BIN/skiff" format --config "$SK_TMP/f.conf" &
EOF
found=$(lint "$SK_TMP/sample.sh" | cut -d: -f2 | tr '\n' ' ')
sk_check "self-test: the lint flags lines 1, 2 and 4 of the sample (got: $found)" test "$found" = "1 2 4 "

# the flag reaches a node, before the script's own --set flags
sk_start_cluster 1 --set num.io.threads=2
cmd=$(tr '\0' ' ' < "/proc/${SK_NODE_PID[1]}/cmdline")
sk_check "sk_start_node passes num.network.threads=3 ($cmd)" grep -q -- "--set num.network.threads=3 --set num.io.threads=2" <<<"$cmd"
sk_summary "$NAME"
