#!/usr/bin/env bash
# Installs what skiff needs to build and test, when it is missing.
# As root it runs apt-get; otherwise it prints the exact command and fails,
# so `make run` / `make test` never half-work on a machine without the deps.
set -euo pipefail

BUILD_PKGS="gcc make clang libevent-dev libzstd-dev liblz4-dev zlib1g-dev libsnappy-dev \
libprotobuf-c-dev protobuf-c-compiler check pkg-config python3 libssl-dev"
TEST_PKGS="kcat librdkafka-dev python3-kafka python3-snappy python3-lz4 python3-zstandard \
python3-confluent-kafka jq curl chromium python3-websocket maven openjdk-17-jdk-headless"
# Programs the test scripts call that a minbase Debian lacks (its Priority
# "required" set has coreutils, grep, sed, mawk, findutils, diffutils, ...):
# xxd (t_kpdump), valgrind (t_valgrind_smoke), procps for ps (t_repl_basic),
# git (test/bench/run-produce-cpu-bench.sh), binutils for nm (t_no_test_hooks).
# chromium and python3-websocket: the console tests drive a headless browser
# over the DevTools protocol (t_console.sh, run-console-bench.sh).
# maven and a JDK: the Java client tests (test/java/: kafka-clients from
# Maven Central into build/java, scenarios compiled with javac).
# test/integration/t_deps_complete.sh fails when a script calls a program
# that neither this list (with its dependencies) nor minbase provides.
TOOL_PKGS="xxd valgrind procps git binutils"

missing=()
for p in $BUILD_PKGS $TEST_PKGS $TOOL_PKGS; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done

# node and npm may come from a non-Debian build that bundles npm: ask the PATH.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root: apt-get update && $cmd" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# kafkajs for the integration tests: pinned by test/js/package-lock.json.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/test/js/package-lock.json" ] && [ ! -d "$here/test/js/node_modules/kafkajs" ]; then
  echo "install-deps: npm ci in test/js"
  (cd "$here/test/js" && npm ci --silent --no-audit --no-fund)
fi
exit 0
