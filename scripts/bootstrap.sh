#!/usr/bin/env bash
# Installs the Debian bookworm packages posewire needs to build and test.
# Idempotent: when everything is present it makes no apt call at all.
# As root it installs what is missing; otherwise it prints the one command
# to run and exits 1.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # gRPC, Protobuf, Abseil and the gRPC health/reflection .proto files
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libabsl-dev grpc-proto libssl-dev prometheus-cpp-dev
  # logging, math, asset import (tinygltf needs nlohmann-json's header)
  libspdlog-dev libeigen3-dev libtinygltf-dev nlohmann-json3-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the libFuzzer targets (scripts/fuzz.sh, run by CI): clang and its
  # runtime libraries (libFuzzer, ASan, UBSan)
  clang-14 libclang-rt-14-dev
  # the openssl command line: security tests make their own test CA
  openssl
  # the Python client (clients/python) and its test
  python3-grpcio python3-protobuf
  # tests/deploy parses the Kubernetes and compose YAML
  python3-yaml
  # scripts/test-deploy.sh (run by CI): Docker engine, compose v1 and
  # debootstrap for the local base image; the script starts its own
  # private dockerd
  docker.io docker-compose debootstrap
  # the Blender add-on's headless tests (tests/blender): Blender 3.4 on the
  # system Python; ~630 MB and ~75 s without recommends; its glTF importer
  # needs numpy, which is only a recommendation
  blender python3-numpy
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "bootstrap: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "bootstrap: missing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "bootstrap: run this once as root, then re-run the script:" >&2
  echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists; a failed refresh (offline, a
# mirror hiccup) is not fatal if the lists already hold what we need.
apt-get update -q || echo "bootstrap: apt-get update failed; trying with existing lists" >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "bootstrap: installed ${missing[*]}"
