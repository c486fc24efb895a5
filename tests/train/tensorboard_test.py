#!/usr/bin/env python3
"""`pipec run --logdir DIR` writes event files TensorBoard reads: read back here with TensorBoard's own
reader (EventAccumulator, from the `tensorboard` package on PyPI) and its Event proto.

1. A short training run (mixed_fp16, a learning-rate schedule, epochs, validation every 5 steps with
   accuracy): every scalar is there at the right steps, with the values --metrics and --stats-json give
   for the same run (as float32, which is what a Summary value holds).
2. A pipeline run: examples/s and each stage's share in DIR/pipeline.
3. A long run killed with SIGKILL after some steps: the file holds whole records only, and the reader
   gets every step up to the last one written, each with all of its scalars.

  PIPEC=build/pipec build/venv/bin/python tests/train/tensorboard_test.py
"""
import glob
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
except ImportError as e:
    sys.exit(f"tensorboard_test: {e}: the test venv needs tensorboard and numpy (scripts/setup.sh installs them)")

PIPEC = os.environ.get("PIPEC", "build/pipec")

# 16 steps an epoch, 3 epochs; evaluations every 5 steps and at each epoch's end.
SPEC = """pipeline data = range(512)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 1); { x, label: i64(x[0] + x[1] > 0.0) } })
  | batch(32, drop_remainder = true)
pipeline held_out = range(40)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 2); { x, label: i64(x[0] + x[1] > 0.0) } })
  | batch(16)
model net(x: f32[4]) -> f32[2] { x | dense(8) | relu | dense(2) | softmax }
train t = {
  data = data, model = net(x), loss = cross_entropy(label), optimizer = adam(lr = cosine_decay(0.05, 40))
  precision = mixed_fp16, epochs = 3
  validation = held_out, eval_every = 5, metrics = [accuracy]
}
"""
STEPS_PER_EPOCH = 16
EPOCHS = 3
STEP_TAGS = {"batch_loss", "batch_learning_rate", "batch_loss_scale", "batch_examples_per_second",
             "batch_input_wait_share"}


def f32(x):
    return float(np.float32(x))


def run(args, **kw):
    r = subprocess.run([PIPEC] + args, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"pipec {' '.join(args)} exited {r.returncode}:\n{r.stderr}"
    return r


def records(path):
    """The records of a TFRecord file, each frame's CRCs checked; the file must end after the last one."""
    data = open(path, "rb").read()
    out, at = [], 0
    while at < len(data):
        assert len(data) - at >= 12, f"{path}: a header cut short at byte {at}"
        (n,) = struct.unpack("<Q", data[at:at + 8])
        assert struct.unpack("<I", data[at + 8:at + 12])[0] == masked_crc32c(data[at:at + 8]), f"length CRC at {at}"
        assert at + 12 + n + 4 <= len(data), f"{path}: a record cut short at byte {at}"
        body = data[at + 12:at + 12 + n]
        assert struct.unpack("<I", data[at + 12 + n:at + 16 + n])[0] == masked_crc32c(body), f"data CRC at {at}"
        out.append(body)
        at += 16 + n
    return out


def one_event_file(folder):
    files = glob.glob(os.path.join(folder, "events.out.tfevents.*"))
    assert len(files) == 1, f"{folder}: {files}"
    name = os.path.basename(files[0])
    host = socket.gethostname()
    parts = name.split(".")
    assert parts[3].isdigit() and len(parts[3]) == 10, name
    assert ".".join(parts[4:]).startswith(host + "."), (name, host)
    # The Event proto parses every record; the first is the file version.
    events = [event_pb2.Event.FromString(r) for r in records(files[0])]
    assert events[0].file_version == "brain.Event:2", events[0]
    assert all(e.HasField("summary") for e in events[1:])
    return files[0], events


def scalars(folder):
    acc = ea.EventAccumulator(folder, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def check_series(got, tag, want):
    """`want`: [(step, value)] in order; the reader's events must be exactly those, as float32."""
    assert tag in got, f"no scalar {tag}; the tags are {sorted(got)}"
    steps = [e.step for e in got[tag]]
    assert steps == [s for s, _ in want], f"{tag}: steps {steps}, expected {[s for s, _ in want]}"
    for e, (step, value) in zip(got[tag], want):
        assert e.value == f32(value) or (math.isnan(e.value) and math.isnan(value)), \
            f"{tag} at step {step}: {e.value}, expected {f32(value)}"


def test_training(d):
    spec = os.path.join(d, "t.pipe")
    open(spec, "w").write(SPEC)
    logdir = os.path.join(d, "logs")
    started = time.time()
    r = run(["run", spec, "--logdir", logdir, "--metrics", os.path.join(d, "m.jsonl"), "--stats-json",
             os.path.join(d, "s.json")])
    ended = time.time()
    metrics = [json.loads(line) for line in open(os.path.join(d, "m.jsonl"))]
    stats = json.load(open(os.path.join(d, "s.json")))
    steps = STEPS_PER_EPOCH * EPOCHS
    assert [m["step"] for m in metrics] == list(range(1, steps + 1)), [m["step"] for m in metrics]

    train_file, train_events = one_event_file(os.path.join(logdir, "train"))
    one_event_file(os.path.join(logdir, "validation"))
    for e in train_events:
        assert started - 1 <= e.wall_time <= ended + 1, (e.wall_time, started, ended)
    got = scalars(os.path.join(logdir, "train"))
    assert set(got) == STEP_TAGS | {"epoch_loss", "epoch_learning_rate"}, sorted(got)
    check_series(got, "batch_loss", [(m["step"], m["loss"]) for m in metrics])
    check_series(got, "batch_learning_rate", [(m["step"], m["lr"]) for m in metrics])
    check_series(got, "batch_loss_scale", [(m["step"], m["loss_scale"]) for m in metrics])
    check_series(got, "batch_examples_per_second", [(m["step"], m["examples_per_second"]) for m in metrics])
    check_series(got, "batch_input_wait_share",
                 [(m["step"], m["input_wait_seconds"] / m["seconds"]) for m in metrics])
    # Keras' epoch scalars, at the epoch's index: the mean of its steps' (finite) losses, its last rate.
    epoch_loss, epoch_lr = [], []
    for k in range(EPOCHS):
        part = metrics[k * STEPS_PER_EPOCH:(k + 1) * STEPS_PER_EPOCH]
        finite = [m["loss"] for m in part if math.isfinite(m["loss"])]
        epoch_loss.append((k, sum(finite) / len(finite)))
        epoch_lr.append((k, part[-1]["lr"]))
    check_series(got, "epoch_loss", epoch_loss)
    check_series(got, "epoch_learning_rate", epoch_lr)

    # Validation: every evaluation at its step, and each epoch's at the epoch's index.
    evals = stats["validation"]
    assert [v["step"] for v in evals] == [5, 10, 15, 16, 20, 25, 30, 32, 35, 40, 45, 48], evals
    got = scalars(os.path.join(logdir, "validation"))
    assert set(got) == {"evaluation_loss_vs_iterations", "evaluation_accuracy_vs_iterations", "epoch_loss",
                        "epoch_accuracy"}, sorted(got)
    check_series(got, "evaluation_loss_vs_iterations", [(v["step"], v["loss"]) for v in evals])
    check_series(got, "evaluation_accuracy_vs_iterations", [(v["step"], v["accuracy"]) for v in evals])
    at_epoch_end = [v for v in evals if v["step"] % STEPS_PER_EPOCH == 0]
    check_series(got, "epoch_loss", [(k, v["loss"]) for k, v in enumerate(at_epoch_end)])
    check_series(got, "epoch_accuracy", [(k, v["accuracy"]) for k, v in enumerate(at_epoch_end)])
    # The epoch lines say the same (the first 4 significant digits).
    lines = [l for l in r.stderr.splitlines() if l.startswith("Epoch ")]
    assert len(lines) == EPOCHS, r.stderr
    for k, line in enumerate(lines):
        assert line.startswith(f"Epoch {k + 1}/{EPOCHS}  loss {epoch_loss[k][1]:.4g}  val_loss "
                               f"{at_epoch_end[k]['loss']:.4g}  val_accuracy {at_epoch_end[k]['accuracy']:.4g}  "), \
            (line, epoch_loss[k], at_epoch_end[k])
    print(f"training: {len(train_events) - 1} train events, {len(evals)} evaluations read back by TensorBoard")


def test_pipeline(d):
    spec = os.path.join(d, "t.pipe")
    logdir = os.path.join(d, "pipeline_logs")
    run(["run", spec, "--pipeline", "data", "--logdir", logdir, "-q"])
    _, events = one_event_file(os.path.join(logdir, "pipeline"))
    got = scalars(os.path.join(logdir, "pipeline"))
    shares = sorted(t for t in got if t.startswith("stage_share/"))
    assert "examples_per_second" in got and len(shares) >= 3, sorted(got)
    assert any(t.endswith("_map") for t in shares), shares
    # The last report is at the end: 16 batches, 512 examples; the shares add up to 1.
    assert got["examples_per_second"][-1].step == 16, got["examples_per_second"]
    assert got["examples_per_second"][-1].value > 0
    total = sum(got[t][-1].value for t in shares)
    assert abs(total - 1) < 1e-4, {t: got[t][-1].value for t in shares}
    print(f"pipeline: {len(events) - 1} events, tags {sorted(got)}")


def test_kill(d):
    spec = os.path.join(d, "t.pipe")
    logdir = os.path.join(d, "killed")
    m_path = os.path.join(d, "killed.jsonl")
    p = subprocess.Popen([PIPEC, "run", spec, "--steps", "100000000", "--logdir", logdir, "--metrics", m_path, "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Wait until a flush has put some steps in the file (the writer flushes every 2 s).
        deadline = time.time() + 120
        while time.time() < deadline:
            assert p.poll() is None, f"the run ended before it was killed: {p.stderr.read().decode()}"
            files = glob.glob(os.path.join(logdir, "train", "events.out.tfevents.*"))
            try:
                if files and len(records(files[0])) >= 10:
                    break
            except AssertionError:
                pass  # read while a flush was writing: look again
            time.sleep(0.2)
        else:
            raise AssertionError("no steps reached the event file in 120 s")
        time.sleep(0.7)  # into the middle of the next flush interval
        assert p.poll() is None, "the run ended before it was killed"
        p.kill()
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
    assert p.returncode == -signal.SIGKILL, p.returncode
    # Whole records only (records() fails on a cut one), every step from 1 on with all its scalars.
    _, events = one_event_file(os.path.join(logdir, "train"))
    got = scalars(os.path.join(logdir, "train"))
    assert set(got) == STEP_TAGS, sorted(got)
    n = len(got["batch_loss"])
    assert n >= 9, n
    for tag in STEP_TAGS:
        assert [e.step for e in got[tag]] == list(range(1, n + 1)), (tag, [e.step for e in got[tag]])
    # The same losses as --metrics for the steps both hold (--metrics flushes each line as its step ends).
    metrics = [json.loads(line) for line in open(m_path) if line.endswith("\n")]
    assert len(metrics) >= n, (len(metrics), n)
    check_series(got, "batch_loss", [(m["step"], m["loss"]) for m in metrics[:n]])
    print(f"killed run: {n} steps read back whole ({len(metrics)} in --metrics when killed)")


def main():
    with tempfile.TemporaryDirectory() as d:
        test_training(d)
        test_pipeline(d)
        test_kill(d)
    print("ok")


if __name__ == "__main__":
    main()
