#!/usr/bin/env python3
"""Checkpoints and --resume of a multi_worker() run under `mpirun -np 2` (ctest dist_multi_worker_resume).

Usage: multi_worker_resume.py PIPEC MPIRUN

1. A job killed with SIGKILL (mpirun and both ranks at once) after its first checkpoint, then resumed
   with --resume, ends with the weights (--save) of the same run left alone, bit for bit; the checkpoint
   holds the weights once and one input position per rank.
2. --bucket-mb changes when the gradients are summed, not the sums: another bucket size, the same bits.
3. The 2-rank checkpoint resumed with -np 3, or by one process, is refused naming both counts.
4. A rank's position file cut short is refused naming the file.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

pipec, mpirun = os.path.abspath(sys.argv[1]), sys.argv[2]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")

# Shuffled after the shard (each rank's position holds a buffer of its own), batch_norm (its statistics
# are averaged over the ranks at each checkpoint), dropout (keyed by step and example). A batch of 24
# splits over 2 and 3 ranks, so that -np 3 gets as far as the checkpoint. 400 steps take a few seconds:
# long enough to be killed in the middle.
SPEC = """pipeline data = range(1_000_000) | shuffle(100, seed = 3)
  | map(r => { x = random_uniform([8]) { x, y: [sum(x) * 0.5] } })
  | batch(24, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(128) | batch_norm | relu | dropout(0.1) | dense(128) | relu | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.001), steps = 400, strategy = multi_worker() }
"""
STEPS = 400


def ranks_cmd(np, *args):
    return [mpirun, "--oversubscribe", "-np", str(np), pipec, "run", "t.pipe", "--threads", "1",
            "--checkpoint-every", "10", *args]


def run(args, timeout=120):
    p = subprocess.run(args, env=env, cwd=folder, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def read(path):
    try:
        with open(os.path.join(folder, path), "rb") as f:
            return f.read()
    except OSError:
        return None


def children(pid):
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return found


with tempfile.TemporaryDirectory() as folder:
    with open(os.path.join(folder, "t.pipe"), "w") as f:
        f.write(SPEC)

    # The run left alone, with the same flags.
    start = time.time()
    code, out = run(ranks_cmd(2, "--checkpoint", "whole", "--save", "whole.safetensors"))
    whole_seconds = time.time() - start
    check(code == 0, "two ranks train with checkpoints\n" + out)
    one_bucket = re.search(r"gradients in (\d+) bucket", out)
    saved = sorted(os.listdir(os.path.join(folder, "whole"))) if code == 0 else []
    check(saved == ["input-400-rank-0.ckpt", "input-400-rank-1.ckpt", "train.ckpt", "weights-400.safetensors"],
          f"the checkpoint holds the weights once and each rank's position: {saved}")

    # 1. Killed, all at once, as soon as the first checkpoint is there; then resumed.
    job = subprocess.Popen(ranks_cmd(2, "--checkpoint", "part", "--save", "part.safetensors"), env=env, cwd=folder,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = os.path.join(folder, "part", "train.ckpt")
    deadline = time.time() + 60
    while not os.path.exists(state) and job.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    for pid in children(job.pid) + [job.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.wait()
    check(os.path.exists(state), "the killed job left a checkpoint")
    shutil.copytree(os.path.join(folder, "part"), os.path.join(folder, "cut"))
    code, out = run(ranks_cmd(2, "--checkpoint", "part", "--resume", "--save", "part.safetensors", "--stats-json",
                              "resumed.json"))
    check(code == 0, "the killed job resumes\n" + out)
    resumed_from = json.loads(read("resumed.json") or "{}").get("resumed_from_step", 0)
    check(0 < resumed_from < STEPS, f"it was killed mid-run and resumed from step {resumed_from} of {STEPS} "
          f"(the whole run took {whole_seconds:.1f} s)")
    check(code == 0 and read("whole.safetensors") is not None and read("part.safetensors") == read("whole.safetensors"),
          "the resumed job's weights are the uninterrupted job's, bit for bit")

    # 2. Buckets of about 100 bytes (a parameter or two each) against one of 25 MiB.
    code, out = run(ranks_cmd(2, "--checkpoint", "buckets", "--save", "buckets.safetensors", "--bucket-mb", "0.0001"))
    many = re.search(r"gradients in (\d+) bucket", out)
    check(code == 0 and one_bucket and one_bucket.group(1) == "1" and many and int(many.group(1)) > 3,
          "small buckets train, in more buckets than one\n" + out)
    check(code == 0 and read("whole.safetensors") is not None and read("buckets.safetensors") == read("whole.safetensors"),
          "another bucket size gives the same weights, bit for bit")
    code, out = run([pipec, "run", "t.pipe", "--bucket-mb", "0"])
    check(code == 2 and "--bucket-mb: must be more than 0 and at most 1024, not 0" in out,
          "--bucket-mb out of range is refused\n" + out)

    # 3. Another number of processes.
    code, out = run(ranks_cmd(3, "--checkpoint", "whole", "--resume"))
    check(code != 0 and "whole/train.ckpt: the checkpoint was written by 2 ranks (mpirun -np 2) and this run has "
          "3 ranks (mpirun -np 3)" in out, "-np 3 of a 2-rank checkpoint is refused, naming both\n" + out)
    code, out = run([pipec, "run", "t.pipe", "--checkpoint", "whole", "--resume"])
    check(code != 0 and "the checkpoint was written by 2 ranks (mpirun -np 2) and this run has one process" in out,
          "one process refuses it too\n" + out)

    # 4. Rank 1's position cut short.
    cut = sorted(n for n in os.listdir(os.path.join(folder, "cut")) if n.endswith("-rank-1.ckpt"))
    if cut:
        path = os.path.join(folder, "cut", cut[0])
        with open(path, "r+b") as f:
            f.truncate(30)
    code, out = run(ranks_cmd(2, "--checkpoint", "cut", "--resume"))
    check(len(cut) == 1 and code != 0 and f"cut/{cut[0]}: 30 bytes, but" in out and "truncated or replaced" in out,
          "a cut position is refused, naming its file\n" + out)

sys.exit(1 if failures else 0)
