"""Per-call latency of the fixtures' MLP in eager PyTorch, for bench_run.

The model is the one ../shared/fixtures/aoti/mlp_et.pt2 was compiled from
(Linear 16->32, ReLU, Linear 32->8 without bias, ReLU; input float32 [4, 16]),
timed the way bench_run times the compiled library: CUDA events around each
call on the current stream, inputs already on the GPU, after a warm-up.
Prints the median in microseconds, for `bench_run --eager-us`.
"""
import statistics
import sys

import torch


def main() -> None:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8, bias=False), torch.nn.ReLU()
    ).cuda().eval()
    x = torch.randn(4, 16, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    with torch.inference_mode():
        for _ in range(200):
            model(x)
        for start, end in zip(starts, ends):
            start.record()
            model(x)
            end.record()
    torch.cuda.synchronize()
    times_us = [start.elapsed_time(end) * 1000 for start, end in zip(starts, ends)]
    print(f"{statistics.median(times_us):.2f}")


if __name__ == "__main__":
    main()
