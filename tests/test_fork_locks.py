"""os.fork() while another thread holds one of nclx's Python locks
(nclx._ncl.forksafe): the child must not inherit a lock held for ever.
Found by review: a thread toggling ``nclx.installed()`` while the main
thread forked left every child hanging in its first ``uninstall()``.

Each check runs in a fresh Python (a forked child that hangs is ended by
faulthandler after 10 s with exit code 1)."""
import pytest

from conftest import run_script

CHILD = """
import faulthandler, os, sys, threading, time
import numpy as np, nclx

def child(body):
    faulthandler.dump_traceback_later(10, exit=True)
    ok = False
    try:
        ok = body()
    finally:
        os._exit(0 if ok else 3)

def fork_child(body):
    pid = os.fork()
    if pid == 0:
        child(body)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def installs_and_sorts():
    nclx.install()
    ok = np.sort(np.arange(5.0)[::-1]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    nclx.uninstall()
    return ok and not nclx.is_installed()
"""


#: nclx's guarded locks: (module, attribute; an object's own .lock where it has one)
LOCKS = [
    ("nclx._ncl.install", "_lock"),
    ("nclx.checked", "_lock"),
    ("nclx.ledger", "_lock"),
    ("nclx.fused", "_expr_plans"),      # its .lock
    ("nclx.types.arrmeta", "_LOCK"),
    # review 23: nclx.dap's and the storages' locks were plain, unguarded
    ("nclx.dap.halocomm", "_LOCK"),
    ("nclx.dap.redistribute", "_TARGETS_LOCK"),
    ("nclx.dap.redistribute", "_PLANS"),   # a PlanCache: its ._lock
    ("nclx.dap.fold", "_LOCK"),
    ("nclx.dap.commstate", "_LOCK"),
    ("nclx.storage.devices", "_lock"),
]


@pytest.mark.parametrize("owner, name", LOCKS)
def test_a_lock_held_by_another_thread_at_fork_is_free_in_the_child(owner, name):
    # the holder keeps the lock 0.3 s: the fork waits for it, and the child
    # gets a free lock and a whole state
    proc = run_script(CHILD + f"""
import importlib
mod = importlib.import_module({owner!r})
held = threading.Event()
def the_lock():
    obj = getattr(mod, {name!r})
    for own in ("lock", "_lock"):         # an object guarding its own lock
        inner = getattr(obj, own, None)
        if hasattr(inner, "acquire"):
            return inner
    return obj
def holder():
    with the_lock():
        held.set()
        time.sleep(0.3)
t = threading.Thread(target=holder)
t.start()
held.wait()

def body():
    lock = the_lock()
    if not lock.acquire(timeout=5):
        return False
    lock.release()
    a = np.arange(10.0)
    with nclx.checked():
        a + a
    with nclx.ledger.recording() as led:
        a * 2
    got = nclx.evaluate("2*a + a*a", {{"a": a}})
    return installs_and_sorts() and bool(led.records()) and got.tobytes() == (2*a + a*a).tobytes()

code = fork_child(body)
t.join()
print(code)
""", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0", proc.stderr[-3000:]


def test_fork_while_threads_toggle_install_checked_and_ledger():
    proc = run_script(CHILD + """
stop = False
def toggle_installed():
    while not stop:
        with nclx.installed():
            pass
def toggle_checked():
    a = np.arange(100)
    while not stop:
        with nclx.checked():
            a + a
def toggle_ledger():
    a = np.arange(100.0)
    while not stop:
        with nclx.ledger.recording():
            a * 2
threads = [threading.Thread(target=f) for f in (toggle_installed, toggle_checked, toggle_ledger)]
for t in threads:
    t.start()
codes = []
for i in range(6):
    time.sleep(0.03)
    codes.append(fork_child(installs_and_sorts))
stop = True
for t in threads:
    t.join()
nclx.uninstall()
print(codes, installs_and_sorts())
""", timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[0, 0, 0, 0, 0, 0] True", proc.stderr[-3000:]


def test_a_child_forked_while_another_thread_is_inside_a_hook_frees_removed_hooks():
    # the walking thread does not exist in the child: its reader count must
    # not keep every removed node alive there (found by review)
    proc = run_script(CHILD + """
import nclx.hooks as hooks
nclx.install()
a = np.ones(200_000)
inside = threading.Event()
def slow(call):
    inside.set()
    time.sleep(0.5)
    call.next()
h = hooks.register("funnel", "binary", slow)
t = threading.Thread(target=lambda: a + a)
t.start()
inside.wait()

def body():
    h.remove()
    r = a * 3
    h2 = hooks.register("funnel", "binary", lambda c: c.next(), name="x")
    h2.remove()
    return hooks.collect() == 0 and r.tobytes() == np.full(len(a), 3.0).tobytes()

code = fork_child(body)
t.join()
h.remove()
print(code, hooks.collect())
nclx.uninstall()
""", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0 0", proc.stderr[-3000:]


@pytest.mark.parametrize("owner, name", LOCKS)
def test_the_forking_thread_itself_holds_the_lock(owner, name):
    # a signal handler or __del__ that forks inside one of nclx's critical
    # sections: the fork must not wait for a lock its own thread holds
    # (before, a plain Lock there deadlocked the parent at the fork; review 20)
    proc = run_script(CHILD + f"""
import importlib
mod = importlib.import_module({owner!r})
obj = getattr(mod, {name!r})
lock = next((getattr(obj, own) for own in ("lock", "_lock")
             if hasattr(getattr(obj, own, None), "acquire")), obj)
with lock:
    code = fork_child(installs_and_sorts)
print(code, lock.acquire(timeout=5))
""", timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0 True", proc.stderr[-3000:]   # a hang: TimeoutExpired
