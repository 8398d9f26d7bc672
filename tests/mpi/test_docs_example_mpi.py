"""docs/dap.md's "Example (`example.py`)" run as written, its printed lines
compared with the ones the doc shows for one and four ranks (review 21:
the doc showed the block's values where the code printed the storage's
repr); at other rank counts its sum and gathered line."""
import contextlib
import io
import pathlib
import re

from mpi4py import MPI

from mpi_helpers import N, collective_assert, rank

comm = MPI.COMM_WORLD
DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "dap.md"


def _section():
    text = DOC.read_text()
    return text[text.index("## Example (`example.py`)"):text.index("## Tests")]


def _blocks(section):
    return re.findall(r"```(\w*)\n(.*?)```", section, flags=re.S)


def _run(code):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "example.py", "exec"), {"__name__": "__main__"})
    return buf.getvalue().splitlines()


def test_the_example_prints_what_the_doc_shows():
    blocks = _blocks(_section())
    code = next(body for lang, body in blocks if lang == "python")
    outputs = [body.splitlines() for lang, body in blocks if lang == ""]
    one, four = outputs[0], outputs[1]
    mine = _run(code)
    lines = [line for line in comm.allgather(mine) for line in line]
    collective_assert(len(lines) == N + 1, f"{lines}")
    last = [s for s in lines if s.startswith("sum")]
    collective_assert(last == [one[-1]] and four[-1] == one[-1], f"{last} vs {one[-1]}")
    ranks = sorted(s for s in lines if s.startswith("rank"))
    if N == 1:
        collective_assert(ranks == [one[0]], f"{ranks} vs {one[0]}")
    if N == 4:
        collective_assert(ranks == sorted(four[:-1]), f"{ranks} vs {four[:-1]}")
    own = [s for s in mine if s.startswith(f"rank {rank}:")]
    collective_assert(len(own) == 1 and "Storage" not in own[0], f"{own}")
