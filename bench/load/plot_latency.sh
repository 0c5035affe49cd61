#!/usr/bin/env bash
# Latency distribution plot from posewire-load --json reports: latency per
# message against percentile on an HdrHistogram-style axis (50%, 90%, 99%,
# 99.9%, 99.99%): the service, the gRPC echo (stream mode) and the
# in-process baseline of each report.
# The title and the curve names come from the reports' own parameters
# (mode, senders, characters per message, op mix, rate, duration).
#
#   bench/load/plot_latency.sh OUT.png [LABEL=]REPORT.json...
#
# Draws with gnuplot (Debian's gnuplot-nox), which it installs when missing
# and run as root; otherwise it prints the apt-get line to run.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUT.png [LABEL=]REPORT.json..." >&2
  exit 2
fi
png=$1
shift

if ! command -v gnuplot >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "plot_latency: needs gnuplot; run once as root:" >&2
    echo "  apt-get install -y --no-install-recommends gnuplot-nox" >&2
    exit 1
  fi
  echo "plot_latency: installing gnuplot-nox"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends gnuplot-nox </dev/null >/dev/null
fi

data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
# One data file per curve (x = 1 / (1 - q), so each "nine" gets the same
# width), plus the gnuplot plot clause and the title, written by Python
# from the reports.
/usr/bin/python3 - "$data" "$@" <<'PY'
import json, sys

out, args = sys.argv[1], sys.argv[2:]


def describe(report):
    # rate 0: each sender sends its next message when the answer comes.
    rate = (f"{report['rate']:g} msg/s" if report["rate"] > 0
            else "closed loop")
    return (f"{report['mode']}, {report['senders']} senders x "
            f"{report['characters']} characters, {report['op_mix']}, "
            f"{rate}, {report['duration']:g} s")


reports = []
for arg in args:
    label, sep, path = arg.partition("=")
    if not sep:
        label, path = "", arg
    try:
        report = json.load(open(path))
    except (OSError, ValueError) as error:
        sys.exit(f"plot_latency: {path}: {error}")
    for key in ("mode", "senders", "characters", "op_mix", "rate",
                "duration", "service"):
        if key not in report:
            sys.exit(f"plot_latency: {path} is not a posewire-load --json "
                     f"report (no '{key}')")
    reports.append((label or describe(report), report))

plots = []
for i, (label, report) in enumerate(reports):
    for phase in ("service", "echo", "in_process"):
        if phase not in report:
            continue
        name = f"{out}/{i}-{phase}.dat"
        with open(name, "w") as f:
            for q, us in report[phase]["latency_cdf_us"]:
                if q < 0.99995:
                    print(1.0 / (1.0 - q), us, file=f)
        # Solid: the service; dotted: the echo; dashed: in process.
        dash = {"service": 1, "echo": 3, "in_process": 2}[phase]
        title = f"{label}, {phase.replace('_', '-')}".replace("'", "")
        plots.append(f"'{name}' using 1:2 with lines lw 2 dt {dash} "
                     f"title '{title}'")
if len(reports) == 1:
    title = "posewire-load latency: " + describe(reports[0][1])
else:
    modes = sorted({r["mode"] for _, r in reports})
    title = f"posewire-load latency, {len(reports)} runs ({', '.join(modes)})"
open(f"{out}/plots", "w").write(", ".join(plots))
open(f"{out}/title", "w").write(title.replace("'", ""))
PY

gnuplot <<GP
set terminal pngcairo size 1000,700 font ",11" noenhanced
set output '$png'
set title '$(cat "$data/title")'
set logscale x
set logscale y
set xlabel 'percentile'
set ylabel 'latency per message (µs)'
set xtics ("50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000)
set grid
set key below
plot $(cat "$data/plots")
GP
echo "plot_latency: wrote $png"
