"""10,000 batches through numpy (and torch when installed) leave memory flat: no tensor, buffer or
capsule is kept."""
import gc

import numpy as np

import pipec


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_rss_stays_flat_over_10000_batches(chess_spec):
    try:
        import torch
    except ImportError:
        torch = None
    gc.collect()
    live = pipec._pipec.live_tensors()
    total = 0.0
    with chess_spec.pipeline("train", threads=2, seed=1) as ds:  # repeat(): never ends
        for i, batch in enumerate(ds):
            board = np.from_dlpack(batch["board"])
            total += float(board[0, 0, 0, 0]) + float(np.from_dlpack(batch["score"])[0])
            if torch is not None:
                total += float(torch.from_dlpack(batch["flags"])[0, 0])
            if i == 1000:
                gc.collect()
                warm = rss_bytes()
            if i == 10_000:
                break
        del batch, board
        gc.collect()
        grown = rss_bytes() - warm
    gc.collect()
    assert pipec._pipec.live_tensors() == live
    # A batch is 64 * 1547 floats (396 kB); 9,000 of them kept would be 3.5 GB.
    assert grown < 16 * 2 ** 20, f"RSS grew by {grown / 2 ** 20:.1f} MB over 9,000 batches"
