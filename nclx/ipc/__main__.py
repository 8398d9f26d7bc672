"""``python -m nclx.ipc serve FILE.arrow [FILE2 ...] [--shm] [--uri URI]`` and
``python -m nclx.ipc fetch URI TICKET -o OUT.arrow``.

``serve`` memory-maps Arrow IPC files (file or stream format), serves each
under its stem as ticket, prints the URI as stdout's first line and runs
until SIGINT or SIGTERM, then releases its shared-memory segment.
``fetch`` writes the dataset to an Arrow IPC file, showing progress (rich
when installed, plain text otherwise).
"""
import argparse
import os
import stat
import signal
import sys
import time

import pyarrow as pa

from nclx.ipc.client import Client
from nclx.ipc.errors import ProtocolError, RemoteError
from nclx.ipc.server import Server


def _read_table(path):
    source = pa.memory_map(path)
    try:
        return pa.ipc.open_file(source).read_all()
    except pa.ArrowInvalid:
        source.seek(0)
        return pa.ipc.open_stream(source).read_all()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def serve(args):
    datasets = {}
    for path in args.files:
        stem = os.path.splitext(os.path.basename(path))[0].encode()
        if stem in datasets:
            print(f"two files have the stem {stem.decode()!r}", file=sys.stderr)
            return 2
        try:
            datasets[stem] = _read_table(path)
        except (OSError, ValueError) as exc:
            print(f"cannot read {path}: {exc}", file=sys.stderr)
            return 1
    server = Server(datasets, uri=args.uri, shm=args.shm,
                    max_connections=args.max_connections,
                    idle_timeout=None if args.idle_timeout == 0 else args.idle_timeout)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        print(server.uri, flush=True)
        names = ", ".join(f"{t.decode()} ({d.num_rows} rows)" for t, d in datasets.items())
        print(f"serving {names}; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.close()
        print("stopped; segment released" if args.shm else "stopped", file=sys.stderr,
              flush=True)
    return 0


class _PlainProgress:
    def __init__(self, label):
        self.label = label
        self.last = 0.0

    def update(self, batches, nbytes, final=False):
        now = time.monotonic()
        if final or now - self.last > 0.5:
            self.last = now
            print(f"{self.label}: {batches} batches, {nbytes / 1e6:.1f} MB",
                  file=sys.stderr, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _RichProgress:
    def __init__(self, label):
        from rich.progress import (   # optional: _progress falls back to plain text
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 DownloadColumn(), TransferSpeedColumn(),
                                 TextColumn("{task.fields[batches]} batches"),
                                 transient=False)
        self.task = self.progress.add_task(label, total=None, batches=0)

    def update(self, batches, nbytes, final=False):
        self.progress.update(self.task, completed=nbytes, batches=batches,
                             **({"total": nbytes} if final else {}))

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        self.progress.__exit__(*exc)


def _progress(label, enabled):
    if not enabled:
        return _PlainProgress(label)
    try:
        return _RichProgress(label)
    except ImportError:
        return _PlainProgress(label)


def _discard(path):
    """Leave no partial file at ``path``: a regular file is removed; a
    link's regular file is emptied (the link stays: before, the link was
    removed and the partial file stayed behind it; review 22); a device or
    FIFO (``-o /dev/null``) is left alone."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode):
            os.unlink(path)
        elif stat.S_ISLNK(mode) and os.path.isfile(path):
            os.truncate(path, 0)
    except OSError:
        pass


def fetch(args):
    with Client(args.uri, timeout=args.timeout) as client:
        with client.stream(args.ticket.encode()) as s, \
                _progress(f"fetch {args.ticket}", not args.no_progress) as bar:
            schema = s.schema
            rows = 0
            sink = pa.OSFile(args.output, "wb")
            try:
                with sink, pa.ipc.new_file(sink, schema) as w:
                    for batch in s:
                        w.write_batch(batch)
                        rows += batch.num_rows
                        bar.update(s.num_batches, s.nbytes)
            except BaseException:
                # the writer's exit wrote a footer: a valid but partial file
                # (review 22): discarded
                _discard(args.output)
                raise
            bar.update(s.num_batches, s.nbytes, final=True)
    print(f"wrote {args.output}: {s.num_batches} batches, {rows} rows, "
          f"{s.nbytes / 1e6:.1f} MB")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nclx.ipc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve Arrow IPC files")
    p.add_argument("files", nargs="+", metavar="FILE.arrow")
    p.add_argument("--shm", action="store_true", help="bodies in shared memory")
    p.add_argument("--uri", default="tcp://127.0.0.1:0", help="where to listen")
    p.add_argument("--max-connections", type=int, default=64,
                   help="clients served at once (one more is told 'server_full')")
    p.add_argument("--idle-timeout", type=float, default=300.0,
                   help="seconds an idle connection is kept (0: for ever)")
    p = sub.add_parser("fetch", help="fetch a dataset into an Arrow IPC file")
    p.add_argument("uri")
    p.add_argument("ticket")
    p.add_argument("-o", "--output", required=True, metavar="OUT.arrow")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--no-progress", action="store_true", help="plain text progress")
    args = parser.parse_args(argv)
    try:
        return serve(args) if args.command == "serve" else fetch(args)
    except (ProtocolError, RemoteError, OSError, TimeoutError, ValueError) as exc:
        print(f"python -m nclx.ipc {args.command}: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
