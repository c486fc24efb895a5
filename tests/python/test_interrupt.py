"""Ctrl-C (SIGINT) stops a pipeline that is waiting for data at once, as KeyboardInterrupt; close() from
another thread ends a wait too; SIGINT handling is Python's again afterwards."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import pipec

NEVER_YIELDS = "pipeline p = range(1_000_000_000_000) | filter(r => r.value < 0)\n"

SCRIPT = r"""
import signal, sys, time
import pipec
spec = pipec.compile(sys.argv[1])
ds = spec.pipeline(threads=2)
print("waiting", flush=True)
t0 = time.monotonic()
try:
    next(ds)
    print("no interrupt", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - t0:.3f} s; closed={ds.closed}", flush=True)
# Python's own handler is back, and the process can run pipelines again.
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
with pipec.compile(sys.argv[2]).pipeline(threads=1) as again:
    print("values", sum(int(b["value"].numpy().sum()) for b in again), flush=True)
print("sleeping", flush=True)
try:
    time.sleep(30)
except KeyboardInterrupt:
    print("plain python interrupted", flush=True)
"""


def test_ctrl_c_stops_a_waiting_pipeline(write_spec, tmp_path):
    never = write_spec(NEVER_YIELDS, name="never.pipe")
    finite = write_spec("pipeline p = range(100) | batch(10)", name="finite.pipe")
    script = tmp_path / "interrupt.py"
    script.write_text(SCRIPT)
    p = subprocess.Popen([sys.executable, str(script), str(never), str(finite)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.5)  # in the wait by now: the filter never lets an element through
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        took = time.monotonic() - sent
        assert line.startswith("interrupted after") and line.endswith("closed=True"), line + p.stderr.read()
        assert took < 2.0, f"KeyboardInterrupt came {took:.2f} s after SIGINT"
        assert p.stdout.readline().strip() == "values 4950"
        assert p.stdout.readline().strip() == "sleeping"
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        assert p.stdout.readline().strip() == "plain python interrupted"
        assert p.wait(timeout=10) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_close_from_another_thread_ends_a_wait(write_spec):
    ds = pipec.compile(write_spec(NEVER_YIELDS)).pipeline(threads=2)
    outcome = []

    def consume():
        try:
            next(ds)
            outcome.append("batch")
        except StopIteration:
            outcome.append("stopped")

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.3)
    ds.close()
    t.join(timeout=5)
    assert not t.is_alive() and outcome == ["stopped"] and ds.closed


def test_waits_release_the_gil(write_spec):
    # While one thread waits in a pipeline, another keeps running Python code.
    ds = pipec.compile(write_spec(NEVER_YIELDS)).pipeline(threads=1)
    t = threading.Thread(target=lambda: next(ds, None))
    t.start()
    counted, deadline = 0, time.monotonic() + 0.3
    while time.monotonic() < deadline:
        counted += 1
    ds.close()
    t.join(timeout=5)
    assert counted > 10_000 and not t.is_alive()


def test_a_second_thread_on_the_same_pipeline_is_refused(write_spec):
    ds = pipec.compile(write_spec(NEVER_YIELDS)).pipeline(threads=1)
    t = threading.Thread(target=lambda: next(ds, None))
    t.start()
    time.sleep(0.2)
    with pytest.raises(RuntimeError, match="two threads"):
        next(ds)
    ds.close()
    t.join(timeout=5)
    assert not t.is_alive()
