"""The plain C API: a C extension compiled at test time against
nclx.get_include() reaches kernels and hook chains through the capsule
nclx._C_API only (no Python-level addresses)."""
import gc
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    build = tmp_path_factory.mktemp("c_api")
    shutil.copy(os.path.join(HERE, "c_api", "nclx_capi_probe.c"), build)
    setup = textwrap.dedent("""
        import nclx
        from setuptools import setup, Extension
        ext = Extension("nclx_capi_probe", ["nclx_capi_probe.c"],
                        include_dirs=[nclx.get_include()], extra_compile_args=["-Werror=implicit-function-declaration"])
        setup(ext_modules=[ext], script_args=["build_ext", "--inplace"])
    """)
    (build / "setup.py").write_text(setup)
    proc = subprocess.run([sys.executable, "setup.py"], cwd=build, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sys.path.insert(0, str(build))
    try:
        import nclx_capi_probe
        yield nclx_capi_probe
    finally:
        sys.path.remove(str(build))


@pytest.fixture(autouse=True)
def _clean():
    hooks.reset()
    yield
    nclx.uninstall()
    hooks.reset()


def test_header_and_capsule_are_installed():
    assert os.path.exists(os.path.join(nclx.get_include(), "nclx.h"))
    assert os.path.exists(os.path.join(nclx.get_include(), "ncl_spec.h"))
    assert type(nclx._C_API).__name__ == "PyCapsule"
    assert "nclx._C_API" in repr(nclx._C_API)


def test_kernel_lookup_and_direct_call(probe):
    assert probe.add_float64([1.0, 2.5, -3.0], [0.5, 0.5, 3.0]) == [1.5, 3.0, 0.0]
    assert probe.add_float64([], []) == []
    assert probe.missing_kernel()


def test_counting_c_hook_at_the_funnel_level(probe):
    probe.add_hook("c_counter")
    try:
        assert "c_counter" in hooks.chain("funnel", "binary")
        with nclx.installed():
            a = np.arange(1000, dtype=np.int64)
            r = a + a
            a * 3
            a < 5                  # compare: another subsystem, not counted
        assert (r == 2 * a).all()
        assert probe.counts() == (2, 2000)
    finally:
        probe.remove_hook()
    assert "c_counter" not in hooks.chain("funnel", "binary")
    gc.collect()
    hooks.collect()
    assert probe.destroy_count() == 1


def test_c_hook_after_the_threader_sees_every_chunk(probe):
    probe.add_hook("c_late", 3, "threader")      # NCL_AFTER
    try:
        assert hooks.chain("funnel", "binary").index("c_late") == 1
        old = nclx.get_num_threads()
        nclx.set_num_threads(2)
        try:
            with nclx.installed():
                a = np.arange(200_000, dtype=np.float64)
                a + a
        finally:
            nclx.set_num_threads(old)
        calls, elements = probe.counts()
        assert elements == 200_000 and calls >= 1
    finally:
        probe.remove_hook()


def test_c_api_errors_are_python_exceptions(probe):
    with pytest.raises(ValueError, match="no node named 'nope'"):
        probe.add_hook("c_bad", 2, "nope")       # NCL_BEFORE an unknown node
    with pytest.raises(ValueError, match="needs before="):
        probe.add_hook("c_bad", 2, None)
    probe.add_hook("dup")
    try:
        with pytest.raises(RuntimeError, match="already added"):
            probe.add_hook("dup")
    finally:
        probe.remove_hook()


def test_a_module_built_against_api_version_1_is_refused():
    """Version 2 changed ncl_call's layout (NCL_MAX_ARGS 3 -> 4): the capsule's
    name carries the version, so version 1's import_nclx() (which imports
    "nclx._C_API") fails instead of misreading fields."""
    import ctypes
    imp = ctypes.pythonapi.PyCapsule_Import
    imp.restype = ctypes.c_void_p
    imp.argtypes = [ctypes.c_char_p, ctypes.c_int]
    with pytest.raises((ValueError, AttributeError, ImportError)):
        imp(b"nclx._C_API", 0)
    assert imp(b"nclx._C_API_2", 0)
