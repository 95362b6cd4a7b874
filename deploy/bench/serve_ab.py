#!/usr/bin/env python3
"""Paired A/B rounds of wrk loads against a mesh started with `mesh_bench --only serve`.

Each round runs every load once (in reverse order every other round) for SECONDS at CONNECTIONS
connections and reads the mesh's CPU time from /proc/<pid>/stat around it. The report gives, per
load, the median rate, p50 and mesh CPU per request, and against the first load the median of the
rounds' paired ratios with its 95 % interval, computed as mesh_bench's report does (order
statistics: the k-th smallest and k-th largest ratio from the binomial(n, 1/2) table; none below
six rounds). Standard library and wrk only.

    mesh_bench --only serve > /tmp/serve.txt &      # prints pid, key, rest and mcp URLs
    deploy/bench/serve_ab.py /tmp/serve.txt 20 2 16 \\
        "GET=rest" "MCP=mcp=/tmp/mesh-bench-<pid>-mcp-order-get.lua" "GETBODY=rest=/tmp/getbody.lua"

A load is LABEL=TARGET[=WRK_SCRIPT], TARGET being `rest`, `mcp` or a URL.
"""
import math
import re
import statistics
import subprocess
import sys


def main() -> None:
    serve, rounds, seconds, connections = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    printed = dict(line.split(" ", 1) for line in open(serve) if line.split(" ", 1)[0] in ("pid", "key", "rest", "mcp"))
    pid, key = printed["pid"].strip(), printed["key"].strip()
    urls = {"rest": printed["rest"].split()[0], "mcp": printed["mcp"].split()[0]}
    loads = []
    for spec in sys.argv[5:]:
        label, target, *script = spec.split("=", 2)
        loads.append((label, urls.get(target, target), script[0] if script else None))

    def mesh_cpu_seconds() -> float:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100.0

    results = {label: [] for label, _, _ in loads}
    for round_number in range(rounds):
        for label, url, script in loads if round_number % 2 == 0 else loads[::-1]:
            command = ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "--latency",
                       "-H", f"Authorization: Bearer {key}", "-H", "Accept: application/json, text/event-stream"]
            command += (["-s", script] if script else []) + [url]
            before = mesh_cpu_seconds()
            output = subprocess.check_output(command).decode()
            cpu = mesh_cpu_seconds() - before
            done = re.search(r"(\d+) requests in ([\d.]+)(m?s)", output)
            requests = int(done.group(1))
            elapsed = float(done.group(2)) * (60 if done.group(3) == "m" else 1)
            p50 = re.search(r" 50%\s+([\d.]+)(us|ms|s)", output)
            p50_ms = float(p50.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[p50.group(2)]
            results[label].append((requests / elapsed, p50_ms, cpu * 1e6 / max(requests, 1)))

    def interval(values):
        ranked, below, k = sorted(values), 0.0, 0
        for j in range(len(values)):
            below += math.comb(len(values), j) / 2 ** len(values)
            if below > 0.025:
                break
            k = j + 1
        return (ranked[k - 1], ranked[len(values) - k]) if k else (math.nan, math.nan)

    base = loads[0][0]
    for label, _, _ in loads:
        rows = results[label]
        print(f"{label:10s} rate {statistics.median(r[0] for r in rows):8.0f}/s  p50 "
              f"{statistics.median(r[1] for r in rows):.3f} ms  mesh CPU {statistics.median(r[2] for r in rows):6.1f} µs/req")
        if label == base:
            continue
        for name, index in (("rate", 0), ("p50", 1), ("mesh CPU", 2)):
            ratios = [a[index] / b[index] for a, b in zip(rows, results[base])]
            low, high = interval(ratios)
            print(f"           {name} / {base}: median {statistics.median(ratios):.3f} (95 % interval {low:.3f}–{high:.3f})")


if __name__ == "__main__":
    main()
