#!/usr/bin/env python3
"""Runs one MPI rank in a network namespace, as if on a host of its own (tests/dist/two_hosts_veth.py).

Usage (as the program mpirun starts for a rank): netns_rank.py NAMESPACE COMMAND [ARG...]

mpirun's PMIx server, which the rank's MPI_Init connects to, listens on 127.0.0.1 of the namespace
mpirun runs in (PMIX_SERVER_URI4 and the like, tcp4://127.0.0.1:PORT), and PMIx 4 offers no other
transport; a process in another network namespace has a loopback of its own and cannot reach it. So
this program, started by mpirun in mpirun's namespace, opens a listening socket on 127.0.0.1:PORT
inside NAMESPACE (setns(2) on this thread, then back: a socket stays in the namespace it was made
in) and relays each connection to the server's port here. Then it runs COMMAND in NAMESPACE (`ip netns
exec`) and exits with its status. Only the launcher's control messages take the relay; the ranks'
own traffic goes over the interfaces the namespace has (the veth pair).
"""
import ctypes
import os
import re
import socket
import subprocess
import sys
import threading

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(listener, port):
    while True:
        inside, _ = listener.accept()
        outside = socket.create_connection(("127.0.0.1", port))
        for a, b in ((inside, outside), (outside, inside)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: netns_rank.py NAMESPACE COMMAND [ARG...]")
    namespace, command = sys.argv[1], sys.argv[2:]
    ports = set()
    for key, value in os.environ.items():
        if key.startswith("PMIX_SERVER_URI"):
            ports.update(int(p) for p in re.findall(r"tcp4://127\.0\.0\.1:(\d+)", value))
    if not ports:
        sys.exit("netns_rank.py: no PMIX_SERVER_URI* with a tcp4://127.0.0.1 address: not started by mpirun?")
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    listeners = []
    setns(there)
    try:
        for port in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(16)
            listeners.append((s, port))
    finally:
        setns(here)
    for s, port in listeners:
        threading.Thread(target=relay, args=(s, port), daemon=True).start()
    sys.exit(subprocess.call(["ip", "netns", "exec", namespace, *command]))


if __name__ == "__main__":
    main()
