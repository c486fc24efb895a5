#!/usr/bin/env python3
"""Two ranks on two "hosts" joined by a network cable (ctest dist_two_hosts_veth).

Usage: two_hosts_veth.py PIPEC MPIRUN

The hosts are two network namespaces joined by a veth pair, each end with an address of its own; each
rank runs in one (tests/dist/netns_rank.py: `ip netns exec`, with mpirun's PMIx connection relayed
into the namespace), in mpirun's MPMD form, with Open MPI's TCP transport alone (`--mca btl tcp,self`,
no shared memory) told to use that rank's veth end (btl_tcp_if_include; per rank, since Open MPI 4.1
drops its TCP transport on a process that is told of an interface it does not have). Checks:

1. The two ranks train a multi_worker() spec to the weights (--save) of the same 2 ranks on one
   host's loopback, bit for bit (pipec sums the gradients in rank order, whatever the transport).
2. The gradients really crossed the cable: each veth end sent at least the bytes every step's
   all-reduce sends from a rank (the parameters' bytes per step), counted by the kernel
   (/sys/class/net/VETH/statistics/tx_bytes, read inside its namespace).

The namespaces and the veth pair have names unique to this process and are removed however the test
ends. Making them needs root and iproute2; where they cannot be made the test fails saying why,
unless PIPEC_SKIP_NETNS=1, which makes it exit with 77 (ctest: skipped).
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

pipec, mpirun = os.path.abspath(sys.argv[1]), sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
failures = []
STEPS = 40
PREFIX = "pipec-veth-"


def check(ok, what):
    # What a passing check ran (a command's output after the first line) is said only when it fails.
    print(("ok   " + what.split("\n")[0]) if ok else ("FAIL " + what))
    if not ok:
        failures.append(what)


def ip(*args, check_rc=True):
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed: {p.stderr.strip() or p.returncode}")
    return p.stdout


def cannot(why):
    if os.environ.get("PIPEC_SKIP_NETNS") == "1":
        print(f"skipped (PIPEC_SKIP_NETNS=1): {why}")
        sys.exit(77)
    print(f"FAIL two network namespaces joined by a veth pair cannot be made here: {why}\n"
          "     (this test needs root and iproute2; PIPEC_SKIP_NETNS=1 skips it)")
    sys.exit(1)


def remove_stale():
    """Namespaces a killed run of this test left behind (their process is gone)."""
    for line in ip("netns", "list", check_rc=False).splitlines():
        name = line.split()[0] if line.split() else ""
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX):].split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            ip("netns", "del", name, check_rc=False)


def tx_bytes(namespace, veth):
    p = subprocess.run(["ip", "netns", "exec", namespace, "cat", f"/sys/class/net/{veth}/statistics/tx_bytes"],
                       capture_output=True, text=True)
    return int(p.stdout) if p.returncode == 0 and p.stdout.strip().isdigit() else -1


def tensor_bytes(path):
    """The bytes of the tensors in a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(t["data_offsets"][1] - t["data_offsets"][0] for k, t in header.items() if k != "__metadata__")


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


SPEC = f"""pipeline data = range(960)
  | map(r => {{ x: [f32(r.value % 11) * 0.1, f32(r.value % 7) * 0.2, 1.0 - f32(r.value) * 0.001], y: [f32(r.value % 5) * 0.3] }})
  | batch(12, drop_remainder = true)
model net(x: f32[3]) -> f32[1] {{ x | dense(256) | relu | dense(1) }}
train t = {{ data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = {STEPS}, strategy = multi_worker() }}
"""

if os.geteuid() != 0:
    cannot(f"not root (uid {os.geteuid()})")
if not shutil.which("ip"):
    cannot("no `ip` command (iproute2)")

tag = str(os.getpid())
hosts = [f"{PREFIX}{tag}-0", f"{PREFIX}{tag}-1"]
veths = [f"pv{tag}a", f"pv{tag}b"]  # at most 15 characters
addresses = ["10.97.0.1/24", "10.97.0.2/24"]
made = []


def clean_up(*_):
    for name in made:
        ip("netns", "del", name, check_rc=False)
    ip("link", "del", veths[0], check_rc=False)  # when it was made but not moved yet
    made.clear()


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # the `finally` below removes what was made


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
try:
    remove_stale()
    try:
        for name in hosts:
            ip("netns", "add", name)
            made.append(name)
        ip("link", "add", veths[0], "type", "veth", "peer", "name", veths[1])
        for name, veth, address in zip(hosts, veths, addresses):
            ip("link", "set", veth, "netns", name)
            ip("-n", name, "addr", "add", address, "dev", veth)
            ip("-n", name, "link", "set", veth, "up")
            ip("-n", name, "link", "set", "lo", "up")  # the relayed PMIx connection listens on its loopback
    except RuntimeError as e:
        cannot(str(e))

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "t.pipe"), "w") as f:
            f.write(SPEC)

        def run(args):
            p = subprocess.run(args, env=env, cwd=folder, capture_output=True, text=True, timeout=120)
            return p.returncode, p.stdout + p.stderr

        rank = [pipec, "run", "t.pipe", "--threads", "1", "--save"]
        code, out = run([mpirun, "--oversubscribe", "-np", "2", *rank, "loopback.safetensors"])
        check(code == 0, "two ranks on one host (loopback) train\n" + out)

        before = [tx_bytes(h, v) for h, v in zip(hosts, veths)]
        contexts = []
        for host, veth in zip(hosts, veths):
            if contexts:
                contexts.append(":")
            contexts += ["-np", "1", "env", f"OMPI_MCA_btl_tcp_if_include={veth}", sys.executable,
                         os.path.join(here, "netns_rank.py"), host, *rank, "hosts.safetensors"]
        code, out = run([mpirun, "--oversubscribe", "--mca", "btl", "tcp,self", *contexts])
        after = [tx_bytes(h, v) for h, v in zip(hosts, veths)]
        check(code == 0 and "multi_worker: 2 ranks" in out, "two ranks on two hosts joined by a veth pair train\n" + out)
        check(code == 0 and read(os.path.join(folder, "loopback.safetensors")) is not None
              and read(os.path.join(folder, "hosts.safetensors")) == read(os.path.join(folder, "loopback.safetensors")),
              "their weights are the loopback run's, bit for bit")
        # Every step all-reduces the gradients: a rank sends the parameters' bytes (half of the buffer in
        # the reduce-scatter, its half of the sums in the all-gather).
        params = tensor_bytes(os.path.join(folder, "loopback.safetensors")) if code == 0 else 0
        sent = [a - b for a, b in zip(after, before)]
        check(min(before) >= 0 and params > 0 and all(s >= STEPS * params for s in sent),
              f"the gradients crossed the veth pair: {sent} bytes sent by its ends, at least {STEPS} steps x "
              f"{params} bytes each")
finally:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    clean_up()

sys.exit(1 if failures else 0)
