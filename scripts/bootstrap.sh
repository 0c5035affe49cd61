#!/usr/bin/env bash
# Installs the Debian bookworm packages a job needs, and nothing more.
#
#   scripts/bootstrap.sh [SET...]      (no set: test)
#
#   serve   build and run the server and the clients (scripts/run.sh)
#   test    serve, plus what the whole suite needs (scripts/test.sh,
#           scripts/sanitize.sh): GoogleTest, Google Benchmark, the Python
#           client's and the Blender add-on's packages, pybind11,
#           clang-format and clang-tidy
#   fuzz    serve, plus clang and its sanitizer runtimes (scripts/fuzz.sh,
#           scripts/sanitize.sh)
# The deployment test (scripts/test-deploy.sh) installs its own (Docker,
# compose, debootstrap).
#
# Idempotent: when everything is present it makes no apt call at all.
# As root it installs what is missing; otherwise it prints the one command
# to run and exits 1.
set -euo pipefail

serve_packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # gRPC, Protobuf, Abseil and the gRPC health/reflection .proto files
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libabsl-dev grpc-proto libssl-dev prometheus-cpp-dev
  # logging, math, asset import (tinygltf needs nlohmann-json's header)
  libspdlog-dev libeigen3-dev libtinygltf-dev nlohmann-json3-dev
)
test_packages=(
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the openssl command line: security tests make their own test CA
  openssl
  # the Python client (clients/python), its tests (pytest) and pip-installing
  # it offline (setuptools, wheel, pip on Debian's Python)
  python3-grpcio python3-protobuf python3-pytest python3-setuptools
  python3-wheel python3-pip
  # the in-process solver core for Python (posewire._core, pybind11)
  pybind11-dev python3-dev
  # tests/deploy parses the Kubernetes and compose YAML
  python3-yaml
  # the Blender add-on's headless tests (tests/blender): Blender 3.4 on the
  # system Python; ~630 MB and ~75 s without recommends; its glTF importer
  # needs numpy, which is only a recommendation
  blender python3-numpy
  # the formatting and lint checks (scripts/check_format.sh,
  # scripts/check_tidy.sh)
  clang-format-14 clang-tidy-14
  # the latency plot (bench/load/plot_latency.sh, checked by e2e_load_smoke)
  gnuplot-nox
)
fuzz_packages=(
  # the libFuzzer targets and the sanitizer builds: clang and its runtime
  # libraries (libFuzzer, ASan, UBSan, TSan)
  clang-14 libclang-rt-14-dev
)

sets=("$@")
[[ ${#sets[@]} -gt 0 ]] || sets=(test)
packages=("${serve_packages[@]}")
for set in "${sets[@]}"; do
  case $set in
    serve) ;;
    test) packages+=("${test_packages[@]}") ;;
    fuzz) packages+=("${fuzz_packages[@]}") ;;
    *)
      echo "usage: $0 [serve|test|fuzz]..." >&2
      exit 2
      ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "bootstrap: all ${#packages[@]} Debian packages for ${sets[*]} present"
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
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
  "${missing[@]}" </dev/null
echo "bootstrap: installed ${missing[*]}"
