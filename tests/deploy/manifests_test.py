#!/usr/bin/python3
"""Checks that the deployment files agree with each other and with the code.

Parses every Kubernetes manifest in deploy/k8s, deploy/compose.yaml, the
compose nginx and Prometheus configs and deploy/Dockerfile, and checks the
fields that break a deployment silently when they drift: image names,
ports, probes, the non-root user, grace periods, and every flag given by
argument or POSEWIRE_* environment variable against the ABSL_FLAGs that
server/transport/main.cc defines (parsed from the source, so no build is needed).

  /usr/bin/python3 tests/deploy/manifests_test.py [-v]

Needs python3-yaml (scripts/bootstrap.sh installs it).
"""

import glob
import os
import re
import shlex
import sys
import unittest

import yaml

ROOT = os.path.abspath(
    os.environ.get("POSEWIRE_SOURCE_DIR",
                   os.path.join(os.path.dirname(__file__), "..", "..")))


def read(relative):
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def server_flags():
    """name -> default literal, for every ABSL_FLAG in server/transport/main.cc."""
    source = read("server/transport/main.cc")
    flags = {}
    for match in re.finditer(
            r"ABSL_FLAG\(\s*([\w:]+)\s*,\s*(\w+)\s*,\s*([^,]+),", source):
        flags[match.group(2)] = match.group(3).strip()
    return flags


def parse_duration_seconds(text):
    """'10s', '1m30s', '500ms' (Go/Abseil style) or 'absl::Seconds(10)'."""
    text = text.strip().strip('"')
    match = re.fullmatch(r"absl::Seconds\((\d+)\)", text)
    if match:
        return float(match.group(1))
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


class Dockerfile:
    """The instructions of deploy/Dockerfile, continuation lines joined."""

    def __init__(self, text):
        joined = re.sub(r"\\\n", " ", text)
        self.instructions = []
        for line in joined.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            self.instructions.append((keyword.upper(), rest.strip()))
        self.args = {}
        for keyword, rest in self.instructions:
            if keyword == "ARG" and "=" in rest:
                name, _, value = rest.partition("=")
                self.args.setdefault(name, value)

    def all(self, keyword):
        return [rest for k, rest in self.instructions if k == keyword]

    def stages(self):
        """Lists of (keyword, rest), one per FROM."""
        stages = []
        for keyword, rest in self.instructions:
            if keyword == "FROM":
                stages.append([])
            if stages:
                stages[-1].append((keyword, rest))
        return stages

    def stage(self, name):
        """The instructions of the stage named NAME (FROM ... AS NAME)."""
        for stage in self.stages():
            if stage[0][1].endswith(" AS " + name):
                return stage
        raise KeyError(name)

    def final(self, keyword):
        return [rest for k, rest in self.stages()[-1] if k == keyword]

    def final_env(self):
        env = {}
        for rest in self.final("ENV"):
            for token in shlex.split(rest):
                name, _, value = token.partition("=")
                env[name] = value
        return env


def load_yaml_documents(relative):
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def port_of(address):
    return int(address.rsplit(":", 1)[1])


class DeployManifestsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.flags = server_flags()
        cls.dockerfile = Dockerfile(read("deploy/Dockerfile"))
        cls.env = cls.dockerfile.final_env()
        cls.expose = {
            int(p.split("/")[0])
            for rest in cls.dockerfile.final("EXPOSE") for p in rest.split()
        }
        cls.grpc_port = port_of(cls.env["POSEWIRE_LISTEN"])
        cls.metrics_port = port_of(cls.env["POSEWIRE_METRICS_LISTEN"])
        cls.manifests = {}
        for path in sorted(glob.glob(os.path.join(ROOT, "deploy/k8s/*.yaml"))):
            relative = os.path.relpath(path, ROOT)
            cls.manifests[relative] = load_yaml_documents(relative)
        cls.objects = [d for docs in cls.manifests.values() for d in docs]
        cls.compose = load_yaml_documents("deploy/compose.yaml")[0]

    def objects_of(self, kind):
        return [o for o in self.objects if o["kind"] == kind]

    def deployment(self):
        deployments = self.objects_of("Deployment")
        self.assertEqual(len(deployments), 1)
        return deployments[0]

    def container(self):
        containers = self.deployment()["spec"]["template"]["spec"]["containers"]
        self.assertEqual(len(containers), 1)
        return containers[0]

    def check_flag_env(self, name, where):
        self.assertTrue(name.startswith("POSEWIRE_"), f"{where}: {name}")
        flag = name[len("POSEWIRE_"):].lower()
        self.assertIn(flag, self.flags,
                      f"{where}: {name} maps to --{flag}, not a server flag")

    # The code side the other checks rely on.
    def test_ServerSource_DefinesTheFlagsTheDeploymentUses(self):
        for flag in ("listen", "metrics_listen", "threads", "shutdown_grace",
                     "log_level"):
            self.assertIn(flag, self.flags)
        # The default listen address is loopback: a container must override
        # it, which the image does.
        self.assertIn("127.0.0.1", self.flags["listen"])
        self.assertTrue(self.env["POSEWIRE_LISTEN"].startswith("0.0.0.0:"))
        self.assertTrue(
            self.env["POSEWIRE_METRICS_LISTEN"].startswith("0.0.0.0:"))

    # --- Dockerfile ---
    def test_Dockerfile_EveryStageStartsFromLocalDebianBookwormSlim(self):
        self.assertEqual(self.dockerfile.args.get("BASE_IMAGE"),
                         "debian:bookworm-slim")
        froms = self.dockerfile.all("FROM")
        self.assertGreaterEqual(len(froms), 2, "multi-stage")
        # Each stage starts from the base image or from an earlier stage;
        # POSEWIRE_BINARIES picks one of the two stages that make /out.
        stages = []
        for rest in froms:
            image, _, name = rest.partition(" AS ")
            if image == "${POSEWIRE_BINARIES}":
                self.assertEqual(self.dockerfile.args.get("POSEWIRE_BINARIES"),
                                 "build")
                self.assertIn("build", stages)
                self.assertIn("prebuilt", stages)
            else:
                self.assertTrue(image == "${BASE_IMAGE}" or image in stages,
                                rest)
            stages.append(name.strip())
        self.assertEqual(stages[-1], "runtime")

    def test_Dockerfile_RunsAsNumericNonRootUser(self):
        users = self.dockerfile.final("USER")
        self.assertEqual(len(users), 1)
        uid, _, gid = users[0].partition(":")
        self.assertTrue(uid.isdigit() and gid.isdigit(), users[0])
        self.assertNotEqual(int(uid), 0)
        self.assertNotEqual(int(gid), 0)
        # The useradd in the same stage creates exactly that uid.
        runs = " ".join(self.dockerfile.final("RUN"))
        self.assertRegex(runs, rf"useradd [^&]*--uid {uid}\b")

    def test_Dockerfile_ExposesTheListenAndMetricsPorts(self):
        self.assertEqual(self.expose, {self.grpc_port, self.metrics_port})

    def test_Dockerfile_HealthcheckAsksTheGrpcHealthServiceOnListenPort(self):
        checks = self.dockerfile.final("HEALTHCHECK")
        self.assertEqual(len(checks), 1)
        command = checks[0].split(" CMD ", 1)[1]
        argv = yaml.safe_load(command)  # exec form is a JSON array
        self.assertEqual(argv[:2], ["posewire", "health"])
        servers = [a for a in argv if a.startswith("--server=")]
        self.assertEqual(len(servers), 1)
        self.assertEqual(port_of(servers[0]), self.grpc_port)
        # A probe timeout shorter than Docker's would be pointless, longer
        # would be killed.
        docker_timeout = re.search(r"--timeout=(\w+)", checks[0]).group(1)
        probe_timeout = [a for a in argv if a.startswith("--timeout=")][0]
        self.assertLess(parse_duration_seconds(probe_timeout.split("=")[1]),
                        parse_duration_seconds(docker_timeout))

    def test_Dockerfile_EntrypointIsExecFormSoSigtermReachesTheServer(self):
        entrypoints = self.dockerfile.final("ENTRYPOINT")
        self.assertEqual(len(entrypoints), 1)
        argv = yaml.safe_load(entrypoints[0])
        self.assertIsInstance(argv, list, "shell form would swallow SIGTERM")
        self.assertEqual(argv[0], "/usr/bin/tini")
        script = read("deploy/docker-entrypoint.sh")
        self.assertIn("exec posewire-server", script)

    def test_Dockerfile_EnvironmentNamesOnlyServerFlags(self):
        for name in self.env:
            if name.startswith("POSEWIRE_"):
                self.check_flag_env(name, "Dockerfile ENV")

    def test_Dockerfile_BuildStageCopiesWhatTheServiceBuildReads(self):
        # The image build (tests, benchmarks and fuzzers off) configures the
        # root CMakeLists.txt: every folder it includes or adds must be in
        # the build stage's context.
        root = read("CMakeLists.txt")
        skipped = {"tests", "bench", "fuzz"}
        needed = set()
        for name in re.findall(r"add_subdirectory\((\w+)\)", root):
            if name not in skipped:
                needed.add(name)
        for path in re.findall(r"include\(([\w/]+)\.cmake\)", root):
            needed.add(path.split("/")[0])
        build_stage = self.dockerfile.stage("build")
        copied = set()
        for keyword, rest in build_stage:
            if keyword == "COPY" and not rest.startswith("--from"):
                copied.update(part.rstrip("/") for part in rest.split()[:-1])
        self.assertGreater(len(needed), 3)
        self.assertEqual(sorted(needed - copied), [],
                         "folders the build reads but the image does not copy")

    def test_Dockerfile_BuildPackagesAreBootstrapPackages(self):
        bootstrap = read("scripts/bootstrap.sh")
        block = re.search(r"serve_packages=\((.*?)\n\)", bootstrap,
                          re.S).group(1)
        known = set()
        for line in block.splitlines():
            known.update(line.split("#", 1)[0].split())
        build_stage = self.dockerfile.stage("toolchain")
        install = " ".join(rest for k, rest in build_stage if k == "RUN")
        listed = re.search(r"apt-get install (.*?)(&&|$)", install).group(1)
        packages = [p for p in listed.split() if not p.startswith("-")]
        self.assertGreater(len(packages), 5)
        self.assertEqual(sorted(set(packages) - known), [],
                         "build-stage packages missing from bootstrap.sh's serve set")

    # --- Kubernetes ---
    def test_K8s_EveryManifestParsesWithKindAndName(self):
        self.assertGreaterEqual(len(self.manifests), 3)
        for path, docs in self.manifests.items():
            self.assertTrue(docs, f"{path}: empty")
            for doc in docs:
                for key in ("apiVersion", "kind", "metadata"):
                    self.assertIn(key, doc, path)
                self.assertTrue(doc["metadata"].get("name"), path)
        kinds = sorted(o["kind"] for o in self.objects)
        for kind in ("Deployment", "HorizontalPodAutoscaler", "Service"):
            self.assertIn(kind, kinds)

    def test_K8sDeployment_ImageIsTheOneComposeBuilds(self):
        image = self.container()["image"]
        self.assertEqual(image, self.compose["services"]["posewire"]["image"])
        build = self.compose["services"]["posewire"]["build"]
        self.assertEqual(build["dockerfile"], "deploy/Dockerfile")

    def test_K8sDeployment_SelectorMatchesPodLabels(self):
        spec = self.deployment()["spec"]
        labels = spec["template"]["metadata"]["labels"]
        for key, value in spec["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(key), value)

    def test_K8sDeployment_PortsAreTheExposedOnes(self):
        ports = {p["name"]: p["containerPort"]
                 for p in self.container()["ports"]}
        self.assertEqual(ports, {"grpc": self.grpc_port,
                                 "metrics": self.metrics_port})
        annotations = self.deployment()["spec"]["template"]["metadata"][
            "annotations"]
        self.assertEqual(int(annotations["prometheus.io/port"]),
                         self.metrics_port)

    def test_K8sDeployment_EnvAndArgsAreServerFlags(self):
        container = self.container()
        env = {e["name"]: e for e in container.get("env", [])}
        for name in env:
            self.check_flag_env(name, "Deployment env")
        for arg in container.get("args", []) + container.get("command", []):
            if arg.startswith("--"):
                flag = arg[2:].split("=", 1)[0]
                self.assertIn(flag, self.flags, f"Deployment arg {arg}")
        # Whatever it sets must keep the ports the probes and Services use.
        if "POSEWIRE_LISTEN" in env:
            self.assertEqual(port_of(env["POSEWIRE_LISTEN"]["value"]),
                             self.grpc_port)
        if "POSEWIRE_METRICS_LISTEN" in env:
            self.assertEqual(port_of(env["POSEWIRE_METRICS_LISTEN"]["value"]),
                             self.metrics_port)

    def test_K8sDeployment_ProbesUseGrpcHealthOnTheGrpcPort(self):
        container = self.container()
        for probe in ("readinessProbe", "livenessProbe"):
            self.assertIn(probe, container)
            self.assertEqual(container[probe]["grpc"]["port"], self.grpc_port,
                             probe)
        # Readiness asks about the PoseWire service (NOT_SERVING while
        # draining), by the name the .proto defines.
        proto = read("proto/posewire/v1/posewire.proto")
        package = re.search(r"^package ([\w.]+);", proto, re.M).group(1)
        service = re.search(r"^service (\w+)", proto, re.M).group(1)
        self.assertEqual(container["readinessProbe"]["grpc"]["service"],
                         f"{package}.{service}")

    def test_K8sDeployment_RunsAsTheImageUserAndNotRoot(self):
        pod = self.deployment()["spec"]["template"]["spec"]
        uid, _, gid = self.dockerfile.final("USER")[0].partition(":")
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(pod["securityContext"]["runAsUser"], int(uid))
        self.assertEqual(pod["securityContext"]["runAsGroup"], int(gid))
        self.assertFalse(pod.get("enableServiceLinks", True),
                         "service links inject POSEWIRE_* variables")
        security = self.container()["securityContext"]
        self.assertFalse(security["allowPrivilegeEscalation"])

    def test_K8sDeployment_HasCpuAndMemoryRequestsWithinLimits(self):
        def cpu(value):
            value = str(value)
            return float(value[:-1]) / 1000 if value.endswith("m") else float(
                value)

        def memory(value):
            units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
            return float(value[:-2]) * units[value[-2:]]

        resources = self.container()["resources"]
        for kind in ("requests", "limits"):
            self.assertIn("cpu", resources[kind])
            self.assertIn("memory", resources[kind])
        self.assertLessEqual(cpu(resources["requests"]["cpu"]),
                             cpu(resources["limits"]["cpu"]))
        self.assertLessEqual(memory(resources["requests"]["memory"]),
                             memory(resources["limits"]["memory"]))

    def test_K8sDeployment_TerminationGraceCoversPreStopAndDraining(self):
        pod = self.deployment()["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in self.container()["env"]}
        grace = parse_duration_seconds(
            env.get("POSEWIRE_SHUTDOWN_GRACE") or
            self.flags["shutdown_grace"])
        pre_stop = self.container().get("lifecycle", {}).get("preStop", {})
        command = pre_stop.get("exec", {}).get("command", [])
        sleep = float(command[-1]) if command[:1] == ["/bin/sleep"] else 0.0
        self.assertGreater(pod["terminationGracePeriodSeconds"],
                           grace + sleep)

    def test_K8sServices_OneHeadlessOneNormalBothReachTheGrpcPort(self):
        services = self.objects_of("Service")
        headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
        normal = [s for s in services if s["spec"].get("clusterIP") != "None"]
        self.assertEqual(len(headless), 1)
        self.assertEqual(len(normal), 1)
        pod_labels = self.deployment()["spec"]["template"]["metadata"][
            "labels"]
        container_ports = {p["name"]: p["containerPort"]
                           for p in self.container()["ports"]}
        for service in services:
            name = service["metadata"]["name"]
            for key, value in service["spec"]["selector"].items():
                self.assertEqual(pod_labels.get(key), value, name)
            targets = set()
            for port in service["spec"]["ports"]:
                target = port["targetPort"]
                target = container_ports.get(target, target)
                self.assertIn(target, container_ports.values(), name)
                targets.add(target)
            self.assertIn(self.grpc_port, targets, name)

    def test_K8sHpa_ScalesTheDeploymentOnCpuWithCpuRequests(self):
        hpas = self.objects_of("HorizontalPodAutoscaler")
        self.assertEqual(len(hpas), 1)
        spec = hpas[0]["spec"]
        deployment = self.deployment()
        self.assertEqual(spec["scaleTargetRef"]["kind"], "Deployment")
        self.assertEqual(spec["scaleTargetRef"]["name"],
                         deployment["metadata"]["name"])
        self.assertLessEqual(spec["minReplicas"], spec["maxReplicas"])
        self.assertGreaterEqual(spec["minReplicas"], 2)
        resources = [m["resource"]["name"] for m in spec["metrics"]
                     if m["type"] == "Resource"]
        self.assertEqual(resources, ["cpu"])
        # Utilization is relative to the request: without one the HPA
        # cannot compute it.
        self.assertIn("cpu", self.container()["resources"]["requests"])

    # --- Compose ---
    def test_Compose_EnvironmentNamesOnlyServerFlags(self):
        environment = self.compose["services"]["posewire"].get(
            "environment", {})
        for name in environment:
            self.check_flag_env(name, "compose.yaml")

    def test_Compose_ConfinesReplicasLikeTheK8sSecurityContext(self):
        # test-deploy.sh runs compose, not Kubernetes: the same confinement
        # there is what shows the image works under it.
        service = self.compose["services"]["posewire"]
        security = self.container()["securityContext"]
        self.assertEqual(bool(service.get("read_only")),
                         security["readOnlyRootFilesystem"])
        self.assertEqual(service.get("cap_drop"),
                         security["capabilities"]["drop"])
        self.assertEqual(
            "no-new-privileges:true" in service.get("security_opt", []),
            not security["allowPrivilegeEscalation"])

    def test_Compose_StopGraceExceedsServerShutdownGrace(self):
        service = self.compose["services"]["posewire"]
        grace = service.get("environment", {}).get(
            "POSEWIRE_SHUTDOWN_GRACE") or self.flags["shutdown_grace"]
        self.assertGreater(
            parse_duration_seconds(service["stop_grace_period"]),
            parse_duration_seconds(grace))

    def test_Compose_NginxAndPrometheusTargetTheReplicaPorts(self):
        services = self.compose["services"]
        nginx = read("deploy/compose/nginx.conf")
        upstreams = re.findall(r"^\s*server\s+(\S+);", nginx, re.M)
        self.assertEqual(upstreams, [f"posewire:{self.grpc_port}"])
        self.assertRegex(nginx, r"listen \d+ http2;")
        self.assertRegex(nginx, r"client_max_body_size 0;")
        self.assertRegex(nginx, r"keepalive_requests \d{6,};")
        published = [p.rsplit(":", 1)[1] for p in services["nginx"]["ports"]]
        listen = re.search(r"listen (\d+) http2;", nginx).group(1)
        self.assertEqual(published, [listen])
        prometheus = load_yaml_documents("deploy/compose/prometheus.yml")[0]
        ports = [c["port"] for job in prometheus["scrape_configs"]
                 for c in job.get("dns_sd_configs", [])]
        self.assertEqual(ports, [self.metrics_port])


if __name__ == "__main__":
    unittest.main(argv=sys.argv)
