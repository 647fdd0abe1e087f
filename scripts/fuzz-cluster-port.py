#!/usr/bin/env python3
"""Fuzzes a herald node's cluster port (docs/security.md, "The cluster port").

    scripts/fuzz-cluster-port.py --port P --http-port H --certs DIR [--seconds N] [--seed S]

Run it against a node built with -fsanitize=address,undefined (docs/security.md says how) whose
cluster port is TLS-wrapped with the authority in DIR (scripts/cluster-certs.sh DIR n1 fuzz).
Each connection is one of:
- a stranger: plaintext bytes, a TLS client without a certificate, or one whose certificate
  another authority signed (DIR/foreign/, made here) -- none of it may reach BASP;
- a member (DIR/fuzz.pem): random bytes after TLS, random BASP headers with random payloads,
  or a client handshake mutated from the node's own, followed by random frames of every
  message type -- what even an authenticated peer may send must be checked before CAF reads it.
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


def read_frame(sock):
    """The node's first frame: its server handshake (header, payload)."""
    data = b""
    while len(data) < HEADER.size:
        chunk = sock.recv(HEADER.size - len(data))
        if not chunk:
            raise ConnectionError("closed before the server handshake")
        data += chunk
    header = HEADER.unpack(data)
    payload = b""
    while len(payload) < header[4]:
        chunk = sock.recv(header[4] - len(payload))
        if not chunk:
            raise ConnectionError("closed inside the server handshake")
        payload += chunk
    return header, payload


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


def client_handshake(rng, server_payload, node_id_bytes):
    """A client handshake naming a node id mutated from the server's own."""
    node_id = bytearray(server_payload[:node_id_bytes])
    node_id[-1] ^= 1 + rng.randrange(255)  # another host id: not the node itself
    if rng.random() < 0.3:
        node_id = bytearray(mutate(rng, bytes(node_id)))
    return HEADER.pack(1, 0, 0, rng.choice([0, 2]), len(node_id), 0, 0, 0) + bytes(node_id)


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
            _, server_payload = read_frame(sock)
        except (ssl.SSLError, ConnectionError, OSError):
            if kind == "member":
                raise
            return  # what a stranger should get
        if kind != "member":
            raise AssertionError(f"{kind}: the node completed TLS and spoke BASP to a stranger")
        style = rng.random()
        frames = []
        if style < 0.2:
            frames.append(os.urandom(rng.choice([1, 31, 32, 1000, 65536])))
        elif style < 0.5:
            frames.extend(random_frame(rng) for _ in range(rng.randint(1, 5)))
        else:
            frames.append(client_handshake(rng, server_payload, args.node_id_bytes))
            for _ in range(rng.randint(1, 20)):
                payload = mutate(rng, server_payload) if rng.random() < 0.3 else None
                frames.append(random_frame(rng, payload))
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
    parser.add_argument("--node-id-bytes", type=int, default=0,
                        help="length of a node id in a handshake (0: find it out)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if not os.path.exists(f"{args.certs}/foreign/fuzz.pem"):
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([f"{here}/cluster-certs.sh", f"{args.certs}/foreign", "fuzz"], check=True,
                       stdout=subprocess.DEVNULL)
    if args.node_id_bytes == 0:
        args.node_id_bytes = find_node_id_bytes(args)
    print(f"seed {args.seed}, node id {args.node_id_bytes} bytes", flush=True)
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


def find_node_id_bytes(args):
    """A node id is the start of the server handshake; a client handshake carries only it. The
    node's app identifiers follow it, a length-prefixed string starting with their count."""
    sock = member_context(args.certs).wrap_socket(
        socket.create_connection(("127.0.0.1", args.port), timeout=5))
    _, payload = read_frame(sock)
    sock.close()
    marker = payload.find(b"generic-caf-app")  # CAF's default, which herald keeps
    if marker < 2:
        raise SystemExit("cannot find the app identifier in the server handshake; pass --node-id-bytes")
    return marker - 2  # one byte of count, one byte of length before the string


if __name__ == "__main__":
    sys.exit(main())
