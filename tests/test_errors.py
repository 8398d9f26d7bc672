"""nclx's one error family: every exception class nclx defines derives from
nclx.errors.NclxError and keeps its built-in base."""
import importlib
import inspect
import pkgutil

import pytest

import nclx
from nclx.errors import NclxError

_BUILTIN_BASES = {
    "nclx.errors.NclxInstallError": RuntimeError,
    "nclx.errors.NclxISAError": ValueError,
    "nclx.errors.HookError": ValueError,
    "nclx.storage.params.StorageError": ValueError,
    "nclx.storage.params.StorageTypeError": TypeError,
    "nclx.storage.params.NoSuchBufferError": AttributeError,
    "nclx.storage.params.DeviceUnavailableError": ImportError,
    "nclx.dap.validate.DapError": ValueError,
    "nclx.dap.validate.DapTypeError": TypeError,
    "nclx.dap.npymap.Unmappable": OSError,
    "nclx.types.parser.TypeStringError": ValueError,
    "nclx.ipc.errors.ProtocolError": ValueError,
    "nclx.ipc.errors.ConnectionLostError": ConnectionError,
    "nclx.ipc.errors.RemoteError": RuntimeError,
    "nclx.ipc.errors.UnknownTicketError": LookupError,
}


def _nclx_exception_classes():
    """Every exception class defined in an importable nclx module."""
    found = {}
    for info in pkgutil.walk_packages(nclx.__path__, "nclx."):
        if ".demo" in info.name or info.name.endswith("__main__"):
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:          # optional extras (mpi4py, pyarrow) absent
            continue
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) \
                    and obj.__module__.startswith("nclx"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_nclx_exception_is_an_nclx_error():
    classes = _nclx_exception_classes()
    assert set(_BUILTIN_BASES) <= set(classes), sorted(set(_BUILTIN_BASES) - set(classes))
    outside = sorted(k for k, c in classes.items() if not issubclass(c, NclxError))
    assert outside == []


@pytest.mark.parametrize("qualname,base", sorted(_BUILTIN_BASES.items()))
def test_each_keeps_its_builtin_base(qualname, base):
    mod, _, name = qualname.rpartition(".")
    cls = getattr(importlib.import_module(mod), name)
    assert issubclass(cls, base) and issubclass(cls, NclxError)


def test_core_errors_are_the_same_objects_everywhere():
    from nclx._ncl import looptable, registry, ufuncs
    assert nclx.NclxInstallError is looptable.NclxInstallError is nclx.errors.NclxInstallError
    assert registry.HookError is nclx.errors.HookError
    assert ufuncs.NclxISAError is nclx.errors.NclxISAError


def test_a_raised_storage_error_is_caught_as_nclx_error():
    import nclx.storage as ns
    with pytest.raises(NclxError, match="halo"):
        ns.zeros((3,), halo=[(5, 5)])


def test_checked_active_follows_the_block():
    assert nclx.checked.active() is False
    with nclx.checked():
        assert nclx.checked.active() is True
        with nclx.checked():
            assert nclx.checked.active() is True
        assert nclx.checked.active() is True
    assert nclx.checked.active() is False


def test_settings_live_with_config():
    with nclx.config(reassociate=True):
        assert nclx.config()["settings"]["reassociate"] is True
    assert nclx.config()["settings"]["reassociate"] is False
    with pytest.raises(TypeError, match="unknown nclx setting"):
        nclx.config(bogus=True)
