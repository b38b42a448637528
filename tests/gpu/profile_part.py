#!/usr/bin/env python3
"""Where one policy part's time goes, eager PyTorch beside `ptbundle run`
(for speed work): the GPU kernels of eager calls by
torch.profiler, and those of ptbundle's calls by Nsight Systems where it is
installed. Prints two tables of total kernel time per kernel name.

  profile_part.py --ptbundle PATH --packages DIR STEM [STEM ...]
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def eager_kernels(model, iterations):
    import torch
    import policy_models

    module = policy_models.make_module(model)
    inputs = policy_models.make_inputs(model)
    with torch.no_grad():
        for _ in range(10):
            module(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(iterations):
                module(*inputs)
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=70))


def ptbundle_kernels(cli, package, iterations):
    nsys = shutil.which("nsys") or next(iter(glob.glob("/usr/local/cuda*/bin/nsys")), None)
    if not nsys:
        print("(no nsys on this machine: ptbundle's kernels not profiled)")
        return
    stem = package[:-len(".pt2")]
    args = [cli, "run", package, "--iterations", str(iterations)]
    for path in sorted(glob.glob(stem + ".in*.npy")):
        args += ["--input", f"{path.rsplit('.in', 1)[1][:-4]}={path}"]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "p")
        subprocess.run([nsys, "profile", "-t", "cuda", "-o", report] + args, capture_output=True, timeout=120)
        done = subprocess.run([nsys, "stats", "-q", "-r", "cuda_gpu_kern_sum,cuda_api_sum", report + ".nsys-rep"],
                              capture_output=True, text=True, timeout=120)
        print("\n".join(done.stdout.splitlines()[:60]) or done.stderr[-500:])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ptbundle", required=True)
    parser.add_argument("--packages", required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("stems", nargs="+")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for stem in args.stems:
        print(f"===== {stem}: eager, {args.iterations} calls")
        eager_kernels(stem.rsplit("-", 1)[0], args.iterations)
        print(f"===== {stem}: ptbundle run, {args.iterations} calls (+ warmup)")
        ptbundle_kernels(args.ptbundle, os.path.join(args.packages, stem + ".pt2"), args.iterations)


if __name__ == "__main__":
    main()
