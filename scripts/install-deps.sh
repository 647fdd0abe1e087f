#!/usr/bin/env bash
# Installs the Debian 12 packages herald builds, runs and tests with; skips what is present.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libcaf-dev
  libboost1.81-dev libboost-json1.81-dev libboost-test1.81-dev
  libsoci-dev libsqlite3-dev libpq-dev
  libspdlog-dev prometheus-cpp-dev
  libcurl4-openssl-dev libssl-dev libnghttp2-dev libjemalloc-dev
  postgresql curl python3 tzdata
  # the cluster port's certificates (scripts/cluster-certs.sh)
  openssl
  # the operations tests: promtool, the console in Chromium, the .deb and its systemd unit
  prometheus chromium fonts-dejavu-core systemd
  dpkg-dev file strace adduser binutils iproute2 procps
)
# The web tests (OpenAPI validator, the console in headless Chromium) run on Node.js; a machine
# without npm gets Debian's.
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
