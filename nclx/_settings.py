"""Runtime settings: ``nclx.config(reassociate=True)``."""
from nclx._ncl import threader as _threader

_SETTERS = {"reassociate": (_threader.get_reassociate, _threader.set_reassociate)}


class Settings:
    """Settings applied by :func:`nclx.config`; as a context manager it puts
    the previous values back on exit."""

    def __init__(self, changes):
        unknown = sorted(set(changes) - set(_SETTERS))
        if unknown:
            raise TypeError(f"unknown nclx setting(s) {', '.join(unknown)}; "
                            f"settings: {', '.join(_SETTERS)}")
        self.previous = {k: _SETTERS[k][0]() for k in changes}
        for k, v in changes.items():
            if not isinstance(v, bool):
                raise TypeError(f"nclx setting {k!r} takes True or False, not {v!r}")
            _SETTERS[k][1](v)
        self.changes = dict(changes)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for k, v in self.previous.items():
            _SETTERS[k][1](v)
        return False

    def __repr__(self):
        return f"<nclx settings {self.changes} (previous {self.previous})>"


def current():
    """The runtime settings now: {name: value}."""
    return {k: get() for k, (get, _set) in _SETTERS.items()}
