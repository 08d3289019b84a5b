#!/usr/bin/env bash
# Resolves the pinned Apache Kafka broker (org.apache.kafka:kafka_2.13, the
# KRaft server with its storage tool) and its runtime dependencies from Maven
# Central into build/kafka-broker/lib/, for test/bench/run-kafka-sbs.sh only.
# Never committed, never needed by `make run` or `make test`.
#
# Offline-safe: when the lib dir already holds this version (its stamp file),
# nothing is asked of any registry. Otherwise Maven is tried offline first (a
# local ~/.m2 that has it), then online.
#
# usage: test/bench/fetch-kafka-broker.sh   -> prints the lib dir (exit 0),
#        or why it could not (stderr, exit 1)
# env:   SKIFF_KAFKA_DIR (default <repo>/build/kafka-broker)
set -eu
# Pinned: the same 4.1 line as the Java client tests (test/java). 4.x runs
# the server on Java 17, the default JDK here.
KAFKA_VERSION=4.1.0
# The server logs through slf4j 1.7; bound here to log4j2 (the
# versions its 4.1.0 release ships). Without a binding the broker says
# nothing at all, which hides why a start failed.
LOG4J_VERSION=2.24.3

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${SKIFF_KAFKA_DIR:-$ROOT/build/kafka-broker}
LIB=$OUT/lib
STAMP=$LIB/.kafka_2.13-$KAFKA_VERSION

if [ -f "$STAMP" ] && [ -f "$LIB/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  echo "$LIB"; exit 0
fi
command -v mvn >/dev/null || { echo "mvn not found (apt-get install maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "java not found" >&2; exit 1; }
mkdir -p "$OUT"
# A throw-away pom: only its dependency list matters.
cat >"$OUT/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>skiff.bench</groupId>
  <artifactId>skiff-kafka-broker</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
rm -rf "$LIB.tmp"
copy() {
  mvn -B -q "$@" -f "$OUT/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB.tmp" >"$OUT/mvn.log" 2>&1
}
if ! copy -o && ! copy; then
  echo "maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION (see $OUT/mvn.log):" >&2
  grep -m 3 -E 'ERROR' "$OUT/mvn.log" >&2 || tail -n 3 "$OUT/mvn.log" >&2
  exit 1
fi
[ -f "$LIB.tmp/kafka_2.13-$KAFKA_VERSION.jar" ] || {
  echo "maven finished but kafka_2.13-$KAFKA_VERSION.jar is not in $LIB.tmp" >&2; exit 1; }
rm -rf "$LIB"; mv "$LIB.tmp" "$LIB"
touch "$STAMP"
echo "$LIB"
