#!/usr/bin/env python3
"""Makes the example model: a tiny robot policy in two AOTInductor packages.

  encoder      image float32[1,3,32,32]                    -> features float32[1,32]
  action_head  features float32[1,32], state float32[1,8]  -> actions  float32[1,7]

Each part is exported with torch.export and compiled for the GPU this runs on by
torch._inductor.aoti_compile_and_package, with all the options ExecuTorch's CUDA
backend passes (INDUCTOR_CONFIGS), so the packages are what `ptbundle export`
meets in practice and run without PyTorch on ptbundle's built-in runtime.
Next to each package it writes the inputs and the outputs that eager PyTorch
computes on the same GPU, as .npy, for tests that run the packages.

Needs a CUDA GPU. Usage: make_example.py [--out DIR]   (default: this folder)
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from torch import nn

FEATURES = 32
STATE = 8
ACTIONS = 7
SEED = 20251202

# What ExecuTorch's CudaBackend (backends/cuda/cuda_backend.py) passes to
# AOTInductor: kernels embedded in the library, weights in a separate binary
# blob, no libtorch (the library imports the aoti_torch_* shims and the CUDA
# runtime from its host, so `ptbundle run` serves it with its built-in
# runtime), and autotuning over Triton kernels only for GEMMs and
# convolutions (no cuBLAS or cuDNN fallback, which would need LibTorch).
INDUCTOR_CONFIGS = {
    "aot_inductor.embed_kernel_binary": True,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
    "aot_inductor.link_libtorch": False,
    "max_autotune": True,
    "max_autotune_gemm_backends": "TRITON",
    "max_autotune_conv_backends": "TRITON",
}


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1)
        self.proj = nn.Linear(16, FEATURES)

    def forward(self, image):
        x = torch.relu(self.conv1(image))
        x = torch.relu(self.conv2(x))
        x = x.mean(dim=(2, 3))
        return torch.tanh(self.proj(x))


class ActionHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES + STATE, 64)
        self.fc2 = nn.Linear(64, ACTIONS)

    def forward(self, features, state):
        x = torch.relu(self.fc1(torch.cat([features, state], dim=1)))
        return torch.tanh(self.fc2(x))


def save_npy(path, tensor):
    np.save(path, tensor.detach().cpu().contiguous().numpy())


def compile_part(name, module, inputs, out_dir):
    with torch.no_grad():
        outputs = module(*inputs)
    exported = torch.export.export(module, tuple(inputs))
    package = os.path.join(out_dir, f"{name}.pt2")
    torch._inductor.aoti_compile_and_package(
        exported, package_path=package, inductor_configs=dict(INDUCTOR_CONFIGS)
    )
    for i, tensor in enumerate(inputs):
        save_npy(os.path.join(out_dir, f"{name}.in{i}.npy"), tensor)
    save_npy(os.path.join(out_dir, f"{name}.out0.npy"), outputs)
    return outputs, package


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("make_example.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
    os.makedirs(args.out, exist_ok=True)

    # The references are exact float32: no TF32 in eager convolutions or matmuls.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(SEED)
    device = torch.device("cuda")
    encoder = Encoder().eval().to(device)
    head = ActionHead().eval().to(device)
    # Inputs drawn on the CPU generator so they do not depend on the GPU's RNG.
    image = torch.rand(1, 3, 32, 32).to(device)
    state = torch.randn(1, STATE).to(device)

    features, encoder_pt2 = compile_part("encoder", encoder, [image], args.out)
    actions, head_pt2 = compile_part("action_head", head, [features, state], args.out)

    props = torch.cuda.get_device_properties(device)
    print(json.dumps({
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": props.name,
        "capability": f"{props.major}.{props.minor}",
        "seed": SEED,
        "inductor_configs": INDUCTOR_CONFIGS,
        "files": {os.path.basename(p): os.path.getsize(p) for p in (encoder_pt2, head_pt2)},
        "actions": [round(v, 6) for v in actions.flatten().tolist()],
    }, indent=1))


if __name__ == "__main__":
    main()
