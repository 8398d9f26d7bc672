/*
 * One switch over nclx's fixed-width dtype numbers (ncl_spec.h's
 * ncl_dtype order) for the sort headers: each case expands
 * CALL(name, C type), the name being the suffix of the typed functions.
 */
#ifndef NCLX_NCL_DTSWITCH_H
#define NCLX_NCL_DTSWITCH_H
#include <stdint.h>
#include <numpy/npy_common.h>

/* bool and the integers: ncl dtypes 0 .. 8 */
#define NCL_INT_CASES(CALL)                                                            \
    case 0: CALL(bool, npy_ubyte); break;                                              \
    case 1: CALL(int8, int8_t); break;                                                 \
    case 2: CALL(int16, int16_t); break;                                               \
    case 3: CALL(int32, int32_t); break;                                               \
    case 4: CALL(int64, int64_t); break;                                               \
    case 5: CALL(uint8, uint8_t); break;                                               \
    case 6: CALL(uint16, uint16_t); break;                                             \
    case 7: CALL(uint32, uint32_t); break;                                             \
    case 8: CALL(uint64, uint64_t); break;

/* and the floats: ncl dtypes 0 .. 10 */
#define NCL_DT_CASES(CALL)                                                             \
    NCL_INT_CASES(CALL)                                                                \
    case 9: CALL(float32, float); break;                                               \
    case 10: CALL(float64, double); break;

/* the sort headers' switch: the floats also as 11, 12 (float32nn, float64nn:
 * no NaN among them, compared with a plain <) */
#define NCL_SORT_SWITCH(dt, CALL)                                                      \
    switch (dt) {                                                                      \
    NCL_DT_CASES(CALL)                                                                 \
    case 11: CALL(float32nn, float); break;                                            \
    case 12: CALL(float64nn, double); break;                                           \
    default: break;                                                                    \
    }

#endif
