#!/usr/bin/env python3
"""Checks that check_manifests.py refuses a production render that would start with a sandbox
default: the rendered prod overlay passes as it is, and fails, naming the variable, when any
setting of production-settings.json is dropped from its Deployment, set to a refused value, or
when the site URL of the lab-settings ConfigMap is not public https; and that it refuses the
mesh's mutual TLS misplaced: a gRPC probe on the TLS port, a TLS file no volume provides, a key
outside a Secret or in another process's Secret, and the blob store's S3 secret written as a literal.

Usage (deploy/k8s/validate.sh runs it after rendering): test_check_manifests.py PROD_RENDER.yaml
"""

from __future__ import annotations

import copy
import sys

import yaml

import check_manifests


def policy_failures(docs: list[dict]) -> list[str]:
    checker = check_manifests.Checker("1.32.0")
    checker.check("prod", docs)
    return checker.failures


def pod_spec(docs: list[dict], deployment: str) -> dict:
    for doc in docs:
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == deployment:
            return doc["spec"]["template"]["spec"]
    raise AssertionError(f"the render has no Deployment {deployment}")


def container_env(docs: list[dict], deployment: str) -> list[dict]:
    return pod_spec(docs, deployment)["containers"][0]["env"]


def volume(docs: list[dict], deployment: str, name: str) -> dict:
    return next(v for v in pod_spec(docs, deployment)["volumes"] if v["name"] == name)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as file:
        render = [doc for doc in yaml.safe_load_all(file) if doc]
    table = check_manifests.load_production_settings()
    problems: list[str] = []

    baseline = policy_failures(render)
    if baseline:
        problems.append(f"the prod render itself fails: {baseline}")

    def expect_refusal(case: str, docs: list[dict], variable: str) -> None:
        failures = policy_failures(docs)
        if not any(variable in failure for failure in failures):
            problems.append(f"{case}: not refused (failures: {failures})")

    cases = 0
    for process, spec in table["processes"].items():
        for required in spec["required"]:
            docs = copy.deepcopy(render)
            env = container_env(docs, process)
            names = required.split("|")
            env[:] = [variable for variable in env if variable["name"] not in names]
            expect_refusal(f"{process} without {required}", docs, names[0])
            cases += 1
    for variable, values in table["refused"].items():
        process = next(
            (name for name, spec in table["processes"].items() if variable.startswith(spec["prefix"] + "_")),
            "webhooks-svc",
        )
        for value in values:
            docs = copy.deepcopy(render)
            env = container_env(docs, process)
            env[:] = [entry for entry in env if entry["name"] != variable]
            env.append({"name": variable, "value": value})
            expect_refusal(f"{process} with {variable}={value}", docs, variable)
            cases += 1
    for url in ("http://lab.example.com", "https://127.0.0.1", "https://localhost:8443"):
        docs = copy.deepcopy(render)
        for doc in docs:
            if doc.get("kind") == "ConfigMap" and doc["metadata"]["name"].startswith("lab-settings"):
                doc["data"]["site-url"] = url
        expect_refusal(f"lab-settings site-url={url}", docs, "SITE_URL")
        cases += 1

    # The mesh's mutual TLS: readiness on the TLS port, a key no volume provides, a key outside a
    # Secret, a key in another process's Secret.
    def tls_case(case: str, change, expected: str) -> None:
        nonlocal cases
        docs = copy.deepcopy(render)
        change(docs)
        expect_refusal(case, docs, expected)
        cases += 1

    def probe_on_grpc_port(docs):
        pod_spec(docs, "orders-svc")["containers"][0]["readinessProbe"]["grpc"]["port"] = 50052

    def key_elsewhere(docs):
        for variable in container_env(docs, "orders-svc"):
            if variable["name"] == "GRPC_TLS_KEY_FILE":
                variable["value"] = "/etc/ssl/private/orders-svc.key"

    def key_from_config_map(docs):
        tls = volume(docs, "orders-svc", "grpc-tls")
        tls["configMap"] = {"name": "lab-grpc-orders-svc", "items": tls.pop("secret")["items"]}

    def key_of_another_process(docs):
        volume(docs, "orders-svc", "grpc-tls")["secret"]["secretName"] = "lab-grpc-gateway"

    tls_case("orders-svc readiness on its TLS port", probe_on_grpc_port, "GRPC_HEALTH_ADDR")
    tls_case("orders-svc key outside its volumes", key_elsewhere, "GRPC_TLS_KEY_FILE")
    tls_case("orders-svc key from a ConfigMap", key_from_config_map, "GRPC_TLS_KEY_FILE")
    tls_case("orders-svc with the gateway's key", key_of_another_process, "lab-grpc-gateway")

    # The blob store's secrets come from Secrets, never literals.
    def literal_s3_secret(docs):
        for variable in container_env(docs, "results-svc"):
            if variable["name"] == "AWS_SECRET_ACCESS_KEY":
                variable.pop("valueFrom")
                variable["value"] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

    tls_case("results-svc with a literal S3 secret", literal_s3_secret, "AWS_SECRET_ACCESS_KEY")

    for problem in problems:
        print(f"FAILED {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_manifests.py refuses all {cases} sandbox, missing or misplaced production settings in the prod render")
    return 0


if __name__ == "__main__":
    sys.exit(main())
