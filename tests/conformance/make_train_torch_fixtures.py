#!/usr/bin/env python3
"""One training step of the chess net of examples/chess written in PyTorch, as a trajectory fixture
(fixtures/train_steps/chess_torch_sgd_momentum.safetensors, the format make_train_fixtures.py describes
at make_trajectories): so a PyTorch benchmark of that net provably trains the same model as pipec.

  pip install torch numpy safetensors && python3 tests/conformance/make_train_torch_fixtures.py

The starting weights and the batch come from the formula of train_formula.py in pipec's layouts (those
of Keras) and are converted to PyTorch's: conv kernels HWIO -> OIHW, dense kernels [in, out] -> [out, in],
and the rows of the first dense kernel reordered from NHWC flatten order (h, w, c) to PyTorch's NCHW
order (c, h, w), since PyTorch flattens the NCHW activation. The board goes in as NCHW. What PyTorch
computes (output, loss, gradients, weights after one SGD step with momentum, whose first step is
Keras' too) is converted back to pipec's layouts and names.
"""
import os

import numpy as np
import torch
from safetensors.numpy import save_file

from train_formula import formula_batch, formula_target, formula_values, sampled

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "train_steps")
BATCH = 8
LR, MOMENTUM = 0.01, 0.9

SPEC = ('source s = tfrecord("unused.tfrecord") { board: f32[8, 8, 24], flags: f32[10], y: f32[1] }\n'
        f"pipeline data = s | batch({BATCH}, drop_remainder = true)\n"
        "model net(board: f32[8, 8, 24], flags: f32[10]) -> f32[1] {\n"
        "  x = board | conv2d(64, 3, padding = same) | relu | conv2d(64, 3, padding = same) | relu\n"
        "  x = concat([flatten(x), flags])\n  x | dense(256) | relu | dense(1) | tanh\n}\n"
        f"train t = {{ data = data, model = net(board, flags), loss = mse(y), optimizer = sgd(lr = {LR}, momentum = {MOMENTUM}), "
        "steps = 1 }\n")

SHAPES = {"conv2d/kernel": (3, 3, 24, 64), "conv2d/bias": (64,), "conv2d_1/kernel": (3, 3, 64, 64), "conv2d_1/bias": (64,),
          "dense/kernel": (8 * 8 * 64 + 10, 256), "dense/bias": (256,), "dense_1/kernel": (256, 1), "dense_1/bias": (1,)}

# Row r of the first dense kernel in NHWC flatten order is (h, w, c) = divmod...; PyTorch's row for the same
# feature is c * 64 + h * 8 + w. NHWC_ROWS[torch_row] = pipec_row.
_h, _w, _c = np.meshgrid(np.arange(8), np.arange(8), np.arange(64), indexing="ij")
_pipec_row = (_h * 8 + _w) * 64 + _c
_torch_row = _c * 64 + _h * 8 + _w
NHWC_ROWS = np.empty(8 * 8 * 64, dtype=np.int64)
NHWC_ROWS[_torch_row.reshape(-1)] = _pipec_row.reshape(-1)


def to_torch(name, v):
    if name.endswith("kernel") and v.ndim == 4:
        return v.transpose(3, 2, 0, 1)  # HWIO -> OIHW
    if name == "dense/kernel":
        v = np.concatenate([v[:4096][NHWC_ROWS], v[4096:]])
    if name.endswith("kernel"):
        return v.T  # [in, out] -> [out, in]
    return v


def to_pipec(name, v):
    if name.endswith("kernel") and v.ndim == 4:
        return v.transpose(2, 3, 1, 0)  # OIHW -> HWIO
    if name.endswith("kernel"):
        v = v.T
    if name == "dense/kernel":
        rows = np.empty_like(v[:4096])
        rows[NHWC_ROWS] = v[:4096]
        v = np.concatenate([rows, v[4096:]])
    return v


class ChessNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv2d = torch.nn.Conv2d(24, 64, 3, padding=1)
        self.conv2d_1 = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.dense = torch.nn.Linear(8 * 8 * 64 + 10, 256)
        self.dense_1 = torch.nn.Linear(256, 1)

    def forward(self, board, flags):
        x = torch.relu(self.conv2d_1(torch.relu(self.conv2d(board))))
        x = torch.cat([torch.flatten(x, 1), flags], dim=1)
        return torch.tanh(self.dense_1(torch.relu(self.dense(x))))


def main():
    torch.manual_seed(0)
    net = ChessNet()
    params = dict(net.named_parameters())
    for name, shape in SHAPES.items():
        layer, kind = name.split("/")
        p = params[f"{layer}.{'weight' if kind == 'kernel' else 'bias'}"]
        with torch.no_grad():
            p.copy_(torch.from_numpy(np.ascontiguousarray(to_torch(name, formula_values(name, shape)))))
    board = formula_batch("board", 0, (BATCH, 8, 8, 24))
    flags = formula_batch("flags", 0, (BATCH, 10))
    y = formula_target(0, (BATCH, 1), 0)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    out = net(torch.from_numpy(board).permute(0, 3, 1, 2).contiguous(), torch.from_numpy(flags))
    loss = torch.nn.functional.mse_loss(out, torch.from_numpy(y))
    opt.zero_grad()
    loss.backward()
    tensors, strides = {}, {}
    tensors["expect:output"] = out.detach().numpy().astype(np.float32)
    tensors["expect:loss"] = np.array(loss.item(), dtype=np.float32).reshape(())
    tensors["expect:losses"] = np.array([loss.item()], dtype=np.float32)
    for name in SHAPES:
        layer, kind = name.split("/")
        p = params[f"{layer}.{'weight' if kind == 'kernel' else 'bias'}"]
        tensors[f"expect:grad:{name}"] = sampled(f"expect:grad:{name}", to_pipec(name, p.grad.numpy()), strides)
    opt.step()
    for name in SHAPES:
        layer, kind = name.split("/")
        p = params[f"{layer}.{'weight' if kind == 'kernel' else 'bias'}"]
        tensors[f"expect:after:{name}"] = sampled(f"expect:after:{name}", to_pipec(name, p.detach().numpy()), strides)
    meta = {"spec": SPEC, "steps": "1", "rtol": "1e-05", "atol": "1e-06", "classes": "0",
            "description": "the chess net in PyTorch (layouts converted), one SGD step with momentum",
            "strides": ";".join(f"{k}={v}" for k, v in sorted(strides.items()))}
    os.makedirs(OUT, exist_ok=True)
    save_file(tensors, os.path.join(OUT, "chess_torch_sgd_momentum.safetensors"), metadata=meta)
    print(f"chess_torch_sgd_momentum: loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
