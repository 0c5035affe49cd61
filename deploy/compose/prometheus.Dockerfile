# Prometheus for deploy/compose.yaml, from Debian's package on the same
# local base image as the server (no registry needed). Context:
# deploy/compose.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends prometheus tini \
 && rm -rf /var/lib/apt/lists/*
COPY prometheus.yml /etc/prometheus/posewire.yml
USER prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/tini", "--", "prometheus", \
            "--config.file=/etc/prometheus/posewire.yml", \
            "--storage.tsdb.path=/var/lib/prometheus/metrics2", \
            "--web.listen-address=:9090"]
