"""Examples/s of seed 002's chess batches delivered as torch tensors: through `import pipec`, a torch
DataLoader over the same TFRecords, and tf.data's vectorized version converted with tf.experimental.dlpack.

  python bench/python/chess_peers.py MODE --files 'examples/chess/data/chess-*.tfrecord' --batches 400

MODE:
  pipec          pipec.compile(examples/chess/chess.pipe).pipeline("train"); torch.from_dlpack per field.
                 Prints the run's examples/s as `pipec run --stats-json` counts them (from the first
                 request to the last batch, warm-up included), over --warmup + --batches batches.
  dataloader     torch DataLoader(batch_size=512, num_workers=--workers) over an IterableDataset that reads
                 the TFRecords in Python (tfrecord_reader.py), keeps a 10,000-record shuffle buffer, and
                 unpacks each record with numpy as the seed does (unpackbits, plane order and signs, flags,
                 combined score); the default collate stacks them.
  dataloader_vec the same reader, but each worker unpacks 512 records at once with numpy (the batch-wise
                 version) and the DataLoader passes batches through (batch_size=None).
  tfdata         bench/chess/tfdata_peer.py's vectorized pipeline (parse_example on batches) and the seed's
                 iterator_to_data in one tf.function; each output tensor to torch through DLPack.
The peers print examples/s over --batches batches after --warmup batches (their start-up excluded).
"""
import argparse
import glob
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BATCH = 512
SHUFFLE = 10_000
PLANE_ORDER = np.array([0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23])
PLANE_SIGN = np.array([1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1],
                      np.float32)


def combined_score(s, mate):
    """stdlib/chess_score.pipe's combined_score (A = 0.5, K = 400, B = 10), for arrays."""
    return (1 - mate) * 0.5 * np.tanh(s / 400.0) + mate * np.sign(s) * (0.5 + 0.5 / 9 * np.maximum(0.0, 10 - np.abs(s)))


def unpack_one(d, s):
    bits = np.unpackbits(np.frombuffer(d, np.uint8))
    board = bits[:1536].reshape(8, 8, 24)[:, :, PLANE_ORDER].astype(np.float32) * PLANE_SIGN
    flags = bits[1536:1546].astype(np.float32)
    score = np.float32(combined_score(np.float64(s), np.float64(bits[1546])))
    return {"board": board, "flags": flags, "score": score}


def unpack_batch(ds, ss):
    bits = np.unpackbits(np.frombuffer(b"".join(ds), np.uint8).reshape(len(ds), 194), axis=1)
    board = bits[:, :1536].reshape(-1, 8, 8, 24)[:, :, :, PLANE_ORDER].astype(np.float32) * PLANE_SIGN
    flags = bits[:, 1536:1546].astype(np.float32)
    score = combined_score(np.array(ss, np.float64), bits[:, 1546].astype(np.float64)).astype(np.float32)
    return {"board": board, "flags": flags, "score": score}


def measure(batches, warmup, batch_iter, examples_of):
    it = iter(batch_iter)
    for _ in range(warmup):
        next(it)
    n, start = 0, time.perf_counter()
    for _ in range(batches):
        n += examples_of(next(it))
    return n / (time.perf_counter() - start)


def cpu_seconds():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_pipec(args):
    import torch
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import pipec
    cpu0 = cpu_seconds()
    spec = pipec.compile(os.path.join(REPO, "examples", "chess", "chess.pipe"))
    with spec.pipeline("train", threads=args.threads) as ds:
        for batch in ds.take(args.warmup + args.batches):
            board = torch.from_dlpack(batch["board"])
            flags = torch.from_dlpack(batch["flags"])
            score = torch.from_dlpack(batch["score"])
        assert board.shape == (512, 8, 8, 24) and flags.shape == (512, 10) and score.shape == (512,)
        stats = ds.stats()
    # CPU time of every thread from the compile to the last batch, per million examples (comparable to
    # `pipec run`'s whole process: the interpreter's and torch's start-up are left out).
    return stats["examples_per_second"], (cpu_seconds() - cpu0) / stats["examples"] * 1e6


def make_dataset(files, vectorized):
    import torch
    from tfrecord_reader import read_examples

    class ChessRecords(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            mine = files if info is None else files[info.id::info.num_workers]
            rng = np.random.default_rng(7 + (info.id if info else 0))
            buffer, pending = [], []
            while True:  # repeat()
                for path in mine:
                    for rec in read_examples(path):
                        if len(buffer) < SHUFFLE:
                            buffer.append(rec)
                            continue
                        i = rng.integers(len(buffer))
                        rec, buffer[i] = buffer[i], rec
                        if not vectorized:
                            yield unpack_one(rec["d"][0], rec["s"][0])
                            continue
                        pending.append(rec)
                        if len(pending) == BATCH:
                            out = unpack_batch([r["d"][0] for r in pending], [r["s"][0] for r in pending])
                            pending = []
                            yield {k: torch.from_numpy(v) for k, v in out.items()}

    return ChessRecords()


def run_dataloader(args, vectorized):
    import torch
    sys.path.insert(0, HERE)
    files = sorted(glob.glob(args.files))
    ds = make_dataset(files, vectorized)
    loader = torch.utils.data.DataLoader(ds, batch_size=None if vectorized else BATCH, num_workers=args.workers,
                                         persistent_workers=args.workers > 0, prefetch_factor=4 if args.workers else None)
    return measure(args.batches, args.warmup, loader, lambda b: b["board"].shape[0])


def run_tfdata(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import torch
    sys.path.insert(0, os.path.join(REPO, "bench", "chess"))
    import tfdata_peer
    files = sorted(glob.glob(args.files))
    ds = tfdata_peer.seed_dataset(files, "vectorized").prefetch(tf.data.AUTOTUNE)
    it = iter(ds)

    @tf.function
    def step():
        d, s = next(it)
        return tfdata_peer.iterator_to_data(d, s)

    def batches():
        while True:
            yield [torch.from_dlpack(tf.experimental.dlpack.to_dlpack(t)) for t in step()]

    return measure(args.batches, args.warmup, batches(), lambda b: b[0].shape[0])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["pipec", "dataloader", "dataloader_vec", "tfdata"])
    p.add_argument("--files", default=os.path.join(REPO, "examples", "chess", "data", "chess-*.tfrecord"))
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.mode == "pipec":
        rate, cpu = run_pipec(args)
        print(f"{rate:.0f} {cpu:.3f}")
        return
    elif args.mode == "tfdata":
        rate = run_tfdata(args)
    else:
        rate = run_dataloader(args, vectorized=args.mode == "dataloader_vec")
    print(f"{rate:.0f}")


if __name__ == "__main__":
    main()
