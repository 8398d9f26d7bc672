"""Review 23: install(), config, threads and the command line.

Each test failed before its fix (run against the previous code):
- ``with nclx.config(...)`` blocks of two threads leaving out of order left
  ``reassociate=True`` on after both ended (products reassociated);
- ``threadpool_limits(k)`` capped nclx only where k was below OpenMP's
  default thread count; ``get_num_threads()`` ignored ``OMP_THREAD_LIMIT``;
- ``calibrate()``, ``install(python_funnel=)``, ``set_threshold``,
  ``subsystem_of``, ``register_c`` and pickling a Handle took bad arguments
  or failed with messages that named no argument;
- ``config()`` re-read ``NCLX_ISA`` (the ISA of a child's environment);
- a failed ``import nclx`` left ``GOMP_SPINCOUNT`` in the environment;
- ``python -m nclx bench`` took ``--repeats 0`` and ``--sizes -5`` to a
  traceback, ``bench halo --ranks 0`` to mpiexec.
"""
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import nclx
from nclx import hooks
from conftest import run_script


def test_config_blocks_of_two_threads_leaving_out_of_order():
    before = nclx.config()["settings"]["reassociate"]
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with nclx.config(reassociate=True):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second():
        a_in.wait(10)
        with nclx.config(reassociate=False):
            b_in.set()
            a_out.wait(10)
            # the later block's value stands while it is open
            seen.append(nclx.config()["settings"]["reassociate"])

    seen = []
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == [False]
    assert nclx.config()["settings"]["reassociate"] is before is False


def test_config_blocks_nested_in_one_thread_restore_in_order():
    with nclx.config(reassociate=True):
        with nclx.config(reassociate=False):
            assert nclx.config()["settings"]["reassociate"] is False
        assert nclx.config()["settings"]["reassociate"] is True
    assert nclx.config()["settings"]["reassociate"] is False
    cap = nclx.config()["settings"]["recycle_cap"]
    with nclx.config(recycle_cap=1 << 20):
        assert nclx.config()["settings"]["recycle_cap"] == 1 << 20
    assert nclx.config()["settings"]["recycle_cap"] == cap


def test_threadpool_limits_at_or_above_openmps_default_caps_nclx():
    threadpoolctl = pytest.importorskip(
        "threadpoolctl", reason="threadpoolctl (tools/requirements-test.txt) is not installed")
    if not hasattr(threadpoolctl, "register"):
        pytest.skip("threadpoolctl older than 3.5 has no register(): not capped this way")
    default = nclx.config()["max_threads"]          # OpenMP's count at import
    old = nclx.get_num_threads()
    try:
        for k in (default, default + 1):
            nclx.set_num_threads(k + 2)
            with threadpoolctl.threadpool_limits(k, "openmp"):
                assert nclx.get_num_threads() == k
            assert nclx.get_num_threads() == k + 2
        with threadpoolctl.threadpool_limits(1):
            assert nclx.get_num_threads() == 1
        info = [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "nclx"]
        assert len(info) == 1 and info[0]["num_threads"] == nclx.get_num_threads()
    finally:
        nclx.set_num_threads(old)


def test_get_num_threads_follows_omp_thread_limit():
    out = subprocess.run(
        [sys.executable, "-c", "import nclx; nclx.set_num_threads(4); print(nclx.get_num_threads())"],
        env={**os.environ, "OMP_THREAD_LIMIT": "1"}, capture_output=True, text=True, cwd="/",
        timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"


@pytest.mark.parametrize("kw, error, words", [
    (dict(reps=0), ValueError, "calibrate(reps=...) must be in [1, 1000], not 0"),
    (dict(small=-10), ValueError, "calibrate(small=...)"),
    (dict(chunk=0), ValueError, "calibrate(chunk=...)"),
    (dict(small="x"), TypeError, "calibrate(small=...) must be an integer, not str"),
    (dict(reps=2 ** 40), ValueError, "calibrate(reps=...)"),
    (dict(thresholds="yes"), TypeError, "calibrate(thresholds=...)"),
])
def test_calibrate_refuses_bad_arguments_before_measuring(kw, error, words):
    with pytest.raises(error) as info:
        nclx.calibrate(**kw)
    assert words in str(info.value)


@pytest.mark.parametrize("value", ["no", "False", [0], 0.5, 1])
def test_python_funnel_takes_a_bool(value):
    with pytest.raises(TypeError, match=r"install\(python_funnel=...\) takes True or False"):
        nclx.install(python_funnel=value)
    assert not nclx.is_installed()
    with pytest.raises(TypeError, match=r"installed\(python_funnel=...\) takes True or False"):
        with nclx.installed(python_funnel=np.ones(3) if value == 1 else value):
            pass
    assert not nclx.is_installed()


def test_argument_messages_name_the_argument():
    with pytest.raises(TypeError, match=r"set_threshold\(kind=...\) takes a name"):
        nclx.set_threshold(1000, kind=["reduce"])
    with pytest.raises(TypeError, match=r"set_threshold\(op=...\) takes a name"):
        nclx.set_threshold(1000, op=3)
    with pytest.raises(TypeError, match=r"get_threshold\(kind=...\) takes a name"):
        nclx.get_threshold(kind=np.array(["a", "b"]))
    with pytest.raises(TypeError, match="subsystem_of takes a NumPy ufunc, not int"):
        hooks.subsystem_of(5)
    with pytest.raises(ValueError, match=r"register_c\(fn_address=...\) must be an address"):
        hooks.register_c("funnel", "binary", -1, name="r23")
    with pytest.raises(TypeError, match=r"register_c\(data_address=...\) takes an int"):
        hooks.register_c("funnel", "binary", 1, "x", name="r23")
    h = hooks.register("funnel", "binary", lambda c: c.next(), name="r23")
    try:
        with pytest.raises(TypeError, match="a hook Handle cannot be pickled"):
            pickle.dumps(h)
    finally:
        h.remove()


def test_config_names_the_isa_chosen_at_import(monkeypatch):
    chosen = nclx.config()["isa_selected"]
    monkeypatch.setenv("NCLX_ISA", "baseline" if chosen != "baseline" else "no-such-isa")
    assert nclx.config()["isa_selected"] == chosen
    nclx.show_config()


def test_a_failed_import_leaves_the_environment_as_it_was():
    proc = run_script("""
import os, subprocess, sys
os.environ.pop("GOMP_SPINCOUNT", None)
os.environ["NCLX_NUM_THREADS"] = "lots"
try:
    import nclx
    print("imported")
except ValueError:
    pass
print(os.environ.get("GOMP_SPINCOUNT"))
del os.environ["NCLX_NUM_THREADS"]
import nclx
print(nclx._ompenv.applied())
""", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split()
    assert lines[0] == "None", proc.stdout
    assert lines[1] in ("10000", "the", "libgomp"), proc.stdout   # what was decided first


@pytest.mark.parametrize("args, words", [
    (["bench", "--quick", "--sizes", "-5"], "argument --sizes: '-5': must be at least 0"),
    (["bench", "--quick", "--repeats", "0"], "argument --repeats: '0': must be at least 1"),
    (["bench", "--quick", "--budget", "nan"], "argument --budget: 'nan'"),
    (["bench", "halo", "--ranks", "0"], "argument --ranks: '0': must be at least 1"),
    (["bench", "redistribute", "--ranks", "-1"], "argument --ranks: '-1': must be at least 1"),
    (["bench", "halo", "--n", "-3"], "argument --n: '-3': must be at least 1"),
])
def test_bench_command_line_refuses_bad_numbers(args, words):
    out = subprocess.run([sys.executable, "-m", "nclx", *args], capture_output=True, text=True,
                         cwd="/", timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, (out.returncode, out.stdout[-1000:], out.stderr[-1000:])
    assert words in out.stderr, out.stderr[-1000:]
    assert "Traceback" not in out.stderr


# -- review 23b: config blocks, again ---------------------------------------------

def _reassociate():
    return nclx.config()["settings"]["reassociate"]


def test_config_block_reused_and_blocks_made_before_entry():
    s = nclx.config(reassociate=True)            # a statement: from now on
    assert _reassociate() is True
    nclx.config(reassociate=False)
    with s:
        assert _reassociate() is True            # applied on entry again
    assert _reassociate() is False
    with s:
        pass
    assert _reassociate() is False
    a, b = nclx.config(reassociate=True), nclx.config(reassociate=False)
    with b:
        with a:
            assert _reassociate() is True
        assert _reassociate() is False
    del a, b, s
    assert _reassociate() is False


def test_config_block_made_in_one_thread_entered_inside_anothers():
    made, entered, a_in = threading.Event(), threading.Event(), threading.Event()

    def first():
        cm = nclx.config(reassociate=True)
        made.set()
        entered.wait(10)
        with cm:
            a_in.set()

    def second():
        made.wait(10)
        with nclx.config(reassociate=True):
            entered.set()
            a_in.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    # ``cm = nclx.config(...)`` as a statement applies "from now on" (the
    # with statement's own object applies on entry): True stays
    assert _reassociate() is True
    nclx.config(reassociate=False)
    assert _reassociate() is False


def test_config_made_by_a_with_statement_applies_on_entry_only():
    """Review 23c: an object kept for later, a plain call, then a block
    setting the same value: the block's end turned True on."""
    fast = nclx.config(reassociate=True)
    nclx.config(reassociate=False)
    with nclx.config(reassociate=False):
        assert _reassociate() is False
    assert _reassociate() is False
    with fast:
        with fast:                       # nested in itself: each entry counts
            assert _reassociate() is True
        assert _reassociate() is True
    assert _reassociate() is False


def test_a_forked_child_keeps_settings_made_without_a_block():
    proc = run_script("""
import os, threading
import nclx
get = lambda: nclx.config()["settings"]["reassociate"]
keep = []
t = threading.Thread(target=lambda: keep.append(nclx.config(reassociate=True)))
t.start()
t.join()
pid = os.fork()
if pid == 0:
    print(get(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
""", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True", proc.stdout


def test_config_blocks_of_many_threads_leave_the_value_as_before():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            def work():
                for _ in range(300):
                    with nclx.config(reassociate=True):
                        pass
            threads = [threading.Thread(target=work) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert _reassociate() is False
    finally:
        sys.setswitchinterval(old)


def test_a_forked_child_ends_the_blocks_of_other_threads():
    proc = run_script("""
import os, threading
import nclx
get = lambda: nclx.config()["settings"]["reassociate"]
inside, done = threading.Event(), threading.Event()
def hold():
    with nclx.config(reassociate=True):
        inside.set()
        done.wait(20)
t = threading.Thread(target=hold)
t.start()
inside.wait(20)
pid = os.fork()
if pid == 0:
    seen = [get()]
    with nclx.config(reassociate=True):
        seen.append(get())
    seen.append(get())
    print(seen, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
done.set()
t.join()
print(get())
""", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["[False, True, False]", "False"], proc.stdout


def test_threadpoolctl_leaves_a_foreign_module_named_team_alone(tmp_path):
    threadpoolctl = pytest.importorskip(
        "threadpoolctl", reason="threadpoolctl (tools/requirements-test.txt) is not installed")
    if not hasattr(threadpoolctl, "register"):
        pytest.skip("threadpoolctl older than 3.5 has no register(): no nclx controller")
    import ctypes
    import shutil
    import sysconfig
    import numpy._core._multiarray_tests as donor        # any shared library will do
    fake = tmp_path / ("team" + sysconfig.get_config_var("EXT_SUFFIX"))
    shutil.copy(donor.__file__, fake)
    ctypes.CDLL(str(fake))
    old = nclx.get_num_threads()
    try:
        nclx.set_num_threads(3)
        info = [i for i in threadpoolctl.threadpool_info() if i["filepath"] and
                os.path.basename(i["filepath"]).startswith("team.")]
        ours = [i for i in info if i["internal_api"] == "nclx"]
        assert len(ours) == 1 and ours[0]["num_threads"] == 3, info
        foreign = [i for i in info if i["internal_api"] != "nclx"]
        assert foreign and all(i["version"] is None and "ours" not in i for i in foreign), info
        with threadpoolctl.threadpool_limits(1) as limits:
            assert nclx.get_num_threads() == 1
            limits.get_original_num_threads()       # (None broke it: review 23c)
        assert nclx.get_num_threads() == 3
    finally:
        nclx.set_num_threads(old)
