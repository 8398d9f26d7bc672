"""nclx's own steps run in a copy of the caller's ``contextvars`` context.

An ``np.errstate`` block that a Ctrl-C cuts short (inside its
``__enter__`` or ``__exit__``) leaves its errstate set in the context it
ran in: run in a copy, it never reaches the caller's (review 25).  What
the step set in the copy on purpose (a function's ``decimal.setcontext``,
a ``ContextVar.set``) is set in the caller's context once the step
returns, so the step's side effects are the same as run directly (review
25b); a step that raises sets none."""
import contextvars

__all__ = ["run_isolated"]

_MISSING = object()


def run_isolated(fn, *args):
    """``fn(*args)`` in a copy of the current context; then each context
    variable whose value it changed takes the new value here too."""
    ctx = contextvars.copy_context()
    result = ctx.run(fn, *args)
    for var, value in ctx.items():
        if var.get(_MISSING) is not value:
            var.set(value)
    return result
