"""The nodes of DyND's arrmeta tree (:class:`FixedDimMeta`, ...) and their
ctypes structures at real addresses, as DyND's ``_lowlevel`` exposed them.

Pure data: nothing here reads an array.  :mod:`nclx.types.arrmeta` builds
the tree of an object and caches its structures.
"""
import ctypes
from dataclasses import dataclass, field
from typing import Any, Tuple

__all__ = ["READ", "WRITE", "IMMUTABLE", "MemoryBlockData", "MemoryBlock", "EmptyMeta",
           "FixedDimMeta", "VarDimMeta", "StringMeta", "RecordMeta", "OptionMeta", "Arrmeta",
           "with_struct"]

READ, WRITE, IMMUTABLE = 1, 2, 4


class MemoryBlockData(ctypes.Structure):
    """A memory block as the ctypes structures reference it."""
    _fields_ = [("type", ctypes.c_uint32),      # 0 external (owned by another object), 1 pod
                ("data", ctypes.c_void_p),
                ("size", ctypes.c_ssize_t),
                ("owner", ctypes.py_object)]    # a strong reference to the owner


@dataclass(eq=False)
class MemoryBlock:
    kind: str          # 'external' or 'pod'
    address: int
    size: int
    owner: Any

    def describe(self):
        return f"{type(self.owner).__module__}.{type(self.owner).__name__}"


@dataclass(eq=False)
class EmptyMeta:
    pass


@dataclass(eq=False)
class FixedDimMeta:
    size: int
    stride: int
    element: Any


@dataclass(eq=False)
class VarDimMeta:
    stride: int
    offset: int
    block: MemoryBlock
    element: Any


@dataclass(eq=False)
class StringMeta:
    block: MemoryBlock
    encoding: str = "utf-8"


@dataclass(eq=False)
class RecordMeta:
    names: Tuple[str, ...]
    data_offsets: Tuple[int, ...]
    fields: Tuple[Any, ...]


@dataclass(eq=False)
class OptionMeta:
    block: MemoryBlock        # validity bitmap (or NumPy's byte mask for masked arrays)
    bit_offset: int
    element: Any
    mask_kind: str = "bitmap"  # 'bitmap' (Arrow) or 'bytemask' (NumPy masked array)


@dataclass(eq=False)
class Arrmeta:
    """Everything DyND's debug_repr showed of one array."""
    type: str
    flags: int
    data: int                     # the data pointer
    data_block: MemoryBlock
    root: Any                     # the arrmeta tree
    struct: Any = None            # ctypes preamble (built lazily)
    _keep: list = field(default_factory=list, repr=False)

    @property
    def arrmeta_address(self):
        return ctypes.addressof(self.struct) + type(self.struct).arrmeta.offset


# ---------------------------------------------------------------- ctypes
def _struct_type(meta):
    if isinstance(meta, EmptyMeta):
        return type("EmptyMetadata", (ctypes.Structure,), {"_fields_": []})
    if isinstance(meta, FixedDimMeta):
        fields = [("size", ctypes.c_ssize_t), ("stride", ctypes.c_ssize_t),
                  ("element", _struct_type(meta.element))]
        return type("FixedDimMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, VarDimMeta):
        fields = [("blockref", ctypes.POINTER(MemoryBlockData)), ("stride", ctypes.c_ssize_t),
                  ("offset", ctypes.c_ssize_t), ("element", _struct_type(meta.element))]
        return type("VarDimMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, StringMeta):
        return type("StringMetadata", (ctypes.Structure,),
                    {"_fields_": [("blockref", ctypes.POINTER(MemoryBlockData))]})
    if isinstance(meta, OptionMeta):
        fields = [("validity", ctypes.POINTER(MemoryBlockData)), ("bit_offset", ctypes.c_ssize_t),
                  ("element", _struct_type(meta.element))]
        return type("OptionMetadata", (ctypes.Structure,), {"_fields_": fields})
    if isinstance(meta, RecordMeta):
        fields = [("data_offsets", ctypes.c_ssize_t * len(meta.fields))]
        fields += [(f"field{i}", _struct_type(f)) for i, f in enumerate(meta.fields)]
        return type("RecordMetadata", (ctypes.Structure,), {"_fields_": fields})
    raise TypeError(f"no ctypes layout for {meta!r}")


def _blockref(block, keep):
    data = MemoryBlockData(0 if block.kind == "external" else 1, block.address, block.size,
                           block.owner)
    keep.append(data)
    return ctypes.pointer(data)


def _fill(struct, meta, keep):
    if isinstance(meta, FixedDimMeta):
        struct.size, struct.stride = meta.size, meta.stride
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, VarDimMeta):
        struct.blockref = _blockref(meta.block, keep)
        struct.stride, struct.offset = meta.stride, meta.offset
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, StringMeta):
        struct.blockref = _blockref(meta.block, keep)
    elif isinstance(meta, OptionMeta):
        struct.validity = _blockref(meta.block, keep)
        struct.bit_offset = meta.bit_offset
        _fill(struct.element, meta.element, keep)
    elif isinstance(meta, RecordMeta):
        for i, off in enumerate(meta.data_offsets):
            struct.data_offsets[i] = off
        for i, f in enumerate(meta.fields):
            _fill(getattr(struct, f"field{i}"), f, keep)


def with_struct(am):
    """``am`` with its ctypes structure built in ``am.struct``."""
    root_t = _struct_type(am.root)
    preamble_t = type("ArrayPreamble", (ctypes.Structure,), {"_fields_": [
        ("type", ctypes.c_char_p), ("data_pointer", ctypes.c_void_p),
        ("flags", ctypes.c_uint64), ("data_reference", ctypes.POINTER(MemoryBlockData)),
        ("arrmeta", root_t)]})
    type_bytes = am.type.encode()
    am._keep.append(type_bytes)
    pre = preamble_t()
    pre.type, pre.data_pointer, pre.flags = type_bytes, am.data, am.flags
    pre.data_reference = _blockref(am.data_block, am._keep)
    _fill(pre.arrmeta, am.root, am._keep)
    am.struct = pre
    return am
