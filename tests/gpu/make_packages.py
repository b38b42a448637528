#!/usr/bin/env python3
"""Compiles the AOTInductor packages the GPU tests and benchmarks need and the
fixtures lack, several at once (one max-autotune compile takes 10-60 s).

Two sets:

  the runtime set (the names below): an MLP with link_libtorch=False and no
  autotuning (`nolibtorch`), eight Linear(4096, 4096) layers (512 MiB of
  weights, `big`), and an MLP, a conv net, an embedding + sort model and
  `big` compiled with ExecuTorch's full CUDA options (`et_*`)

  the policy set (tests/gpu/policy_models.py): programs shaped like real
  policy parts, each compiled one to five ways:
    et       ExecuTorch's options: link_libtorch=False, max_autotune with
             Triton-only GEMM and convolution backends
    aten     the same with cuBLAS/cuDNN allowed (max_autotune_gemm_backends
             and max_autotune_conv_backends "ATEN,TRITON")
    default  ExecuTorch's package layout, link_libtorch=False, without
             autotuning: every GEMM and convolution goes to ATen, that is to
             the runtime's shims
    pytorch  no inductor_configs at all, PyTorch's defaults: kernels as
             .cubin files beside the library, weights compiled into it, the
             library linked to LibTorch (link_libtorch=True): runs on the
             LibTorch runtime only
    pytorch_nolibtorch  PyTorch's defaults with
             aot_inductor.link_libtorch=False: kernel files and weights in
             the library as above, on the built-in runtime
  named <model>-<way>.pt2. Each way's configs are the whole of what
  aoti_compile_and_package is given.

Each package gets <pkg>.inN.npy, <pkg>.outN.npy (eager PyTorch on the same
GPU, TF32 off), <pkg>.json (what check its outputs get, compile time, and for
dynamic programs the extra batch sizes, whose inputs and outputs are
<pkg>.b<size>.inN.npy / .outN.npy) and, for the runtime set,
<name>.constants.json: the library's constants in its own order, read from
the generated wrapper source, which the per-FQN tests split the weights blob
with. bfloat16 arrays are saved as ml_dtypes does ("|V2").

Usage: make_packages.py OUT_DIR [--jobs N] [--report FILE] [--keep] [NAME ...]
  NAME: a runtime-set name, a policy model (every way), or <model>-<way>;
  none: everything. --report writes, per package, the aoti_* functions its
  library imports and the shim calls its wrapper makes. --keep leaves a
  package OUT_DIR already holds (its .json says it compiled) as it is: a
  run that was stopped finishes in the next, with PTB_INDUCTOR_CACHE_ROOT
  naming a folder both runs see (Inductor's caches, autotuning's timings
  among them).
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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

ET = dict(EXECUTORCH_CONFIGS, **EXECUTORCH_FULL)

# Every way's inductor_configs, complete: nothing is added to them.
WAYS = {
    "et": ET,
    "aten": dict(ET, max_autotune_gemm_backends="ATEN,TRITON", max_autotune_conv_backends="ATEN,TRITON"),
    "default": dict(EXECUTORCH_CONFIGS, **{"aot_inductor.link_libtorch": False}),
    "pytorch": {},
    "pytorch_nolibtorch": {"aot_inductor.link_libtorch": False},
}

RUNTIME_SET = ["nolibtorch", "big", "et_mlp", "et_conv", "et_embed", "et_big", "et_fft"]


def runtime_module(name):
    import torch
    from torch import nn

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

    # An FFT, which the built-in runtime does not have: the GPU tests' library
    # that must be refused before loading.
    class Spectrum(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x, dim=-1).abs()

    class Mlp(nn.Module):
        def __init__(self, sizes):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    table = {
        "nolibtorch": (lambda: Mlp([16, 64, 32, 8]), (4, 16), WAYS["default"]),
        "big": (lambda: Mlp([4096] * 9), (8, 4096), EXECUTORCH_CONFIGS),
        "et_mlp": (lambda: Mlp([16, 64, 32, 8]), (4, 16), ET),
        "et_conv": (ConvNet, (2, 3, 16, 16), ET),
        "et_embed": (EmbedSort, ("ids", 4, 10), ET),
        "et_big": (lambda: Mlp([4096] * 9), (8, 4096), ET),
        "et_fft": (Spectrum, (4, 64), ET),
    }
    build, shape, extra = table[name]
    torch.manual_seed(20261202)
    module = build().eval().cuda()
    if shape[0] == "ids":
        example = torch.randint(0, 64, shape[1:], dtype=torch.int64).cuda()
    else:
        example = torch.rand(*shape).cuda()
    return module, [example], extra


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


def save_tensor(path, tensor):
    import numpy as np
    import torch

    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        array = tensor.view(torch.int16).numpy().view("V2")
    else:
        array = tensor.numpy()
    np.save(path, array)


def as_tuple(outputs):
    return outputs if isinstance(outputs, (tuple, list)) else (outputs,)


def eager_median_us(module, inputs, warmup=10, iterations=50):
    """Eager PyTorch's median time per call on this GPU (CUDA events), for the
    runtime's figures to be read against."""
    import torch

    times = []
    with torch.no_grad():
        for i in range(warmup + iterations):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            module(*inputs)
            end.record()
            end.synchronize()
            if i >= warmup:
                times.append(start.elapsed_time(end) * 1000)
    times.sort()
    return round(times[len(times) // 2], 1)


def package_label(job):
    """A job's package name: <name> for the runtime set, <model>-<way>."""
    name, way = job
    return name if way is None else f"{name}-{way}"


def already_made(job, out_dir):
    label = package_label(job)
    try:
        with open(os.path.join(out_dir, f"{label}.json")) as f:
            made = json.load(f).get("ok") is True
    except (OSError, ValueError):
        return False
    return made and os.path.exists(os.path.join(out_dir, f"{label}.pt2"))


def compile_one(job, out_dir):
    """One package; returns what was made or why it failed. Runs in a worker
    process of its own, with an Inductor cache of its own."""
    name, way = job
    label = package_label(job)
    # PTB_INDUCTOR_CACHE_ROOT keeps the caches (autotuning's timings among
    # them) where a later call on the same machine finds them.
    cache_root = os.environ.get("PTB_INDUCTOR_CACHE_ROOT") or tempfile.gettempdir()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_root, f"inductor-{label}")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "4")
    result = {"package": label, "ok": False}
    start = time.time()
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        dynamic = None
        check = "exact"
        extra_sizes = []
        if way is None:
            module, inputs, configs = runtime_module(name)
        else:
            import policy_models

            module = policy_models.make_module(name)
            inputs = policy_models.make_inputs(name)
            _, _, check, _, extra = policy_models.MODELS[name]
            configs = WAYS[way]
            if "batch" in extra:
                low, high, extra_sizes = extra["batch"]
                batch = torch.export.Dim("batch", min=low, max=high)
                dynamic = ({0: batch},) + tuple(None for _ in inputs[1:])
        with torch.no_grad():
            expected = as_tuple(module(*inputs))
            exported = torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic)
        package = os.path.join(out_dir, f"{label}.pt2")
        torch._inductor.aoti_compile_and_package(exported, package_path=package, inductor_configs=dict(configs))
        for i, t in enumerate(inputs):
            save_tensor(os.path.join(out_dir, f"{label}.in{i}.npy"), t)
        for i, t in enumerate(expected):
            save_tensor(os.path.join(out_dir, f"{label}.out{i}.npy"), t)
        for size in extra_sizes:
            import policy_models

            resized = [torch.cat([inputs[0]] * (size // inputs[0].shape[0] + 1))[:size]] + inputs[1:]
            with torch.no_grad():
                outs = as_tuple(module(*resized))
            for i, t in enumerate(resized):
                save_tensor(os.path.join(out_dir, f"{label}.b{size}.in{i}.npy"), t)
            for i, t in enumerate(outs):
                save_tensor(os.path.join(out_dir, f"{label}.b{size}.out{i}.npy"), t)
        if way is None:
            with open(os.path.join(out_dir, f"{label}.constants.json"), "w") as f:
                json.dump(library_constants(package), f, indent=1)
        result["eager_us"] = eager_median_us(module, inputs)
        result.update(ok=True, check=check, inputs=len(inputs), outputs=len(expected), batch_sizes=extra_sizes,
                      bytes=os.path.getsize(package))
        try:
            result["describe"] = describe(package)
        except Exception as error:  # the package is made; only its description failed
            result["describe"] = f"cannot describe: {error}\n"
    except Exception as error:  # one package's failure is reported, the rest go on
        lines = traceback.format_exception(error)
        result["error"] = "".join(lines)[-3000:]
    result["seconds"] = round(time.time() - start, 1)
    with open(os.path.join(out_dir, f"{label}.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def expand(names):
    import policy_models

    jobs = []
    for name in names or (RUNTIME_SET + list(policy_models.MODELS)):
        if name in RUNTIME_SET:
            jobs.append((name, None))
        elif name in policy_models.MODELS:
            jobs.extend((name, way) for way in policy_models.MODELS[name][3])
        elif "-" in name and name.rsplit("-", 1)[0] in policy_models.MODELS:
            jobs.append(tuple(name.rsplit("-", 1)))
        else:
            sys.exit(f"make_packages.py: no package '{name}'")
    return jobs


SHIM_CALL = re.compile(r"(aoti_torch_\w+)\(")
BOOKKEEPING = re.compile(r"aoti_torch_(get_|delete_|new_tensor|create_tensor|empty_strided|dtype_|device_type|"
                         r"layout_|_reinterpret|_alloc_from_pool|create_cuda|delete_cuda|grad_mode|check|warn|"
                         r"assign|memory_format|is_)")


def describe(package):
    """The aoti_* functions a package's library imports (nm -D) and the
    distinct shim calls its wrapper makes beyond tensor bookkeeping."""
    lines = []
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        so = next(n for n in names if n.endswith(".so"))
        cpp = next((n for n in names if n.endswith(".wrapper.cpp")), None)
        with tempfile.NamedTemporaryFile(suffix=".so") as tmp:
            tmp.write(archive.read(so))
            tmp.flush()
            nm = subprocess.run(["nm", "-D", "--undefined-only", tmp.name], capture_output=True, text=True)
        imported = sorted({line.split()[-1] for line in nm.stdout.splitlines() if "aoti_" in line})
        lines.append("imports: " + " ".join(imported))
        lines.append("entries: " + " ".join(n for n in names if not n.endswith((".cubin", ".fatbin", ".blob"))))
        kernel_files = [n for n in names if n.endswith((".cubin", ".fatbin", ".ptx"))]
        if kernel_files:
            lines.append(f"kernel files: {len(kernel_files)}")
        if cpp:
            text = archive.read(cpp).decode(errors="replace")
            seen = set()
            for line in text.splitlines():
                for call in SHIM_CALL.findall(line):
                    if BOOKKEEPING.match(call) or call in seen:
                        continue
                    seen.add(call)
                    lines.append("  call: " + line.strip()[:500])
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--report")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_intermixed_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("make_packages.py: needs a CUDA GPU")
    os.makedirs(args.out_dir, exist_ok=True)
    jobs = expand(args.names)
    if args.keep:
        jobs = [job for job in jobs if not already_made(job, args.out_dir)]
    workers = args.jobs or max(1, min(len(jobs), (os.cpu_count() or 2) // 2))
    start = time.time()
    results = []
    # Written as each package finishes: a run that is stopped still leaves
    # the report of those done.
    report = open(args.report, "w") if args.report else None
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(compile_one, job, args.out_dir): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except Exception as error:  # the worker died
                job = futures[future]
                result = {"package": package_label(job), "ok": False, "seconds": 0,
                          "error": f"worker died: {error}"}
            results.append(result)
            state = f"{result.get('bytes', 0)} bytes" if result["ok"] else "FAILED: " + result["error"].strip().splitlines()[-1][:300]
            print(f"make_packages: {result['package']}.pt2 {state} in {result['seconds']} s", flush=True)
            if report:
                report.write(f"=== {result['package']}: {'ok' if result['ok'] else 'FAILED'} in {result['seconds']} s\n")
                report.write(result.get("describe", "") if result["ok"] else result["error"] + "\n")
                report.flush()
    results.sort(key=lambda r: r["package"])
    failed = [r["package"] for r in results if not r["ok"]]
    print(f"make_packages: {len(results) - len(failed)} of {len(results)} packages in {time.time() - start:.0f} s "
          f"with {workers} workers" + (f"; failed: {' '.join(failed)}" if failed else ""), flush=True)
    if report:
        report.close()
    # A policy model that does not compile one way is reported, not fatal;
    # the runtime set is what the existing tests need.
    sys.exit(1 if any(p in RUNTIME_SET for p in failed) else 0)


if __name__ == "__main__":
    main()
