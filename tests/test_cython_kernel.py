"""A library author's Cython Kernel subclass, compiled against the installed
nclx (its .pxd files and headers), overrides the nogil loop."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nclx

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def kernel_module(tmp_path_factory):
    build = tmp_path_factory.mktemp("cython_kernel")
    shutil.copy(os.path.join(HERE, "cython_kernel", "nclx_test_kernel.pyx"), build)
    setup = textwrap.dedent(f"""
        import numpy, nclx, os
        from setuptools import setup, Extension
        from Cython.Build import cythonize
        pkg = os.path.dirname(nclx.__file__)
        ext = Extension("nclx_test_kernel", ["nclx_test_kernel.pyx"],
                        include_dirs=[numpy.get_include(), nclx.get_include(),
                                      os.path.join(pkg, "_ncl")])
        setup(ext_modules=cythonize([ext], include_path=[os.path.dirname(pkg)], language_level=3,
                                    quiet=True),
              script_args=["build_ext", "--inplace"])
    """)
    (build / "setup.py").write_text(setup)
    proc = subprocess.run([sys.executable, "setup.py"], cwd=build, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sys.path.insert(0, str(build))
    try:
        import nclx_test_kernel
        yield nclx_test_kernel
    finally:
        sys.path.remove(str(build))


def test_cython_kernel_subclass_overrides_the_loop(kernel_module):
    k = kernel_module.SaturatingAddInt64()
    big = np.array([2**62, -(2**62), 5], dtype=np.int64)
    with nclx.installed(), nclx.hooks.register("kernel", ("add", "int64"), k):
        r = big + big
        total = np.array([1, 2, 3]).sum()
    assert list(r) == [2**63 - 1, -(2**63), 10]
    assert k.calls == 1
    assert total == 6                                   # reduce punted to nclx
    assert list(big + big) == [-(2**63), -(2**63), 10]  # stock wraps again


def test_a_raising_cython_loop_is_printed_and_counts_as_computed(kernel_module, monkeypatch):
    # docs/hooks.md (review 22): Kernel.loop is noexcept nogil -- an
    # exception leaving it is Cython's unraisable, the output keeps what it
    # held and the handle records no error; caught and returned 1, the next
    # node computes
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    a = np.arange(4, dtype=np.int64)
    out = np.full(4, -9, dtype=np.int64)
    with nclx.installed(), nclx.hooks.register("kernel", ("add", "int64"),
                                               kernel_module.RaisesInLoop()) as h:
        np.add(a, a, out=out)
    assert out.tolist() == [-9] * 4
    assert h.errors == 0
    assert [str(e) for e in seen] == ["boom in loop"]
    with nclx.installed(), nclx.hooks.register("kernel", ("add", "int64"),
                                               kernel_module.CatchesInLoop()) as h:
        np.add(a, a, out=out)
    assert out.tolist() == [0, 2, 4, 6]
    assert len(seen) == 1
