#!/usr/bin/env python3
"""Policy parts per call, side by side in one run on one GPU: eager PyTorch,
eager PyTorch replaying a torch.cuda graph, and `ptbundle run` on the
built-in runtime, plain and with --cuda-graph, for each part compiled three
ways by tests/gpu/make_packages.py: ExecuTorch's options (Triton-only GEMMs
and convolutions, "et"), the same with ATen's cuBLAS/cuDNN allowed ("aten"),
and max_autotune off, where every GEMM and convolution goes to cuBLAS/cuDNN
and compiling takes seconds ("default"); with --ways, also PyTorch's defaults
("pytorch_nolibtorch" on the built-in runtime; "pytorch", linked to LibTorch,
where the ptbundle given was built with LibTorch, on its LibTorch runtime).
Beside them, PyTorch's own runner (torch._inductor.aoti_load_package)
on the same .pt2, in a child process so that its crash costs only its
column; where it cannot load that package (PyTorch's runner needs a library
linked to LibTorch), it runs <model>-pytorch.pt2, the same model compiled
with PyTorch's defaults, and the cell says so. TF32 off everywhere. Prints
one row per package with the medians (CUDA events, microseconds) and the
ratios eager / ptbundle and PyTorch's runner / ptbundle (above 1: ptbundle
is faster), then the speed goals.

  bench_policy.py --ptbundle BUILD/apps/ptbundle [--packages DIR] [--iterations N] [--ways W,...]
                  [--markdown docs/performance.md] [--readme README.md] [MODEL ...]

MODEL: names of tests/gpu/policy_models.py (default: the convs and linears
parts, resnet18, act, and the launch-bound mlp_head and flow). With
--packages DIR holding <model>-<way>.pt2 from an earlier make_packages run,
nothing is compiled. --markdown writes the table, with the GPU, driver,
PyTorch version and date of the run, to that file; --readme also replaces
the short table between README's "performance" markers.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gpu"))

HEAVY = ["convs", "linears", "resnet18", "act"]
LAUNCH_BOUND = ["mlp_head", "flow"]
HALF = ["resnet18_fp16", "resnet18_bf16", "act_fp16", "act_bf16"]  # compute-bound like HEAVY
WAYS = ["et", "aten", "default"]


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def time_calls(call, iterations, warmup=20):
    import torch

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    for start, end in zip(starts, ends):
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return median([s.elapsed_time(e) * 1000 for s, e in zip(starts, ends)])


def eager(name, iterations):
    """(a function that times eager's plain call in us, eager with a captured
    torch.cuda graph us or None). The plain call is timed again beside each
    ptbundle measurement and its best median kept: eager's host launches vary
    from run to run far more than its graph replays or ptbundle's calls."""
    import torch
    import policy_models

    module = policy_models.make_module(name)
    inputs = policy_models.make_inputs(name)

    def plain():
        with torch.inference_mode():
            return time_calls(lambda: module(*inputs), iterations)

    with torch.inference_mode():
        graphed = None
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    module(*inputs)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                module(*inputs)
            graphed = time_calls(graph.replay, iterations)
        except Exception as error:  # a part eager PyTorch cannot capture: say so, go on
            print(f"bench_policy: {name}: eager CUDA graph: {error}", file=sys.stderr)
    return plain, graphed


def ptbundle(cli, package, inputs, iterations, graph):
    """ptbundle's median us, or None with the reason on stderr."""
    args = [cli, "run", package, "--iterations", str(iterations), "--json"]
    for i, path in enumerate(inputs):
        args += ["--input", f"{i}={path}"]
    if graph:
        args.append("--cuda-graph")
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {}
    timing = report.get("timing") or {}
    if done.returncode != 0 or "median_ms" not in timing:
        reason = (report.get("error") or {}).get("message") or done.stderr.strip()[-300:]
        print(f"bench_policy: {os.path.basename(package)}{' --cuda-graph' if graph else ''}: {reason}", file=sys.stderr)
        return None
    if graph and not (report.get("cuda_graph") or {}).get("active"):
        print(f"bench_policy: {os.path.basename(package)}: no graph: {report['cuda_graph'].get('why_not')}",
              file=sys.stderr)
    return timing["median_ms"] * 1000


# Times PyTorch's runner on one package: prints its median per call in us.
AOTI_CHILD = """
import sys
import numpy as np, torch
package, iterations = sys.argv[1], int(sys.argv[2])
def load(path):
    array = np.load(path)
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:  # bfloat16, saved as ml_dtypes does
        return torch.from_numpy(array.view(np.uint16).copy()).view(torch.bfloat16).cuda()
    return torch.from_numpy(array).cuda()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
xs = [load(p) for p in sys.argv[3:]]
runner = torch._inductor.aoti_load_package(package)
for _ in range(20):
    runner(*xs)
torch.cuda.synchronize()
starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
for start, end in zip(starts, ends):
    start.record()
    runner(*xs)
    end.record()
torch.cuda.synchronize()
times = sorted(s.elapsed_time(e) * 1000 for s, e in zip(starts, ends))
print(times[len(times) // 2])
"""


def pytorch_runner(package, inputs, iterations):
    """PyTorch's runner's median us on `package`, or None with the reason on stderr."""
    try:
        done = subprocess.run([sys.executable, "-c", AOTI_CHILD, package, str(iterations)] + inputs,
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        print(f"bench_policy: {os.path.basename(package)}: PyTorch's runner: timed out", file=sys.stderr)
        return None
    if done.returncode != 0:
        # The last line that names an error, else the last line: PyTorch's
        # loader warns after some failures, and a crash prints nothing.
        lines = done.stderr.strip().splitlines()
        errors = [line for line in lines if "Error" in line]
        last = (errors or lines or [""])[-1][-300:]
        print(f"bench_policy: {os.path.basename(package)}: PyTorch's runner: exit {done.returncode}: {last}",
              file=sys.stderr)
        return None
    return float(done.stdout.strip().splitlines()[-1])


# What each model is, for the Markdown table.
DESCRIPTIONS = {
    "resnet18": "ResNet18, 1x3x224x224",
    "act": "ACT-shaped (ResNet18 + 3 transformer blocks)",
    "resnet18_fp16": "ResNet18, 1x3x224x224, float16",
    "resnet18_bf16": "ResNet18, 1x3x224x224, bfloat16",
    "act_fp16": "ACT-shaped, float16",
    "act_bf16": "ACT-shaped, bfloat16",
    "lstm": "LSTM policy, 2 layers of 128, 32 steps",
    "convs": "4 convolutions, 1x3x224x224",
    "linears": "2 Linear layers, 512x1024",
    "flow": "flow matching, 10 steps of an MLP",
    "mlp_head": "MLP head, 16x64",
    "int4": "int4 weight-only Linear",
}
WAY_NAMES = {"default": "max_autotune off", "aten": "max-autotune, ATen allowed", "et": "Triton-only (ExecuTorch's)"}
README_BEGIN, README_END = "<!-- performance: begin (bench/bench_policy.py --readme) -->", "<!-- performance: end -->"


def run_description(torch):
    """GPU, driver, PyTorch and CUDA versions and the date, for the Markdown header."""
    import datetime

    driver = "unknown"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                                capture_output=True, text=True, check=True).stdout.strip() or driver
    except (OSError, subprocess.CalledProcessError):
        pass
    return (f"{torch.cuda.get_device_name()}, driver {driver}, PyTorch {torch.__version__} (CUDA {torch.version.cuda}), "
            f"{datetime.date.today().isoformat()}")


def markdown_rows(results, short):
    """Table rows: every package, or (short) the max_autotune-off packages."""
    rows = []
    for (model, way), (plain, graphed, runner, mine, mine_graph) in results.items():
        if short and way != "default":
            continue
        name = f"{DESCRIPTIONS.get(model, model)}, {WAY_NAMES.get(way, way)}"
        runner_us, runner_of = runner
        runner_cell = us(runner_us) + (f" ({runner_of})" if runner_us and runner_of else "")
        rows.append(f"| {name} | {us(plain)} | {us(graphed)} | {runner_cell} | {us(mine)} | {us(mine_graph)} | "
                    f"{ratio(plain, mine)} | {ratio(plain, mine_graph)} | {ratio(runner_us, mine)} |")
    return rows


TABLE_HEAD = ["| part | eager | eager, CUDA graph | PyTorch's runner | ptbundle | ptbundle, CUDA graph | "
              "eager / ptbundle | eager / ptbundle with graph | PyTorch's runner / ptbundle |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]


def write_section(path, name, text):
    """Replaces the section of Markdown file `path` between "<!-- NAME: begin -->"
    and "<!-- NAME: end -->" (appends it where there is none), as each
    benchmark writes its own section of docs/performance.md
    (bench_util.h's write_markdown_section)."""
    begin, end = f"<!-- {name}: begin -->\n", f"<!-- {name}: end -->\n"
    try:
        with open(path) as f:
            document = f.read()
    except FileNotFoundError:
        document = ""
    section = begin + text.rstrip("\n") + "\n" + end
    start = document.find(begin)
    stop = document.find(end, start) if start >= 0 else -1
    if start >= 0 and stop >= 0:
        document = document[:start] + section + document[stop + len(end):]
    else:
        document = document.rstrip("\n") + ("\n\n" if document else "") + section
    with open(path + ".tmp", "w") as f:
        f.write(document)
    os.replace(path + ".tmp", path)


def write_markdown(path, results, run, iterations, command):
    write_section(path, "bench_policy", "\n".join([
        "## Policy parts on the GPU",
        "",
        "Written by `bench/bench_policy.py` on a machine with an NVIDIA GPU and PyTorch (DEVELOPERS.md,",
        "\"The GPU tier\"):",
        "",
        f"    {command}",
        "",
        f"Run: {run}. Medians of {iterations} calls in microseconds, float32 with TF32 off. Eager PyTorch is",
        "timed before and after each package and its best median kept. PyTorch's runner is",
        "`torch._inductor.aoti_load_package` on the same package; where it cannot load it, on the package the",
        "cell names (the same model compiled with PyTorch's defaults). Above 1 in the last three columns:",
        "ptbundle is faster.",
        "",
        *TABLE_HEAD,
        *markdown_rows(results, short=False),
    ]))


def update_readme(path, results, run):
    with open(path) as f:
        text = f.read()
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"bench_policy: {path} has no performance markers")
    block = "\n".join([README_BEGIN, f"On {run} (microseconds per call; more in docs/performance.md):", "",
                       *TABLE_HEAD, *markdown_rows(results, short=True), README_END])
    start, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    with open(path, "w") as f:
        f.write(text[:start] + block + text[end:])


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def us(value):
    return f"{value:.1f}" if value else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ptbundle", required=True)
    parser.add_argument("--packages")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--ways", default=",".join(WAYS),
                        help="comma-separated compile ways of make_packages.py; default: et,aten,default")
    parser.add_argument("--markdown", help="write the table, with the run's GPU, driver, PyTorch and date, here")
    parser.add_argument("--readme", help="also replace the short table between this README's performance markers")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    ways = args.ways.split(",")
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    models = args.models or HEAVY + LAUNCH_BOUND
    folder = args.packages or tempfile.mkdtemp(prefix="bench_policy.")
    wanted = [f"{m}-{w}" for m in models for w in ways]
    missing = [p for p in wanted if not os.path.exists(os.path.join(folder, p + ".pt2"))]
    if missing and not args.packages:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "gpu", "make_packages.py"), folder] + missing,
                       check=False, stdout=sys.stderr)
    print(f"bench_policy: {torch.cuda.get_device_name()}, torch {torch.__version__}, TF32 off, "
          f"medians of {args.iterations} calls in microseconds; eager: the best of its medians timed before and "
          f"after each package's runs")
    header = ["package", "eager", "eager+graph", "pytorch-runner", "ptbundle", "ptbundle+graph", "eager/ptb",
              "eager/ptb+graph", "eager+graph/ptb+graph", "runner/ptb"]
    print("  ".join(f"{h:>14}" if i else f"{h:<16}" for i, h in enumerate(header)))
    results = {}
    for model in models:
        samples = []
        try:
            measure, graphed = eager(model, args.iterations)
            samples.append(measure())
        except Exception as error:
            # Eager failing for one part (a capture that failed before it can
            # leave torch's generator unusable) costs that part's eager
            # columns, not the rest of the table.
            print(f"bench_policy: {model}: eager: {error}", file=sys.stderr)
            measure, graphed = None, None
        for way in ways:
            stem = os.path.join(folder, f"{model}-{way}")
            if not os.path.exists(stem + ".pt2"):
                print(f"{model}-{way:<10} not compiled (make_packages says why)")
                continue
            with open(stem + ".json") as f:
                count = json.load(f).get("inputs", 1)
            inputs = [f"{stem}.in{i}.npy" for i in range(count)]
            mine = ptbundle(args.ptbundle, stem + ".pt2", inputs, args.iterations, False)
            mine_graph = ptbundle(args.ptbundle, stem + ".pt2", inputs, args.iterations, True)
            runner = (pytorch_runner(stem + ".pt2", inputs, args.iterations), None)
            fallback = os.path.join(folder, f"{model}-pytorch.pt2")
            if runner[0] is None and way != "pytorch" and os.path.exists(fallback):
                runner = (pytorch_runner(fallback, inputs, args.iterations), f"{model}-pytorch.pt2")
            plain = None
            if measure:
                samples.append(measure())
                plain = min(samples)
            results[(model, way)] = (plain, graphed, runner, mine, mine_graph)
            row = [f"{model}-{way}", us(plain), us(graphed), us(runner[0]), us(mine), us(mine_graph),
                   ratio(plain, mine), ratio(plain, mine_graph), ratio(graphed, mine_graph), ratio(runner[0], mine)]
            print("  ".join(f"{c:>14}" if i else f"{c:<16}" for i, c in enumerate(row)), flush=True)
    if args.markdown or args.readme:
        run = run_description(torch)
        command = "python3 bench/bench_policy.py " + " ".join(sys.argv[1:])
        if args.markdown:
            write_markdown(args.markdown, results, run, args.iterations, command)
        if args.readme:
            update_readme(args.readme, results, run)
    # The speed goals. Packages that let cuBLAS/cuDNN serve (every way but
    # et): plain at least as fast as eager on the heavy parts; with graphs
    # 1.1x eager on the compute-bound convs and linears, 2x on the rest.
    # Triton-only (et) packages: graphs never slower than plain.
    # Against PyTorch's runner: ptbundle at or above it on every row it ran.
    verdicts = []
    for (model, way), (plain, graphed, (runner, _), mine, mine_graph) in results.items():
        if runner:
            # 2% for the noise between two processes' medians.
            verdicts.append((f"{model}-{way} >= PyTorch's runner ({ratio(runner, mine)}x)",
                             bool(mine) and mine <= 1.02 * runner))
        if way == "et":
            if mine and mine_graph:
                # 2% for the noise between two runs of one program.
                verdicts.append((f"{model}-et graph <= plain ({us(mine_graph)} / {us(mine)} us)",
                                 mine_graph <= 1.02 * mine))
            continue
        if model in HEAVY + HALF:
            verdicts.append((f"{model}-{way} plain >= eager ({ratio(plain, mine)}x)", bool(mine and plain) and plain / mine >= 1.0))
        want = 1.1 if model in ("convs", "linears") else 2.0
        verdicts.append((f"{model}-{way} graph >= {want}x eager ({ratio(plain, mine_graph)}x)",
                         bool(mine_graph and plain) and plain / mine_graph >= want))
    for text, ok in verdicts:
        print(f"goal {text}: {'ok' if ok else 'MISSED'}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
