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
  ptb host      the host's share of ptbundle's call (issuing it); near
                ptbundle: the shim is bound by host work, not the GPU
  eager kernel  torch's op replayed from a CUDA graph (none: not capturable)
  eager/ptb     above 1: the shim is faster than eager's call
  kernel/ptb    above 1: the shim is faster than eager's kernels alone
  check         the shim's outputs against PyTorch's on the same inputs
                (written here, read by bench_shims): the largest difference
                relative to the largest reference value, within 1e-4 for
                float32 and 2e-2 for 16-bit floats; integers exactly; the
                samplers by range and moments. The exit status is 1 when a
                check fails.

TF32 is off on both sides, as the shims compute float32 by default.

  bench_shims.py --bench build/bench/bench_shims \
      --module build/lib/ptbundle/libptbundle_builtin_runtime.so [--iterations N]
"""
import argparse
import json
import statistics
import os
import subprocess
import sys
import tempfile

import torch

aten = torch.ops.aten


def channels_last_view(t):
    """bench_shims' reinterpretation: the same buffer with NHWC strides."""
    n, c, h, w = t.shape
    return torch.as_strided(t, t.shape, (c * h * w, 1, w * c, c))


def conv(t, p):
    d = t[0].dim() - 2
    x, w = (channels_last_view(t[0]), channels_last_view(t[1])) if p.get("channels_last") else (t[0], t[1])
    return aten.convolution(x, w, None, [p["stride"]] * d, [p["padding"]] * d, [1] * d, p["transposed"],
                            [0] * d, p["groups"])


def plain_weights(bits, t, group):
    """ExecuTorch's plain int4/5/6/8 weights (its CUDA backend's *_plain_mm
    ops) dequantized to float32 [n, k], as their headers describe the
    layouts: codes in natural k order, int5/int6 high bits in planes
    arranged per 32 weights; w = scale * (code - zero), with fp16 steps per
    256 weights for the int4/5/6 scale (and zero) codes."""
    ql = t[1]
    n, k = ql.shape[0], t[0].shape[1]
    idx = torch.arange(k, device=ql.device)
    groups, steps = idx // group, idx // 256
    if bits == 8:
        return t[2].float()[:, groups] * (ql.float() - t[3].float()[:, groups])
    codes = torch.stack([ql & 0xF, ql >> 4], dim=-1).reshape(n, k).int()
    in8, of32 = idx % 8, (idx % 32) // 8
    if bits == 5:
        high = (t[2].int()[:, (idx // 32) * 4 + of32] >> ((in8 % 2) * 4 + in8 // 2)) & 1
        codes = codes | (high << 4)
    elif bits == 6:
        high = (t[2].int()[:, (idx // 32) * 8 + (in8 % 2) * 4 + of32] >> ((in8 // 2) * 2)) & 3
        codes = codes | (high << 4)
    rest = t[2:] if bits == 4 else t[3:]
    scale = rest[0].float()[:, groups] * rest[1].float()[:, steps]
    if bits == 6:
        return scale * (codes.float() - 32)
    zero = rest[2].float()[:, groups] * rest[3].float()[:, steps]
    return scale * (codes.float() - zero)


def plain_mm(t, p):
    """No eager op exists: PyTorch's reference is the dequantized weights and
    a float32 Linear, rounded to bfloat16 as the op returns it."""
    return (t[0].float() @ plain_weights(p["bits"], t, p["group"]).t()).to(torch.bfloat16)


# PyTorch's op for each shim, on a case's inputs in the order bench_shims
# lists them (an input it lists last for an `_out` shim is the output).
EAGER = {
    "mm_out": lambda t, p: torch.mm(t[0], t[1], out=t[2]),
    "addmm_out": lambda t, p: torch.addmm(t[0], t[1], t[2].t() if p.get("mat2") == "transposed" else t[2], out=t[3]),
    "bmm_out": lambda t, p: torch.bmm(t[0], t[1], out=t[2]),
    "_addmm_activation": lambda t, p: aten._addmm_activation(t[0], t[1], t[2], use_gelu=True),
    "convolution": conv,
    "_scaled_dot_product_efficient_attention":
        lambda t, p: aten._scaled_dot_product_efficient_attention(t[0], t[1], t[2], t[3] if len(t) > 3 else None, True,
                                                                  is_causal=p["causal"]),
    "_scaled_dot_product_flash_attention":
        lambda t, p: aten._scaled_dot_product_flash_attention(t[0], t[1], t[2], is_causal=p["causal"]),
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
    "empty_strided": lambda t, p: torch.empty(1024, 1024, device="cuda"),
    "int4_plain_mm": plain_mm,
    "int5_plain_mm": plain_mm,
    "int6_plain_mm": plain_mm,
    "int8_plain_mm": plain_mm,
}


def reads_back(case):
    """Whether the op reads back to the host (a boolean mask sizes its output,
    .item() returns a value): a CUDA graph cannot capture it, and a failed
    capture leaves PyTorch's generator in capture mode, so it is not tried."""
    return case["shim"] == "item_float32" or any(spec["fill"] == "mask" for spec in case["inputs"])


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
          "bool": torch.bool, "float16": torch.float16, "float64": torch.float64, "uint8": torch.uint8,
          "int8": torch.int8}

# PyTorch's results that are compared, by shim: the attention entry points
# also return the log-sum-exp (whose padding ATen leaves unspecified) and
# philox state, of which inference reads only the output.
COMPARED = {"_scaled_dot_product_efficient_attention": 1, "_scaled_dot_product_flash_attention": 1,
            "_scaled_dot_product_cudnn_attention": 1}


def write_raw(tensor, path):
    tensor.detach().cpu().contiguous().flatten().view(torch.uint8).numpy().tofile(path)


def read_output(spec):
    """One of bench_shims' outputs as a tensor with its sizes and strides."""
    dtype = DTYPES[spec["dtype"]]
    raw = torch.from_file(spec["file"], size=os.path.getsize(spec["file"]), dtype=torch.uint8) \
        if os.path.getsize(spec["file"]) else torch.empty(0, dtype=torch.uint8)
    flat = raw.view(dtype)
    return torch.as_strided(flat, spec["sizes"], spec["strides"]) if flat.numel() else torch.empty(spec["sizes"], dtype=dtype)


def as_list(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [r for r in result if isinstance(r, torch.Tensor)]
    return [torch.tensor(result, dtype=torch.float32)]  # .item()'s number


def check_sampler(case, ours):
    """A sampler's output by its range and moments: its values are its own."""
    out = ours[0].double()
    if not torch.isfinite(out).all():
        return "FAIL not finite"
    mean, std = out.mean().item(), out.std().item()
    if case["shim"] == "randint_low_out":
        ok = out.min() >= 0 and out.max() < 100 and abs(mean - 49.5) < 2
    elif case["shim"] == "rand":
        ok = out.min() >= 0 and out.max() < 1 and abs(mean - 0.5) < 0.02
    else:
        ok = abs(mean) < 0.05 and abs(std - 1) < 0.05
    return f"{'ok' if ok else 'FAIL'} mean {mean:.3g} std {std:.3g}"


def check(case, eager_result, row):
    """'ok ...', 'FAIL ...' or '-' (nothing to compare)."""
    specs = row.get("outputs")
    if not specs:
        return "-"
    ours = [None if spec is None else read_output(spec) for spec in specs]
    if case["shim"] in ("rand", "randn", "randint_low_out"):
        return check_sampler(case, ours)
    if case["shim"] == "empty_strided":  # its values are whatever the memory held
        same = list(ours[0].shape) == list(eager_result.shape) and ours[0].dtype == eager_result.dtype
        return "ok shape" if same else "FAIL shape"
    theirs = as_list(eager_result)[:COMPARED.get(case["shim"], len(specs))]
    worst = 0.0
    for j, ref in enumerate(theirs):
        mine = ours[j] if j < len(ours) else None
        if mine is None:
            return f"FAIL output {j} missing"
        ref = ref.detach().cpu()
        if list(mine.shape) != list(ref.shape) or mine.dtype != ref.dtype:
            return f"FAIL output {j}: {mine.dtype} {list(mine.shape)}, expected {ref.dtype} {list(ref.shape)}"
        if not ref.is_floating_point():
            if not torch.equal(mine, ref):
                return f"FAIL output {j}: {int((mine != ref).sum())} of {ref.numel()} differ"
            continue
        if ref.numel() == 0:
            continue
        diff = (mine.double() - ref.double()).abs().max().item()
        scale = max(ref.double().abs().max().item(), 1e-30)
        limit = 1e-4 if ref.dtype in (torch.float32, torch.float64) else 2e-2
        if not diff / scale <= limit:
            return f"FAIL output {j}: {diff / scale:.2e} > {limit:g}"
        worst = max(worst, diff / scale)
    return f"ok {worst:.1e}"


def make_input(spec):
    shape, dtype = spec["shape"], DTYPES[spec["dtype"]]
    fill = spec["fill"]
    if fill == "normal":
        return torch.randn(shape, device="cuda", dtype=dtype)
    if fill == "index":
        return torch.randint(0, spec["bound"], shape, device="cuda", dtype=dtype)
    if fill == "mask":
        return torch.rand(shape, device="cuda") < 0.5
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, device="cuda", dtype=dtype)
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, device="cuda", dtype=dtype)
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
    # Every input first: PyTorch's generator is not used again once a graph
    # has been captured. Both sides read the same inputs.
    torch.manual_seed(0)
    inputs = {case["case"]: [make_input(spec) for spec in case["inputs"]] for case in cases}
    folder = tempfile.mkdtemp(prefix="bench_shims.")
    for case in cases:
        for i, tensor in enumerate(inputs[case["case"]]):
            write_raw(tensor, os.path.join(folder, f"{case['case']}.in{i}.bin"))
    ran = subprocess.run([args.bench, "--module", args.module, "--iterations", str(args.iterations), "--inputs", folder,
                          "--outputs", folder] + [c["case"] for c in cases], capture_output=True, text=True)
    sys.stderr.write(ran.stderr)
    sys.stderr.write(ran.stdout)  # the raw rows, kept if PyTorch fails below
    ours = {}
    for line in ran.stdout.splitlines():
        row = json.loads(line)
        ours[row["case"]] = row
    rows = []
    failed = False
    for case in cases:
        tensors = inputs[case["case"]]
        call = lambda: EAGER[case["shim"]](tensors, case["params"])  # noqa: E731
        row = ours.get(case["case"], {})
        try:
            verdict = check(case, call(), row)
            eager = time_blocks(call, args.iterations)
        except Exception as error:
            print(f"bench_shims: {case['case']}: eager: {error}", file=sys.stderr)
            eager, verdict = None, "-"
        graph = None if eager is None or reads_back(case) else eager_graph(call, args.iterations)
        mine = row.get("us")
        failed = failed or "error" in row or verdict.startswith("FAIL")
        rows.append([case["case"], case["shim"], cell(mine), cell(row.get("host_us")), cell(eager), cell(graph),
                     ratio(eager, mine), ratio(graph, mine), verdict, row.get("error", "")])
    header = ["case", "shim", "ptbundle", "ptb host", "eager", "eager kernel", "eager/ptb", "kernel/ptb", "check", ""]
    print(f"# {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, us per call, "
          f"median of 7 blocks of {args.iterations}")
    print("| " + " | ".join(header[:-1]) + " |")
    print("|" + " --- |" * (len(header) - 1))
    for row in rows:
        print("| " + " | ".join(row[:-1]) + " |" + (f" {row[-1]}" if row[-1] else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
