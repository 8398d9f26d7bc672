"""``debug_repr(x)``: the text DyND's ``nd.debug_repr`` printed -- address
and refcount, type, flags, the per-dimension arrmeta tree with its memory
blocks, the data pointer and its owner -- from :func:`nclx.types.arrmeta`."""
import ctypes
import sys

from nclx.types.arrmeta import (IMMUTABLE, READ, WRITE, FixedDimMeta, OptionMeta, RecordMeta,
                                StringMeta, VarDimMeta, arrmeta)

__all__ = ["debug_repr"]

def _flag_names(flags):
    names = [n for bit, n in ((READ, "read_access"), (WRITE, "write_access"),
                              (IMMUTABLE, "immutable")) if flags & bit]
    return " ".join(names) + " "


def _block_lines(block, indent, address):
    pad = " " * indent
    owner = "the array itself" if block.owner is None else \
        f"{block.describe()} at 0x{id(block.owner):016X} (refcount {sys.getrefcount(block.owner) - 1})"
    return [f"{pad}------ memory_block at 0x{address:016X}",
            f"{pad} type: {block.kind}",
            f"{pad} data: 0x{block.address:016X}, {block.size} bytes",
            f"{pad} owner: {owner}",
            f"{pad}------"]


def _meta_lines(meta, struct, indent):
    pad = " " * indent
    if isinstance(meta, FixedDimMeta):
        return [f"{pad}fixed_dim arrmeta", f"{pad} size: {meta.size}",
                f"{pad} stride: {meta.stride}"] + _meta_lines(meta.element, struct.element,
                                                              indent + 1)
    if isinstance(meta, VarDimMeta):
        addr = ctypes.cast(struct.blockref, ctypes.c_void_p).value
        return [f"{pad}var_dim arrmeta", f"{pad} stride: {meta.stride}",
                f"{pad} offset: {meta.offset}"] + _block_lines(meta.block, indent + 1, addr) + \
            _meta_lines(meta.element, struct.element, indent + 1)
    if isinstance(meta, StringMeta):
        addr = ctypes.cast(struct.blockref, ctypes.c_void_p).value
        return [f"{pad}string arrmeta ({meta.encoding})"] + _block_lines(meta.block, indent + 1,
                                                                         addr)
    if isinstance(meta, OptionMeta):
        addr = ctypes.cast(struct.validity, ctypes.c_void_p).value
        return [f"{pad}option arrmeta ({meta.mask_kind})", f"{pad} bit_offset: {meta.bit_offset}"] \
            + _block_lines(meta.block, indent + 1, addr) \
            + _meta_lines(meta.element, struct.element, indent + 1)
    if isinstance(meta, RecordMeta):
        out = [f"{pad}struct arrmeta", f"{pad} data_offsets: {list(meta.data_offsets)}"]
        for i, (name, f) in enumerate(zip(meta.names, meta.fields)):
            sub = _meta_lines(f, getattr(struct, f"field{i}"), indent + 2)
            out += [f"{pad} field {name!r}:"] + (sub or [f"{pad}  (no arrmeta)"])
        return out
    return []


def debug_repr(x):
    """The layout DyND's ``nd.debug_repr`` printed, for nclx's objects."""
    am = arrmeta(x)
    pre = am.struct
    lines = ["------ array",
             f" address: 0x{id(x):016X}",
             f" refcount: {sys.getrefcount(x) - 1}",
             " type:",
             f"  pointer: 0x{ctypes.addressof(pre):016X}",
             f"  type: {am.type}",
             " arrmeta:",
             f"  address: 0x{am.arrmeta_address:016X}",
             f"  flags: {am.flags} ({_flag_names(am.flags)})",
             "  type-specific arrmeta:"]
    lines += _meta_lines(am.root, pre.arrmeta, 3) or ["   (none: a scalar)"]
    ref = ctypes.cast(pre.data_reference, ctypes.c_void_p).value
    lines += [" data:", f"   pointer: 0x{am.data:016X}", f"   reference: 0x{ref:016X}"]
    lines += _block_lines(am.data_block, 4, ref)
    lines.append("------")
    return "\n".join(lines)
