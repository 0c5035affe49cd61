#!/usr/bin/env bash
# Latency distribution plot (gnuplot, Debian gnuplot-nox) from posewire-load
# --json reports: latency against percentile on an HdrHistogram-style axis
# (50%, 90%, 99%, 99.9%, 99.99%), service and in-process for each report.
#
#   bench/load/plot_latency.sh OUT.png LABEL=REPORT.json [LABEL=REPORT.json ...]
set -euo pipefail
png=$1
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
plots=()
i=0
for arg in "$@"; do
  label=${arg%%=*}
  json=${arg#*=}
  for phase in service in_process; do
    i=$((i + 1))
    # x = 1 / (1 - q) so each "nine" gets the same width.
    /usr/bin/python3 - "$json" "$phase" >"$data/$i.dat" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for q, us in report[sys.argv[2]]["latency_cdf_us"]:
    if q < 0.99995:
        print(1.0 / (1.0 - q), us)
PY
    name="$label, ${phase/_/-}"
    dash=$([[ $phase == service ]] && echo 1 || echo 2)
    plots+=("'$data/$i.dat' using 1:2 with lines lw 2 dt $dash title '$name'")
  done
done
joined=$(IFS=,; echo "${plots[*]}")
gnuplot <<GP
set terminal pngcairo size 1000,700 font ",11"
set output '$png'
set title 'posewire-load latency distribution (2-core machine shared with the load generator)'
set logscale x
set logscale y
set xlabel 'percentile'
set ylabel 'latency per message (µs)'
set xtics ("50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000)
set grid
set key below
plot $joined
GP
echo "wrote $png"
