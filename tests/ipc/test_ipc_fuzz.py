"""Fuzzing the parsers: random bytes and mutated real streams through the
frame parser, the payload parsers, the flatbuffer reader, the sequence
state machine and pyarrow's reader (client.decode_frames, the sans-IO twin
of the socket client).  The only acceptable failures are ProtocolError and
RemoteError; a decoded table is fully validated and read.

The default run generates a few thousand frames (hypothesis, 150 examples
per test, plus 3,000 frames of seeded random mutations); NCLX_SLOW=1 runs
the big set (about a minute): 15,000 hypothesis examples of mutated
streams (>= 100,000 frames, asserted), 5,000 of each other hypothesis test
and 300,000 frames of seeded random mutations.
"""
import random

import numpy as np
import pyarrow as pa
import pytest
from ipc_helpers import SLOW, eos_frame, meta_frame, packed_stream, stream_messages
from hypothesis import given, settings
from hypothesis import strategies as st

from nclx.ipc import ProtocolError, RemoteError, wire
from nclx.ipc.decode import decode_frames
from nclx.ipc.flatbuf import parse_message
from nclx.ipc.segment import Mapping, Segment

SLOW_REASON = "the big fuzz set (>= 1e5 frames) runs with NCLX_SLOW=1"
EXAMPLES = 5000 if SLOW else 150
STREAM_EXAMPLES = 15000 if SLOW else 150

TABLES = [
    pa.table({"x": np.arange(30, dtype=np.int64), "y": np.arange(30.0)}),
    pa.table({"s": pa.array(["a", None, "ccc"] * 4), "d": pa.array(["p", "q"] * 6)
              .dictionary_encode(), "l": pa.array([[1], [], [2, 3]] * 4)}),
    pa.table({"b": pa.array([True, False, None] * 3)}),
]


def _base(k, first_seq):
    pairs, eos = packed_stream(TABLES[k % len(TABLES)], max_chunksize=5, first_seq=first_seq)
    frames = [f for p in pairs for f in p if f is not None]
    return frames + [eos]


BASES = {(k, s): _base(k, s) for k in range(len(TABLES)) for s in (0, 2**32 - 2)}


def run_stream(data, first_seq=0, segment=None):
    """Parse frames out of ``data`` as they arrive (in 61-byte pieces) and
    decode those that were parsed before any framing error, like a client;
    returns the number of frames parsed.  Any failure other than
    ProtocolError/RemoteError propagates and fails the test."""
    parser = wire.FrameParser(max_length=1 << 20)
    frames = []
    try:
        for i in range(0, len(data), 61):
            frames += parser.feed(data[i:i + 61])
        parser.close()
    except ProtocolError:
        pass
    try:
        table = decode_frames(frames, first_seq=first_seq, segment=segment)
        table.to_pylist()                         # every value readable
    except (ProtocolError, RemoteError):
        pass
    return len(frames)


def _mutate(frames, ops):
    frames = list(frames)
    for op, i, v in ops:
        if not frames:
            break
        i %= len(frames)
        f = bytearray(frames[i])
        if not f:
            continue
        if op == "drop":
            del frames[i]
        elif op == "dup":
            frames.insert(i, frames[i])
        elif op == "swap":
            j = v % len(frames)
            frames[i], frames[j] = frames[j], frames[i]
        elif op == "flip":
            f[v % len(f)] ^= (v >> 8) % 255 + 1
            frames[i] = bytes(f)
        elif op == "cut":
            frames[i] = bytes(f[:v % len(f)])
        elif op == "tag" and f[0] == 1:
            f[1:9] = (v * 0x9E3779B97F4A7C15 % 2**64).to_bytes(8, "little")
            frames[i] = bytes(f)
        elif op == "seq" and f[0] == 0 and len(f) >= 14:
            f[10:14] = (v % 2**32).to_bytes(4, "little")
            frames[i] = bytes(f)
        elif op == "length":
            pos = 9 if f[0] == 1 else 1
            f[pos:pos + 8] = (v % (1 << 21)).to_bytes(8, "little")
            frames[i] = bytes(f)
        elif op == "u64" and f[0] == 1 and len(f) >= 33:
            pos = 17 + 8 * (v % ((len(f) - 17) // 8))
            value = [0, 8, 1 << 16, (1 << 16) - 8, 2**63, 2**64 - 1, v][v % 7]
            f[pos:pos + 8] = value.to_bytes(8, "little")
            frames[i] = bytes(f)
        elif op == "junk":
            frames.insert(i, v.to_bytes(8, "little") * (v % 5))
    return frames


OPS = st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "flip", "cut", "tag", "seq",
                                          "length", "junk", "u64"]),
                         st.integers(0, 1000), st.integers(0, 2**40)), max_size=4)


@settings(max_examples=STREAM_EXAMPLES)
@given(k=st.integers(0, len(TABLES) - 1), wrap=st.booleans(), ops=OPS)
def _mutated(counter, k, wrap, ops):
    first = 2**32 - 2 if wrap else 0
    counter[0] += run_stream(b"".join(_mutate(BASES[k, first], ops)), first)


def test_mutated_streams():
    counter = [0]
    _mutated(counter)
    assert counter[0] >= (100_000 if SLOW else 1000), counter[0]


@pytest.fixture(scope="module")
def shm_stream():
    """A shared-memory stream (bodies of type 1) of TABLES[1] and the
    client's read-only mapping of its segment (64 KiB)."""
    seg = Segment(1 << 16)
    mapping = Mapping(seg.name)
    frames, pos = [], 4096
    msgs = stream_messages(TABLES[1], max_chunksize=5)
    for seq, (meta, body, info) in enumerate(msgs):
        frames.append(meta_frame(seq, meta))
        if body is None:
            continue
        seg.view(pos, len(body))[:] = body
        pairs = [(pos + off, ln) for off, ln in info.buffers]
        frames.append(wire.encode_frame(1, wire.make_tag(seq, 1), wire.encode_shm_body(pairs)))
        pos += (len(body) + 63) // 64 * 64
    frames.append(eos_frame(len(msgs)))
    assert decode_frames([f for fs in [wire.FrameParser().feed(b"".join(frames))] for f in fs],
                         segment=mapping).equals(TABLES[1])
    yield frames, mapping
    seg.close()


def test_mutated_shm_streams(shm_stream):
    frames, mapping = shm_stream
    counter = [0]

    @settings(max_examples=STREAM_EXAMPLES)
    @given(ops=OPS)
    def run(ops):
        counter[0] += run_stream(b"".join(_mutate(frames, ops)), 0, mapping)
    run()
    assert counter[0] >= (50_000 if SLOW else 500), counter[0]


@settings(max_examples=EXAMPLES)
@given(chunks=st.lists(st.binary(max_size=64), max_size=8))
def test_random_bytes_through_the_frame_parser(chunks):
    parser = wire.FrameParser(max_length=1 << 16)
    try:
        for c in chunks:
            for f in parser.feed(c):
                assert f.kind in wire.KINDS
                assert len(f.payload) <= 1 << 16
        parser.close()
    except ProtocolError:
        pass


@settings(max_examples=EXAMPLES)
@given(payload=st.binary(max_size=300), tag=st.integers(0, 2**64 - 1))
def test_payload_parsers(payload, tag):
    for fn in (wire.decode_untagged, wire.decode_shm_body, wire.decode_free_data,
               wire.decode_error, parse_message):
        try:
            fn(payload)
        except ProtocolError:
            pass
    try:
        seq, btype = wire.split_tag(tag)
        assert wire.make_tag(seq, btype) == tag
    except ProtocolError:
        assert tag & wire.RESERVED_MASK or tag >> 56 > 1


def _random_mutations(rng, n_frames):
    """A fast, non-hypothesis mutation loop; returns frames fed."""
    fed = 0
    keys = sorted(BASES)
    names = ["drop", "dup", "swap", "flip", "cut", "tag", "seq", "length", "junk", "u64"]
    while fed < n_frames:
        k, first = keys[rng.randrange(len(keys))]
        ops = [(rng.choice(names), rng.randrange(1000), rng.randrange(2**40))
               for _ in range(rng.randrange(1, 4))]
        fed += run_stream(b"".join(_mutate(BASES[k, first], ops)), first)
    return fed


def test_random_mutations_default():
    assert _random_mutations(random.Random(13), 3000) >= 3000


@pytest.mark.skipif(not SLOW, reason=SLOW_REASON)
def test_random_mutations_slow():
    assert _random_mutations(random.Random(14), 300_000) >= 300_000
