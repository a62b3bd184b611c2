#!/usr/bin/env bash
# Make sure a Java 17+ runtime is available (the embedded Debezium engine,
# connectors/debezium/engine.py and tests/debezium, runs on it through JPype).
# Idempotent: does nothing when `java -version` already reports 17 or newer;
# otherwise installs Debian/Ubuntu's openjdk-17-jre-headless with apt-get
# (as root, or through sudo). Exits non-zero with a clear message when it can't.
set -euo pipefail

PKG="${JAVA_PACKAGE:-openjdk-17-jre-headless}"

java_major() {
    local java="${JAVA_HOME:+$JAVA_HOME/bin/}java" out v
    command -v "$java" >/dev/null 2>&1 || return 1
    out="$("$java" -version 2>&1)" || return 1
    v="$(sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' <<<"$out" | head -n1)"
    [ -n "$v" ] || return 1
    case "$v" in 1.*) v="${v#1.}" ;; esac   # "1.8.0" is Java 8
    echo "${v%%.*}"
}

if major="$(java_major)" && [ "$major" -ge 17 ]; then
    echo "install_java: Java $major found; nothing to do"
    exit 0
fi
echo "install_java: Java 17+ not found (found: ${major:-none}); installing $PKG"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_java: ERROR: apt-get is not available; install a Java 17+ runtime yourself" \
         "(e.g. $PKG, or Temurin 17) and put it on PATH or set JAVA_HOME" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    echo "install_java: ERROR: installing $PKG needs root; run this script as root or with" \
         "passwordless sudo, or install a Java 17+ runtime yourself" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "$PKG"

if major="$(java_major)" && [ "$major" -ge 17 ]; then
    echo "install_java: Java $major installed"
else
    echo "install_java: ERROR: installed $PKG but \`java -version\` still does not report 17+" \
         "(found: ${major:-none}); check PATH/JAVA_HOME (update-alternatives --config java)" >&2
    exit 1
fi
