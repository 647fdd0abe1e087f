#!/usr/bin/env python3
"""Fuzzes a herald node's cluster port (docs/security.md, "The cluster port").

    scripts/fuzz-cluster-port.py --port P --http-port H --certs DIR [--seconds N] [--seed S]

Run it against a node built with -fsanitize=address,undefined (docs/security.md says how) whose
cluster port is TLS-wrapped with the authority in DIR (scripts/cluster-certs.sh DIR n1 fuzz).
Each connection is one of:
- a stranger: plaintext bytes, a TLS client without a certificate, or one whose certificate
  another authority signed (DIR/foreign/, made here) -- none of it may reach BASP;
- a member (DIR/fuzz.pem): random bytes after TLS, random BASP headers with random payloads,
  or a client handshake followed by random frames of every type and direct messages of the
  cluster's types and hostile ones with random elements -- what even an authenticated peer
  may send must be checked before CAF reads it.
Between connections the node's /healthz must answer within 1 s; at the end the node must still
run. Exits 0 when it did, 1 with the first failure otherwise (look for ASan reports in the
node's stderr either way).
"""

import argparse
import http.client
import os
import random
import socket
import ssl
import struct
import subprocess
import sys
import time

HEADER = struct.Struct(">BBBBIQQQ")  # operation, padding, padding, flags, payload_len, data, src, dst
OPERATIONS = range(0, 8)  # the 7 BASP message types and one past them


def stranger_context(certs, foreign):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if foreign:
        context.load_cert_chain(f"{certs}/foreign/fuzz.pem", f"{certs}/foreign/fuzz.key")
    return context


def member_context(certs):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(f"{certs}/ca.pem")
    context.load_cert_chain(f"{certs}/fuzz.pem", f"{certs}/fuzz.key")
    return context


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        choice = rng.random()
        if choice < 0.5 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif choice < 0.7 and data:
            del data[rng.randrange(len(data)) :]
        else:
            data[rng.randrange(len(data) + 1) : 0] = os.urandom(rng.randint(1, 16))
    return bytes(data)


def random_frame(rng, payload=None):
    if payload is None:
        payload = os.urandom(rng.choice([0, 1, 8, 32, 200, 4096]))
    declared = len(payload)
    if rng.random() < 0.1:  # a declaration the payload does not match, up to 4 GiB
        declared = rng.choice([len(payload) + 1, 1 << 20, 5 << 20, 0xFFFFFFFF])
    header = HEADER.pack(
        rng.choice(OPERATIONS),
        rng.randrange(256) if rng.random() < 0.1 else 0,
        0,
        rng.randrange(256) if rng.random() < 0.3 else 0,
        declared,
        rng.getrandbits(64) if rng.random() < 0.5 else rng.randrange(4),
        rng.getrandbits(64) if rng.random() < 0.5 else rng.randrange(4),
        rng.getrandbits(64) if rng.random() < 0.5 else rng.randrange(4),
    )
    return header + payload


# A node id as CAF 0.17.6 writes its default kind: the atom "default", a process id and a
# 20-byte host id.
NODE_ID_KIND = bytes.fromhex("00003e9aab9bac79")
CLUSTER_TYPES = ["@<>+@atom+herald.member_beat", "@<>+@atom+herald.task_handoff",
                 "@<>+@atom+@atom+@str", "@<>+@atom+@str+@strong_actor_ptr+@str"]
HOSTILE_TYPES = ["@<>+@charbuf", "@<>+@message", "@<>+@atom", "@<>+@atom+@str+@message",
                 "@<>+@error", "@<>+@u8vec"]


def client_handshake(rng):
    """A member's first frame: its client handshake with a node id of its own."""
    node_id = NODE_ID_KIND + struct.pack(">I", rng.getrandbits(32)) + os.urandom(20)
    if rng.random() < 0.2:
        node_id = mutate(rng, node_id)
    return HEADER.pack(1, 0, 0, rng.choice([0, 2]), len(node_id), 0, 0, 0) + node_id


def varbyte(value):
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def message_payload(rng):
    """A direct message's payload as CAF writes it, of a cluster type or a hostile one, with
    random elements (CAF then deserialises them)."""
    name = rng.choice(CLUSTER_TYPES if rng.random() < 0.7 else HOSTILE_TYPES).encode()
    elements = os.urandom(rng.choice([0, 1, 8, 40, 300]))
    if rng.random() < 0.3:  # a huge declared length where a string or sequence starts
        elements = varbyte(rng.choice([0xFFFF, 0xFFFFFFF, 0xFFFFFFFF & 0x7FFFFFFF])) + elements
    return varbyte(0) + b"\0\0" + varbyte(len(name)) + name + elements


def one_connection(rng, args, stats):
    kind = rng.choice(["plain", "tls-anonymous", "tls-foreign", "member", "member", "member"])
    stats[kind] = stats.get(kind, 0) + 1
    raw = socket.create_connection(("127.0.0.1", args.port), timeout=5)
    try:
        if kind == "plain":
            raw.sendall(os.urandom(rng.choice([1, 32, 517, 65536])))
            return
        context = member_context(args.certs) if kind == "member" else stranger_context(
            args.certs, kind == "tls-foreign")
        try:
            sock = context.wrap_socket(raw)
            # A member speaks first (its client handshake); the node answers with its own.
            # A stranger gets nothing: the node writes nothing before a valid first frame.
            if kind != "member":
                sock.settimeout(0.5)
                if sock.recv(1):
                    raise AssertionError(f"{kind}: the node spoke BASP to a stranger")
                return
        except (ssl.SSLError, ConnectionError, socket.timeout, OSError):
            if kind == "member":
                raise
            return  # what a stranger should get
        style = rng.random()
        frames = []
        if style < 0.15:
            frames.append(os.urandom(rng.choice([1, 31, 32, 1000, 65536])))
        elif style < 0.3:
            frames.extend(random_frame(rng) for _ in range(rng.randint(1, 5)))
        else:
            frames.append(client_handshake(rng))
            for _ in range(rng.randint(1, 20)):
                choice = rng.random()
                if choice < 0.5:
                    payload = message_payload(rng)
                    frames.append(HEADER.pack(2, 0, 0, rng.choice([0, 0, 1]), len(payload),
                                              rng.getrandbits(64), rng.randrange(1, 100),
                                              rng.randrange(1, 100)) + payload)
                else:
                    frames.append(random_frame(rng))
        try:
            for frame in frames:
                sock.sendall(frame)
            sock.settimeout(0.2)
            try:
                sock.recv(65536)
            except (socket.timeout, ssl.SSLError, OSError):
                pass
        except (ssl.SSLError, OSError):
            pass  # the node closed a connection it refused: expected
    finally:
        raw.close()


def healthz_seconds(http_port):
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=1)
    conn.request("GET", "/healthz")
    status = conn.getresponse().status
    conn.close()
    if status != 200:
        raise AssertionError(f"/healthz answered {status}")
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="the node's cluster port")
    parser.add_argument("--http-port", type=int, required=True, help="the node's HTTP port")
    parser.add_argument("--certs", required=True, help="the cluster's certificate folder")
    parser.add_argument("--pid", type=int, help="the node's process id, checked to be alive")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if not os.path.exists(f"{args.certs}/foreign/fuzz.pem"):
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/cluster-certs.sh", f"{args.certs}/foreign", "fuzz"], check=True,
                       stdout=subprocess.DEVNULL)
    print(f"seed {args.seed}", flush=True)
    stats, connections, slowest = {}, 0, 0.0
    deadline = time.monotonic() + args.seconds
    try:
        while time.monotonic() < deadline:
            one_connection(rng, args, stats)
            connections += 1
            if connections % 10 == 0:
                slowest = max(slowest, healthz_seconds(args.http_port))
            if args.pid and not os.path.exists(f"/proc/{args.pid}"):
                raise AssertionError("the node is gone")
        slowest = max(slowest, healthz_seconds(args.http_port))
    except Exception as failure:  # report the first failure with what led to it
        print(f"FAILED after {connections} connections ({stats}): {failure!r}", flush=True)
        return 1
    print(f"ok: {connections} connections {stats}, slowest /healthz {slowest * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
