#!/usr/bin/env bash
# Installs what is missing, builds herald and runs it: `scripts/run.sh` serves on the embedded
# default (SQLite under ./var, simulated channels, 127.0.0.1:8080); arguments go to `herald`,
# e.g. `scripts/run.sh serve --listen 127.0.0.1:9090`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -Wno-dev >/dev/null
cmake --build build -j "$(nproc)" --target herald
if [ $# -eq 0 ]; then
  set -- serve
fi
exec build/herald "$@"
