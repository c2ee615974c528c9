#!/usr/bin/env python3
"""Whole models through UOPD, beside tinygrad's own CPU device and PyTorch eager, in one run (issue 21).

    bash bench/model_bench.sh [--models llama,resnet,train] [--runs 10] [--no-torch]

(model_bench.sh makes the virtualenv; this script runs in any Python 3 and starts the workers with
--python.) For each model it starts a fresh daemon (--daemon, on a unix socket, empty cache) and one
worker process per backend: tinygrad (0.12 or 0.14, whichever --python has) on its CPU device (an empty CACHEDB, so its first run
compiles too), tinygrad on UOPD, and PyTorch eager on 1 and on 2 threads. Each worker's first sample
is its first-run time (model built, kernels compiled, TinyJit captured); then --runs rounds, each one
sample of every backend in turn, so a ratio is taken within one round and the median of the ratios
reported. The first samples' outputs of tinygrad and UOPD are compared (and PyTorch's, for
information). The per-kernel view times every kernel of the model's TinyJit on its own on both
tinygrad devices (tinygrad: its CPU queue's timestamps; UOPD: the daemon's kernel timing), with the
opts each side chose. For the decoder, the bandwidth limit is the weights' bytes per token at the
speed of a memcpy of the same size, timed in every round.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from models import weights as W  # noqa: E402  (numpy only)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
UNIT = {"llama": "tok/s", "resnet": "img/s", "train": "steps/s", "bert": "seq/s", "mobilenet": "img/s"}
TITLE = {"llama": f"LLaMA-style decoder, dim {W.LLAMA['dim']}, {W.LLAMA['n_layers']} layers, greedy decode",
         "resnet": f"ResNet-18, batch {W.RESNET['batch']}, {W.RESNET['size']}x{W.RESNET['size']}",
         "train": f"small CNN training step (2 conv + 2 linear, batch {W.TRAIN['batch']}, Adam)",
         "bert": f"BERT-style encoder, dim {W.BERT['dim']}, {W.BERT['n_layers']} layers, batch {W.BERT['batch']} x "
                 f"{W.BERT['seq']} tokens",
         "mobilenet": f"MobileNetV2, batch {W.MOBILENET['batch']}, {W.MOBILENET['size']}x{W.MOBILENET['size']}"}


class Worker:
    def __init__(self, python: str, model: str, backend: str, env: dict[str, str], log: str):
        self.backend = backend
        self.log = open(log, "w")
        self.proc = subprocess.Popen([python, "-m", "models.worker", model, backend], cwd=HERE, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)

    def call(self, **cmd: Any) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.backend} worker exited (see {self.log.name})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.backend}: {reply['error']}\n{reply.get('traceback', '')}")
        return reply

    def close(self) -> None:
        try:
            self.call(cmd="quit")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Daemon:
    def __init__(self, path: str, workdir: str, threads: Optional[int]):
        self.socket = os.path.join(workdir, "uopd.sock")
        args = [path, f"--listen=unix:{self.socket}", f"--cache_dir={os.path.join(workdir, 'cache')}",
                "--metrics=", f"--log_level={os.environ.get('UOPD_LOG_LEVEL', 'warning')}"]
        if threads:
            args.append(f"--threads={threads}")
        self.log = open(os.path.join(workdir, "daemon.log"), "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the daemon did not start (see {self.log.name})")
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def llama_weight_bytes(cfg: dict = W.LLAMA) -> int:
    dim, hidden, vocab, layers = cfg["dim"], cfg["hidden"], cfg["vocab"], cfg["n_layers"]
    per_layer = 4 * dim * dim + 3 * dim * hidden + 2 * dim
    return 4 * (layers * per_layer + 2 * vocab * dim + dim)


def memcpy_seconds(nbytes: int, reps: int = 5) -> float:
    import numpy as np
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(reps):
        st = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - st)
    return min(times)


def max_diff(a: list[float], b: list[float]) -> float:
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def compare(model: str, ref: dict, other: dict) -> str:
    if model == "llama":
        same = ref["tokens"] == other["tokens"]
        return f"tokens {'identical' if same else 'DIFFER'}, logits within {max_diff(ref['logits'], other['logits']):.1e}"
    key = "losses" if model == "train" else "logits"
    return f"{key} within {max_diff(ref[key], other[key]):.1e}"


def fmt_rate(units_per_s: Optional[float]) -> str:
    return "-" if units_per_s is None else f"{units_per_s:.1f}"


def kernel_view(tg: list[dict], up: list[dict], units: int) -> tuple[list[str], float, float]:
    """One row per distinct kernel AST (matched by its key), per-step totals (count x median)."""
    rows: dict[str, dict] = {}
    for side, ks in (("tg", tg), ("up", up)):
        for k in ks:
            r = rows.setdefault(k["key"], {"count": {"tg": 0, "up": 0}, "us": {"tg": 0.0, "up": 0.0}, "alt": None})
            r["count"][side] += 1
            r["us"][side] += k["us"]
            if k.get("alt_us") is not None:
                r["alt"] = (r["alt"] or 0.0) + k["alt_us"]
            r[side + "_opts"] = k["opts"] or "-"
            if side == "tg":
                r["name"] = ANSI.sub("", k["name"])
    tot_tg = sum(r["us"]["tg"] for r in rows.values())
    tot_up = sum(r["us"]["up"] for r in rows.values())
    alt = any(r["alt"] is not None for r in rows.values())
    lines = [f"{'kernel':34} {'n':>3} {'tinygrad us':>11} {'uopd us':>9} {'ratio':>6}" +
             (f" {'uopd w/ tg opts':>15}" if alt else "") + "  opts: tinygrad | uopd"]
    for r in sorted(rows.values(), key=lambda r: -max(r["us"]["tg"], r["us"]["up"])):
        ratio = r["us"]["up"] / r["us"]["tg"] if r["us"]["tg"] > 0 else float("inf")
        flag = "*" if ratio > 1.10 and r["us"]["up"] > 0.002 * tot_up else " "
        lines.append(f"{r.get('name', '?')[:34]:34} {r['count']['tg']:>3} {r['us']['tg']:>11.1f} {r['us']['up']:>9.1f} "
                     f"{ratio:>5.2f}{flag}" + (f" {r['alt'] if r['alt'] is not None else float('nan'):>15.1f}" if alt else "") +
                     f"  {r.get('tg_opts', '-')} | {r.get('up_opts', '-')}")
    lines.append(f"{'per JIT call':34} {'':>3} {tot_tg:>11.1f} {tot_up:>9.1f} {tot_up / max(tot_tg, 1e-9):>5.2f}")
    return lines, tot_tg, tot_up


def best_of(kept: list[dict], round_: list[dict]) -> list[dict]:
    """Each kernel's faster time of `kept` and `round_` (the same kernels in the same order)."""
    if not kept:
        return round_
    for k, r in zip(kept, round_):
        for field in ("us", "alt_us"):
            if r.get(field) is not None:
                k[field] = min(k.get(field) or float("inf"), r[field])
    return kept


def run_model(model: str, args: argparse.Namespace, out: dict) -> None:
    work = tempfile.mkdtemp(prefix=f"model_bench_{model}_")
    daemon = Daemon(args.daemon, work, args.threads)
    env = dict(os.environ, UOPD=f"unix:{daemon.socket}", CACHEDB=os.path.join(work, "tinygrad_cache.db"),
               PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("DEV", None)
    backends = ["tinygrad", "uopd"] + ([] if args.no_torch else ["torch1", "torch2"])
    workers: dict[str, Worker] = {}
    result: dict[str, Any] = {"first_run_s": {}, "rate": {}, "ratios": {}}
    try:
        first: dict[str, dict] = {}
        for b in backends:  # one at a time: first-run times without the others' load
            workers[b] = Worker(args.python, model, b, env, os.path.join(work, f"{b}.log"))
            reply = workers[b].call(cmd="init")
            first[b], units = reply["output"], reply["units"]
            result["first_run_s"][b] = reply["seconds"]
            print(f"  {b}: first run {reply['seconds']:.2f} s", file=sys.stderr, flush=True)
        samples: dict[str, list[float]] = {b: [] for b in backends}
        memcpy: list[float] = []
        wbytes = llama_weight_bytes()
        for _ in range(args.warmup):
            for b in backends:
                workers[b].call(cmd="sample")
        for r in range(args.runs):
            order = backends if r % 2 == 0 else backends[::-1]
            for b in order:
                samples[b].append(workers[b].call(cmd="sample")["seconds"] / units)
            if model == "llama":
                memcpy.append(memcpy_seconds(wbytes))
        med = {b: statistics.median(s) for b, s in samples.items()}
        result["rate"] = {b: 1 / med[b] for b in backends}

        def paired(a: str, b: str) -> float:  # throughput of a / throughput of b, median over rounds
            return statistics.median(sb / sa for sa, sb in zip(samples[a], samples[b]))

        result["ratios"]["uopd/tinygrad"] = paired("uopd", "tinygrad")
        if not args.no_torch:
            result["ratios"]["uopd/torch1"] = paired("uopd", "torch1")
            result["ratios"]["uopd/torch2"] = paired("uopd", "torch2")
        result["compare"] = {"uopd vs tinygrad": compare(model, first["tinygrad"], first["uopd"])}
        if not args.no_torch:
            result["compare"]["torch vs tinygrad"] = compare(model, first["tinygrad"], first["torch1"])
        if model == "llama":
            limit = 1 / statistics.median(memcpy)
            result["bandwidth"] = {"weight_bytes": wbytes, "memcpy_GBps": wbytes / statistics.median(memcpy) / 1e9,
                                   "limit_tok_s": limit,
                                   "uopd_of_limit": statistics.median(1 / (s * limit) for s in samples["uopd"]),
                                   "tinygrad_of_limit": statistics.median(1 / (s * limit) for s in samples["tinygrad"])}
        if args.export:
            paths = workers["tinygrad"].call(cmd="export", out=os.path.abspath(os.path.join(args.export, model)))["paths"]
            print(f"  {len(paths)} kernels exported to {os.path.join(args.export, model)}", file=sys.stderr)
        if args.kernels:
            # Rounds alternate the two sides and each kernel keeps its best round: on shared
            # cores a neighbour's burst slows one round of one side, not the comparison.
            tg: list[dict] = []
            up: list[dict] = []
            alt = None
            for r in range(args.kernel_rounds):
                for side in (("tinygrad", "uopd") if r % 2 == 0 else ("uopd", "tinygrad")):
                    if side == "tinygrad":
                        tg = best_of(tg, workers["tinygrad"].call(cmd="kernels", reps=args.kernel_reps)["kernels"])
                        if args.tinygrad_opts and alt is None:
                            alt = {k["key"]: k["opts"] for k in tg}
                    else:
                        up = best_of(up, workers["uopd"].call(cmd="kernels", reps=args.kernel_reps,
                                                              alt_opts=alt)["kernels"])
            if len(tg) == len(up) and any(t["key"] != u["key"] for t, u in zip(tg, up)):
                # tinygrad 0.14 names a kernel as it optimizes it, so UOPD's (optimized in the
                # daemon) have no tinygrad name: the two JITs run the same kernels in one order.
                for t, u in zip(tg, up):
                    u["key"], u["name"] = t["key"], t["name"]
            calls = {b: workers[b].call(cmd="call", reps=args.kernel_reps)["call"] for b in ("tinygrad", "uopd")}
            result["call"] = calls
            lines, t_tg, t_up = kernel_view(tg, up, units)
            result["kernel_us_per_call"] = {"tinygrad": t_tg, "uopd": t_up}
            result["kernel_lines"] = lines
            result["kernels"] = {"tinygrad": tg, "uopd": up}
    finally:
        for w in workers.values():
            w.close()
        daemon.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"  logs kept in {work}", file=sys.stderr)
    out[model] = result


def report(results: dict, args: argparse.Namespace) -> None:
    torch = not args.no_torch
    print(f"{os.cpu_count()} cores; medians of {args.runs} interleaved rounds; ratios paired within each round")
    head = "| workload | tinygrad CPU | UOPD |" + (" torch eager (1 thread / 2) |" if torch else "") + \
           " UOPD / tinygrad |" + (" UOPD / torch, 1 thread |" if torch else "") + " first run: tinygrad / UOPD |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for model, r in results.items():
        u, rate = UNIT[model], r["rate"]
        row = f"| {TITLE[model]} | {fmt_rate(rate['tinygrad'])} {u} | {fmt_rate(rate['uopd'])} {u} |"
        if torch:
            row += f" {fmt_rate(rate['torch1'])} / {fmt_rate(rate['torch2'])} {u} |"
        row += f" {r['ratios']['uopd/tinygrad']:.2f}x |"
        if torch:
            row += f" {r['ratios']['uopd/torch1']:.2f}x |"
        fr = r["first_run_s"]
        row += f" {fr['tinygrad']:.2f} s / {fr['uopd']:.2f} s |"
        print(row)
    for model, r in results.items():
        print(f"\n{model}: " + "; ".join(f"{k}: {v}" for k, v in r["compare"].items()))
        if "bandwidth" in r:
            b = r["bandwidth"]
            print(f"{model}: weights {b['weight_bytes'] / 2**20:.1f} MiB per token; memcpy {b['memcpy_GBps']:.1f} GB/s "
                  f"-> limit {b['limit_tok_s']:.1f} tok/s; UOPD at {100 * b['uopd_of_limit']:.0f}% of it, "
                  f"tinygrad at {100 * b['tinygrad_of_limit']:.0f}%")
        if "kernel_lines" in r:
            k = r["kernel_us_per_call"]
            print(f"{model}: kernel time per JIT call: tinygrad {k['tinygrad'] / 1e3:.2f} ms, UOPD {k['uopd'] / 1e3:.2f} ms "
                  f"({k['uopd'] / max(k['tinygrad'], 1e-9):.2f}x); each kernel alone, the best of {args.kernel_rounds} "
                  f"alternating rounds of a median of {args.kernel_reps} "
                  "(* = over 1.10x and over 0.2% of the call)")
            for b, c in r.get("call", {}).items():
                on_device = "" if c["device_ms"] != c["device_ms"] else f", {c['device_ms']:.2f} ms on the device"
                print(f"{model}: one JIT call on {b}: {c['wall_ms']:.2f} ms from Python{on_device} "
                      f"({c['kernels']} kernels in {c['batches']} batches)")
            print("\n".join("  " + line for line in r["kernel_lines"]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="llama,resnet,train")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--python", default=sys.executable, help="a Python with tinygrad 0.12.0 or 0.14.0, torch and uopd")
    p.add_argument("--daemon", default=os.path.join(ROOT, "build", "server", "uopd"))
    p.add_argument("--threads", type=int, default=None, help="the daemon's --threads (default: its own)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-kernels", dest="kernels", action="store_false")
    p.add_argument("--tinygrad-opts", action="store_true",
                   help="per-kernel view: also time each kernel on UOPD with the opts tinygrad chose (tinygrad 0.12 only)")
    p.add_argument("--kernel-reps", type=int, default=5)
    p.add_argument("--kernel-rounds", type=int, default=4,
                   help="per-kernel view: rounds alternating the two sides, each kernel's best kept")
    p.add_argument("--export", help="write each distinct kernel of the models as a corpus case file under "
                   "EXPORT/MODEL/ (inputs and tinygrad's outputs), for bench/corpus_opt_bench and bench/opt_bench "
                   "(tinygrad 0.12 only)")
    p.add_argument("--keep", action="store_true", help="keep the daemon's and the workers' logs")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    results: dict[str, Any] = {}
    for model in args.models.split(","):
        print(f"{model}: ...", file=sys.stderr, flush=True)
        run_model(model, args, results)
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
