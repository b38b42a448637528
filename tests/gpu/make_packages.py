#!/usr/bin/env python3
"""Compiles the AOTInductor packages the GPU tests need and the fixtures lack.

  nolibtorch   an MLP compiled with ExecuTorch's CUDA options including
               aot_inductor.link_libtorch=False: the library imports the
               aoti_torch_* shims without linking libtorch, as ExecuTorch's
               exports do
  big          eight Linear(4096, 4096) layers, 512 MiB of float32 weights:
               what the weight-upload rate is measured on
  et_mlp, et_conv, et_embed, et_big
               an MLP, a conv net, an embedding + sort model and `big`,
               compiled with ExecuTorch's full CUDA options
               (link_libtorch=False, max_autotune with Triton-only GEMM and
               convolution backends): the libraries the built-in runtime runs.
               `nolibtorch` (no autotuning) imports cuBLAS's matmul shim, which
               the built-in runtime lacks: the library it refuses

Each gets <name>.pt2, <name>.in0.npy, <name>.out0.npy (eager PyTorch on the
same GPU, TF32 off) and <name>.constants.json: the library's constants in its
own order (name, FQN, dtype, shape, strides, bytes), read from the generated
wrapper source in the package. The per-FQN tests split the weights blob, whose
layout is those constants back to back, into one weight per FQN with it.
Run by scripts/gpu-check on the GPU machine (needs torch with CUDA).

Usage: make_packages.py OUT_DIR [NAME ...]
"""

import json
import os
import re
import sys
import time
import zipfile

import numpy as np
import torch
from torch import nn

EXECUTORCH_CONFIGS = {
    "aot_inductor.embed_kernel_binary": True,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
}


# ExecuTorch's CudaBackend adds these (backends/cuda/cuda_backend.py).
EXECUTORCH_FULL = {
    "aot_inductor.link_libtorch": False,
    "max_autotune": True,
    "max_autotune_gemm_backends": "TRITON",
    "max_autotune_conv_backends": "TRITON",
}


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 8, 3, stride=2)

    def forward(self, x):
        return torch.relu(self.c2(torch.relu(self.c1(x))))


class EmbedSort(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 32)
        self.proj = nn.Linear(32, 16)

    def forward(self, ids):
        values, _ = torch.sort(self.proj(self.embed(ids)), dim=-1)
        return values


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


PACKAGES = {
    "nolibtorch": (lambda: Mlp([16, 64, 32, 8]), (4, 16), {"aot_inductor.link_libtorch": False}),
    "big": (lambda: Mlp([4096] * 9), (8, 4096), {}),
    "et_mlp": (lambda: Mlp([16, 64, 32, 8]), (4, 16), EXECUTORCH_FULL),
    "et_conv": (ConvNet, (2, 3, 16, 16), EXECUTORCH_FULL),
    "et_embed": (EmbedSort, ("ids", 4, 10), EXECUTORCH_FULL),
    "et_big": (lambda: Mlp([4096] * 9), (8, 4096), EXECUTORCH_FULL),
}


CONSTANT_FIELD = re.compile(r"constants_info_\[(\d+)\]\.(\w+) = (.+);")


def library_constants(package):
    """The constants_info_ assignments of the package's wrapper .cpp."""
    with zipfile.ZipFile(package) as archive:
        source = next(n for n in archive.namelist() if n.endswith(".wrapper.cpp"))
        text = archive.read(source).decode()
    constants = {}
    for index, field, value in CONSTANT_FIELD.findall(text):
        entry = constants.setdefault(int(index), {})
        value = value.strip()
        if field in ("name", "original_fqn"):
            entry["fqn" if field == "original_fqn" else "name"] = value.strip('"')
        elif field in ("shape", "stride"):
            entry["sizes" if field == "shape" else "strides"] = [int(v) for v in value.strip("{}").split(",") if v.strip()]
        elif field == "dtype":
            entry["dtype"] = value.removeprefix("cached_torch_dtype_")
        elif field in ("data_size", "offset"):
            entry[field] = int(value)
        elif field == "from_folded":
            entry[field] = value == "true"
    return [constants[i] for i in sorted(constants)]


def make(name, out_dir):
    build, input_shape, extra = PACKAGES[name]
    torch.manual_seed(20261202)
    module = build().eval().cuda()
    if input_shape[0] == "ids":
        example = torch.randint(0, 64, input_shape[1:], dtype=torch.int64).cuda()
    else:
        example = torch.rand(*input_shape).cuda()
    with torch.no_grad():
        expected = module(example)
    start = time.time()
    exported = torch.export.export(module, (example,))
    configs = dict(EXECUTORCH_CONFIGS)
    configs.update(extra)
    package = os.path.join(out_dir, f"{name}.pt2")
    torch._inductor.aoti_compile_and_package(exported, package_path=package, inductor_configs=configs)
    np.save(os.path.join(out_dir, f"{name}.in0.npy"), example.cpu().numpy())
    np.save(os.path.join(out_dir, f"{name}.out0.npy"), expected.cpu().numpy())
    with open(os.path.join(out_dir, f"{name}.constants.json"), "w") as f:
        json.dump(library_constants(package), f, indent=1)
    print(f"make_packages: {name}.pt2 {os.path.getsize(package)} bytes in {time.time() - start:.1f} s")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if not torch.cuda.is_available():
        sys.exit("make_packages.py: needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[2:] or PACKAGES:
        make(name, out_dir)


if __name__ == "__main__":
    main()
