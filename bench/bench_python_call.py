"""The Python module's call overhead, side by side in one run on one GPU:
per call, the host time of
  - ptbundle from Python (m(x, out=[y]) on PyTorch CUDA tensors, DLPack),
  - the same call from C (ptb_model_run_timed: the C++ API under the C one),
  - PyTorch's own loader on the same .pt2 (torch._inductor.aoti_load_package),
    in a child process: PyTorch 2.11's loader has crashed on packages compiled
    with ExecuTorch's options (../shared/fixtures/README.md), and a crash
    there must not lose the other figures; --aoti-pt2 names another package
    of the same model compiled with PyTorch's default options instead,
each enqueue only (no synchronization inside the loop), the median of
`--repeats` runs of `--iterations` calls. Prints the overhead of Python over
C (goal: under 5 us) and the ratio to aoti_load_package.

  python3 bench/bench_python_call.py [--pt2 examples/encoder.pt2 --input examples/encoder.in0.npy]
"""

AOTI_CHILD = """
import statistics, sys, time
import numpy as np, torch
pt2, iterations, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
xs = [torch.from_numpy(np.load(p)).cuda() for p in sys.argv[4:]]
runner = torch._inductor.aoti_load_package(pt2)
runner(*xs)
torch.cuda.synchronize()
times = []
for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(iterations):
        runner(*xs)
    times.append((time.perf_counter() - start) / iterations)
    torch.cuda.synchronize()
print(statistics.median(times))
"""

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import ptbundle  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_policy import run_description, write_section  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pt2", default=str(ROOT / "examples" / "encoder.pt2"))
    parser.add_argument("--input", action="append", default=None)
    parser.add_argument("--aoti-pt2", default=None, help="the package aoti_load_package loads (default: --pt2)")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--markdown", help="write the figures, with the run's GPU, driver and PyTorch, here "
                        "(its own section of docs/performance.md)")
    args = parser.parse_args()
    inputs = args.input or [str(ROOT / "examples" / "encoder.in0.npy")]
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("SKIPPED bench_python_call: no %s" % e.name)
        return 0
    if not torch.cuda.is_available():
        print("SKIPPED bench_python_call: no CUDA GPU visible to PyTorch")
        return 0

    folder = pathlib.Path(tempfile.mkdtemp(prefix="ptb-bench-python-"))
    bundle = folder / "bundle"
    # A .pt2 part needs an example; its inputs are the call's, its outputs
    # are left for the wrapper source to state (nothing after ':').
    made = subprocess.run([ptbundle._cli(), "export", "-o", str(bundle), "--part", "part=" + args.pt2,
                           "--example", "part=" + ",".join(inputs) + ":"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if made.returncode != 0:
        print(made.stdout.decode())
        return 1
    m = ptbundle.load(bundle)
    xs = [torch.from_numpy(np.load(p)).cuda() for p in inputs]
    ys = m(*xs)
    ys = list(ys) if isinstance(ys, tuple) else [ys]
    torch.cuda.synchronize()

    def python_call():
        start = time.perf_counter()
        for _ in range(args.iterations):
            m(*xs, out=ys)
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        return elapsed / args.iterations

    call = m.bind(*xs, out=ys)

    def bound_call():
        start = time.perf_counter()
        for _ in range(args.iterations):
            call()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        return elapsed / args.iterations

    def c_call():
        seconds = m.c_call_seconds(*xs, out=ys, iterations=args.iterations)
        torch.cuda.synchronize()
        return seconds

    results = {"python": [], "bound": [], "c": []}
    for _ in range(args.repeats):  # interleaved, so that drift hits both alike
        results["python"].append(python_call())
        results["bound"].append(bound_call())
        results["c"].append(c_call())
    median = {k: statistics.median(v) * 1e6 for k, v in results.items()}
    aoti_pt2 = args.aoti_pt2 or args.pt2
    child = subprocess.run([sys.executable, "-c", AOTI_CHILD, aoti_pt2, str(args.iterations), str(args.repeats)] + inputs,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    aoti = None
    if child.returncode == 0:
        aoti = float(child.stdout.decode().strip().splitlines()[-1]) * 1e6
    print("[gpu] bench_python_call on %s, %s: per call (us, median of %d x %d): python %.2f, C %.2f"
          % (torch.cuda.get_device_name(), pathlib.Path(args.pt2).name, args.repeats, args.iterations,
             median["python"], median["c"]))
    print("[gpu] bench_python_call: python over C %.2f us per call; a binding (m.bind) over C %.2f us (goal < 5)"
          % (median["python"] - median["c"], median["bound"] - median["c"]))
    if aoti is None:
        print("[gpu] bench_python_call: aoti_load_package(%s) failed (exit %d): %s"
              % (pathlib.Path(aoti_pt2).name, child.returncode, child.stderr.decode(errors="replace").strip()[-300:]))
    else:
        print("[gpu] bench_python_call: aoti_load_package(%s) %.2f us per call; python / aoti_load_package %.2fx"
              % (pathlib.Path(aoti_pt2).name, aoti, median["python"] / aoti))
    if args.markdown:
        aoti_row = ("failed (exit %d)" % child.returncode if aoti is None
                    else "%.2f us (python / aoti_load_package %.2fx)" % (aoti, median["python"] / aoti))
        write_section(args.markdown, "bench_python_call", "\n".join([
            "## The Python module's call overhead",
            "",
            "Written by `bench/bench_python_call.py` on %s:" % run_description(torch),
            "",
            "    python3 bench/bench_python_call.py --markdown docs/performance.md",
            "",
            "Host time per call of `%s`, enqueue only, median of %d runs of %d calls, interleaved:"
            % (pathlib.Path(args.pt2).name, args.repeats, args.iterations),
            "",
            "| call | us per call |",
            "| --- | --- |",
            "| Python, `m(x, out=[y])` on PyTorch CUDA tensors (DLPack) | %.2f |" % median["python"],
            "| C, `ptb_model_run_timed` (the C++ API under the C ABI) | %.2f |" % median["c"],
            "| Python, a binding's `call()` (`m.bind(x, out=[y])`, descriptors made once) | %.2f |" % median["bound"],
            "| Python over C | %.2f |" % (median["python"] - median["c"]),
            "| a binding over C (goal: under 5) | %.2f |" % (median["bound"] - median["c"]),
            "| PyTorch's `torch._inductor.aoti_load_package` on %s | %s |" % (pathlib.Path(aoti_pt2).name, aoti_row),
        ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
