#!/usr/bin/env python3
"""What each compute shim of ptbundle's built-in runtime costs per call,
against eager PyTorch's op for the same call on the same GPU, in one run.

bench_shims (C++) owns the cases: `bench_shims --list` gives each case's
shim, inputs (dtype, shape, how they are filled) and parameters; this script
makes the same inputs in PyTorch, times PyTorch's op the same way (blocks of
calls between two CUDA events, the median block), and also inside a
torch.cuda graph where the op can be captured (its kernels alone, no Python
or dispatch). Columns, microseconds per call:

  ptbundle      the shim through the C ABI an AOTInductor library calls
  eager         torch's op, called from Python
  eager kernel  torch's op replayed from a CUDA graph (none: not capturable)
  eager/ptb     above 1: the shim is faster than eager's call
  kernel/ptb    above 1: the shim is faster than eager's kernels alone

TF32 is off on both sides, as the shims compute float32 by default.

  bench_shims.py --bench build/bench/bench_shims \
      --module build/lib/ptbundle/libptbundle_builtin_runtime.so [--iterations N]
"""
import argparse
import json
import statistics
import subprocess
import sys

import torch

aten = torch.ops.aten


def conv(t, p):
    d = t[0].dim() - 2
    return aten.convolution(t[0], t[1], None, [p["stride"]] * d, [p["padding"]] * d, [1] * d, p["transposed"],
                            [0] * d, p["groups"])


# PyTorch's op for each shim, on a case's inputs in the order bench_shims
# lists them (an input it lists last for an `_out` shim is the output).
EAGER = {
    "mm_out": lambda t, p: torch.mm(t[0], t[1], out=t[2]),
    "addmm_out": lambda t, p: torch.addmm(t[0], t[1], t[2], out=t[3]),
    "bmm_out": lambda t, p: torch.bmm(t[0], t[1], out=t[2]),
    "_addmm_activation": lambda t, p: aten._addmm_activation(t[0], t[1], t[2], use_gelu=True),
    "convolution": conv,
    "_scaled_dot_product_efficient_attention":
        lambda t, p: aten._scaled_dot_product_efficient_attention(t[0], t[1], t[2], None, False),
    "_scaled_dot_product_flash_attention": lambda t, p: aten._scaled_dot_product_flash_attention(t[0], t[1], t[2]),
    "_scaled_dot_product_cudnn_attention":
        lambda t, p: aten._scaled_dot_product_cudnn_attention(t[0], t[1], t[2], None, False),
    "sort_stable": lambda t, p: torch.sort(t[0], stable=True, dim=-1),
    "topk": lambda t, p: torch.topk(t[0], p["k"], dim=-1),
    "nonzero": lambda t, p: torch.nonzero(t[0]),
    "index_Tensor": lambda t, p: aten.index(t[0], [t[1]]),
    "index_put_out": lambda t, p: aten.index_put.out(t[0], [t[1]], t[2], True, out=t[3]),
    "scatter_src_out": lambda t, p: torch.scatter(t[0], 1, t[1], t[2], out=t[3]),
    "scatter_reduce_two_out": lambda t, p: torch.scatter_reduce(t[0], 1, t[1], t[2], "sum", include_self=True,
                                                                out=t[3]),
    "randint_low_out": lambda t, p: torch.randint(0, 100, tuple(t[0].shape), out=t[0]),
    "rand": lambda t, p: torch.rand(64, 1024, device="cuda"),
    "randn": lambda t, p: torch.randn(64, 1024, device="cuda"),
    "_weight_int4pack_mm": lambda t, p: aten._weight_int4pack_mm(t[0], t[1], p["group"], t[2]),
    "item_float32": lambda t, p: t[0].item(),
}


def reads_back(case):
    """Whether the op reads back to the host (a boolean mask sizes its output,
    .item() returns a value): a CUDA graph cannot capture it, and a failed
    capture leaves PyTorch's generator in capture mode, so it is not tried."""
    return case["shim"] == "item_float32" or any(spec["fill"] == "mask" for spec in case["inputs"])


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
          "bool": torch.bool}


def make_input(spec):
    shape, dtype = spec["shape"], DTYPES[spec["dtype"]]
    fill = spec["fill"]
    if fill == "normal":
        return torch.randn(shape, device="cuda", dtype=dtype)
    if fill == "index":
        return torch.randint(0, spec["bound"], shape, device="cuda", dtype=dtype)
    if fill == "mask":
        return torch.rand(shape, device="cuda") < 0.5
    return torch.randint(-2**31, 2**31 - 1, shape, device="cuda", dtype=torch.int32)


def time_blocks(call, iterations, blocks=7, warmup=10):
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(blocks):
        start.record()
        for _ in range(iterations):
            call()
        stop.record()
        stop.synchronize()
        per_call.append(start.elapsed_time(stop) * 1000.0 / iterations)
    return statistics.median(per_call)


def eager_graph(call, iterations):
    """Per-call time of the op replayed from a CUDA graph, or None."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
    except Exception as error:  # nonzero, a boolean index, .item(): they read back to the host
        print(f"bench_shims: eager graph not captured: {type(error).__name__}: {error}", file=sys.stderr)
        torch.cuda.synchronize()
        return None
    return time_blocks(graph.replay, iterations)


def cell(value):
    return "-" if value is None else f"{value:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True, help="the bench_shims program")
    parser.add_argument("--module", required=True, help="libptbundle_builtin_runtime.so")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = json.loads(subprocess.run([args.bench, "--list"], check=True, capture_output=True, text=True).stdout)
    if args.cases:
        cases = [c for c in cases if c["case"] in args.cases]
    missing = [c["case"] for c in cases if c["shim"] not in EAGER]
    if missing:
        sys.exit(f"bench_shims.py: no PyTorch call for {', '.join(missing)}")
    ran = subprocess.run([args.bench, "--module", args.module, "--iterations", str(args.iterations)] +
                         [c["case"] for c in cases], capture_output=True, text=True)
    sys.stderr.write(ran.stderr)
    sys.stderr.write(ran.stdout)  # the raw rows, kept if PyTorch fails below
    ours = {}
    for line in ran.stdout.splitlines():
        row = json.loads(line)
        ours[row["case"]] = row
    # Every input first: PyTorch's generator is not used again once a graph
    # has been captured.
    torch.manual_seed(0)
    inputs = {case["case"]: [make_input(spec) for spec in case["inputs"]] for case in cases}
    rows = []
    for case in cases:
        tensors = inputs[case["case"]]
        call = lambda: EAGER[case["shim"]](tensors, case["params"])  # noqa: E731
        try:
            eager = time_blocks(call, args.iterations)
        except Exception as error:
            print(f"bench_shims: {case['case']}: eager: {error}", file=sys.stderr)
            eager = None
        graph = None if eager is None or reads_back(case) else eager_graph(call, args.iterations)
        row = ours.get(case["case"], {})
        mine = row.get("us")
        rows.append([case["case"], case["shim"], cell(mine), cell(eager), cell(graph), ratio(eager, mine),
                     ratio(graph, mine), row.get("error", "")])
    header = ["case", "shim", "ptbundle", "eager", "eager kernel", "eager/ptb", "kernel/ptb", ""]
    print(f"# {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, us per call, "
          f"median of 7 blocks of {args.iterations}")
    print("| " + " | ".join(header[:-1]) + " |")
    print("|" + " --- |" * (len(header) - 1))
    for row in rows:
        print("| " + " | ".join(row[:-1]) + " |" + (f" {row[-1]}" if row[-1] else ""))
    return 0 if all(not row[-1] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
