"""nclx's one error family.

Every exception class nclx defines derives from :class:`NclxError`, and also
from the built-in exception it has always been (``ValueError``,
``TypeError``, ``RuntimeError``, ...), so ``except nclx.errors.NclxError``
catches whatever nclx raises of its own while ``except ValueError`` keeps
working.  The core's exceptions are defined here; each subpackage keeps its
own family in one module that derives from this one:

- core: :class:`NclxInstallError`, :class:`NclxISAError`, :class:`HookError`;
- ``nclx.storage.params``: ``StorageError`` and its subclasses;
- ``nclx.dap.validate``: ``DapError``, ``DapTypeError``;
- ``nclx.dap.npymap``: ``Unmappable`` (an OSError: a file not mappable
  shared, the save goes through MPI-IO);
- ``nclx.types.parser``: ``TypeStringError``;
- ``nclx.ipc.errors``: ``ProtocolError``, ``RemoteError`` and subclasses;
- ``nclx._trace``: ``Untraceable`` (a fused call that then runs eagerly).

This module imports nothing from nclx: every layer may import it.
"""

__all__ = ["NclxError", "NclxInstallError", "NclxISAError", "HookError"]


class NclxError(Exception):
    """Base of every exception class nclx defines."""


class NclxInstallError(NclxError, RuntimeError):
    """NumPy's ufunc internals are not what nclx was built for: install() refuses."""


class NclxISAError(NclxError, ValueError):
    """NCLX_ISA, or an ``isa=`` argument, names an ISA build that cannot run here."""


class HookError(NclxError, ValueError):
    """A hook cannot be registered or removed as asked (names the chain and node)."""
