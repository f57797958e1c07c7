#!/usr/bin/env python3
"""Print the packages that only run while compiling codescope on Linux: proc-macro crates,
build-dependencies and everything reachable only through them. Cargo.toml's
`[profile.dev.package]` builds these at opt-level 0 (the `"*"` entry, which optimises every
dependency at -O3, would otherwise also apply to them: cargo ranks `package."*"` above
`build-override`). Run from the repository root; compare with Cargo.toml after changing
dependencies.
"""
import json
import subprocess

meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1",
     "--filter-platform", "x86_64-unknown-linux-gnu"],
    check=True, capture_output=True, text=True).stdout)
pkgs = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = meta["resolve"]["root"]


def is_proc_macro(pid):
    return any("proc-macro" in t["kind"] for t in pkgs[pid]["targets"])


runtime, host = set(), set()


def walk(pid, at_build_time):
    seen = host if at_build_time else runtime
    if pid in seen:
        return
    seen.add(pid)
    for dep in nodes[pid]["deps"]:
        for kind in (k["kind"] for k in dep["dep_kinds"]):
            if kind == "build":
                walk(dep["pkg"], True)
            elif kind == "dev":
                if pid == root:
                    walk(dep["pkg"], at_build_time)
            else:
                walk(dep["pkg"], at_build_time or is_proc_macro(dep["pkg"]))


walk(root, False)
# `cargo metadata` resolves optional features of every target too; keep what `cargo tree`
# says a Linux build compiles.
built = set(subprocess.run(
    ["cargo", "tree", "-e", "normal,build,dev", "--prefix", "none", "--format", "{p}",
     "--target", "x86_64-unknown-linux-gnu"],
    check=True, capture_output=True, text=True).stdout.split())
names = ({pkgs[p]["name"] for p in host} - {pkgs[p]["name"] for p in runtime}) & built
for name in sorted(names):
    print(f"{name} = {{ opt-level = 0 }}")
