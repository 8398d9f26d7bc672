"""nclx.types: DyND's type / arrmeta / data model over NumPy buffers.

- :func:`typeof` -- the datashape type string of an ndarray, Ragged,
  structured or masked array, pyarrow data, awkward Array, nclx storage or
  DistArray (awkward's spelling);
- :func:`parse` -- a type string -> a type object; :func:`from_string` --
  a view of buffers with that type;
- :class:`Ragged` -- var dimensions (Arrow list layout) over NumPy buffers,
  computed on with nclx's kernels; :func:`from_list`, :func:`from_strings`
  build one from Python objects;
- :func:`to_arrow`, :func:`from_arrow`, :func:`to_awkward`,
  :func:`from_awkward` -- zero-copy to and from pyarrow and awkward
  (``pa.array(r)`` works too);
- :func:`arrmeta`, :func:`data_address_of`, :func:`arrmeta_address_of`,
  :func:`debug_repr` -- DyND's low-level view: the per-dimension arrmeta as
  Python objects and as a ctypes structure at a real address.

Layers, one way (a module imports only modules above it in this list):
datashape, parser, _bits, _offsets, _segments, _arrmeta_nodes, _to_arrow,
compute (raw arrays in, arrays out) -> _ragged_compute, _summary -> ragged
(the Ragged class: wraps those parts) -> typeof, build, convert, views ->
arrmeta -> debug.
"""
from nclx.types.datashape import (Categorical, Dim, Option, Pointer, Record, Scalar, String,
                                  Type, Union)
from nclx.types.parser import TypeStringError, parse
from nclx.types.ragged import Ragged
from nclx.types.typeof import type_of, typeof
from nclx.types.build import from_list, from_strings
from nclx.types.convert import from_arrow, from_awkward, to_arrow, to_awkward
from nclx.types.views import from_string
from nclx.types.arrmeta import (arrmeta, arrmeta_address_of, arrmeta_struct_of,
                                data_address_of)
from nclx.types.debug import debug_repr

__all__ = ["typeof", "type_of", "parse", "TypeStringError", "from_string", "Ragged",
           "from_list", "from_strings", "to_arrow", "from_arrow", "to_awkward",
           "from_awkward", "arrmeta", "arrmeta_struct_of", "arrmeta_address_of",
           "data_address_of", "debug_repr", "Type", "Dim", "Scalar", "String", "Record",
           "Option", "Categorical", "Union", "Pointer"]
