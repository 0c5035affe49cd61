# nginx for deploy/compose.yaml, from Debian's package on the same local
# base image as the server (no registry needed). Context: deploy/compose.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends nginx tini \
 && rm -rf /var/lib/apt/lists/*
COPY nginx.conf /etc/nginx/posewire.conf
USER www-data
EXPOSE 50051
ENTRYPOINT ["/usr/bin/tini", "--", "nginx", "-e", "stderr", \
            "-c", "/etc/nginx/posewire.conf"]
