"""What the copy test modules share (test_copy, test_review4_copy): a clean
install state with copies split from two pieces of 64 bytes."""
import contextlib

import nclx
import nclx.hooks as hooks
from nclx._ncl import copying


@contextlib.contextmanager
def split_small(nthreads=None):
    """Copies split whenever there are two pieces of 64 bytes, nothing
    installed and no hook (``nthreads`` threads when given); all restored
    after."""
    old = copying.tune(64, 0)
    before = nclx.get_num_threads()
    nclx.uninstall()
    hooks.reset()
    if nthreads is not None:
        nclx.set_num_threads(nthreads)
    try:
        yield
    finally:
        hooks.reset()
        nclx.uninstall()
        copying.tune(*old)
        nclx.set_num_threads(before)
