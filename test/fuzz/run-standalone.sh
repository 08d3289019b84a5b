#!/usr/bin/env bash
# The fuzz targets without libFuzzer (clang's fuzzer runtime is missing on
# some machines): each test/fuzz/fuzz_*.c is linked with standalone.c and
# gcc's ASan/UBSan against the libraries built by the Makefile in
# build-asan (as `make asan` builds them), then replays its seeds
# (test/fuzz/seeds/NAME) and deterministic mutants of each (standalone.c).
# usage: [FUZZ_ONLY="fuzz_x ..."] run-standalone.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-asan
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
LIBS="$B/lib/libskiff_broker.a $B/lib/libskiff_clients.a $B/lib/libskiff_raft.a $B/lib/libskiff_storage.a $B/lib/libskiff_protocol.a"
FAULT="$B/obj/fault/storage/io.o $B/obj/fault/storage/cleaner.o"
# shellcheck disable=SC2086
make --no-print-directory -j2 B=$B BIN=$B/bin OPT=-O1 SAN="$SAN" gen $LIBS $FAULT >/dev/null
PKGS="libevent libevent_pthreads libevent_openssl openssl libzstd liblz4 zlib snappy libprotobuf-c libcrypto"
CFLAGS="-std=c11 -D_GNU_SOURCE -DSKIFF_FAULT_INJECTION -g -O1 -I. -I$B/gen $(pkg-config --cflags $PKGS)"
mkdir -p "$B/fuzz-standalone"
status=0
for src in test/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  if [ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $name "* ]]; then continue; fi
  seeds="test/fuzz/seeds/$name"
  [ -d "$seeds" ] || { echo "== $name: no seeds, skipped"; continue; }
  bin="$B/fuzz-standalone/$name"
  # shellcheck disable=SC2086
  gcc $CFLAGS $SAN "$src" test/fuzz/standalone.c $FAULT $LIBS -o "$bin" $(pkg-config --libs $PKGS) -lpthread -lm
  echo "== $name"
  if ! ASAN_OPTIONS=abort_on_error=1 STANDALONE_ARTIFACT="$B/fuzz-standalone/$name-crash" \
       "$bin" "$seeds" > "$B/fuzz-standalone/$name.log" 2>&1; then
    echo "FAILURE in $name (input: $B/fuzz-standalone/$name-crash):"; tail -n 30 "$B/fuzz-standalone/$name.log"
    status=1
  else
    tail -n 1 "$B/fuzz-standalone/$name.log"
  fi
done
exit $status
