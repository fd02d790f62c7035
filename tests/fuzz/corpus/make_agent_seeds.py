#!/usr/bin/env python3
"""Writes the seed inputs of fuzz_agent_join and fuzz_agent_wire (binary, so
they are generated: run from tests/fuzz/corpus/). The layouts are described
at the top of ../agent_join.cc and ../agent_wire.cc."""
import struct

def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out

def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 1:
        return key + struct.pack("<Q", payload)
    return key + varint(len(payload)) + payload

def join(rank, size, name, port, pid=0x1234, server=b"", client=b"", proof=b""):
    m = field(1, 0, rank) + field(2, 0, size) + field(3, 2, name.encode()) + field(4, 0, port) + field(5, 1, pid)
    for num, v in ((6, server), (7, client), (8, proof)):
        if v:
            m += field(num, 2, v)
    return m

seeds = {
    "agent_join/valid-nokey": b"\x00" + join(1, 3, "/job:worker/task:0", 41001),
    "agent_join/valid-keyed": b"\x03" + join(2, 3, "/job:worker/task:1", 41002, client=b"c" * 16),
    "agent_join/forged-proof": b"\x02" + join(1, 3, "/job:worker/task:0", 41001, client=b"c" * 16, proof=b"p" * 32),
    "agent_join/no-proof": b"\x01" + join(1, 3, "/job:worker/task:0", 41001),
    "agent_join/wrong-name": b"\x00" + join(1, 3, "/job:worker/task:1", 41001),
    "agent_join/rank-zero": b"\x00" + join(0, 3, "/job:chief/task:0", 41000),
    "agent_join/bad-port": b"\x03" + join(1, 3, "/job:worker/task:0", 70000),
    "agent_join/negative": b"\x00" + join(-1, -3, "", -5),
}

def ctl(type_, code=0, body=b""):
    return struct.pack("<IIII", 0x31434D52, type_, code, len(body)) + body

stream = (ctl(1) + ctl(2, 4, b"DeadlineExceeded: all-reduce #3 timed out") + ctl(4, 0, struct.pack("<Q", 3))
          + ctl(5, 0, struct.pack("<QQQQiiBBBBId", 3, 2, 3, 4096, 0, 1, 1, 0, 1, 0, 0, 5.0)) + ctl(3))
seeds["agent_wire/frames-bytewise"] = b"\x00" + stream
seeds["agent_wire/frames-chunked"] = b"\x40" + stream
seeds["agent_wire/frames-garbage"] = b"\x04" + ctl(1) + b"GET / HTTP/1.1\r\n\r\n"
seeds["agent_wire/frames-too-long"] = b"\x08" + struct.pack("<IIII", 0x31434D52, 2, 0, 4097)

def hello(frm, to, size, channel=0, inc=7, flags=0, nonce=b"c" * 16):
    return struct.pack("<IIQIIIIII", 0x32484D52, 2, inc, frm, to, channel, size, flags, 0) + nonce

proof = struct.pack("<II", 0x32504D52, 0) + b"\0" * 32
seeds["agent_wire/acceptor-nokey"] = b"\x01" + bytes([0, 1, 0, 0]) + hello(1, 0, 2) + proof
seeds["agent_wire/acceptor-keyed"] = b"\x01" + bytes([0, 2, 1, 1]) + hello(2, 0, 3, channel=1, flags=1) + proof
seeds["agent_wire/acceptor-wrong-formation"] = b"\x01" + bytes([1, 1, 0, 0]) + hello(2, 1, 3, inc=8)
seeds["agent_wire/roundtrip-same-key"] = b"\x02" + bytes([1, 1, 0, 0, 0, 0, 1, 0x14])
seeds["agent_wire/roundtrip-no-keys"] = b"\x02" + bytes([2, 2, 0, 1, 0, 0, 2, 0x01])
seeds["agent_wire/roundtrip-other-key"] = b"\x02" + bytes([1, 1, 0, 0, 0, 0, 1, 0x24])
seeds["agent_wire/roundtrip-one-key"] = b"\x02" + bytes([1, 1, 0, 0, 0, 0, 1, 0x04])

def challenge(status=0, proof=b"\0" * 32):
    return struct.pack("<II", 0x324E4D52, status) + b"s" * 16 + proof

seeds["agent_wire/connector-ok"] = b"\x03" + bytes([0, 0, 7, 0]) + challenge()
seeds["agent_wire/connector-keyed"] = b"\x03" + bytes([1, 0, 7, 1]) + challenge(proof=b"m" * 32)
seeds["agent_wire/connector-key-required"] = b"\x03" + bytes([0, 0, 7, 0]) + challenge(status=1)
seeds["agent_wire/connector-garbage"] = b"\x03" + bytes([0, 0, 7, 0]) + b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\0" * 28

for name, data in seeds.items():
    with open(name, "wb") as f:
        f.write(data)
