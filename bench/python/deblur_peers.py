"""Examples/s (pairs) of seed 003's deblurring batches delivered as torch tensors: through `import pipec`
(bench/python/deblur.pipe) and through torchvision + a torch DataLoader doing the same work.

  python bench/python/deblur_peers.py MODE --batches 30

MODE:
  pipec        pipec.compile(bench/python/deblur.pipe).pipeline("train"); torch.from_dlpack per field;
               the run's examples/s as `pipec run --stats-json` counts them (warm-up included).
  torchvision  a map-style Dataset over the pairs: torchvision.io.decode_jpeg of both files, the same
               random 256x256 window and flip for both, to float in [-1, 1]; DataLoader(batch_size=16,
               shuffle=True, drop_last=True, num_workers=--workers), epoch after epoch. Examples/s over
               --batches batches after --warmup (start-up excluded).
"""
import argparse
import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(REPO, "bench", "images", "data", "deblur")
PATCH = 256
BATCH = 16


def cpu_seconds():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_pipec(args):
    import torch
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import pipec
    cpu0 = cpu_seconds()
    spec = pipec.compile(os.path.join(HERE, "deblur.pipe"))
    with spec.pipeline("train", threads=args.threads, device="cpu") as ds:
        for batch in ds.take(args.warmup + args.batches):
            blurred = torch.from_dlpack(batch["blurred"])
            sharp = torch.from_dlpack(batch["sharp"])
        assert blurred.shape == (BATCH, PATCH, PATCH, 3) and sharp.dtype == torch.float32
        stats = ds.stats()
    # CPU time of every thread from the compile to the last batch, per million examples (comparable to
    # `pipec run`'s whole process: the interpreter's and torch's start-up are left out).
    return stats["examples_per_second"], (cpu_seconds() - cpu0) / stats["examples"] * 1e6


def run_torchvision(args):
    import torch
    import torchvision.io as io

    blurred = sorted(glob.glob(os.path.join(DATA, "blurred", "*.jpg")))
    sharp = sorted(glob.glob(os.path.join(DATA, "sharp", "*.jpg")))

    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return len(blurred)

        def __getitem__(self, i):
            b = io.decode_jpeg(io.read_file(blurred[i]))  # [3, H, W] u8
            s = io.decode_jpeg(io.read_file(sharp[i]))
            h, w = b.shape[1], b.shape[2]
            top = int(torch.randint(0, h - PATCH + 1, ()))
            left = int(torch.randint(0, w - PATCH + 1, ()))
            flip = bool(torch.rand(()) < 0.5)
            out = {}
            for name, img in (("blurred", b), ("sharp", s)):
                x = img[:, top:top + PATCH, left:left + PATCH]
                if flip:
                    x = x.flip(2)
                out[name] = (x.permute(1, 2, 0).float() / 255.0 - 0.5) / 0.5  # HWC like pipec's
            return out

    loader = torch.utils.data.DataLoader(Pairs(), batch_size=BATCH, shuffle=True, drop_last=True,
                                         num_workers=args.workers, persistent_workers=args.workers > 0)

    def batches():
        while True:
            yield from loader

    it = batches()
    for _ in range(args.warmup):
        next(it)
    n, start = 0, time.perf_counter()
    for _ in range(args.batches):
        n += next(it)["blurred"].shape[0]
    return n / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["pipec", "torchvision"])
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.mode == "pipec":
        rate, cpu = run_pipec(args)
        print(f"{rate:.1f} {cpu:.3f}")
    else:
        print(f"{run_torchvision(args):.1f}")


if __name__ == "__main__":
    main()
