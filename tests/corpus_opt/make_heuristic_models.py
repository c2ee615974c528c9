#!/usr/bin/env python3
"""Writes heuristic_models.jsonl: the opts tinygrad 0.12's own heuristic (hand_coded_optimizations)
chooses for real kernels, the oracle of tests/core/opt/tinygrad_heuristic_test.cc.

    python bench/model_bench.py --export build/model_kernels ...   # the model kernels
    /path/to/tinygrad-venv/bin/python tests/corpus_opt/make_heuristic_models.py \\
        build/model_kernels tests/corpus_opt/heuristic_models.jsonl [--with-preopt]

The kernels: every case file under KERNELS_DIR/*/ (bench/model_bench.py --export: a LLaMA-style
decoder, ResNet-18, a CNN training step), then those of the small programs in PROGRAMS below (shapes
and cases the models lack: symbolic sizes, a store the CPU cuts in pieces, matvec, tensor cores),
each distinct scheduled AST once.

One line per kernel: {"name", "ast_scheduled", "opts": {"CPU": [...], "CUDA": [...]}} where
ast_scheduled is the kernel as a tinygrad client sends it (IR v1 JSON) and opts are tinygrad's
KernelInfo.applied_opts after get_program's optimizer ran its heuristic for ClangJITRenderer (threads
up to CPU_COUNT: 2 unless the environment says otherwise) and CUDARenderer("sm_80"), in corpus_opt's
opt format.

"ast_preopt": {"CPU": ..., "CUDA": ...}, the graphs tinygrad's optimizer received (after its
pre-optimization passes), is added where those passes removed a REDUCE (pm_load_collapse: a gather
written as a sum, which uopd's RunPreOptPasses knowingly keeps, core/opt/preopt.h), so the heuristic
is checked on tinygrad's graph there; --with-preopt adds it to every kernel, to tell any difference
in the pre-optimization passes from one in the heuristic.
"""
import glob
import json
import os
import sys

os.environ.setdefault("CPU_COUNT", "2")  # read when tinygrad's renderers are imported

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "tinygrad"))

import uop_ir  # noqa: E402
import tinygrad.codegen as codegen  # noqa: E402
from tinygrad import Tensor, Variable, dtypes  # noqa: E402
from tinygrad.renderer.cstyle import ClangJITRenderer, CUDARenderer  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402


def _programs():
    m = Variable("m", 1024, 2048).bind(1500)  # big enough for threads whatever its value
    n = Variable("n", 1, 4096).bind(300)  # threads or not depends on its value
    e = Tensor.empty
    return {
        "sym_bcast_m": lambda: e(m, 1).expand(m, 512) + e(1, 512),
        "sym_bcast_n": lambda: e(n, 1).expand(n, 512) + e(1, 512),
        "sym_colsum_m": lambda: (e(m, 1).expand(m, 512) * e(1, 512)).sum(0),
        "sym_rowsum_n": lambda: e(n, 256).sum(1),
        "rand_store_cut": lambda: Tensor.rand(1024, 512),  # no THREAD: tinygrad refuses a GROUP of ENDs
        "mm_512x384x640": lambda: e(512, 384) @ e(384, 640),
        "mm_f16_128": lambda: e(128, 128, dtype=dtypes.half) @ e(128, 128, dtype=dtypes.half),
        "vecmat_512x1024": lambda: e(1, 512) @ e(512, 1024),
        "matvec_1024x512": lambda: e(1024, 512) @ e(512, 1),
        "pad_3x30x40": lambda: e(3, 30, 40).pad(((0, 0), (1, 1), (2, 2))) + 1,
        "cat_100x7_100x5": lambda: e(100, 7).cat(e(100, 5), dim=1) + 1,
        "stack_3x64x64": lambda: Tensor.stack(*[e(64, 64) for _ in range(3)], dim=2) + 1,
        "conv_5x5_stride2": lambda: e(1, 3, 64, 64).conv2d(e(8, 3, 5, 5), stride=2),
        "argmax_64x1000": lambda: e(64, 1000).argmax(1),
        "softmax_128x1000": lambda: e(128, 1000).softmax(1),
        "sum_1e6": lambda: e(1000000).sum(),
        "flip_256": lambda: e(256, 256).flip(1) + 1,
        "bcast_96x72x80": lambda: e(96, 1, 80) * e(1, 72, 80),
        "maxpool_3_2": lambda: e(1, 16, 64, 64).max_pool2d(3, 2),
    }


class _Optimized(Exception):
    """Raised by the hook once the optimizer ran: nothing after it is needed."""

    def __init__(self, preopt, opts):
        super().__init__()
        self.preopt, self.opts = preopt, opts


_apply_opts = codegen.apply_opts


def _hook(ast, ren):
    raise _Optimized(ast, _apply_opts(ast, ren).arg.applied_opts)


codegen.apply_opts = _hook


def optimize(scheduled, renderer):
    """(the pre-opt AST, the opts tinygrad's heuristic applied) for one kernel and renderer."""
    try:
        codegen.full_rewrite_to_sink(scheduled, renderer)
    except _Optimized as done:
        return done.preopt, done.opts
    raise RuntimeError("the optimizer did not run")


def _reduces(ast):
    return sum(1 for u in ast.toposort() if u.op is Ops.REDUCE)


def opt_json(opt):
    arg = list(opt.arg) if isinstance(opt.arg, tuple) else opt.arg  # TC's triple
    return {"op": opt.op.name, "axis": opt.axis, "arg": arg}


def kernels(kernels_dir):
    """(name, IR v1 JSON of the scheduled AST) of the exported model kernels, then the programs'."""
    for path in sorted(glob.glob(os.path.join(kernels_dir, "*", "*.json"))):
        with open(path) as f:
            case = json.load(f)
        yield case["name"], case["ast"]
    for name, program in _programs().items():
        items = [si for si in program().schedule_with_vars()[0] if si.ast.op is Ops.SINK]
        for i, si in enumerate(items):
            yield f"{name}_{i}", uop_ir.encode_graph(si.ast)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with_preopt = "--with-preopt" in sys.argv
    if len(args) != 2:
        sys.exit(__doc__)
    kernels_dir, out_path = args
    renderers = {"CPU": ClangJITRenderer(), "CUDA": CUDARenderer("sm_80")}
    lines, seen = [], set()
    for name, ast in kernels(kernels_dir):
        if (key := json.dumps(ast, sort_keys=True)) in seen:
            continue
        seen.add(key)
        scheduled = uop_ir.decode_graph(ast)
        line = {"name": name, "ast_scheduled": ast, "opts": {}}
        for target, renderer in renderers.items():
            preopt, opts = optimize(scheduled, renderer)
            line["opts"][target] = [opt_json(o) for o in opts]
            if with_preopt or _reduces(preopt) < _reduces(scheduled):
                line.setdefault("ast_preopt", {})[target] = uop_ir.encode_graph(preopt)
        lines.append(json.dumps(line, separators=(",", ":")))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} kernels, CPU_COUNT={os.environ['CPU_COUNT']}, written to {out_path}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
