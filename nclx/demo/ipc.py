"""Section 10 of ``python -m nclx demo``: Arrow dissociated IPC between processes (nclx.ipc)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

from nclx.demo._common import section


def run():
    """Serve an Arrow file from another process and fetch it zero-copy; return 0."""
    import pyarrow as pa   # optional (the ipc extra): earlier sections run without it

    import nclx.ipc as ipc   # not at the top: nclx.ipc imports pyarrow

    section("10. nclx.ipc: Arrow dissociated IPC between processes (shared memory and TCP)")
    t = pa.table({"i": np.arange(1_000_000), "f": np.linspace(0.0, 1.0, 1_000_000)})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "demo.arrow")
        with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
        proc = subprocess.Popen([sys.executable, "-m", "nclx.ipc", "serve", path, "--shm"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            uri = proc.stdout.readline().strip()
            print(f"python -m nclx.ipc serve demo.arrow --shm  (another process, pid {proc.pid})"
                  f"\n  {uri}")
            with ipc.Client(uri) as c:
                got = c.fetch("demo")
                buf = got.column("f").chunk(0).buffers()[1]
                print(f"fetched {got.num_rows:,} rows, equal to the original: {got.equals(t)}")
                print(f"column f at {buf.address:#x}: inside the server's segment "
                      f"({c.segment.size >> 20} MiB, mapped read-only): "
                      f"{c.segment.contains(buf.address)} -> zero copy, only metadata travelled")
                print(f"offsets leased from the server: {c.held}")
                del got, buf
                print(f"after `del got`: {c.held} (free_data sent)")
            try:
                ipc.fetch(uri, "nope")
            except ipc.UnknownTicketError as exc:
                print(f"unknown ticket: UnknownTicketError: {exc}")
        finally:
            proc.terminate()
            proc.wait(10)
    with ipc.serve_arrays({"grid": np.arange(12.0).reshape(3, 4)}) as server:
        a = ipc.fetch_array(server.uri, "grid")
        print(f"serve_arrays over TCP ({server.uri.split('?')[0]}): fetch_array -> "
              f"{a.dtype} {a.shape}, a[2] = {a[2]}")
    return 0
