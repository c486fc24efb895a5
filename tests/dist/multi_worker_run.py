#!/usr/bin/env python3
"""`pipec run` of a multi_worker() spec under `mpirun -np 2` (ctest dist_multi_worker_run).

Usage: multi_worker_run.py PIPEC MPIRUN

1. Two ranks, each on its shard of the data (by elements: element k to rank k % 2, batch 8 of 16 each),
   train as one process with the whole batch: the losses within 1e-5 relative (no batch_norm, no
   dropout), and rank 0 alone writes --metrics and prints.
2. Shards of uneven length (no drop_remainder): the first shard to end ends the run on both ranks, and
   the rank with an example left says so.
3. A rank started with another spec is refused on both ranks.
4. An error on one rank (a NaN in its shard) stops both, naming the rank, well before the timeout.
5. Ranks on GPUs (not built yet) are refused.
6. A rank that stops answering (SIGSTOP) ends the run within --collective-timeout, named.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

pipec, mpirun = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def write_npy(path, rows, per):
    """An f32 .npy file of shape (len(rows), per)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), per)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        for r in rows:
            f.write(struct.pack("<%df" % per, *r))


def spec(folder, name, rows, batch, drop, steps):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(f"""source xs = npy("x.npy") {{ x: f32[6] }}
source ys = npy("y.npy") {{ y: f32[1] }}
pipeline data = zip(xs, ys) | batch({batch}{', drop_remainder = true' if drop else ''})
model net(x: f32[6]) -> f32[1] {{ x | dense(16) | relu | dense(1) }}
train t = {{ data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), {steps}, strategy = multi_worker() }}
""")
    return path


def data(folder, n, nan_at=None):
    xs, ys = [], []
    s = 12345
    for k in range(n):
        row = []
        for _ in range(6):
            s = (s * 6364136223846793005 + 1442695040888963407) % 2**64
            row.append((s >> 11) / 2**53 * 2 - 1)
        xs.append(row)
        ys.append([float("nan") if k == nan_at else sum(row)])
    write_npy(os.path.join(folder, "x.npy"), xs, 6)
    write_npy(os.path.join(folder, "y.npy"), ys, 1)


env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")


def run(args, timeout=120):
    start = time.time()
    p = subprocess.run(args, env=env, cwd=folder, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.time() - start


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f]


with tempfile.TemporaryDirectory() as folder:
    # 1. Two ranks against one process.
    data(folder, 96)
    s = spec(folder, "even.pipe", 96, 16, True, "steps = 6")
    code, out, _ = run([pipec, "run", s, "--threads", "1", "--metrics", "one.jsonl"])
    check(code == 0, "one process trains\n" + out)
    code, out, _ = run([mpirun, "--oversubscribe", "-np", "2", pipec, "run", s, "--threads", "1", "--metrics",
                        "two.jsonl"])
    check(code == 0, "two ranks train\n" + out)
    check("multi_worker: 2 ranks; sharded by elements" in out and "batch 16 is 8 per worker" in out,
          "rank 0 says how the data is sharded\n" + out)
    check(out.count("train t: 6 steps (96 examples)") == 1,
          "rank 0 alone prints the summary, counting every rank's examples\n" + out)
    one, two = losses(os.path.join(folder, "one.jsonl")), losses(os.path.join(folder, "two.jsonl"))
    check(len(one) == 6 and len(two) == 6, f"6 steps each: {len(one)} and {len(two)}")
    check(all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(one, two)), f"the same losses: {one} and {two}")

    # 2. Uneven shards: 9 examples, batch 4 (2 per rank): rank 0 has 5 (batches 2, 2, 1), rank 1 has 4.
    data(folder, 9)
    s = spec(folder, "uneven.pipe", 9, 4, False, "epochs = 1")
    code, out, elapsed = run([mpirun, "--oversubscribe", "-np", "2", pipec, "run", s, "--threads", "1"])
    check(code == 0, "uneven shards end without hanging\n" + out)
    check("train t: 2 steps" in out, "both ranks stop after the shorter shard's 2 steps\n" + out)
    check("rank 0: 1 examples of its shard were left untrained" in out, "rank 0 says what it left\n" + out)

    # 3. Another spec on one rank.
    data(folder, 96)
    other = spec(folder, "other.pipe", 96, 16, True, "steps = 5")
    code, out, _ = run([mpirun, "--oversubscribe", "-np", "1", pipec, "run", os.path.join(folder, "even.pipe"), ":",
                        "-np", "1", pipec, "run", other])
    check(code != 0 and "rank 1 started with another spec or other training flags than rank 0" in out,
          "a rank with another spec is refused\n" + out)

    # 4. A NaN in rank 1's shard (element 3 goes to rank 1): both ranks stop, naming it.
    data(folder, 96, nan_at=3)
    code, out, elapsed = run([mpirun, "--oversubscribe", "-np", "2", pipec, "run", os.path.join(folder, "even.pipe"),
                              "--threads", "1", "--collective-timeout", "30"])
    check(code != 0 and "rank 1 of 2:" in out and "NaN" in out, "rank 1's error stops both\n" + out)
    check(elapsed < 25, f"and before the collective timeout ({elapsed:.1f} s)")

    # 5. Ranks on GPUs are not built: refused (the GPU executor in its host emulation stands for a GPU).
    code, out, _ = run(["env", "PIPEC_GPU_HOST_EMULATION=1", mpirun, "--oversubscribe", "-np", "2", pipec, "run",
                        os.path.join(folder, "even.pipe"), "--device", "gpu"])
    check(code != 0 and "multi_worker ranks training on GPUs are not built yet" in out,
          "ranks on GPUs are refused\n" + out)

    # 6. A rank that stops answering without dying (SIGSTOP): the other's next collective gives up after
    #    --collective-timeout, naming it, and the job ends.
    with open(os.path.join(folder, "long.pipe"), "w") as f:
        f.write("""pipeline data = range(1_000_000) | map(r => { x = random_uniform([6], seed = 1) { x, y: [sum(x)] } })
  | batch(16, drop_remainder = true)
model net(x: f32[6]) -> f32[1] { x | dense(16) | relu | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 100_000_000, strategy = multi_worker() }
""")
    job = subprocess.Popen([mpirun, "--oversubscribe", "-np", "2", pipec, "run", "long.pipe", "--threads", "1",
                            "--collective-timeout", "4"], env=env, cwd=folder, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)

    def ranks():
        found = []
        for d in os.listdir("/proc"):
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == job.pid:
                    found.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
        return sorted(found)

    deadline = time.time() + 60
    while len(ranks()) < 2 and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(3)  # both ranks training
    stopped = ranks()[-1] if len(ranks()) == 2 else None
    if stopped:
        os.kill(stopped, 19)  # SIGSTOP
    start = time.time()
    try:
        out, _ = job.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        job.kill()
        out, _ = job.communicate()
    elapsed = time.time() - start
    check(stopped is not None and job.returncode != 0 and "did not answer" in out and "rank 1" in out,
          "a rank that stops answering ends the run, named\n" + out[-3000:])
    check(elapsed < 60, f"within the collective timeout and the job's end ({elapsed:.1f} s)")

sys.exit(1 if failures else 0)
