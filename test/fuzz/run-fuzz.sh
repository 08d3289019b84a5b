#!/usr/bin/env bash
# Builds every test/fuzz/fuzz_*.c as a libFuzzer target with clang (ASan +
# UBSan), linked with all library sources, and runs each for N seconds.
# Corpora live in build-fuzz/corpus/NAME, seeded from test/fuzz/seeds/NAME;
# test/fuzz/NAME.dict, when present, is passed as the libFuzzer dictionary.
# usage: [FUZZ_ONLY="fuzz_x ..."] run-fuzz.sh [SECONDS]
set -euo pipefail
secs=${1:-20}
cd "$(dirname "$0")/../.."
B=build-fuzz
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "run-fuzz: $CC not found" >&2; exit 1; }
# generated codec sources come from the normal build
make --no-print-directory B=$B all >/dev/null
PKGS="libevent libevent_pthreads libzstd liblz4 zlib snappy libprotobuf-c"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -I. -I$B/gen $(pkg-config --cflags $PKGS)"
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
# every library source (not the two programs' mains) plus generated code, so
# a target may exercise any layer
LIBSRC=$(ls protocol/*.c storage/*.c raft/*.c broker/*.c clients/*.c 2>/dev/null \
         | grep -v -e '^broker/main\.c$' -e '^clients/skiffctl\.c$' || true)
LIBSRC="$LIBSRC $(ls "$B"/gen/*.c "$B"/gen/broker/*.c 2>/dev/null || true)"
mkdir -p "$B/fuzz"
status=0
for src in test/fuzz/fuzz_*.c; do
  [ -e "$src" ] || continue
  name=$(basename "$src" .c)
  # FUZZ_ONLY="fuzz_a fuzz_b" builds and runs only those targets
  if [ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  bin="$B/fuzz/$name"
  # shellcheck disable=SC2086
  "$CC" $CFLAGS $SAN "$src" $LIBSRC -o "$bin" $(pkg-config --libs $PKGS) -lpthread -lm
  corpus="$B/corpus/$name"
  mkdir -p "$corpus"
  seeds="test/fuzz/seeds/$name"
  dirs=("$corpus"); [ -d "$seeds" ] && dirs+=("$seeds")
  # an optional libFuzzer dictionary test/fuzz/NAME.dict (keywords of text formats)
  opts=(); [ -f "test/fuzz/$name.dict" ] && opts+=(-dict="test/fuzz/$name.dict")
  echo "== $name (${secs}s)"
  if ! "$bin" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
        -artifact_prefix="$B/fuzz/$name-" ${opts[@]+"${opts[@]}"} "${dirs[@]}" 2>"$B/fuzz/$name.log"; then
    echo "FUZZ FAILURE in $name:"; tail -n 40 "$B/fuzz/$name.log"; status=1
  else
    grep -E '^(#[0-9]+ +DONE|Done)' "$B/fuzz/$name.log" | tail -n 1 || true
  fi
done
exit $status
