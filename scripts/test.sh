#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test: unit, actor, integration
# (SQLite and a throwaway PostgreSQL this script starts and stops) and end-to-end tests
# against the built binary. Extra arguments go to ctest (e.g. -R e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -Wno-dev >/dev/null
cmake --build build -j "$(nproc)"
# The web tests' Node.js tools, as pinned by their lockfile; again only when it changed.
if ! cmp -s tests/web/package-lock.json tests/web/node_modules/.herald-installed-lock; then
  npm ci --prefix tests/web --no-audit --no-fund --loglevel=error >/dev/null
  cp tests/web/package-lock.json tests/web/node_modules/.herald-installed-lock
fi
scripts/with-postgres.sh ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
