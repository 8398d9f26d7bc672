"""Argument resolution for the creation functions and ``as_storage``: the
keywords a call gives, resolved in GDP-3's order -- an explicit keyword,
then the ``defaults`` preset (layout and alignment only), then what a
template (``data`` / ``device_data``, or the ``_like`` argument) shows, then
the fallback -- into the normalised keywords that
:func:`nclx.storage.core.allocate` takes.

Sits above nclx.storage.core (templates may be storages) and below the
front ends, nclx.storage.creation and nclx.storage.wrap.
"""
from nclx.storage._fastalloc import make_recipe
from nclx.storage.alloc import plan
from nclx.storage.core import Storage
from nclx.storage.params import (StorageTypeError, layout_from_strides,
                                 normalize_aligned_index, normalize_alignment, normalize_device,
                                 normalize_dims, normalize_dtype, normalize_halo,
                                 normalize_layout, normalize_managed, normalize_shape, preset,
                                 preset_layout)

__all__ = ["KEYS", "check_keys", "resolve", "recipe"]

#: the keywords every creation function takes
KEYS = frozenset(("aligned_index", "alignment_size", "defaults", "device", "dims", "halo",
                  "layout", "managed"))
_UNSET = object()


def check_keys(kwargs, extra=()):
    """StorageTypeError naming the first keyword that is neither one of
    :data:`KEYS` nor in ``extra``."""
    for k in kwargs:
        if k not in KEYS and k not in extra:
            raise StorageTypeError(f"unexpected keyword argument {k!r}")


def _template(t):
    """What a template (a Storage, an array, a device array) tells about the keywords."""
    if isinstance(t, Storage):
        kind = t._buf.kind
        return {"dims": t._dims, "halo": t._halo, "layout": t._layout,
                "alignment_size": t._alignment, "aligned_index": t._aligned_index,
                "device": None if kind == "cpu" else "gpu",
                "managed": {"gpu": None, "gt4py": "gt4py", "cuda": "cuda"}.get(kind, "gt4py")}
    if t is not None and hasattr(t, "strides") and hasattr(t, "shape"):
        return {"layout": layout_from_strides(t.strides, t.shape)}
    return {}


def resolve(shape, dtype, tmpl, kwargs):
    """Normalised keywords for an allocation of ``shape`` (``tmpl``: the
    template, or None)."""
    shape = normalize_shape(shape)
    nd = len(shape)
    dtype = normalize_dtype(dtype)
    pre = preset(kwargs.get("defaults"))
    t = _template(tmpl)
    if t.get("layout") is not None and len(t["layout"]) != nd:
        t = {}
    dims = normalize_dims(kwargs.get("dims", t.get("dims")), nd)
    halo = normalize_halo(kwargs.get("halo", t.get("halo")), shape)
    device = normalize_device(kwargs.get("device", t.get("device")))
    managed = kwargs.get("managed", t.get("managed", "gt4py"))
    managed = normalize_managed(managed, device)
    if "layout" in kwargs:
        layout = normalize_layout(kwargs["layout"], nd)
    elif pre is not None:
        layout = preset_layout(pre, dims)
    else:
        layout = t.get("layout") or tuple(range(nd))
    if "alignment_size" in kwargs:
        alignment = kwargs["alignment_size"]
    elif pre is not None:
        alignment = pre["alignment_size"]
    else:
        alignment = t.get("alignment_size", 1)
    alignment = normalize_alignment(alignment, dtype.itemsize)
    ai = kwargs.get("aligned_index", _UNSET)
    if ai is _UNSET:
        same = "halo" not in kwargs and t.get("halo") == halo
        ai = t.get("aligned_index") if same else None
    ai = normalize_aligned_index(ai, shape, halo)
    # a storage made like another one lives on that one's device backend
    backend = tmpl._buf.backend if isinstance(tmpl, Storage) and device is not None else None
    return dict(shape=shape, dtype=dtype, dims=dims, halo=halo, layout=layout,
                alignment=alignment, aligned_index=ai, device=device, managed=managed,
                backend=backend)


def recipe(shape, dtype, kwargs):
    """Resolve and validate the keywords of ``empty`` / ``zeros``: the
    ``_fastalloc`` Recipe for them (the cache miss of ``_fastalloc.Creator.create``,
    which caches the result)."""
    if kwargs:
        check_keys(kwargs)
    r = resolve(shape, dtype, None, kwargs)
    p = plan(r["shape"], r["layout"], r["dtype"], r["alignment"], r["aligned_index"])
    return make_recipe(r, p, p.contiguous_order)
