"""The dtype layer, the ufunc tables and the build configuration."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nclx
from nclx import _build_info
import nclx.ufuncs as nu
from nclx._ncl import _openmp, dtypes, spec
from nclx._ncl.ufuncs import built_isas, cpu_supports, loop_signatures, selected_isa, ufuncs_for

from conftest import DTYPE_CHARS, DTYPE_NAMES, ISAS, OPS


# ----------------------------------------------------------------- dtypes
def test_fixed_width_maps_long_and_longlong_to_int64():
    assert dtypes.fixed_width("l") == dtypes.fixed_width("q") == "int64"
    assert dtypes.fixed_width("L") == dtypes.fixed_width("Q") == "uint64"
    assert dtypes.fixed_width(np.int64) == dtypes.fixed_width(np.longlong) == "int64"


def test_fixed_width_of_every_served_dtype_matches_its_numpy_width():
    for c in DTYPE_CHARS:
        name = dtypes.fixed_width(c)
        dt = np.dtype(c)
        expected = "bool" if dt.kind == "b" else (
            {"i": "int", "u": "uint", "f": "float"}[dt.kind] + str(8 * dt.itemsize))
        assert name == expected, c
        assert np.dtype(name).itemsize == dt.itemsize
        assert np.dtype(name).kind == dt.kind


def test_fixed_width_is_none_for_dtypes_without_kernels():
    for dt in ("e", "g", "F", "D", "O", "U3", "M8[s]", "m8[s]"):
        assert dtypes.fixed_width(dt) is None
        assert dtypes.dtype_code(dt) == -1


def test_dtypes_lists_the_eleven_fixed_width_types_in_enum_order():
    assert dtypes.DTYPES == DTYPE_NAMES
    assert [dtypes.dtype_code(name) for name in dtypes.DTYPES] == list(range(len(DTYPE_NAMES)))
    for name in dtypes.DTYPES:
        assert dtypes.ITEMSIZE[name] == np.dtype(name).itemsize


def test_numpy_chars_maps_every_served_char_to_its_fixed_width_type():
    chars = dtypes.numpy_chars()
    assert set(chars) == set(DTYPE_CHARS)
    assert chars == {"?": "bool", "b": "int8", "B": "uint8", "h": "int16", "H": "uint16",
                     "i": "int32", "I": "uint32", "l": "int64", "L": "uint64", "q": "int64",
                     "Q": "uint64", "f": "float32", "d": "float64"}
    assert set(chars.values()) == set(DTYPE_NAMES)


# ---------------------------------------------------------- ufunc tables
def test_every_available_isa_is_built_and_baseline_is_always_there():
    assert "baseline" in ISAS
    assert set(ISAS) <= set(built_isas())
    assert selected_isa() in ISAS
    # every build this CPU can run is tested: judged from the kernel's CPU flags
    flags = set()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    if "avx2" in built_isas() and flags:
        assert ("avx2" in ISAS) == ({"avx2", "bmi2"} <= flags)
        assert cpu_supports("avx2") == ({"avx2", "bmi2"} <= flags)


def test_ufuncs_module_exposes_the_selected_isa_build_and_numpy_aliases():
    table = ufuncs_for(selected_isa())
    assert tuple(nu.NAMES) == tuple(spec.OPS)
    for op in OPS:
        # nclx.ufuncs runs the entries (chains, threads) within NumPy's own
        # loop list; the ISA table has nclx's kernels only
        assert getattr(nu, op) is not table[op]
        assert getattr(nu, op).types == getattr(np, op).types
        assert set(table[op].types) <= set(getattr(nu, op).types)
        assert isinstance(table[op], np.ufunc)
        assert table[op].__name__ == getattr(np, op).__name__   # NumPy 2 calls true_divide "divide"
    assert nu.divide is nu.true_divide
    assert nu.mod is nu.remainder
    assert nu.bitwise_not is nu.invert


@pytest.mark.parametrize("isa", ISAS)
def test_each_isa_build_has_distinct_ufunc_objects_with_the_same_loops(isa):
    other = [i for i in ISAS if i != isa]
    for op in OPS:
        uf = ufuncs_for(isa)[op]
        assert uf is ufuncs_for(isa)[op]  # cached
        for o in other:
            assert ufuncs_for(o)[op] is not uf
            assert ufuncs_for(o)[op].types == uf.types


@pytest.mark.parametrize("op", OPS)
def test_loop_signatures_are_the_registered_ufunc_types_in_numpy_order(op):
    kind, nin, ident, loops = spec.OPS[op]
    sigs = loop_signatures(op)
    assert nu.loop_signatures(op) == sigs
    for isa in ISAS:
        uf = ufuncs_for(isa)[op]
        assert uf.types == sigs
        assert (uf.nin, uf.nout) == (nin, 1)
        assert uf.identity == {spec.ZERO: 0, spec.ONE: 1, spec.MINUS_ONE: -1}.get(ident)
    # every signature is one of the op's fixed-width loops, and every loop
    # is reachable through at least one signature
    seen = set()
    for sig in sigs:
        ins, out = sig.split("->")
        key = (tuple(dtypes.fixed_width(c) for c in ins), dtypes.fixed_width(out))
        assert key in {(tuple(i), o) for i, o in loops}, sig
        seen.add(key)
    assert seen == {(tuple(i), o) for i, o in loops}
    # NumPy has a loop for every input signature of nclx's, and they come in
    # NumPy's order (the legacy resolver takes the first loop that fits)
    ins = [s.split("->")[0] for s in sigs]
    np_ins = list(dict.fromkeys(t.split("->")[0] for t in getattr(np, op).types))
    assert set(ins) <= set(np_ins)
    assert [t for t in np_ins if t in ins] == ins


def test_both_64_bit_chars_have_loops():
    for op in OPS:
        sigs = loop_signatures(op)
        ins = {s.split("->")[0] for s in sigs}
        for a, b in (("l", "q"), ("L", "Q")):
            assert (a * spec.OPS[op][1] in ins) == (b * spec.OPS[op][1] in ins)
    assert {"qQ->?", "Qq->?"} <= set(loop_signatures("equal"))


def test_nclx_isa_environment_variable_selects_a_build(tmp_path):
    for isa in ISAS:
        out = subprocess.run(
            [sys.executable, "-c", "import nclx.ufuncs as nu; print(nu.selected_isa())"],
            cwd=tmp_path, env={**os.environ, "NCLX_ISA": isa}, capture_output=True, text=True,
            timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == isa
    bad = subprocess.run([sys.executable, "-c", "import nclx.ufuncs"], cwd=tmp_path,
                         env={**os.environ, "NCLX_ISA": "no-such-isa"}, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "NCLX_ISA" in bad.stderr


# ---------------------------------------------------------------- config
CONFIG_KEYS = ("nclx", "numpy", "openmp", "max_threads", "compiler", "simd_flags")


def test_show_config_returns_and_prints_versions_openmp_compiler_simd(capsys):
    cfg = nclx.show_config()
    printed = capsys.readouterr().out
    assert isinstance(cfg, dict)
    for key in CONFIG_KEYS:
        assert key in cfg
        assert key in printed
    assert cfg["nclx"] == nclx.__version__
    assert cfg["numpy"] == np.__version__
    assert cfg["openmp"] is _build_info.OPENMP_FOUND
    assert isinstance(cfg["max_threads"], int) and cfg["max_threads"] >= 1
    assert cfg["compiler"] and cfg["compiler"] in printed
    assert cfg["simd_flags"] in printed
    assert cfg["isa_selected"] == selected_isa()
    if cfg["isa_selected"] == "avx2":
        assert "-mavx2" in cfg["simd_flags"]
    assert nclx.config() == cfg


def test_openmp_probe_matches_what_meson_found():
    # a build that found OpenMP but compiled without it must fail here
    assert _openmp.openmp_enabled() is _build_info.OPENMP_FOUND
    if _build_info.OPENMP_FOUND:
        assert _openmp.openmp_version() > 200000
    assert _openmp.max_threads() >= 1


def test_python_m_nclx_info_runs_and_prints_the_configuration(tmp_path):
    out = subprocess.run([sys.executable, "-m", "nclx", "info"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for key in CONFIG_KEYS:
        assert key in out.stdout
    assert np.__version__ in out.stdout


def test_python_m_nclx_rejects_an_unknown_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "nclx", "no-such-command"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
