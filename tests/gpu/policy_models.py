"""Programs shaped like the parts of real robot policies, for the GPU tests and
benchmarks of the built-in runtime. Each entry says how to build the module,
its example inputs, and what kind of check its outputs get:

  exact     compared with eager PyTorch on the same GPU (TF32 off)
  sampler   output 0 compared with eager; the others draw noise and are
            checked by their statistics (finite, mean and spread)
  dynamic   exported with a symbolic batch dimension, run at several sizes

Used by make_packages.py (compiles them) and bench/gpu_policies.py (times
eager PyTorch beside ptbundle). Shapes follow what LeRobot's ACT and
Diffusion Policy and a flow-matching head use, scaled down where the shape
does not change which kernels run.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Mlp(nn.Module):
    def __init__(self, sizes, act=nn.ReLU):
        super().__init__()
        layers = []
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(act())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def resnet18():
    import torchvision

    return torchvision.models.resnet18(weights=None)


class Act(nn.Module):
    """ACT-shaped: ResNet18 features, a transformer encoder over the image
    tokens and the robot state, and a decoder of 100 action queries.
    The encoder's attention asks for no weights (scaled_dot_product_attention);
    the decoder's keeps nn.MultiheadAttention's default (need_weights=True, the
    explicit softmax(QK^T)V with bmm), as LeRobot's ACT calls it."""

    def __init__(self, d=256, heads=8, chunk=100, action=14, state=14, layers=3):
        super().__init__()
        import torchvision

        trunk = torchvision.models.resnet18(weights=None)
        self.backbone = nn.Sequential(*list(trunk.children())[:-2])
        self.proj = nn.Conv2d(512, d, 1)
        self.state = nn.Linear(state, d)
        self.pos = nn.Parameter(torch.randn(1, 50, d) * 0.02)
        self.enc = nn.ModuleList(EncoderBlock(d, heads) for _ in range(layers))
        self.queries = nn.Parameter(torch.randn(1, chunk, d) * 0.02)
        self.cross = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.head = Mlp([d, d, action], act=nn.GELU)

    def forward(self, image, state):
        feat = self.proj(self.backbone(image))  # [B, d, 7, 7]
        tokens = feat.flatten(2).transpose(1, 2)  # [B, 49, d]
        tokens = torch.cat([self.state(state).unsqueeze(1), tokens], dim=1) + self.pos
        for block in self.enc:
            tokens = block(tokens)
        q = self.queries.expand(image.shape[0], -1, -1)
        out, _ = self.cross(q, tokens, tokens)
        return self.head(self.norm(out + q))


class EncoderBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.n1 = nn.LayerNorm(d)
        self.n2 = nn.LayerNorm(d)
        self.mlp = Mlp([d, 4 * d, d], act=nn.GELU)

    def forward(self, x):
        h = self.n1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.n2(x))


class ResBlock1d(nn.Module):
    def __init__(self, cin, cout, cond):
        super().__init__()
        self.c1 = nn.Conv1d(cin, cout, 5, padding=2)
        self.c2 = nn.Conv1d(cout, cout, 5, padding=2)
        self.g1 = nn.GroupNorm(8, cout)
        self.g2 = nn.GroupNorm(8, cout)
        self.film = nn.Linear(cond, 2 * cout)
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, c):
        h = F.mish(self.g1(self.c1(x)))
        scale, bias = self.film(c).unsqueeze(-1).chunk(2, dim=1)
        h = h * (1 + scale) + bias
        h = F.mish(self.g2(self.c2(h)))
        return h + self.skip(x)


class UNet1dStep(nn.Module):
    """One DDPM step of a Diffusion-Policy-shaped 1-D conv U-Net: the
    denoised mean (deterministic, output 0) and the next sample drawn with
    noise made inside the program (output 1)."""

    def __init__(self, action=14, horizon=16, cond=64, widths=(64, 128, 256)):
        super().__init__()
        self.time = Mlp([1, 128, cond], act=nn.Mish)
        c = cond * 2
        self.down = nn.ModuleList()
        ch = action
        for w in widths:
            self.down.append(nn.ModuleList([ResBlock1d(ch, w, c), nn.Conv1d(w, w, 3, stride=2, padding=1)]))
            ch = w
        self.mid = ResBlock1d(ch, ch, c)
        self.up = nn.ModuleList()
        for w in reversed(widths):
            self.up.append(nn.ModuleList([nn.ConvTranspose1d(ch, ch, 4, stride=2, padding=1), ResBlock1d(ch + w, w, c)]))
            ch = w
        self.out = nn.Conv1d(ch, action, 1)

    def forward(self, x, t, obs):
        c = torch.cat([self.time(t), obs], dim=-1)
        skips = []
        h = x
        for block, down in self.down:
            h = block(h, c)
            skips.append(h)
            h = down(h)
        h = self.mid(h, c)
        for up, block in self.up:
            h = up(h)
            h = block(torch.cat([h, skips.pop()], dim=1), c)
        eps = self.out(h)
        mean = (x - 0.1 * eps) / math.sqrt(0.9)
        return mean, mean + 0.05 * torch.randn_like(mean)


class FlowLoop(nn.Module):
    """Flow matching: 10 Euler steps of a 3-layer MLP velocity field over an
    action chunk, from noise given as an input (a launch-bound part)."""

    def __init__(self, action=14, chunk=50, obs=64, width=256, steps=10):
        super().__init__()
        self.steps = steps
        self.field = Mlp([action + obs + 1, width, width, action], act=nn.SiLU)

    def forward(self, noise, obs):
        x = noise
        b, n, _ = x.shape
        o = obs.unsqueeze(1).expand(b, n, -1)
        dt = 1.0 / self.steps
        for i in range(self.steps):
            t = torch.full((b, n, 1), i * dt, device=x.device, dtype=x.dtype)
            x = x + dt * self.field(torch.cat([x, o, t], dim=-1))
        return x


class MoeRouter(nn.Module):
    """A bf16 mixture-of-experts layer: softmax router, top-2, weights
    scattered into a dense [tokens, experts] table, experts as one wide
    Linear."""

    def __init__(self, d=256, experts=8, hidden=256):
        super().__init__()
        self.experts = experts
        self.hidden = hidden
        self.gate = nn.Linear(d, experts, bias=False)
        self.up = nn.Linear(d, experts * hidden)
        self.down = nn.Linear(hidden, d)

    def forward(self, x):
        probs = torch.softmax(self.gate(x).float(), dim=-1)
        weights, index = torch.topk(probs, 2, dim=-1)
        dense = torch.zeros(x.shape[0], self.experts, dtype=x.dtype, device=x.device)
        dense = dense.scatter(1, index, weights.to(x.dtype))
        h = F.silu(self.up(x)).view(x.shape[0], self.experts, self.hidden)
        mixed = (h * dense.unsqueeze(-1)).sum(dim=1)
        return self.down(mixed), index


class GroupedMm(nn.Module):
    """bf16 experts through torch._grouped_mm: tokens sorted by expert,
    offsets as the end of each group."""

    def __init__(self, d=256, experts=8, hidden=512):
        super().__init__()
        self.w = nn.Parameter(torch.randn(experts, d, hidden) * 0.05)

    def forward(self, x, offsets):
        return torch._grouped_mm(x, self.w, offs=offsets)


class MaskedCopy(nn.Module):
    def forward(self, x, mask):
        y = x.clone()
        y[mask] = x[mask] * 2
        return y


class IndexPutAccumulate(nn.Module):
    def forward(self, base, index, values):
        return base.index_put((index,), values, accumulate=True)


class Scatters(nn.Module):
    def forward(self, x, index, src):
        a = x.scatter(1, index, src)
        b = x.scatter(1, index, 3.0)
        c = x.scatter_reduce(1, index, src, "sum", include_self=True)
        d = x.scatter_reduce(1, index, src, "amax", include_self=False)
        e = x.scatter_reduce(1, index, src, "mean", include_self=True)
        f = x.scatter_reduce(1, index, src, "prod", include_self=True)
        g = x.scatter_reduce(1, index, src, "amin", include_self=False)
        return a, b, c, d, e, f, g


class Int4Linear(nn.Module):
    """Weight-only int4 Linear in the tinygemm layout (what torchao's
    int4_weight_only writes): aten._weight_int4pack_mm on bf16 activations."""

    def __init__(self, k=512, n=256, group=128, inner_k_tiles=8):
        super().__init__()
        self.group = group
        q = torch.randint(0, 16, (n, k), dtype=torch.int32)
        scales = torch.rand(k // group, n, dtype=torch.float32) * 0.02 + 0.005
        zeros = (torch.rand(k // group, n, dtype=torch.float32) - 0.5) * 0.1
        self.register_buffer("q", q)
        self.register_buffer("scales_and_zeros", torch.stack([scales, zeros], dim=-1).to(torch.bfloat16))
        self.inner_k_tiles = inner_k_tiles

    def pack(self):
        q = self.q
        packed_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack(packed_u8, self.inner_k_tiles))
        del self.q

    def forward(self, x):
        return torch.ops.aten._weight_int4pack_mm(x, self.packed, self.group, self.scales_and_zeros)


class Sdpa(nn.Module):
    def __init__(self, causal=False, masked=False, scale=None):
        super().__init__()
        self.causal = causal
        self.masked = masked
        self.scale = scale

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask if self.masked else None,
                                              is_causal=self.causal, scale=self.scale)


class ConvStack(nn.Module):
    """Four convolutions on a 224x224 image (the repro pack's conv case)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 64, 7, stride=2, padding=3)
        self.c2 = nn.Conv2d(64, 128, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(128, 256, 3, stride=2, padding=1)
        self.c4 = nn.Conv2d(256, 256, 3, padding=1)

    def forward(self, x):
        return self.c4(F.relu(self.c3(F.relu(self.c2(F.relu(self.c1(x)))))))


class ConvVariants(nn.Module):
    """Strided, dilated, grouped and transposed convolutions in 1, 2 and 3 d."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Conv1d(8, 16, 3, stride=2, dilation=2, padding=2)
        self.g2 = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.s2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2)
        self.t2 = nn.ConvTranspose2d(32, 8, 4, stride=2, padding=1)
        self.c3 = nn.Conv3d(4, 8, 3, padding=1)
        self.t1 = nn.ConvTranspose1d(16, 8, 3, stride=2, padding=1, output_padding=1)

    def forward(self, a, b, c):
        x1 = self.d1(a)
        y = self.t2(self.s2(self.g2(b)))
        z = self.c3(c)
        return self.t1(x1), y, z


class Bmm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(4, 32, 48) * 0.1)

    def forward(self, a, b):
        return torch.bmm(a, b) + self.bias, torch.baddbmm(self.bias, a, b, beta=0.5, alpha=2.0)


class SortTopk(nn.Module):
    def forward(self, x):
        values, index = torch.sort(x, dim=-1, descending=True, stable=True)
        top, top_index = torch.topk(x, 5, dim=-1)
        low, low_index = torch.topk(x, 3, dim=0, largest=False)
        return values, index, top, top_index, low, low_index


class Nonzero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0.5)


class ItemNarrow(nn.Module):
    def forward(self, x, count):
        n = count.item()
        torch._check(n >= 0)
        torch._check(n <= x.shape[0])
        return x[:n] * 2


class Random(nn.Module):
    def forward(self, x):
        return (x * 2, torch.rand_like(x), torch.randn_like(x),
                torch.randint(0, 10, (64, 64), device=x.device))


class LstmPolicy(nn.Module):
    """A recurrent policy: two layers of nn.LSTM(64, 128) over 32 steps of a
    batch of 4 (sequence first), then a Linear head on every step. Inductor
    unrolls the steps: each one's products read the previous step's hidden
    state out of the sequence buffer it writes."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 128, num_layers=2)
        self.head = nn.Linear(128, 14)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def _f(*shape, dtype=torch.float32):
    return ("randn", shape, dtype)


def _i(low, high, *shape):
    return ("randint", shape, torch.int64, low, high)


# name: (constructor, inputs, check, modes, extra)
#   inputs: ("randn", shape, dtype) | ("randint", shape, dtype, low, high) |
#           ("mask", shape) | ("offsets", ...) | ("value", tensor)
#   modes: "et" (ExecuTorch's options: Triton-only GEMM/conv), "aten"
#          (cuBLAS/cuDNN allowed), "default" (no autotuning: ATen for every
#          GEMM and convolution), "pytorch" (PyTorch's defaults: kernel files,
#          weights in the library, linked to LibTorch) and
#          "pytorch_nolibtorch" (the same with link_libtorch=False); see
#          make_packages.py's WAYS
MODELS = {
    "resnet18": (resnet18, [_f(1, 3, 224, 224)], "exact", ("et", "aten", "default", "pytorch", "pytorch_nolibtorch"), {}),
    "act": (Act, [_f(1, 3, 224, 224), _f(1, 14)], "exact", ("et", "aten", "default", "pytorch", "pytorch_nolibtorch"), {}),
    # Half-precision versions, for the comparison with PyTorch's own runner.
    "resnet18_fp16": (resnet18, [_f(1, 3, 224, 224, dtype=torch.float16)], "exact",
                      ("default", "pytorch", "pytorch_nolibtorch"), {"dtype": torch.float16}),
    "resnet18_bf16": (resnet18, [_f(1, 3, 224, 224, dtype=torch.bfloat16)], "exact",
                      ("default", "pytorch", "pytorch_nolibtorch"), {"dtype": torch.bfloat16}),
    "act_fp16": (Act, [_f(1, 3, 224, 224, dtype=torch.float16), _f(1, 14, dtype=torch.float16)], "exact",
                 ("default", "pytorch", "pytorch_nolibtorch"), {"dtype": torch.float16}),
    "act_bf16": (Act, [_f(1, 3, 224, 224, dtype=torch.bfloat16), _f(1, 14, dtype=torch.bfloat16)], "exact",
                 ("default", "pytorch", "pytorch_nolibtorch"), {"dtype": torch.bfloat16}),
    "unet1d": (UNet1dStep, [_f(1, 14, 16), _f(1, 1), _f(1, 64)], "sampler", ("aten",), {}),
    "flow": (FlowLoop, [_f(1, 50, 14), _f(1, 64)], "exact", ("et", "aten", "default"), {}),
    "moe": (MoeRouter, [_f(64, 256, dtype=torch.bfloat16)], "exact", ("et", "aten"), {"dtype": torch.bfloat16}),
    "grouped": (GroupedMm, [_f(128, 256, dtype=torch.bfloat16), ("value", [16, 32, 48, 64, 80, 96, 112, 128])],
                "exact", ("aten",), {"dtype": torch.bfloat16}),
    "masked": (MaskedCopy, [_f(64, 32), ("mask", (64, 32))], "exact", ("et",), {}),
    "index_put": (IndexPutAccumulate, [_f(32, 16), _i(0, 32, 100), _f(100, 16)], "exact", ("et",), {}),
    "scatter": (Scatters, [_f(16, 32), ("perm", (16, 8), 32), _f(16, 8)], "exact", ("et",), {}),
    "int4": (Int4Linear, [_f(16, 512, dtype=torch.bfloat16)], "exact", ("et",), {"int4": True}),
    # Exported with batch >= 1, but Inductor specializes sizes 0 and 1: the
    # compiled program checks batch >= 2 and refuses 1 (the library says so).
    "dynmlp": (lambda: Mlp([64, 128, 64, 32]), [_f(16, 64)], "dynamic", ("et", "aten"), {"batch": (1, 256, [2, 37, 256])}),
    "sdpa": (lambda: Sdpa(masked=True, scale=0.3), [_f(2, 8, 77, 64), _f(2, 8, 77, 64), _f(2, 8, 77, 64), _f(2, 1, 77, 77)],
             "exact", ("et",), {}),
    "sdpa_causal": (lambda: Sdpa(causal=True), [_f(2, 8, 64, 64), _f(2, 8, 64, 64), _f(2, 8, 64, 64)], "exact", ("et",), {}),
    "sdpa_bf16": (lambda: Sdpa(causal=True), [_f(2, 8, 128, 64, dtype=torch.bfloat16)] * 3, "exact", ("et",),
                  {"dtype": torch.bfloat16}),
    "convs": (ConvStack, [_f(1, 3, 224, 224)], "exact", ("et", "aten", "default"), {}),
    "linears": (lambda: Mlp([1024, 1024, 1024]), [_f(512, 1024)], "exact", ("et", "aten", "default"), {}),
    "conv_variants": (ConvVariants, [_f(2, 8, 33), _f(2, 16, 20, 20), _f(1, 4, 6, 8, 8)], "exact", ("aten", "default"), {}),
    "bmm": (Bmm, [_f(4, 32, 16), _f(4, 16, 48)], "exact", ("aten", "default"), {}),
    "sort": (SortTopk, [_f(16, 40)], "exact", ("et",), {}),
    "nonzero": (Nonzero, [("uniform", (32, 16))], "exact", ("et",), {}),
    "item": (ItemNarrow, [_f(32, 8), ("value", 5)], "exact", ("et",), {}),
    "random": (Random, [_f(64, 64)], "sampler", ("et",), {}),
    "lstm": (LstmPolicy, [_f(32, 4, 64)], "exact", ("et", "aten", "default", "pytorch", "pytorch_nolibtorch"), {}),
    "mlp_head": (lambda: Mlp([64, 256, 256, 14]), [_f(16, 64)], "exact", ("et", "aten", "default", "pytorch", "pytorch_nolibtorch"), {}),
}


def make_inputs(name, device="cuda", seed=20261203):
    """The example inputs of a model, the same on every machine for a seed."""
    _, specs, _, _, _ = MODELS[name]
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for spec in specs:
        kind = spec[0]
        if kind == "randn":
            inputs.append(torch.randn(*spec[1], generator=gen).to(spec[2]))
        elif kind == "uniform":
            inputs.append(torch.rand(*spec[1], generator=gen))
        elif kind == "randint":
            inputs.append(torch.randint(spec[3], spec[4], spec[1], generator=gen, dtype=spec[2]))
        elif kind == "perm":  # distinct indices per row: scatter's result is then defined
            rows, cols = spec[1]
            inputs.append(torch.stack([torch.randperm(spec[2], generator=gen)[:cols] for _ in range(rows)]))
        elif kind == "mask":
            inputs.append(torch.rand(*spec[1], generator=gen) > 0.5)
        elif kind == "value":
            inputs.append(torch.tensor(spec[1], dtype=torch.int32 if isinstance(spec[1], list) else torch.int64))
        else:
            raise ValueError(kind)
    return [t.to(device) for t in inputs]


def make_module(name, device="cuda", seed=20261203):
    build, _, _, _, extra = MODELS[name]
    torch.manual_seed(seed)
    module = build()
    if extra.get("int4"):
        module = module.to(device)
        module.pack()
    module = module.to(device).eval()
    if "dtype" in extra and not extra.get("int4"):
        module = module.to(extra["dtype"])
    return module
