#!/usr/bin/env bash
# Builds every test/fuzz/fuzz_*.c as a libFuzzer target with clang (ASan +
# UBSan), linked with every layer's library, and runs each for N seconds.
# Corpora live in build-fuzz/corpus/NAME, seeded from test/fuzz/seeds/NAME;
# test/fuzz/NAME.dict, when present, is passed as the libFuzzer dictionary.
# usage: [FUZZ_ONLY="fuzz_x ..."] run-fuzz.sh [SECONDS]
set -euo pipefail
secs=${1:-20}
cd "$(dirname "$0")/../.."
B=build-fuzz
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "run-fuzz: $CC not found" >&2; exit 1; }
# The libraries are compiled ONCE, by the Makefile itself, with clang and
# the fuzzer's coverage instrumentation (fuzzer-no-link) plus ASan/UBSan;
# each target then only compiles its own file and links. Compiling every
# source per target cost minutes per target on a 2-core machine.
SAN_LIB="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
LIBS="$B/lib/libskiff_broker.a $B/lib/libskiff_clients.a $B/lib/libskiff_raft.a $B/lib/libskiff_storage.a $B/lib/libskiff_protocol.a"
# storage's test hooks (st_io_set_sync, ...) exist only in these objects
# (the Makefile's FAULT_SRCS); listed before the libraries so they win
FAULT="$B/obj/fault/storage/io.o $B/obj/fault/storage/cleaner.o"
# shellcheck disable=SC2086
make --no-print-directory -j"$(nproc)" B=$B CC="$CC" OPT=-O1 SAN="$SAN_LIB" LDFLAGS= gen $LIBS $FAULT >/dev/null
PKGS="libevent libevent_pthreads libevent_openssl openssl libzstd liblz4 zlib snappy libprotobuf-c libcrypto"
CFLAGS="-std=c11 -D_GNU_SOURCE -DSKIFF_FAULT_INJECTION -g -O1 -I. -I$B/gen $(pkg-config --cflags $PKGS)"
mkdir -p "$B/fuzz"
status=0
for src in test/fuzz/fuzz_*.c; do
  [ -e "$src" ] || continue
  name=$(basename "$src" .c)
  # FUZZ_ONLY="fuzz_a fuzz_b" builds and runs only those targets
  if [ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  bin="$B/fuzz/$name"
  # shellcheck disable=SC2086
  "$CC" $CFLAGS $SAN "$src" $FAULT $LIBS -o "$bin" $(pkg-config --libs $PKGS) -lpthread -lm
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
