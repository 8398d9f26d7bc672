"""A fused function bound to an instance (``@nclx.fuse`` on a method)."""

__all__ = ["BoundFused"]


class BoundFused:
    """A fused function bound to an instance: calls and ``explain`` get the
    instance first (before, ``c.m.explain(a)`` explained ``m(a)`` without
    it: "missing 1 required positional argument"; found by review)."""
    __slots__ = ("__func__", "__self__")

    def __init__(self, func, obj):
        self.__func__, self.__self__ = func, obj

    def __call__(self, *args, **kwargs):
        return self.__func__(self.__self__, *args, **kwargs)

    def explain(self, *args):
        return self.__func__.explain(self.__self__, *args)

    def __getattr__(self, name):            # __name__, __doc__, __wrapped__, plans
        return getattr(self.__func__, name)

    def __eq__(self, other):
        return (type(other) is BoundFused and self.__func__ is other.__func__
                and self.__self__ is other.__self__)

    def __hash__(self):
        return hash((id(self.__func__), id(self.__self__)))

    def __repr__(self):
        return f"<bound nclx.fuse of {self.__func__.fn!r} of {self.__self__!r}>"
