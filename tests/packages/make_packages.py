#!/usr/bin/env python3
"""Makes the small AOTInductor packages the CPU tests read for programs that
the fixtures lack: one with no weights, one with a dynamic batch dimension
and one that draws noise. Written by PyTorch's own compiler (run on the GPU
machine), so the tests check ptbundle against the real format, not against
its own writer. ExecuTorch's CUDA options, link_libtorch=False, no autotuning
(small and quick to compile).

  weightless.pt2  forward(x, y) = x * 2 + y, float32 [8, 16]: no constants
                  at all, so the package's weights blob is empty
  dynbatch.pt2    Linear(64, 32), ReLU, Linear(32, 8) with
                  torch.export.Dim("batch", min=1, max=256) on input 0;
                  traced at batch 16; dynbatch.b37.in0/out0 at batch 37
  sampler.pt2     forward(x) = x + 0.1 * randn_like(x), float32 [4, 16]:
                  its output is never reproduced

Each gets <name>.inN.npy and <name>.outN.npy (eager PyTorch on the same GPU).

Usage: make_packages.py OUT_DIR
"""

import os
import sys

import numpy as np
import torch
from torch import nn

CONFIGS = {
    "aot_inductor.embed_kernel_binary": True,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
    "aot_inductor.link_libtorch": False,
}


class Weightless(nn.Module):
    def forward(self, x, y):
        return x * 2 + y


class Sampler(nn.Module):
    def forward(self, x):
        return x + 0.1 * torch.randn_like(x)


def save(path, tensor):
    np.save(path, tensor.detach().cpu().numpy())


def make(out_dir, name, module, inputs, dynamic=None, extra=()):
    module = module.cuda().eval()
    with torch.no_grad():
        outputs = module(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        exported = torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic)
    torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(out_dir, name + ".pt2"),
                                             inductor_configs=CONFIGS)
    for i, t in enumerate(inputs):
        save(os.path.join(out_dir, f"{name}.in{i}.npy"), t)
    for i, t in enumerate(outputs):
        save(os.path.join(out_dir, f"{name}.out{i}.npy"), t)
    for tag, more in extra:
        with torch.no_grad():
            outs = module(*more)
        save(os.path.join(out_dir, f"{name}.{tag}.in0.npy"), more[0])
        save(os.path.join(out_dir, f"{name}.{tag}.out0.npy"), outs)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(20261204)
    torch.backends.cuda.matmul.allow_tf32 = False
    f = lambda *shape: torch.randn(*shape, device="cuda")
    make(out_dir, "weightless", Weightless(), [f(8, 16), f(8, 16)])
    mlp = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    batch = torch.export.Dim("batch", min=1, max=256)
    make(out_dir, "dynbatch", mlp, [f(16, 64)], dynamic=({0: batch},), extra=[("b37", [f(37, 64)])])
    make(out_dir, "sampler", Sampler(), [f(4, 16)])
    print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
