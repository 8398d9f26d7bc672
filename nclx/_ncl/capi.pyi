# a PyCapsule named "nclx._C_API_2" holding the nclx_api table (nclx.h)
C_API: object
VERSION: int
