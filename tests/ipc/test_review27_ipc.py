"""Review 27 (docs audit of ipc.md): option checks and the byte count of a
cut frame header; each test failed before its fix."""
import time

import numpy as np
import pytest
from ipc_helpers import FakeServer

import nclx.ipc as ipc
from nclx.ipc import wire


@pytest.mark.parametrize("bad", [0, -1, 1.5, "4096", True, None, 2**63])
@pytest.mark.parametrize("name", ["max_request", "batch_bytes"])
def test_server_counts_are_checked_at_construction(name, bad):
    # before: max_request=0/-1 was taken and then every request was refused
    # as "frame length 1 exceeds the limit of -1 bytes"; True/1.5 taken
    with pytest.raises(ValueError, match=name):
        ipc.Server({"t": np.arange(3)}, **{name: bad})


@pytest.mark.parametrize("bad", [0, -1, 1.5, "65536", True, 2**31])
def test_server_sockbuf_is_checked(bad):
    with pytest.raises(ValueError, match="sockbuf"):
        ipc.Server({"t": np.arange(3)}, sockbuf=bad)


def test_checked_server_options_still_serve():
    with ipc.Server({"t": np.arange(300)}, max_request=np.int64(4096), batch_bytes=np.int32(64),
                    sockbuf=1 << 16, timeout=5) as srv:
        srv.start()
        assert ipc.fetch_array(srv.uri, "t").tolist() == list(range(300))
        assert not srv.errors


def test_client_rate_and_rows_are_checked():
    srv = ipc.serve_arrays({"a": np.arange(5)})
    try:
        # before: "30" gave a bare TypeError comparing str with int; True,
        # inf and 2**63 were taken
        for bad in ("30", True, 0, -5, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="min_rate"):
                ipc.Client(srv.uri, min_rate=bad)
        for bad in (-1, 1.5, "10", True, 2**63):
            with pytest.raises(ValueError, match="max_rows"):
                ipc.Client(srv.uri, max_rows=bad)
        with ipc.Client(srv.uri, min_rate=np.float64(1e6), max_rows=np.int64(10),
                        timeout=5) as c:
            assert c.fetch_array("a").tolist() == list(range(5))
        with ipc.Client(srv.uri, min_rate=None, max_rows=0, timeout=5) as c:
            assert c.fetch_array("a").tolist() == list(range(5))
    finally:
        srv.close()


@pytest.mark.parametrize("kind,cut", [(wire.KIND_TAGGED, 3), (wire.KIND_TAGGED, 16),
                                      (wire.KIND_UNTAGGED, 1), (wire.KIND_UNTAGGED, 8)])
def test_a_cut_frame_header_names_the_header_s_length(kind, cut):
    head = wire.encode_frame_header(kind, 1 if kind == wire.KIND_TAGGED else None, 100)
    size = len(head)

    def script(conn, want):
        conn.sendall(head[:cut])

    with FakeServer(script, query="want_data=1") as fake:
        t0 = time.monotonic()
        with pytest.raises(ipc.ConnectionLostError,
                           match=rf"after {cut} of {size} bytes of a frame header"):
            with ipc.Client(fake.uri, timeout=5) as c:
                c.fetch("t")      # before: "after 3 of 4 bytes" (one more than it had)
        assert time.monotonic() - t0 < 8
