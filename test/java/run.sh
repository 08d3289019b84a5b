#!/usr/bin/env bash
# Runs one Java scenario: test/java/run.sh CLASS ARGS...
# (builds first when needed). The scenario prints "PASS what" / "FAIL what:
# why" lines (the protocol of sk_check_lines in test/integration/lib.sh) and
# exits non-zero on a FAIL. The client's own logs go to stderr at
# SKIFF_JAVA_LOG (slf4j-simple level; default warn).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 CLASS [ARGS...]" >&2; exit 2; }
CP=$("$HERE/build.sh")
cls=$1; shift
exec java -Xss1m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${SKIFF_JAVA_LOG:-warn}" \
  -Dorg.slf4j.simpleLogger.logFile=System.err ${SKIFF_JAVA_OPTS:-} \
  -cp "$CP" "$cls" "$@"
