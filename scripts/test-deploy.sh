#!/usr/bin/env bash
# Runs the deployment for real: builds the images of deploy/compose.yaml,
# brings up REPLICAS posewire-server replicas behind nginx with Prometheus,
# checks health through nginx, drives a short load through it, checks that
# every replica served calls (its own /metrics, and Prometheus' scrape of
# it), kills one replica (SIGKILL) under Session streams that resume on the
# others (posewire-load --resume: no error, every frame answered), stops
# the other replicas with SIGTERM (each must drain and exit 0), then tears
# everything down.
#
#   scripts/test-deploy.sh          (as root; Debian bookworm)
#
# It starts a private dockerd (own socket, exec root, data root; no docker0
# bridge, no iptables rules, no IP forwarding change) and kills it on exit,
# leaving no container, network or daemon behind. No registry is needed:
# debian:bookworm-slim is made with debootstrap from the host's apt mirror.
# Cached between runs under $BUILD_DIR/deploy-cache (DEPLOY_CACHE
# overrides): the rootfs tarball and the daemon's data root (images, build
# cache), so a rerun only rebuilds what changed. Delete it to start cold.
#
# Environment: REPLICAS (2), LOAD_SECONDS (3 per phase), BUILD_DIR (build),
# DEPLOY_CACHE, KEEP_TMP=1 (keep the daemon log and temp dir on failure),
# PREBUILT_FROM=DIR: put DIR's Release posewire-server, posewire and
# posewire-load in the image instead of compiling them in it
# (deploy/Dockerfile, POSEWIRE_BINARIES=prebuilt). CI passes its test
# build, which saves the image's compile (about 6 minutes on 2 cores);
# without it the image is built from source, as a user builds it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${DEPLOY_CACHE:-${BUILD_DIR:-$root/build}/deploy-cache}
replicas=${REPLICAS:-2}
load_seconds=${LOAD_SECONDS:-3}
start_time=$SECONDS

log() { echo "test-deploy [$((SECONDS - start_time))s]: $*"; }
fail() {
  echo "test-deploy: FAIL: $*" >&2
  exit 1
}

# --- Prerequisites ----------------------------------------------------------
# Root is needed for dockerd (namespaces, cgroups, overlay mounts) and
# debootstrap; there is no rootless fallback.
if [[ $(id -u) -ne 0 ]]; then
  fail "must run as root: it starts a private dockerd and runs debootstrap."
fi
packages=(docker.io docker-compose debootstrap)
missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null ||
    true)
  [[ $status == ii* ]] || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q || log "apt-get update failed; trying existing lists"
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
    "${missing[@]}" </dev/null
fi
if ! grep -q cgroup /proc/mounts; then
  fail "no cgroup filesystem mounted: dockerd cannot run containers here."
fi
# /usr/bin/docker is Debian's client, matching the daemon; a different
# `docker` earlier on PATH would otherwise be picked up by docker-compose.
mkdir -p "$cache"
tmp=$(mktemp -d /tmp/posewire-deploy.XXXXXX)
mkdir -p "$tmp/bin"
ln -s /usr/bin/docker "$tmp/bin/docker"
export PATH="$tmp/bin:$PATH"
export DOCKER_HOST="unix://$tmp/docker.sock"
export DOCKER_BUILDKIT=1 COMPOSE_DOCKER_CLI_BUILD=1
export COMPOSE_PROJECT_NAME=posewire
compose=(docker-compose -f "$root/deploy/compose.yaml")
dockerd_pid=""

# --- Teardown (always) ------------------------------------------------------
cleanup() {
  local code=$?
  set +e
  rm -f "$root"/deploy/prebuilt/posewire*
  if [[ -n $dockerd_pid ]] && docker info >/dev/null 2>&1; then
    log "tearing down"
    "${compose[@]}" down --volumes --remove-orphans --timeout 15 \
      >"$tmp/down.log" 2>&1
    local left
    left=$(docker ps -aq)
    [[ -z $left ]] || docker rm -f $left >/dev/null
    docker network prune -f >/dev/null
  fi
  if [[ -n $dockerd_pid ]]; then
    kill -TERM "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 60); do
      kill -0 "$dockerd_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$dockerd_pid" 2>/dev/null
    wait "$dockerd_pid" 2>/dev/null
  fi
  # Anything of ours still running (containerd shims) or mounted.
  local pids
  pids=$(for dir in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$dir/cmdline" | grep -q -- "$tmp/" &&
      echo "${dir#/proc/}"
  done)
  [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
  grep -o " $tmp/[^ ]*" /proc/mounts | sort -r |
    while read -r mount; do umount -l "$mount"; done
  if [[ $code -ne 0 ]]; then
    echo "test-deploy: dockerd log tail:" >&2
    tail -n 20 "$tmp/dockerd.log" >&2
  fi
  if [[ $code -ne 0 && ${KEEP_TMP:-0} == 1 ]]; then
    echo "test-deploy: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
  if [[ $code -eq 0 ]]; then
    log "PASS (no containers, networks or daemon left)"
  fi
  exit $code
}
trap cleanup EXIT

# One run at a time per cache: two daemons must never share a data root.
exec 9>"$cache/lock"
flock 9

# --- Private daemon ---------------------------------------------------------
# --bridge=none: no docker0; compose makes its own network and removes it.
# --iptables=false --ip-forward=false: the host's firewall and sysctls stay
# as they are. Containers then have no NAT to the outside, which they do not
# need (image builds use the host network); published ports go through
# docker-proxy.
log "starting dockerd (data root $cache/docker)"
dockerd --data-root "$cache/docker" --exec-root "$tmp/exec" \
  -H "unix://$tmp/docker.sock" --pidfile "$tmp/dockerd.pid" \
  --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
  >"$tmp/dockerd.log" 2>&1 &
dockerd_pid=$!
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && break
  kill -0 "$dockerd_pid" 2>/dev/null ||
    fail "dockerd exited at start (no cgroups? no overlayfs? its log follows)"
  sleep 0.5
done
docker info >/dev/null 2>&1 || fail "dockerd did not come up in 60 s"
# Leftovers of an interrupted run live in the data root: start clean.
"${compose[@]}" down --volumes --remove-orphans --timeout 1 >/dev/null 2>&1 ||
  true
stale=$(docker ps -aq)
[[ -z $stale ]] || docker rm -f $stale >/dev/null

# --- Base image -------------------------------------------------------------
# The host's Debian mirror (first non-security entry), default deb.debian.org.
apt_mirror() {
  local url
  url=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list \
    /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources |
    grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ')
  echo "${url:-http://deb.debian.org/debian}"
}
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  if [[ ! -s $cache/rootfs.tar ]]; then
    mirror=$(apt_mirror)
    log "debootstrap --variant=minbase bookworm from $mirror"
    # In the cache's file system: /tmp may be noexec or nodev.
    rootfs=$cache/rootfs.work
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" \
      >"$tmp/debootstrap.log" 2>&1 ||
      { tail -n 20 "$tmp/debootstrap.log" >&2; fail "debootstrap failed"; }
    # Like the official image: updates and security too, no package cache.
    security=${mirror%/debian}/debian-security
    [[ $mirror == */debian ]] || security=http://deb.debian.org/debian-security
    cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$cache/rootfs.tar.part" .
    mv "$cache/rootfs.tar.part" "$cache/rootfs.tar"
    rm -rf "$rootfs"
  fi
  log "docker import $cache/rootfs.tar as debian:bookworm-slim"
  docker import --change 'CMD ["bash"]' "$cache/rootfs.tar" \
    debian:bookworm-slim >/dev/null
fi

# --- Images -----------------------------------------------------------------
revision=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null ||
  echo unknown)
export POSEWIRE_BINARIES=build
if [[ -n ${PREBUILT_FROM:-} ]]; then
  prebuilt=("$PREBUILT_FROM/server/posewire-server"
            "$PREBUILT_FROM/clients/posewire" "$PREBUILT_FROM/clients/posewire-load")
  for binary in "${prebuilt[@]}"; do
    [[ -x $binary ]] || fail "PREBUILT_FROM: $binary is missing (build it first)"
  done
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$PREBUILT_FROM/CMakeCache.txt" ||
    fail "PREBUILT_FROM: $PREBUILT_FROM is not a Release build"
  cp "${prebuilt[@]}" "$root/deploy/prebuilt/"
  POSEWIRE_BINARIES=prebuilt
  log "binaries from $PREBUILT_FROM (not compiled in the image)"
fi
log "building posewire, posewire-nginx, posewire-prometheus (revision $revision)"
POSEWIRE_GIT_REVISION=$revision "${compose[@]}" build \
  >"$tmp/build.log" 2>&1 ||
  { tail -n 40 "$tmp/build.log" >&2; fail "image build failed"; }
[[ $(docker image inspect -f '{{.Config.User}}' posewire:latest) == 10001:* ]] ||
  fail "posewire:latest does not run as uid 10001"
docker image ls --format '  {{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E 'posewire|bookworm'

# --- Up ---------------------------------------------------------------------
# Published ports: any free ones (empty variables), read back below.
log "compose up: $replicas replicas, nginx, prometheus"
POSEWIRE_PORT='' PROMETHEUS_PORT='' "${compose[@]}" up -d --no-build \
  --scale posewire="$replicas" >"$tmp/up.log" 2>&1 ||
  { cat "$tmp/up.log" >&2; "${compose[@]}" logs --tail=20 >&2;
    fail "compose up failed"; }
mapfile -t replica_ids < <("${compose[@]}" ps -q posewire)
[[ ${#replica_ids[@]} -eq $replicas ]] ||
  fail "expected $replicas replicas, got ${#replica_ids[@]}"
for id in "${replica_ids[@]}"; do
  for _ in $(seq 1 60); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$id")
    [[ $health == healthy ]] && break
    sleep 1
  done
  [[ $health == healthy ]] || fail "replica $id is $health"
  [[ $(docker exec "$id" id -u) == 10001 ]] || fail "replica $id runs as root"
done
grpc_address=$("${compose[@]}" port nginx 50051)
prometheus_address=$("${compose[@]}" port prometheus 9090)
log "replicas healthy; nginx on $grpc_address, prometheus on $prometheus_address"

# Client containers share the host's network: they reach nginx by its
# published port, like any outside client.
client=(docker run --rm --network host posewire:latest)

# --- Health and load through nginx -------------------------------------------
"${client[@]}" posewire health --server="$grpc_address" ||
  fail "health through nginx"
"${client[@]}" posewire info --server="$grpc_address" >"$tmp/info.txt" ||
  fail "GetInfo through nginx"
grep -q "$revision" "$tmp/info.txt" ||
  fail "GetInfo does not report revision $revision"
load=("${client[@]}" posewire-load --server="$grpc_address" --baseline=false
  --skeleton=/usr/share/posewire/cmu_131_01_walk.bvh
  --duration="$load_seconds" --characters=8)
log "load: unary, 4 callers, ${load_seconds}s"
"${load[@]}" --mode=unary --callers=4 >"$tmp/load-unary.txt" 2>&1 ||
  { cat "$tmp/load-unary.txt" >&2; fail "unary load had errors"; }
grep -E '^service |errors:' "$tmp/load-unary.txt"
log "load: 2 x $replicas Session streams, ${load_seconds}s"
"${load[@]}" --mode=stream --streams=$((2 * replicas)) \
  --channels=$((2 * replicas)) >"$tmp/load-stream.txt" 2>&1 ||
  { cat "$tmp/load-stream.txt" >&2; fail "stream load had errors"; }
grep -E '^service |errors:' "$tmp/load-stream.txt"

# --- Every replica served ------------------------------------------------------
# Each replica's own /metrics (the host reaches the compose network
# directly): Solve calls answered OK, and Session frames.
# Python's urllib rather than curl, which a minimal Debian lacks.
http_get() {  # http_get URL [QUERY] -> body; QUERY is URL-encoded as ?query=
  /usr/bin/python3 -c 'import sys, urllib.parse, urllib.request
url = sys.argv[1]
if len(sys.argv) > 2:
    url += "?" + urllib.parse.urlencode({"query": sys.argv[2]})
sys.stdout.write(urllib.request.urlopen(url, timeout=10).read().decode())' "$@"
}
metric() {  # metric URL NAME [LABEL="VALUE"...] -> sum of matching samples
  local url=$1 name=$2
  shift 2
  http_get "$url" | awk -v name="$name" -v want="$*" '
    $1 == name || index($1, name "{") == 1 {
      n = split(want, labels, " ")
      for (i = 1; i <= n; ++i) if (index($1, labels[i]) == 0) next
      sum += $2
    }
    END { printf "%d\n", sum }'
}
network=$(docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' \
  "${replica_ids[0]}")
for id in "${replica_ids[@]}"; do
  ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$id")
  url=http://$ip:9090/metrics
  solves=$(metric "$url" posewire_calls_total 'rpc="Solve"' 'code="OK"')
  frames=$(metric "$url" posewire_session_frames_total)
  name=$(docker inspect -f '{{.Name}}' "$id")
  log "replica ${name#/} ($ip): $solves Solve calls OK, $frames Session frames"
  [[ $solves -gt 0 ]] || fail "replica ${name#/} served no Solve call"
done

# Prometheus found every replica by DNS and scraped it (up == 1) and has
# its Solve count. Scrapes are every 5 s: allow a few.
prometheus_count() {  # PromQL -> number of series with a value > 0
  http_get "http://$prometheus_address/api/v1/query" "$1" |
    /usr/bin/python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(sum(1 for s in r if float(s["value"][1]) > 0))'
}
for _ in $(seq 1 30); do
  up=$(prometheus_count 'up{job="posewire"}' || echo 0)
  served=$(prometheus_count \
    'sum by (instance) (posewire_calls_total{rpc="Solve",code="OK"})' ||
    echo 0)
  [[ $up -eq $replicas && $served -eq $replicas ]] && break
  sleep 1
done
log "prometheus: $up of $replicas replicas up, $served with Solve calls"
[[ $up -eq $replicas && $served -eq $replicas ]] ||
  fail "prometheus does not see every replica serving"

# --- A replica killed under resuming streams ---------------------------------
# docker kill (SIGKILL) on one replica while Session streams run through
# nginx: posewire-load resumes its streams on the others through nginx,
# each from its newest snapshot, replaying the frames answered since. Its
# callers must see no error and no unanswered frame; the report counts
# the resumes.
log "killing one replica under $((2 * replicas)) resuming Session streams"
"${load[@]}" --mode=stream --streams=$((2 * replicas)) \
  --channels=$((2 * replicas)) --rate=60 --resume \
  --duration=$((load_seconds + 3)) \
  >"$tmp/load-resume.txt" 2>&1 &
resume_load=$!
for _ in $(seq 1 100); do  # until the streams are solving frames
  grep -q '^\[service' "$tmp/load-resume.txt" 2>/dev/null && break
  sleep 0.2
done
killed=${replica_ids[0]}
docker kill "$killed" >/dev/null
wait "$resume_load" ||
  { cat "$tmp/load-resume.txt" >&2; fail "resuming stream load had errors"; }
grep -E '^service |errors:|resumed' "$tmp/load-resume.txt"
resumes=$(sed -n 's/.*resumed in a new call: \([0-9]*\).*/\1/p' \
  "$tmp/load-resume.txt")
[[ ${resumes:-0} -ge 1 ]] ||
  { cat "$tmp/load-resume.txt" >&2; fail "no stream was resumed"; }
log "replica ${killed:0:12} killed: $resumes streams resumed elsewhere, no error"
replica_ids=("${replica_ids[@]:1}")

# --- Graceful stop ------------------------------------------------------------
# SIGTERM (docker stop) must make each replica drain and exit 0 well within
# compose's stop_grace_period; a SIGKILL would show as 137.
log "stopping replicas with SIGTERM"
"${compose[@]}" stop --timeout 15 posewire >"$tmp/stop.log" 2>&1
for id in "${replica_ids[@]}"; do
  name=$(docker inspect -f '{{.Name}}' "$id")
  code=$(docker inspect -f '{{.State.ExitCode}}' "$id")
  restarts=$(docker inspect -f '{{.RestartCount}}' "$id")
  docker logs "$id" >"$tmp/replica.log" 2>&1
  [[ $code -eq 0 ]] || fail "replica ${name#/} exited $code"
  [[ $restarts -eq 0 ]] || fail "replica ${name#/} restarted $restarts times"
  grep -q 'SIGTERM received: draining' "$tmp/replica.log" &&
    grep -q 'stopped' "$tmp/replica.log" ||
    { cat "$tmp/replica.log" >&2; fail "replica ${name#/} did not drain"; }
done
log "every replica drained and exited 0"
