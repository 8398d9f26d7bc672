"""nclx.types: DyND's type / arrmeta / data model over NumPy buffers.

- :func:`typeof` -- the datashape type string of an ndarray, Ragged,
  structured or masked array, pyarrow data, awkward Array, nclx storage or
  DistArray (awkward's spelling);
- :func:`parse` -- a type string -> a type object; :func:`from_string` --
  a view of buffers with that type;
- :class:`Ragged` -- var dimensions (Arrow list layout) over NumPy buffers,
  zero-copy to and from pyarrow and awkward, computed on with nclx's kernels;
- :func:`arrmeta`, :func:`data_address_of`, :func:`arrmeta_address_of`,
  :func:`debug_repr` -- DyND's low-level view: the per-dimension arrmeta as
  Python objects and as a ctypes structure at a real address.
"""
from nclx.types.datashape import (Categorical, Dim, Option, Pointer, Record, Scalar, String,
                                  Type, Union)
from nclx.types.parser import TypeStringError, parse
from nclx.types.ragged import Ragged
from nclx.types.typeof import type_of, typeof
from nclx.types.views import from_string
from nclx.types.arrmeta import (arrmeta, arrmeta_address_of, arrmeta_struct_of,
                                data_address_of, debug_repr)

__all__ = ["typeof", "type_of", "parse", "TypeStringError", "from_string", "Ragged",
           "arrmeta", "arrmeta_struct_of", "arrmeta_address_of", "data_address_of",
           "debug_repr", "Type", "Dim", "Scalar", "String", "Record", "Option",
           "Categorical", "Union", "Pointer"]
