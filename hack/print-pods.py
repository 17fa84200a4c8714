#!/usr/bin/env python3
"""Prints a PodList (actlet's /pods) read from stdin as a table.

With --count-running, prints only how many pods are Running."""
import json
import sys

items = json.load(sys.stdin)["items"]
if "--count-running" in sys.argv:
    print(sum(1 for p in items if p.get("status", {}).get("phase") == "Running"))
    sys.exit(0)
print(f"{'POD':32} {'PHASE':9} {'IP':14} CONTAINERS")
for p in items:
    s = p.get("status", {})
    containers = []
    for c in s.get("containerStatuses", []):
        state = next(iter(c.get("state", {})), "?")
        containers.append(f"{c['name']}={state} restarts={c.get('restartCount', 0)}")
    name = p["metadata"]["name"]
    print(f"{name:32} {s.get('phase', ''):9} {s.get('podIP', ''):14} {', '.join(containers)}")
