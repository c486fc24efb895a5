#!/usr/bin/env python3
"""Checkpoints and --resume of a multi_worker() run under `mpirun -np 2` (ctest dist_multi_worker_resume).

Usage: multi_worker_resume.py PIPEC MPIRUN

1. A job killed with SIGKILL (mpirun and both ranks at once) after its first checkpoint, then resumed
   with --resume, ends with the weights (--save) of the same run left alone, bit for bit; the checkpoint
   holds the weights once and one input position per rank.
2. --bucket-mb changes when the gradients are summed, not the sums: another bucket size, the same bits.
3. Another number of processes takes the checkpoint's weights, optimizer state and step and restarts
   the epoch, saying so once (rank 0) and in --stats-json: the 2-rank job that had ended, resumed by
   -np 3 or by one process, has nothing left to train and --save writes its weights bit for bit; a
   2-rank checkpoint in the middle of a run, resumed by -np 3 and by one process, trains the data's pass
   again from its first example up to the run's last step, both with the same losses to rounding (the
   global batches hold the same examples), and a one-process checkpoint resumed by -np 2 likewise.
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

    # 3a. The job that had ended, resumed by another number of processes: nothing is left to train, and
    #     --save writes the checkpoint's weights, which every process took (bit for bit).
    for np_ in (3, 1):
        shutil.copytree(os.path.join(folder, "whole"), os.path.join(folder, f"ended{np_}"))
        args = ["--checkpoint", f"ended{np_}", "--resume", "--save", f"ended{np_}.safetensors"]
        cmd = ranks_cmd(np_, *args) if np_ > 1 else [pipec, "run", "t.pipe", "--threads", "1", *args]
        code, out = run(cmd)
        this_run = "one process" if np_ == 1 else f"{np_} ranks"
        note = (f"pipec run: note: resumed from ended{np_}/train.ckpt at step 400, written by 2 ranks; this run has "
                f"{this_run}: the run had ended there, so nothing is left to train")
        check(code == 0 and out.count(note) == 1 and out.count("pipec run: note: resumed") == 1
              and "train t: no step after step 400" in out,
              f"{this_run}: the ended 2-rank checkpoint is taken, and the note said once\n" + out)
        check(code == 0 and read("whole.safetensors") is not None
              and read(f"ended{np_}.safetensors") == read("whole.safetensors"),
              f"{this_run}: the weights at resume are the checkpoint's, bit for bit")

    # 3b. In the middle of a run: 8 steps a pass over the data, in order (no shuffle, no random op), a
    #     global batch of 12 (6 per rank of 2, 4 per rank of 3). Stopped at step 12, 4 steps into pass 2.
    with open(os.path.join(folder, "r.pipe"), "w") as f:
        f.write("""pipeline data = range(96)
  | map(r => { x: [f32(r.value % 11) * 0.1, f32(r.value % 7) * 0.2, 1.0 - f32(r.value) * 0.01], y: [f32(r.value % 5) * 0.3] })
  | batch(12, drop_remainder = true)
model net(x: f32[3]) -> f32[1] { x | dense(16) | relu | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = 24, strategy = multi_worker() }
""")

    def restart(np_, *args):
        cmd = [pipec, "run", "r.pipe", "--threads", "1", "--checkpoint-every", "4", *args]
        return run(([mpirun, "--oversubscribe", "-np", str(np_)] if np_ > 1 else []) + cmd)

    def metrics(name):
        return [json.loads(line)["loss"] for line in (read(name) or b"").decode().splitlines()]

    code, out = restart(2, "--steps", "12", "--checkpoint", "two", "--metrics", "two.jsonl")
    check(code == 0, "two ranks train 12 steps with a checkpoint\n" + out)
    code, out = restart(1, "--steps", "12", "--checkpoint", "one")
    check(code == 0, "one process trains 12 steps with a checkpoint\n" + out)
    shutil.copytree(os.path.join(folder, "two"), os.path.join(folder, "two-by-1"))
    shutil.copytree(os.path.join(folder, "two"), os.path.join(folder, "two-by-3"))
    resumed = {}
    for np_, folder_name, written_by in ((3, "two-by-3", "2 ranks"), (1, "two-by-1", "2 ranks"), (2, "one", "one process")):
        code, out = restart(np_, "--checkpoint", folder_name, "--resume", "--metrics", f"{folder_name}.jsonl",
                            "--stats-json", f"{folder_name}.json")
        this_run = "one process" if np_ == 1 else f"{np_} ranks"
        shards = "the whole data" if np_ == 1 else f"{np_} ranks' shards"
        why = ("a position in the whole data has no place in " + shards if written_by == "one process"
               else f"positions in 2 ranks' shards of the data have no place in {shards}")
        note = (f"pipec run: note: resumed from {folder_name}/train.ckpt at step 12, written by {written_by}; this run "
                f"has {this_run}: the weights and the optimizer continue, the data restarts from the first example "
                f"of its pass 2, and the run still ends at step 24 ({why})")
        check(code == 0 and out.count(note) == 1, f"{this_run}: a checkpoint of {written_by} resumed, the note said once\n"
              + out)
        stats = json.loads(read(f"{folder_name}.json") or "{}")
        restart_json = stats.get("epoch_restart", {})
        check(stats.get("resumed_from_step") == 12 and stats.get("steps") == 24 and restart_json.get("pass") == 2
              and restart_json.get("processes") == np_ and restart_json.get("note") == note[len("pipec run: note: "):],
              f"{this_run}: --stats-json has the step it went on from, the run's length and the note: "
              + str({k: stats.get(k) for k in ("resumed_from_step", "steps", "epoch_restart")}))
        resumed[folder_name] = metrics(f"{folder_name}.jsonl")
    first = metrics("two.jsonl")
    by3, by1, from_one = resumed["two-by-3"], resumed["two-by-1"], resumed["one"]
    check(len(by3) == 12 and len(by1) == 12 and len(from_one) == 12, "12 steps each, to step 24")
    check(all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(by3, by1)),
          f"3 ranks and one process, from the same checkpoint, train the same steps: {by3} and {by1}")
    check(all(abs(a - b) <= 1e-4 * abs(b) for a, b in zip(from_one, by1)),
          f"2 ranks from one process's checkpoint, likewise: {from_one} and {by1}")
    # Pass 2's first batch is pass 1's: with the initial weights its loss would be step 1's exactly.
    check(first and by3 and abs(by3[0] - first[0]) > 1e-3 * abs(first[0]),
          f"the restart trains from the checkpoint's weights, not the initial ones: {by3[:1]} and step 1's {first[:1]}")

    # 4. Rank 1's position cut short. The job may have been killed between writing a checkpoint and
    #    removing the one before it, so the copy can hold two positions per rank: cut them all, and the
    #    refusal names whichever one train.ckpt points at.
    cut = sorted(n for n in os.listdir(os.path.join(folder, "cut")) if n.endswith("-rank-1.ckpt"))
    for name in cut:
        with open(os.path.join(folder, "cut", name), "r+b") as f:
            f.truncate(30)
    code, out = run(ranks_cmd(2, "--checkpoint", "cut", "--resume"))
    check(len(cut) >= 1 and code != 0 and any(f"cut/{name}: 30 bytes, but" in out for name in cut)
          and "truncated or replaced" in out, f"a cut position is refused, naming its file ({cut})\n" + out)

sys.exit(1 if failures else 0)
