#!/usr/bin/env python3
"""PyTorch's whole training step on a GPU (forward, loss, backward, optimizer), the peer of
`pipec run SPEC --device gpu` in bench/train/gpu/run.sh: the same models as bench/train/torch_train.py
(chess) and bench/train/torch_models.py (deblur, segmentation), the same batch, loss and optimizer, fed from
batches made up front on the device (preloaded), eager mode unless --compile.

  python bench/train/torch_gpu.py chess|deblur|segmentation [--precision fp32|bf16] [--tf32] [--compile]
                                  [--steps 50] [--warmup 10] [--batch N] [--size PX]

fp32 runs with TF32 off (cudnn.allow_tf32 = False, matmul precision "highest") unless --tf32; bf16 runs
under torch.autocast(dtype=bfloat16) with f32 master weights, as Keras' mixed_bfloat16. --compile wraps the
model's step in torch.compile(mode="reduce-overhead") (CUDA graphs). Steps are timed with CUDA events
(the median of --steps single-step times after --warmup steps), and the whole run's examples/s from the
host clock around all of them. Prints the settings, one line, then
`RESULT <median ms/step> <fastest ms> <examples/s>`.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_models import Deblur, SegNet  # noqa: E402
from torch_train import ChessNet  # noqa: E402


def make(model, batch, size, dev):
    g = torch.Generator(device=dev).manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, device=dev, generator=g)

    if model == "chess":
        b = batch or 512
        net, lr = ChessNet(), 1e-3
        batches = [(rand(b, 8, 8, 24) * 2 - 1, rand(b, 10), rand(b) - 0.5) for _ in range(4)]

        def loss_of(net, x):
            board, flags, score = x
            return F.mse_loss(net(board, flags).squeeze(1), score)
    elif model == "deblur":
        b, px = batch or 16, size or 256
        net, lr = Deblur(), 1e-4
        batches = [(rand(b, 3, px, px) * 2 - 1, rand(b, 3, px, px) * 2 - 1) for _ in range(2)]

        def loss_of(net, x):
            return F.l1_loss(net(x[0]), x[1])
    else:
        b, px = batch or 3, size or 512
        net, lr = SegNet(), 1e-3
        batches = [(rand(b, 3, px, px), torch.softmax(rand(b, 32, px, px), dim=1)) for _ in range(2)]

        def loss_of(net, x):
            return F.cross_entropy(net(x[0]), x[1])
    return net.to(dev), lr, batches, loss_of, b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=["chess", "deblur", "segmentation"])
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--size", type=int, default=0)
    p.add_argument("--channels-last", action="store_true")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("RESULT - - -  (no CUDA device)")
        return 1
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.set_float32_matmul_precision("high" if a.tf32 else "highest")
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    torch.manual_seed(0)
    net, lr, batches, loss_of, batch = make(a.model, a.batch, a.size, dev)
    if a.channels_last:
        net = net.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), lr=lr, eps=1e-7)

    def fwd_bwd(x):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = loss_of(net, x)
        loss.backward()
        return loss

    body = torch.compile(fwd_bwd, mode="reduce-overhead") if a.compile else fwd_bwd

    def step(i):
        opt.zero_grad(set_to_none=False)
        loss = body(batches[i % len(batches)])
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    start = time.perf_counter()
    for i in range(a.steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        step(i)
        e1.record()
        times.append((e0, e1))
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    ms = [s.elapsed_time(e) for s, e in times]
    med = statistics.median(ms)
    rate = batch * a.steps / elapsed
    print(f"settings: torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, cudnn.allow_tf32 "
          f"{torch.backends.cudnn.allow_tf32}, matmul allow_tf32 {torch.backends.cuda.matmul.allow_tf32}, "
          f"float32_matmul_precision {torch.get_float32_matmul_precision()}")
    print(f"PyTorch {'compiled (reduce-overhead)' if a.compile else 'eager'}, {a.model}, batch {batch}, {a.precision}"
          f"{', TF32' if a.tf32 else ''}: {med:.3f} ms per step (median of {a.steps}, fastest {min(ms):.3f}), "
          f"{rate:.0f} examples/s")
    print(f"RESULT {med:.4f} {min(ms):.4f} {rate:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
