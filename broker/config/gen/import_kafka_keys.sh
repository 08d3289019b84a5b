#!/usr/bin/env bash
# Rebuilds broker/config/kafka_keys.tsv from Kafka's own config definitions.
# Run by hand, once per Kafka release we follow; the build never runs it
# (the TSV is committed). Needs mvn and a JDK; everything it fetches goes
# under build/kafka-keys/ (never committed).
#   bash broker/config/gen/import_kafka_keys.sh [NEW_VERSION [OLD_VERSION]]
# NEW_VERSION (default 4.1.0) gives the names, types, defaults, update
# modes and topic synonyms; names OLD_VERSION (default 3.9.1) knew that
# NEW_VERSION dropped are kept as "obsolete". Status and notes of keys
# skiff acts on come from broker/config/config_keys.h and config_topic.h.
set -eu
cd "$(dirname "$0")/../../.."
new=${1:-4.1.0}
old=${2:-3.9.1}
work=build/kafka-keys
mkdir -p "$work"
dump() {   # version -> $work/keys-VERSION.tsv
  local v=$1 d=$work/$1
  mkdir -p "$d/cls"
  cat > "$d/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>skiff</groupId><artifactId>kafka-keys</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
POM
  (cd "$d" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib)
  javac -cp "$d/lib/*" -d "$d/cls" broker/config/gen/KafkaKeys.java
  java -cp "$d/cls:$d/lib/*" KafkaKeys > "$work/keys-$v.tsv" 2> "$work/keys-$v.err"
}
dump "$new"
dump "$old"
python3 broker/config/gen/import_kafka_keys.py "$work/keys-$new.tsv" "$work/keys-$old.tsv" "$new" "$old" \
  > broker/config/kafka_keys.tsv
echo "broker/config/kafka_keys.tsv: $(grep -vc '^#' broker/config/kafka_keys.tsv) keys"
