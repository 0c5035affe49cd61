#!/bin/bash
# Container entrypoint (run by tini as PID 1, see deploy/Dockerfile).
#
#   docker run IMAGE [--flag=value ...]  posewire-server with these flags
#   docker run IMAGE COMMAND [ARG ...]   any other command, e.g.
#                                        posewire health --server=HOST:PORT
#
# Every environment variable POSEWIRE_<NAME> whose lower-cased NAME is a
# posewire-server flag becomes --<name>=<value>, before the arguments (so an
# argument overrides the environment). Other POSEWIRE_* variables are
# ignored with a note: Kubernetes injects POSEWIRE_SERVICE_HOST,
# POSEWIRE_PORT and the like for a Service named posewire, and those must
# not reach the flag parser.
set -euo pipefail

if [[ $# -gt 0 && $1 != -* ]]; then
  exec "$@"
fi

# The flags the server defines, from its own --helpfull (which exits 1).
known=" $( (posewire-server --helpfull 2>&1 || true) |
  sed -n 's/^ *--\([a-z0-9_]*\) .*/\1/p' | tr '\n' ' ') "

flags=()
while IFS='=' read -r -d '' name value; do
  [[ $name == POSEWIRE_* ]] || continue
  flag=${name#POSEWIRE_}
  flag=${flag,,}
  if [[ $known == *" $flag "* ]]; then
    flags+=("--$flag=$value")
  else
    echo "docker-entrypoint: ignoring $name (no --$flag flag)" >&2
  fi
done < <(env -0)

# exec: tini's child is the server itself, so SIGTERM reaches it directly.
exec posewire-server "${flags[@]}" "$@"
