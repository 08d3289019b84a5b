#!/usr/bin/env bash
# Resolves the pinned Apache Kafka Java client (org.apache.kafka:kafka-clients)
# and its runtime dependencies from Maven Central into build/java/lib/.
# Never committed, never needed by `make run`: only the Java test scenarios
# (test/java/src/, run by test/java/run.sh) use it.
#
# Offline-safe: when build/java/lib/ already holds this version (its stamp
# file), nothing is asked of any registry. Otherwise Maven is tried offline
# first (a local ~/.m2 that has it), then online.
#
# usage: test/java/fetch-kafka-clients.sh        -> prints the lib dir
# env:   SKIFF_JAVA_DIR (default <repo>/build/java)
set -eu
KAFKA_CLIENTS_VERSION=4.1.0     # pinned: Kafka 4.x client (KIP-848, KIP-890)
SLF4J_VERSION=1.7.36            # kafka-clients' own slf4j-api line

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${SKIFF_JAVA_DIR:-$ROOT/build/java}
LIB=$OUT/lib
STAMP=$LIB/.kafka-clients-$KAFKA_CLIENTS_VERSION

if [ -f "$STAMP" ] && ls "$LIB"/kafka-clients-"$KAFKA_CLIENTS_VERSION".jar >/dev/null 2>&1; then
  echo "$LIB"; exit 0
fi
command -v mvn >/dev/null || { echo "fetch-kafka-clients: mvn not found (apt-get install maven)" >&2; exit 1; }
mkdir -p "$OUT"
# A throw-away pom: only its dependency list matters. slf4j-simple gives
# the client's logs a binding (stderr, level set by run.sh).
cat > "$OUT/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>skiff.test</groupId>
  <artifactId>skiff-java-harness</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-clients</artifactId>
      <version>$KAFKA_CLIENTS_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>$SLF4J_VERSION</version>
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
  echo "fetch-kafka-clients: maven failed (see $OUT/mvn.log)" >&2
  tail -n 20 "$OUT/mvn.log" >&2
  exit 1
fi
rm -rf "$LIB"; mv "$LIB.tmp" "$LIB"
touch "$STAMP"
echo "$LIB"
