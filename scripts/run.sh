#!/usr/bin/env bash
# Set up, build and start posewire-server on 127.0.0.1:50051 in the
# foreground. Ctrl-C stops it cleanly. Extra arguments go to the server,
# e.g. ./scripts/run.sh --listen=0.0.0.0:50051 --log_level=debug
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

POSEWIRE_SET=serve "$root/scripts/build.sh" posewire-server posewire
echo "run: starting posewire-server (Ctrl-C to stop); try: $build_dir/clients/posewire info"
exec "$build_dir/server/posewire-server" --listen=127.0.0.1:50051 "$@"
