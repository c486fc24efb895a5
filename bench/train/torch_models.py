#!/usr/bin/env python3
"""PyTorch's whole training step (forward, loss, backward, Adam) on the CPU for seed 003's deblurring net
(examples/deblur: batch 16 of 256x256 patches, mae) and seed 004's segmentation net
(examples/segmentation: batch 3 of 512x512 images, 32 classes, cross entropy from the logits), the
peers of build/bench/train_step_time on the same specs: the same layers, batch_norm with Keras' momentum
and epsilon, random batches made up front, the same threads, eager mode, fp32, or with --precision bf16
the forward pass and the loss under torch.autocast("cpu", dtype=torch.bfloat16) (the peer of
`precision = mixed_bf16`).

  python bench/train/torch_models.py deblur|segmentation --threads 2 [--steps 3] [--warmup 1] [--channels-last]
                                     [--precision fp32|bf16]

Prints one line, then `RESULT <median ms> <fastest ms> <median CPU ms>`.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, k, stride=1):
    # Keras' batch_norm(momentum = 0.99, epsilon = 1e-3) is PyTorch's momentum 0.01.
    return [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2), nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01)]


class Deblur(nn.Module):
    def __init__(self, filters=64):
        super().__init__()
        f = filters
        self.head = nn.Sequential(*conv_bn(3, f, 7), nn.ReLU(), *conv_bn(f, 2 * f, 3, 2), nn.ReLU(), *conv_bn(2 * f, 4 * f, 3, 2), nn.ReLU())
        self.blocks = nn.ModuleList(nn.Sequential(*conv_bn(4 * f, 4 * f, 3), nn.ReLU(), *conv_bn(4 * f, 4 * f, 3)) for _ in range(6))
        self.tail = nn.Sequential(
            nn.ConvTranspose2d(4 * f, 2 * f, 3, stride=2, padding=1, output_padding=1), nn.BatchNorm2d(2 * f, eps=1e-3, momentum=0.01), nn.ReLU(),
            nn.ConvTranspose2d(2 * f, f, 3, stride=2, padding=1, output_padding=1), nn.BatchNorm2d(f, eps=1e-3, momentum=0.01), nn.ReLU(),
            nn.Conv2d(f, 3, 7, padding=3), nn.Tanh())

    def forward(self, blurred):
        x = self.head(blurred)
        for b in self.blocks:
            x = x + b(x)
        return (blurred + self.tail(x)) / 2


class SegNet(nn.Module):
    def __init__(self, classes=32):
        super().__init__()
        self.full = nn.Sequential(*conv_bn(3, 32, 3), nn.ReLU())
        self.down = nn.Sequential(nn.MaxPool2d(2), *conv_bn(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), *conv_bn(64, 128, 3), nn.ReLU())
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), *conv_bn(128, 64, 3), nn.ReLU(), nn.Upsample(scale_factor=2),
                                *conv_bn(64, 32, 3), nn.ReLU())
        self.logits = nn.Conv2d(64, classes, 1)

    def forward(self, image):
        full = self.full(image)
        return self.logits(torch.cat([self.up(self.down(full)), full], dim=1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=["deblur", "segmentation"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.model == "deblur":
        net, lr = Deblur(), 1e-4
        x = torch.rand(16, 3, 256, 256) * 2 - 1
        y = torch.rand(16, 3, 256, 256) * 2 - 1
        loss_fn = F.l1_loss
    else:
        net, lr = SegNet(), 1e-3
        x = torch.rand(3, 3, 512, 512)
        y = torch.softmax(torch.rand(3, 32, 512, 512), dim=1)  # class probabilities per pixel
        loss_fn = F.cross_entropy
    if a.channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), lr=lr, eps=1e-7)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = loss_fn(net(x).float(), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    wall, cpu = [], []
    for _ in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(wall)
    print(f"PyTorch {torch.__version__} eager {a.precision}, {a.model}, {a.threads} thread(s): {med:.1f} ms per step (median of {a.steps}, "
          f"fastest {min(wall):.1f}, CPU {statistics.median(cpu):.1f} ms)")
    print(f"RESULT {med:.3f} {min(wall):.3f} {statistics.median(cpu):.3f}")


if __name__ == "__main__":
    main()
