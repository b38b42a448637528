#!/usr/bin/env python3
"""Records the reference outputs of the built-in runtime's compute shims, one
small case set per shim family, from eager PyTorch on a GPU.

ctest's GPU tier (tests/test_shim_reference.cc, "GPU shim reference: ...")
reads what this writes and calls each shim of the built-in runtime module on
the same inputs, without PyTorch:

  OUT/manifest.json   the cases: family, shim, parameters, input and output
                      files, how many outputs are compared; and the GPU,
                      driver, PyTorch and CUDA versions and date of the run
  OUT/<case>.in<i>.npy, OUT/<case>.out<j>.npy
                      inputs and PyTorch's outputs (bfloat16 as 2-byte raw
                      values, numpy's '|V2', which ptbundle reads as
                      bfloat16)

Run it on a machine with an NVIDIA GPU and PyTorch (CUDA build), from the
repository root:

  python3 tests/gpu/record_shim_references.py --out tests/data/shims

TF32 is off, as the shims compute float32 by default. The inputs come from a
fixed seed; the outputs' last bits may change with the GPU or the PyTorch
version, which the test's tolerances allow for (float32: 1e-4 of the largest
reference value; 16-bit floats: 2e-2; integers exactly). The samplers (rand,
randn, randint) have no reference values: the test checks their range and
moments.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench_shims import plain_weights  # noqa: E402  (ExecuTorch's plain layouts, dequantized)

aten = torch.ops.aten

NPY_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.int64: "int64", torch.int32: "int32",
              torch.uint8: "uint8", torch.int8: "int8", torch.bool: "bool"}


def to_numpy(tensor):
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.dtype("V2"))
    return tensor.numpy()


def normal(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda", dtype=dtype)


def index(bound, *shape):
    return torch.randint(0, bound, shape, device="cuda", dtype=torch.int64)


def bits(dtype, *shape):
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, device="cuda", dtype=dtype)
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, device="cuda", dtype=dtype)
    return torch.randint(-2**31, 2**31 - 1, shape, device="cuda", dtype=torch.int32)


def channels_last_view(t):
    n, c, h, w = t.shape
    return torch.as_strided(t, t.shape, (c * h * w, 1, w * c, c))


def conv(t, p):
    d = t[0].dim() - 2
    x, w = (channels_last_view(t[0]), channels_last_view(t[1])) if p.get("channels_last") else (t[0], t[1])
    return aten.convolution(x, w, None, [p["stride"]] * d, [p["padding"]] * d, [1] * d, p["transposed"], [0] * d,
                            p["groups"])


def plain_mm(t, p):
    return (t[0].float() @ plain_weights(p["bits"], t, p["group"]).t()).to(torch.bfloat16)


def distinct_columns(rows, columns, bound):
    """Scatter indices with no repeat within a row: which of two sources
    lands first is not specified, so a reference cannot say."""
    return torch.stack([torch.randperm(bound, device="cuda")[:columns] for _ in range(rows)])


def cases():
    """(family, case, shim, params, inputs, eager call, outputs compared or None for all)."""
    out = []

    def add(family, case, shim, params, inputs, call, compared=None):
        out.append((family, case, shim, params, inputs, call, compared))

    for dtype, suffix in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        add("gemm", f"mm_{suffix}", "mm_out", {}, [normal(64, 96, dtype=dtype), normal(96, 80, dtype=dtype)],
            lambda t, p: torch.mm(t[0], t[1]))
        add("gemm", f"addmm_{suffix}", "addmm_out", {},
            [normal(80, dtype=dtype), normal(64, 96, dtype=dtype), normal(96, 80, dtype=dtype)],
            lambda t, p: torch.addmm(t[0], t[1], t[2]))
    # A Linear layer's call: mat2 is the [out, in] weight, passed as its transpose.
    add("gemm", "linear_f32", "addmm_out", {"mat2": "transposed"}, [normal(80), normal(64, 96), normal(80, 96)],
        lambda t, p: torch.addmm(t[0], t[1], t[2].t()))
    add("gemm", "bmm_f32", "bmm_out", {}, [normal(4, 32, 48), normal(4, 48, 40)], lambda t, p: torch.bmm(t[0], t[1]))
    add("gemm", "addmm_gelu_f32", "_addmm_activation", {"use_gelu": True}, [normal(80), normal(64, 96), normal(96, 80)],
        lambda t, p: aten._addmm_activation(t[0], t[1], t[2], use_gelu=True))

    def conv_case(case, x, w, stride, padding, groups=1, transposed=False, channels_last=False):
        params = {"stride": stride, "padding": padding, "groups": groups, "transposed": transposed,
                  "channels_last": channels_last}
        add("convolution", case, "convolution", params, [normal(*x), normal(*w)], conv)

    conv_case("conv2d_16c", (1, 8, 16, 16), (16, 8, 3, 3), 1, 1)
    conv_case("conv2d_s2_batch2", (2, 16, 14, 14), (32, 16, 3, 3), 2, 1)
    conv_case("conv2d_stem", (1, 3, 32, 32), (16, 3, 7, 7), 2, 3)
    conv_case("conv2d_depthwise", (1, 16, 12, 12), (16, 1, 3, 3), 1, 1, groups=16)
    conv_case("conv_transpose2d", (1, 8, 7, 7), (8, 4, 4, 4), 2, 1, transposed=True)
    conv_case("conv1d", (2, 16, 32), (16, 16, 5), 1, 2)
    # Few output positions and a long reduction: where the im2col route may serve.
    conv_case("conv2d_128c_7", (1, 128, 7, 7), (128, 128, 3, 3), 1, 1)
    conv_case("conv2d_nhwc", (1, 16, 14, 14), (32, 16, 3, 3), 1, 1, channels_last=True)

    def qkv(length, dtype):
        return [normal(1, 4, length, 32, dtype=dtype) for _ in range(3)]

    for causal in (False, True):
        tag = "_causal" if causal else ""
        add("attention", f"sdpa_efficient{tag}_f32", "_scaled_dot_product_efficient_attention", {"causal": causal},
            qkv(32, torch.float32),
            lambda t, p: aten._scaled_dot_product_efficient_attention(t[0], t[1], t[2], None, True,
                                                                      is_causal=p["causal"]), 1)
        add("attention", f"sdpa_flash{tag}_bf16", "_scaled_dot_product_flash_attention", {"causal": causal},
            qkv(64, torch.bfloat16),
            lambda t, p: aten._scaled_dot_product_flash_attention(t[0], t[1], t[2], is_causal=p["causal"]), 1)
    add("attention", "sdpa_efficient_bias_f32", "_scaled_dot_product_efficient_attention", {"causal": False},
        qkv(32, torch.float32) + [normal(1, 4, 32, 32)],
        lambda t, p: aten._scaled_dot_product_efficient_attention(t[0], t[1], t[2], t[3], True, is_causal=False), 1)
    add("attention", "sdpa_cudnn_bf16", "_scaled_dot_product_cudnn_attention", {}, qkv(64, torch.bfloat16),
        lambda t, p: aten._scaled_dot_product_cudnn_attention(t[0], t[1], t[2], None, False), 1)

    add("sort", "sort_stable_f32", "sort_stable", {"dim": -1, "descending": False}, [normal(8, 64)],
        lambda t, p: torch.sort(t[0], stable=True, dim=-1))
    add("sort", "topk2_f32", "topk", {"k": 2, "dim": -1}, [normal(32, 16)], lambda t, p: torch.topk(t[0], 2, dim=-1))

    mask = torch.rand(256, device="cuda") < 0.5
    add("index", "nonzero", "nonzero", {}, [mask.clone()], lambda t, p: torch.nonzero(t[0]))
    add("index", "index_mask_f32", "index_Tensor", {}, [normal(256, 8), mask.clone()],
        lambda t, p: aten.index(t[0], [t[1]]))
    add("index", "index_rows_f32", "index_Tensor", {}, [normal(256, 8), index(256, 64)],
        lambda t, p: aten.index(t[0], [t[1]]))
    add("index", "index_put_accumulate_f32", "index_put_out", {"accumulate": True},
        [normal(256, 8), index(256, 64), normal(64, 8)], lambda t, p: aten.index_put(t[0], [t[1]], t[2], True))
    add("index", "scatter_src_bf16", "scatter_src_out", {"dim": 1},
        [normal(32, 16, dtype=torch.bfloat16), distinct_columns(32, 2, 16), normal(32, 2, dtype=torch.bfloat16)],
        lambda t, p: torch.scatter(t[0], 1, t[1], t[2]))
    add("index", "scatter_reduce_sum_f32", "scatter_reduce_two_out", {"dim": 1, "reduce": "sum", "include_self": True},
        [normal(16, 64), index(64, 16, 32), normal(16, 32)],
        lambda t, p: torch.scatter_reduce(t[0], 1, t[1], t[2], "sum", include_self=True))

    # _convert_weight_to_int4pack's layout for n = k = 256 with 8 inner k
    # tiles: [n/8, k/128, 32, 4] int32; scales and zeros [k/group, n, 2].
    add("quantized", "int4pack_mm_bf16", "_weight_int4pack_mm", {"group": 128},
        [normal(4, 256, dtype=torch.bfloat16), bits(torch.int32, 32, 2, 32, 4), normal(2, 256, 2, dtype=torch.bfloat16)],
        lambda t, p: aten._weight_int4pack_mm(t[0], t[1], p["group"], t[2]))
    n = k = 256
    u8, i8, f16, bf16 = torch.uint8, torch.int8, torch.float16, torch.bfloat16
    add("quantized", "int4_plain_mm", "int4_plain_mm", {"bits": 4, "group": 128},
        [normal(2, k, dtype=bf16), bits(u8, n, k // 2), bits(u8, n, k // 128), normal(n, k // 256, dtype=f16),
         bits(u8, n, k // 128), normal(n, k // 256, dtype=f16)], plain_mm)
    add("quantized", "int5_plain_mm", "int5_plain_mm", {"bits": 5, "group": 32},
        [normal(1, k, dtype=bf16), bits(u8, n, k // 2), bits(u8, n, k // 8), bits(u8, n, k // 32),
         normal(n, k // 256, dtype=f16), bits(u8, n, k // 32), normal(n, k // 256, dtype=f16)], plain_mm)
    add("quantized", "int6_plain_mm", "int6_plain_mm", {"bits": 6, "group": 16},
        [normal(1, k, dtype=bf16), bits(u8, n, k // 2), bits(u8, n, k // 4), bits(i8, n, k // 16),
         normal(n, k // 256, dtype=f16)], plain_mm)
    add("quantized", "int8_plain_mm", "int8_plain_mm", {"bits": 8, "group": 32},
        [normal(1, k, dtype=bf16), bits(i8, n, k), normal(n, k // 32, dtype=bf16), bits(i8, n, k // 32)], plain_mm)

    add("scalar", "item_f32", "item_float32", {}, [normal(1)], lambda t, p: t[0].reshape(()))
    add("scalar", "item_i64", "item_int64", {}, [index(1000, 1)], lambda t, p: t[0].reshape(()))
    add("scalar", "item_bf16", "item_bfloat16", {}, [normal(1, dtype=torch.bfloat16)], lambda t, p: t[0].reshape(()))

    for shim in ("rand", "randn"):
        add("random", f"{shim}_f32", shim, {"size": [64, 1024]}, [], None)
    add("random", "randint_low_out", "randint_low_out", {"low": 0, "high": 100, "size": [64, 1024]}, [], None)
    return out


def as_list(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [r for r in result if isinstance(r, torch.Tensor)]


def describe_run():
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, check=True).stdout.strip()
        gpu, driver = [part.strip() for part in smi.split(",", 1)]
    except (OSError, subprocess.CalledProcessError, ValueError):
        gpu, driver = torch.cuda.get_device_name(0), "unknown"
    return {"gpu": gpu, "driver": driver, "torch": torch.__version__, "cuda": torch.version.cuda,
            "date": datetime.date.today().isoformat()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tests/data/shims", help="folder to write (default tests/data/shims)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("record_shim_references.py: PyTorch sees no CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(20261207)
    os.makedirs(args.out, exist_ok=True)
    manifest = {"format_version": 1, "recorded": describe_run(), "cases": []}
    total = 0
    for family, case, shim, params, inputs, call, compared in cases():
        entry = {"case": case, "family": family, "shim": shim, "params": params, "inputs": [], "outputs": []}
        for i, tensor in enumerate(inputs):
            name = f"{case}.in{i}.npy"
            np.save(os.path.join(args.out, name), to_numpy(tensor))
            entry["inputs"].append(name)
        if call is not None:
            results = as_list(call(inputs, params))
            if compared is not None:
                results = results[:compared]
            for j, tensor in enumerate(results):
                name = f"{case}.out{j}.npy"
                np.save(os.path.join(args.out, name), to_numpy(tensor))
                entry["outputs"].append(name)
        total += sum(os.path.getsize(os.path.join(args.out, f)) for f in entry["inputs"] + entry["outputs"])
        manifest["cases"].append(entry)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"record_shim_references.py: {len(manifest['cases'])} cases, {total / 1e6:.1f} MB in {args.out} "
          f"({manifest['recorded']['gpu']}, PyTorch {torch.__version__})")


if __name__ == "__main__":
    main()
