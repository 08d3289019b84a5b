#!/usr/bin/env bash
# Compiles the Java test scenarios (test/java/src/*.java, one main class per
# scenario, default package) against the pinned kafka-clients into
# build/java/classes/. No Maven project at test time: javac only. Does
# nothing when the classes are newer than every source.
#
# usage: test/java/build.sh   -> prints the classpath to run with
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${SKIFF_JAVA_DIR:-$ROOT/build/java}
LIB=$("$HERE/fetch-kafka-clients.sh")
CLASSES=$OUT/classes
STAMP=$CLASSES/.built
CP="$CLASSES:$LIB/*"
command -v javac >/dev/null || { echo "build.sh: javac not found (a JDK 11+)" >&2; exit 1; }
stale=1
if [ -f "$STAMP" ]; then
  stale=0
  for f in "$HERE"/src/*.java; do [ "$f" -nt "$STAMP" ] && stale=1; done
fi
if [ "$stale" = 1 ]; then
  rm -rf "$CLASSES"; mkdir -p "$CLASSES"
  javac -nowarn -encoding UTF-8 -cp "$LIB/*" -d "$CLASSES" "$HERE"/src/*.java >&2
  touch "$STAMP"
fi
echo "$CP"
