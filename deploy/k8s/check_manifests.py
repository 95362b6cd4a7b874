#!/usr/bin/env python3
"""Checks rendered Kubernetes manifests (the output of `kubectl kustomize`), offline.

Usage (deploy/k8s/validate.sh renders the base and every overlay and calls this):

    check_manifests.py --kubernetes-version 1.32.0 RENDER=FILE [RENDER=FILE ...]

A RENDER named `dev` is a development render; `base` is the plain base; every other name is
held to production rules. Two kinds of checks:

1. Schema: every document against the OpenAPI schema of that Kubernetes version, strict
   (unknown fields are errors), with PyPI `kubernetes-validate`. A kind without a schema is an
   error too: the mesh uses built-in kinds only.
2. Policy, cheap and specific to this project:
   - every Deployment's containers have CPU and memory requests and limits (requests no higher
     than limits) and a liveness and a readiness probe;
   - every Deployment of the mesh (label app.kubernetes.io/part-of: lab, which the base gives
     its processes; not the development Redis) also has a preStop hook, a
     terminationGracePeriodSeconds that covers the preStop sleep plus the drain of
     platform/src/shutdown.rs (10 s), a PodDisruptionBudget and an autoscaling/v2
     HorizontalPodAutoscaler (on CPU utilization) selecting it, and no `replicas` of its own; in
     production renders the HPA keeps at least two replicas;
   - no Secret carries data outside the dev render; no container sets a credential (a URL with a
     password, a key, a pepper, …) as a literal value; development mode is off outside dev;
   - every namespace a NetworkPolicy applies to has a default-deny policy for ingress and
     egress; production renders have network policies; every pod selector of a policy selects a
     pod of the render (a typo would silently allow or deny nothing);
   - production renders pin images to a registry and a tag other than latest/dev (or a digest);
   - a `grpc` probe asks the container's plaintext health port (`GRPC_HEALTH_ADDR`), never its
     gRPC port, which requires a client certificate where the mesh runs over mutual TLS;
   - each `GRPC_TLS_*_FILE` names a file of a volume the container mounts: the certificate and
     key from a Secret, the key's Secret mounted by no other Deployment, the CA bundle from a
     Secret or ConfigMap;
   - outside dev, every process gets each variable deploy/k8s/production-settings.json requires
     of it, with no refused (sandbox) value and public https site URLs, the values read from
     ConfigMaps of the render where they come from one (the processes refuse to start the same
     way, platform/src/production.rs); the dev render turns development mode on everywhere.

Exit status 0 when everything passes, 1 when anything fails (each failure printed), 2 on
usage errors.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import os
import re
import sys
from urllib.parse import urlsplit
from collections import defaultdict

try:
    import yaml
    import kubernetes_validate
    import kubernetes_validate.utils as kv_utils
except ImportError as error:  # pragma: no cover - reported to the user
    sys.exit(f"check_manifests.py needs PyPI kubernetes-validate (and PyYAML): {error}")

# platform/src/shutdown.rs: GRACE_PERIOD, what workers get after SIGTERM.
DRAIN_SECONDS = 10
DEV_RENDER = "dev"
BASE_RENDER = "base"
# The label the base puts on every object of the mesh (base/kustomization.yaml).
MESH_LABEL = ("app.kubernetes.io/part-of", "lab")
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"}
# Environment variables that hold credentials: they must come from a Secret (valueFrom).
CREDENTIAL_NAME = re.compile(
    r"(^|_)(DATABASE_URL|REDIS_URL|SMTP_URL|PASSWORD|SECRET|SECRETS|SECRET_KEY|SECRET_KEYS|"
    r"PEPPER|SIGNING_KEY|API_KEY|CREDENTIAL|WEBHOOK_SECRET|SECRET_ACCESS_KEY|DOWNLOAD_URL_KEY)$"
)
URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]+:[^/@\s]+@", re.IGNORECASE)
# What each process needs outside development mode (shared with the Rust tests).
PRODUCTION_SETTINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "production-settings.json")


def load_production_settings() -> dict:
    with open(PRODUCTION_SETTINGS, encoding="utf-8") as file:
        return json.load(file)


def public_https_problem(url: str) -> str | None:
    """Why `url` is not a public https site root (platform::production::public_site_url)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "is not a URL"
    if parts.scheme != "https":
        return "must be an https URL"
    host = (parts.hostname or "").lower()
    if not host:
        return "names no host"
    if parts.username or parts.password:
        return "must not carry credentials"
    if parts.path not in ("", "/") or parts.query:
        return "must be a site root (no path or query)"
    try:
        address = ipaddress.ip_address(host)
        if address.is_loopback or address.is_unspecified or address.is_private or address.is_link_local:
            return "must name a public host"
    except ValueError:
        if host == "localhost" or host.endswith(".localhost") or "." not in host:
            return "must name a public host"
    return None


def cached_schemas() -> None:
    """kubernetes-validate reads and parses the schema files (the definitions file is over a
    megabyte) for every document; parsing each file once makes a run take seconds."""
    kv_utils.schema_contents = functools.lru_cache(maxsize=None)(kv_utils.schema_contents)


def cpu_millicores(quantity) -> float:
    text = str(quantity)
    if text.endswith("m"):
        return float(text[:-1])
    return float(text) * 1000


MEMORY_UNITS = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
}


def memory_bytes(quantity) -> float:
    text = str(quantity)
    for unit in sorted(MEMORY_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * MEMORY_UNITS[unit]
    return float(text)


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """True when a label selector (matchLabels and the In/NotIn/Exists/DoesNotExist
    expressions) selects a pod with these labels. An empty selector selects every pod."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def is_empty_selector(selector) -> bool:
    return not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def pod_template(doc: dict) -> dict | None:
    kind = doc.get("kind")
    if kind == "Pod":
        return doc
    if kind == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    if kind in WORKLOAD_KINDS:
        return doc["spec"]["template"]
    return None


def namespace_of(doc: dict) -> str:
    return (doc.get("metadata") or {}).get("namespace") or "default"


def name_of_service(service: dict) -> str:
    return service["metadata"]["name"]


PEER_TARGET = re.compile(r"dns:///(?P<host>[a-z0-9-]+):(?P<port>[0-9]+)")
# The gRPC TLS files of a process (platform::grpc::tls), possibly with a process prefix.
TLS_FILE = re.compile(r"(^|_)GRPC_TLS_(?P<what>CERT|KEY|CA)_FILE$")
HEALTH_ADDR = re.compile(r"(^|_)GRPC_HEALTH_ADDR$")
PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def name_of(doc: dict) -> str:
    return f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"


def prestop_seconds(container: dict) -> int | None:
    """Seconds a preStop hook waits: `sleep N` through exec, or the sleep action."""
    hook = (container.get("lifecycle") or {}).get("preStop")
    if not hook:
        return None
    if "sleep" in hook:
        return int(hook["sleep"]["seconds"])
    command = " ".join((hook.get("exec") or {}).get("command") or [])
    match = re.search(r"\bsleep\s+(\d+)", command)
    return int(match.group(1)) if match else 0


class Checker:
    def __init__(self, version: str, production_settings: dict | None = None):
        self.version = version
        self.production_settings = production_settings or load_production_settings()
        self.failures: list[str] = []
        self.validated: dict[str, str | None] = {}

    def fail(self, render: str, message: str) -> None:
        self.failures.append(f"{render}: {message}")

    # -- schema ---------------------------------------------------------------------------

    def schema(self, render: str, doc: dict) -> None:
        key = json.dumps(doc, sort_keys=True)
        if key not in self.validated:
            try:
                kubernetes_validate.validate(doc, self.version, strict=True)
                self.validated[key] = None
            except kubernetes_validate.ValidationError as error:
                path = ".".join(str(item) for item in error.path) or "(document)"
                self.validated[key] = f"{path}: {error.message}"
            except (kv_utils.SchemaNotFoundError, kv_utils.InvalidSchemaError) as error:
                self.validated[key] = error.message
        problem = self.validated[key]
        if problem:
            self.fail(render, f"{name_of(doc)} does not validate against Kubernetes {self.version}: {problem}")

    # -- policy ---------------------------------------------------------------------------

    def check(self, render: str, docs: list[dict]) -> None:
        development = render == DEV_RENDER
        production = render not in (DEV_RENDER, BASE_RENDER)
        by_kind: dict[str, list[dict]] = defaultdict(list)
        for doc in docs:
            by_kind[doc.get("kind")].append(doc)
        pods = [
            (namespace_of(doc), (pod_template(doc).get("metadata") or {}).get("labels") or {})
            for doc in docs
            if pod_template(doc) is not None
        ]

        for deployment in by_kind["Deployment"]:
            self.deployment(render, deployment, by_kind, production)
        for doc in docs:
            template = pod_template(doc)
            if template is not None:
                self.containers_env(render, doc, template, development)
                if production:
                    self.images(render, doc, template)
        for secret in by_kind["Secret"]:
            if (secret.get("data") or secret.get("stringData")) and not development:
                self.fail(render, f"{name_of(secret)} carries inline data: outside the dev overlay "
                          "Secrets are referenced, never written in the manifests")
        if development:
            self.development_mode_on(render, by_kind["Deployment"])
        else:
            self.production_settings_of(render, by_kind)
        self.network_policies(render, by_kind["NetworkPolicy"], pods, production)
        self.peer_addresses(render, docs, by_kind["Service"])
        self.grpc_probes(render, by_kind["Deployment"])
        self.tls_files(render, by_kind["Deployment"])
        if development:
            self.postgres_passwords(render, by_kind["Secret"])

    def deployment(self, render, deployment, by_kind, production) -> None:
        name = deployment["metadata"]["name"]
        namespace = namespace_of(deployment)
        spec = deployment["spec"]
        template = spec["template"]
        labels = (template.get("metadata") or {}).get("labels") or {}
        pod = template["spec"]
        where = f"Deployment/{name}"
        mesh = (deployment["metadata"].get("labels") or {}).get(MESH_LABEL[0]) == MESH_LABEL[1]

        for container in pod.get("containers") or []:
            cwhere = f"{where} container {container.get('name')}"
            resources = container.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for part, values in (("requests", requests), ("limits", limits)):
                for resource in ("cpu", "memory"):
                    if resource not in values:
                        self.fail(render, f"{cwhere} has no {part}.{resource}")
            if "cpu" in requests and "cpu" in limits and cpu_millicores(requests["cpu"]) > cpu_millicores(limits["cpu"]):
                self.fail(render, f"{cwhere} requests more CPU than its limit")
            if "memory" in requests and "memory" in limits and memory_bytes(requests["memory"]) > memory_bytes(limits["memory"]):
                self.fail(render, f"{cwhere} requests more memory than its limit")
            for probe in ("livenessProbe", "readinessProbe"):
                if not container.get(probe):
                    self.fail(render, f"{cwhere} has no {probe}")
            if not mesh:
                continue
            wait = prestop_seconds(container)
            if wait is None:
                self.fail(render, f"{cwhere} has no preStop hook")
            else:
                grace = pod.get("terminationGracePeriodSeconds")
                if grace is None:
                    self.fail(render, f"{where} sets no terminationGracePeriodSeconds")
                elif grace <= wait + DRAIN_SECONDS:
                    self.fail(render, f"{where}: terminationGracePeriodSeconds {grace} does not cover the "
                              f"preStop sleep ({wait} s) plus the {DRAIN_SECONDS} s drain")

        if not mesh:
            return
        pdbs = [
            pdb for pdb in by_kind["PodDisruptionBudget"]
            if namespace_of(pdb) == namespace and not is_empty_selector(pdb["spec"].get("selector"))
            and selector_matches(pdb["spec"].get("selector"), labels)
        ]
        if not pdbs:
            self.fail(render, f"{where} has no PodDisruptionBudget selecting its pods")

        hpas = [
            hpa for hpa in by_kind["HorizontalPodAutoscaler"]
            if namespace_of(hpa) == namespace
            and hpa["spec"]["scaleTargetRef"].get("kind") == "Deployment"
            and hpa["spec"]["scaleTargetRef"].get("name") == name
        ]
        if not hpas:
            self.fail(render, f"{where} has no HorizontalPodAutoscaler targeting it")
        for hpa in hpas:
            hwhere = f"HorizontalPodAutoscaler/{hpa['metadata']['name']}"
            if hpa.get("apiVersion") != "autoscaling/v2":
                self.fail(render, f"{hwhere} is {hpa.get('apiVersion')}, not autoscaling/v2")
            on_cpu = any(
                metric.get("type") == "Resource"
                and metric["resource"].get("name") == "cpu"
                and metric["resource"]["target"].get("type") == "Utilization"
                for metric in hpa["spec"].get("metrics") or []
            )
            if not on_cpu:
                self.fail(render, f"{hwhere} does not scale on CPU utilization")
            minimum = hpa["spec"].get("minReplicas", 1)
            if production and minimum < 2:
                self.fail(render, f"{hwhere} keeps {minimum} replica(s); production needs at least 2")
            if minimum > hpa["spec"]["maxReplicas"]:
                self.fail(render, f"{hwhere}: minReplicas above maxReplicas")
        if hpas and "replicas" in spec:
            self.fail(render, f"{where} sets replicas although an HPA owns the count "
                      "(every apply would reset it)")

    def containers_env(self, render, doc, template, development) -> None:
        spec = template["spec"]
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            for variable in container.get("env") or []:
                if "value" not in variable:
                    continue
                name, value = variable["name"], str(variable["value"])
                where = f"{name_of(doc)} container {container.get('name')} env {name}"
                if value and CREDENTIAL_NAME.search(name):
                    self.fail(render, f"{where} is a credential written as a literal: use a secretKeyRef")
                elif URL_WITH_PASSWORD.match(value):
                    self.fail(render, f"{where} is a URL with a password: use a secretKeyRef")
                if name == "LAB_DEV_MODE" and value.strip().lower() in ("1", "true") and not development:
                    self.fail(render, f"{where} turns development mode on outside the dev overlay")

    def development_mode_on(self, render, deployments) -> None:
        """The dev render runs every process of the mesh in development mode (its secrets and the
        sandbox are refused otherwise)."""
        for deployment in deployments:
            if (deployment["metadata"].get("labels") or {}).get(MESH_LABEL[0]) != MESH_LABEL[1]:
                continue
            for container in deployment["spec"]["template"]["spec"].get("containers") or []:
                values = {v["name"]: str(v.get("value", "")) for v in container.get("env") or []}
                if values.get("LAB_DEV_MODE", "").strip().lower() not in ("1", "true"):
                    self.fail(render, f"{name_of(deployment)} container {container.get('name')} does not set "
                              "LAB_DEV_MODE=1 (the dev overlay runs every process in development mode)")

    def production_settings_of(self, render, by_kind) -> None:
        """Outside dev, each process gets every variable it needs outside development mode, with
        no sandbox value (deploy/k8s/production-settings.json)."""
        table = self.production_settings
        config_maps = {
            (namespace_of(doc), doc["metadata"]["name"]): doc.get("data") or {}
            for doc in by_kind["ConfigMap"]
        }
        refused = {name: {value.lower() for value in values} for name, values in table["refused"].items()}
        urls = set(table["public_https_urls"])
        for deployment in by_kind["Deployment"]:
            name = deployment["metadata"]["name"]
            process = table["processes"].get(name)
            for container in deployment["spec"]["template"]["spec"].get("containers") or []:
                where = f"{name_of(deployment)} container {container.get('name')}"
                env = {variable["name"]: variable for variable in container.get("env") or []}
                for required in (process or {}).get("required", []):
                    if not any(alternative in env for alternative in required.split("|")):
                        self.fail(render, f"{where} does not set {required.replace('|', ' or ')}, which "
                                  f"{name} needs outside development mode (production-settings.json)")
                for variable_name, variable in env.items():
                    value = self.env_value(variable, namespace_of(deployment), config_maps)
                    if value is None:
                        continue
                    if value.strip().lower() in refused.get(variable_name, ()):
                        self.fail(render, f"{where} env {variable_name}={value!r} is a sandbox or development "
                                  "value, refused outside development mode")
                    if variable_name in urls:
                        problem = public_https_problem(value)
                        if problem:
                            self.fail(render, f"{where} env {variable_name}={value!r} {problem}")

    @staticmethod
    def env_value(variable, namespace, config_maps) -> str | None:
        """The value of an env entry: its literal, or the key of a ConfigMap of the render; None
        when it comes from elsewhere (a Secret, a ConfigMap the cluster provides)."""
        if "value" in variable:
            return str(variable["value"])
        reference = (variable.get("valueFrom") or {}).get("configMapKeyRef")
        if reference:
            data = config_maps.get((namespace, reference.get("name")))
            if data is not None and reference.get("key") in data:
                return str(data[reference["key"]])
        return None

    def peer_addresses(self, render, docs, services) -> None:
        """Every peer address a mesh process is given (`*_SVC_ADDR`, `*IDENTITY_ADDR`) is a gRPC
        `dns:///<service>:<port>` target of a headless Service of the render, so that calls are
        balanced over every pod (platform::grpc::dns) instead of pinned to one through a
        ClusterIP address."""
        headless = {
            name_of_service(service): {str(port.get("port")) for port in service["spec"].get("ports") or []}
            for service in services
            if service["spec"].get("clusterIP") == "None"
        }
        for doc in docs:
            template = pod_template(doc)
            if template is None:
                continue
            for container in template["spec"].get("containers") or []:
                for variable in container.get("env") or []:
                    name = variable["name"]
                    if not (name.endswith("_SVC_ADDR") or name.endswith("IDENTITY_ADDR")) or "value" not in variable:
                        continue
                    value = str(variable["value"])
                    where = f"{name_of(doc)} container {container.get('name')} env {name}={value}"
                    match = PEER_TARGET.fullmatch(value)
                    if not match:
                        self.fail(render, f"{where} is not a dns:///<service>:<port> target")
                    elif match["port"] not in headless.get(match["host"], set()):
                        self.fail(render, f"{where} names no headless Service port of the render")

    def grpc_probes(self, render, deployments) -> None:
        """A `grpc` probe asks the plaintext health port of GRPC_HEALTH_ADDR: kubelet presents no
        client certificate, and where the mesh runs over mutual TLS its gRPC port requires one
        (platform::grpc::serve_health)."""
        for deployment in deployments:
            for container in deployment["spec"]["template"]["spec"].get("containers") or []:
                where = f"{name_of(deployment)} container {container.get('name')}"
                health_ports = {
                    str(variable["value"]).rpartition(":")[2]
                    for variable in container.get("env") or []
                    if HEALTH_ADDR.search(variable["name"]) and "value" in variable
                }
                for probe in PROBES:
                    grpc = (container.get(probe) or {}).get("grpc")
                    if grpc is None:
                        continue
                    if str(grpc.get("port")) not in health_ports:
                        self.fail(render, f"{where} {probe} asks grpc.health.v1 on port {grpc.get('port')}, not on "
                                  "the plaintext health port of GRPC_HEALTH_ADDR: kubelet presents no client "
                                  "certificate, and the gRPC port requires one where the mesh runs over mutual TLS")

    @staticmethod
    def mounted_file(path: str, mounts: list[dict], volumes: dict) -> tuple[dict, str] | None:
        """The volume and the key within it that a container reads at `path`, if it mounts one."""
        for mount in mounts:
            mount_path = mount.get("mountPath", "").rstrip("/")
            volume = volumes.get(mount.get("name"))
            if volume is None:
                continue
            if mount.get("subPath"):
                if path == mount_path:
                    return volume, mount["subPath"]
                continue
            if not path.startswith(mount_path + "/"):
                continue
            relative = path[len(mount_path) + 1:]
            source = volume.get("secret") or volume.get("configMap")
            items = (source or {}).get("items")
            if items is not None and relative not in {item.get("path") for item in items}:
                continue
            return volume, relative
        return None

    def tls_files(self, render, deployments) -> None:
        """Each GRPC_TLS_*_FILE is a file of a mounted volume: the certificate and key from a
        Secret, the key's Secret mounted by no other Deployment (each process's key is its own),
        the CA bundle from a Secret or ConfigMap."""
        key_secrets: dict[str, set[str]] = defaultdict(set)
        for deployment in deployments:
            pod = deployment["spec"]["template"]["spec"]
            volumes = {volume["name"]: volume for volume in pod.get("volumes") or []}
            for container in pod.get("containers") or []:
                where = f"{name_of(deployment)} container {container.get('name')}"
                for variable in container.get("env") or []:
                    name = variable["name"]
                    match = TLS_FILE.search(name)
                    if not match:
                        continue
                    if "value" not in variable:
                        self.fail(render, f"{where} env {name} must be the path of a mounted file")
                        continue
                    path = str(variable["value"])
                    found = self.mounted_file(path, container.get("volumeMounts") or [], volumes)
                    if found is None:
                        self.fail(render, f"{where} env {name}={path} names no file of a volume the container mounts")
                        continue
                    volume, _ = found
                    if match["what"] in ("CERT", "KEY") and "secret" not in volume:
                        self.fail(render, f"{where} env {name}={path} must come from a Secret (volume "
                                  f"{volume['name']} is not one)")
                    elif match["what"] == "CA" and "secret" not in volume and "configMap" not in volume:
                        self.fail(render, f"{where} env {name}={path} must come from a ConfigMap or Secret")
                    if match["what"] == "KEY" and "secret" in volume:
                        key_secrets[volume["secret"].get("secretName")].add(deployment["metadata"]["name"])
        for secret, users in sorted(key_secrets.items()):
            if len(users) > 1:
                self.fail(render, f"Secret {secret} holds the GRPC_TLS_KEY_FILE of {', '.join(sorted(users))}: "
                          "each process's key is its own (lab-grpc-<process>)")

    def images(self, render, doc, template) -> None:
        spec = template["spec"]
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            image = container.get("image", "")
            where = f"{name_of(doc)} container {container.get('name')}"
            if "@sha256:" in image:
                continue
            repository, _, tag = image.rpartition(":")
            if not repository or "/" in tag:
                self.fail(render, f"{where}: image {image!r} has no tag or digest")
            elif tag in ("latest", "dev"):
                self.fail(render, f"{where}: image {image!r} is not pinned to a release")
            elif "." not in repository.split("/")[0] and ":" not in repository.split("/")[0]:
                self.fail(render, f"{where}: image {image!r} names no registry")

    def network_policies(self, render, policies, pods, production) -> None:
        if production and not policies:
            self.fail(render, "no NetworkPolicy: production renders include components/network-policies")
        if not policies:
            return
        namespaces = {namespace_of(policy) for policy in policies} | {namespace for namespace, _ in pods}
        for namespace in sorted(namespaces):
            default_deny = [
                policy for policy in policies
                if namespace_of(policy) == namespace
                and is_empty_selector(policy["spec"].get("podSelector"))
                and {"Ingress", "Egress"} <= set(policy["spec"].get("policyTypes") or [])
                and not policy["spec"].get("ingress")
                and not policy["spec"].get("egress")
            ]
            if not default_deny:
                self.fail(render, f"namespace {namespace} has network policies but no default-deny "
                          "policy for both ingress and egress (podSelector: {}, no rules)")

        def selects_a_pod(namespace, selector) -> bool:
            return any(ns == namespace and selector_matches(selector, labels) for ns, labels in pods)

        for policy in policies:
            namespace = namespace_of(policy)
            spec = policy["spec"]
            where = name_of(policy)
            if not is_empty_selector(spec.get("podSelector")) and not selects_a_pod(namespace, spec["podSelector"]):
                self.fail(render, f"{where}: its podSelector selects no pod of the render")
            peers = [peer for rule in spec.get("ingress") or [] for peer in rule.get("from") or []]
            peers += [peer for rule in spec.get("egress") or [] for peer in rule.get("to") or []]
            for peer in peers:
                selector = peer.get("podSelector")
                if "namespaceSelector" in peer or is_empty_selector(selector):
                    continue
                if not selects_a_pod(namespace, selector):
                    self.fail(render, f"{where}: peer podSelector {json.dumps(selector)} selects no pod of the render")

    def postgres_passwords(self, render, secrets) -> None:
        """In the dev render, the passwords the postgres-roles Job sets must be those of the
        processes' database URLs (the two Secrets are written side by side by hand)."""
        import base64
        from urllib.parse import unquote, urlsplit

        def values(prefix):
            for secret in secrets:
                if secret["metadata"]["name"].startswith(prefix):
                    data = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
                    data.update(secret.get("stringData") or {})
                    return data
            return None

        urls, roles = values("lab-database-urls"), values("lab-postgres-roles")
        if urls is None or roles is None:
            return
        for process, url in sorted(urls.items()):
            password = unquote(urlsplit(url).password or "")
            if roles.get(process) != password:
                self.fail(render, f"lab-postgres-roles key {process} differs from the password in "
                          f"lab-database-urls key {process}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubernetes-version", required=True, help="e.g. 1.32.0")
    parser.add_argument("renders", nargs="+", metavar="RENDER=FILE")
    args = parser.parse_args()

    cached_schemas()
    checker = Checker(args.kubernetes_version)
    for item in args.renders:
        render, _, path = item.partition("=")
        if not path:
            parser.error(f"{item!r} is not RENDER=FILE")
        try:
            with open(path, encoding="utf-8") as file:
                docs = [doc for doc in yaml.safe_load_all(file) if doc]
        except (OSError, yaml.YAMLError) as error:
            checker.fail(render, f"cannot read {path}: {error}")
            continue
        if not docs:
            checker.fail(render, f"{path} holds no document")
            continue
        before = len(checker.failures)
        for doc in docs:
            checker.schema(render, doc)
        checker.check(render, docs)
        kinds = defaultdict(int)
        for doc in docs:
            kinds[doc.get("kind")] += 1
        status = "ok" if len(checker.failures) == before else f"{len(checker.failures) - before} problem(s)"
        summary = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        print(f"{render}: {len(docs)} documents ({summary}): {status}", flush=True)

    for failure in checker.failures:
        print(f"FAILED {failure}", file=sys.stderr)
    if checker.failures:
        print(f"{len(checker.failures)} problem(s) in the rendered manifests", file=sys.stderr)
        return 1
    print(f"every render validates against Kubernetes {args.kubernetes_version} (strict) and passes the policy checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
