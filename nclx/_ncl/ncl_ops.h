/*
 * Scalar semantics of every nclx kernel: one static inline function per
 * (op, fixed-width dtype), named ncl_<op>_<dtype>.  The loops in
 * kernels.pyx.in call these; the C compiler inlines them and vectorises the
 * contiguous loops where the operation allows it.
 *
 * The rules reproduce NumPy 2.x results bit for bit:
 *  - integer arithmetic wraps (the module is built with -fwrapv);
 *  - integer division or remainder by zero gives 0 and raises the
 *    divide-by-zero flag; MIN // -1 gives MIN and raises the overflow flag;
 *    MIN % -1 is 0 without a flag;
 *  - floor_divide / remainder follow Python's sign rules, for floats through
 *    the fmod-based divmod that CPython uses;
 *  - maximum / minimum propagate NaN and otherwise return the second operand
 *    when the two compare equal (which decides the sign of a zero);
 *  - float comparisons are the quiet IEEE predicates, so NaN raises no flag;
 *  - bool inputs are read as "nonzero is true" and results are 0 or 1.
 * NumPy turns the floating-point flags raised here into its RuntimeWarnings
 * (or errors, under np.errstate) after each loop call.
 */
#ifndef NCLX_NCL_OPS_H
#define NCLX_NCL_OPS_H

#include <stdint.h>
#include <math.h>
#include <fenv.h>
#include <numpy/npy_common.h>

typedef npy_bool ncl_bool;

static inline void ncl_raise_divbyzero(void) { feraiseexcept(FE_DIVBYZERO); }
static inline void ncl_raise_overflow(void) { feraiseexcept(FE_OVERFLOW); }
/* For kernels whose vectorised compares signal on NaN: remember whether
 * FE_INVALID was already up, and drop it afterwards if the kernel raised it. */
#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
/* float and double arithmetic on x86-64 is SSE: MXCSR holds its flags, and
 * reading it costs a few cycles where fetestexcept also reads the x87 unit. */
static inline int ncl_invalid_test(void) { return _mm_getcsr() & _MM_EXCEPT_INVALID; }
static inline void ncl_invalid_clear(void)
{
    unsigned int csr = _mm_getcsr();
    if (csr & _MM_EXCEPT_INVALID) _mm_setcsr(csr & ~_MM_EXCEPT_INVALID);
}
#else
static inline int ncl_invalid_test(void) { return fetestexcept(FE_INVALID); }
static inline void ncl_invalid_clear(void)
{
    if (fetestexcept(FE_INVALID)) feclearexcept(FE_INVALID);
}
#endif

/* ---------------------------------------------------------------- bool */
static inline ncl_bool ncl_add_bool(ncl_bool a, ncl_bool b) { return (a != 0) | (b != 0); }
static inline ncl_bool ncl_multiply_bool(ncl_bool a, ncl_bool b) { return (a != 0) & (b != 0); }
static inline ncl_bool ncl_maximum_bool(ncl_bool a, ncl_bool b) { return (a != 0) | (b != 0); }
static inline ncl_bool ncl_minimum_bool(ncl_bool a, ncl_bool b) { return (a != 0) & (b != 0); }
static inline ncl_bool ncl_bitwise_and_bool(ncl_bool a, ncl_bool b) { return (a != 0) & (b != 0); }
static inline ncl_bool ncl_bitwise_or_bool(ncl_bool a, ncl_bool b) { return (a != 0) | (b != 0); }
static inline ncl_bool ncl_bitwise_xor_bool(ncl_bool a, ncl_bool b) { return (a != 0) ^ (b != 0); }
static inline ncl_bool ncl_equal_bool(ncl_bool a, ncl_bool b) { return (a != 0) == (b != 0); }
static inline ncl_bool ncl_not_equal_bool(ncl_bool a, ncl_bool b) { return (a != 0) != (b != 0); }
static inline ncl_bool ncl_less_bool(ncl_bool a, ncl_bool b) { return (a == 0) & (b != 0); }
static inline ncl_bool ncl_less_equal_bool(ncl_bool a, ncl_bool b) { return (a == 0) | (b != 0); }
static inline ncl_bool ncl_greater_bool(ncl_bool a, ncl_bool b) { return (a != 0) & (b == 0); }
static inline ncl_bool ncl_greater_equal_bool(ncl_bool a, ncl_bool b) { return (a != 0) | (b == 0); }
static inline ncl_bool ncl_absolute_bool(ncl_bool a) { return a != 0; }
static inline ncl_bool ncl_invert_bool(ncl_bool a) { return a == 0; }

/* ------------------------------------------- operations common to numbers */
#define NCL_COMMON_OPS(T, S)                                                        \
static inline T ncl_subtract_##S(T a, T b) { return (T)(a - b); }                   \
static inline T ncl_negative_##S(T a) { return (T)(-a); }

#define NCL_INTEGER_OPS(T, S)                                                       \
NCL_COMMON_OPS(T, S)                                                                \
static inline T ncl_add_##S(T a, T b) { return (T)(a + b); }                        \
static inline T ncl_multiply_##S(T a, T b) { return (T)(a * b); }                   \
static inline ncl_bool ncl_equal_##S(T a, T b) { return a == b; }                   \
static inline ncl_bool ncl_not_equal_##S(T a, T b) { return a != b; }               \
static inline ncl_bool ncl_less_##S(T a, T b) { return a < b; }                     \
static inline ncl_bool ncl_less_equal_##S(T a, T b) { return a <= b; }              \
static inline ncl_bool ncl_greater_##S(T a, T b) { return a > b; }                  \
static inline ncl_bool ncl_greater_equal_##S(T a, T b) { return a >= b; }           \
static inline T ncl_maximum_##S(T a, T b) { return a > b ? a : b; }                 \
static inline T ncl_minimum_##S(T a, T b) { return a < b ? a : b; }                 \
static inline T ncl_bitwise_and_##S(T a, T b) { return (T)(a & b); }                \
static inline T ncl_bitwise_or_##S(T a, T b) { return (T)(a | b); }                 \
static inline T ncl_bitwise_xor_##S(T a, T b) { return (T)(a ^ b); }                \
static inline T ncl_invert_##S(T a) { return (T)(~a); }                             \
static inline double ncl_true_divide_##S(T a, T b) { return (double)a / (double)b; }

#define NCL_SIGNED_OPS(T, S, TMIN)                                                  \
NCL_INTEGER_OPS(T, S)                                                               \
static inline T ncl_absolute_##S(T a) { return (T)(a < 0 ? -a : a); }               \
static inline T ncl_floor_divide_##S(T a, T b)                                      \
{                                                                                   \
    T q;                                                                            \
    if (b == 0) { ncl_raise_divbyzero(); return 0; }                                \
    if (b == -1 && a == TMIN) { ncl_raise_overflow(); return TMIN; }                \
    q = (T)(a / b);                                                                 \
    /* C truncates toward zero; floor needs one less for an inexact           */  \
    /* quotient of negative sign.                                             */  \
    if ((T)(q * b) != a && ((a < 0) != (b < 0))) {                                  \
        q = (T)(q - 1);                                                             \
    }                                                                               \
    return q;                                                                       \
}                                                                                   \
static inline T ncl_remainder_##S(T a, T b)                                         \
{                                                                                   \
    T r;                                                                            \
    if (b == 0) { ncl_raise_divbyzero(); return 0; }                                \
    if (b == -1) { return 0; }  /* also avoids the trap of MIN % -1 */              \
    r = (T)(a % b);                                                                 \
    /* the result takes the sign of the divisor */                                  \
    if (r != 0 && ((r < 0) != (b < 0))) {                                           \
        r = (T)(r + b);                                                             \
    }                                                                               \
    return r;                                                                       \
}

#define NCL_UNSIGNED_OPS(T, S)                                                      \
NCL_INTEGER_OPS(T, S)                                                               \
static inline T ncl_absolute_##S(T a) { return a; }                                 \
static inline T ncl_floor_divide_##S(T a, T b)                                      \
{                                                                                   \
    if (b == 0) { ncl_raise_divbyzero(); return 0; }                                \
    return (T)(a / b);                                                              \
}                                                                                   \
static inline T ncl_remainder_##S(T a, T b)                                         \
{                                                                                   \
    if (b == 0) { ncl_raise_divbyzero(); return 0; }                                \
    return (T)(a % b);                                                              \
}

NCL_SIGNED_OPS(int8_t, int8, INT8_MIN)
NCL_SIGNED_OPS(int16_t, int16, INT16_MIN)
NCL_SIGNED_OPS(int32_t, int32, INT32_MIN)
NCL_SIGNED_OPS(int64_t, int64, INT64_MIN)
NCL_UNSIGNED_OPS(uint8_t, uint8)
NCL_UNSIGNED_OPS(uint16_t, uint16)
NCL_UNSIGNED_OPS(uint32_t, uint32)
NCL_UNSIGNED_OPS(uint64_t, uint64)

/* int64 against uint64 compares the mathematical values, as NumPy 2 does
 * (no detour through float64). */
static inline int ncl_cmp_int64_uint64(int64_t a, uint64_t b)
{
    if (a < 0) return -1;
    return ((uint64_t)a > b) - ((uint64_t)a < b);
}
#define NCL_MIXED_CMP(OP, EXPR)                                                     \
static inline ncl_bool ncl_##OP##_int64_uint64(int64_t a, uint64_t b)               \
{ int c = ncl_cmp_int64_uint64(a, b); return EXPR; }                                \
static inline ncl_bool ncl_##OP##_uint64_int64(uint64_t a, int64_t b)               \
{ int c = -ncl_cmp_int64_uint64(b, a); return EXPR; }
NCL_MIXED_CMP(equal, c == 0)
NCL_MIXED_CMP(not_equal, c != 0)
NCL_MIXED_CMP(less, c < 0)
NCL_MIXED_CMP(less_equal, c <= 0)
NCL_MIXED_CMP(greater, c > 0)
NCL_MIXED_CMP(greater_equal, c >= 0)

/* ------------------------------------------------------------------ floats */
#define NCL_FLOAT_OPS(T, S, SFX, ONE, HALF)                                         \
NCL_COMMON_OPS(T, S)                                                                \
/* Two NaN operands: the first one's NaN (quieted), as NumPy's loops give it */    \
/* (x86 and ARM keep the first source's NaN; C lets the compiler swap the    */    \
/* operands of a commutative + or *, which picked the second's: found by     */    \
/* review).  a + a of a NaN is that NaN quieted, and raises what a + b does. */    \
static inline T ncl_add_##S(T a, T b) { T r = a + b; return isnan(a) ? a + a : r; } \
static inline T ncl_multiply_##S(T a, T b) { T r = a * b; return isnan(a) ? a + a : r; } \
static inline ncl_bool ncl_equal_##S(T a, T b) { return a == b; }                   \
static inline ncl_bool ncl_not_equal_##S(T a, T b) { return a != b; }               \
static inline ncl_bool ncl_less_##S(T a, T b) { return isless(a, b); }              \
static inline ncl_bool ncl_less_equal_##S(T a, T b) { return islessequal(a, b); }   \
static inline ncl_bool ncl_greater_##S(T a, T b) { return isgreater(a, b); }        \
static inline ncl_bool ncl_greater_equal_##S(T a, T b) { return isgreaterequal(a, b); } \
static inline T ncl_maximum_##S(T a, T b)                                           \
{ return (isgreater(a, b) || isnan(a)) ? a : b; }                                   \
static inline T ncl_minimum_##S(T a, T b)                                           \
{ return (isless(a, b) || isnan(a)) ? a : b; }                                      \
static inline T ncl_true_divide_##S(T a, T b) { return a / b; }                     \
static inline T ncl_absolute_##S(T a) { return fabs##SFX(a); }                      \
static inline T ncl_sqrt_##S(T a) { return sqrt##SFX(a); }                          \
/* Python's float divmod: the quotient is floored, the remainder takes the  */     \
/* divisor's sign and the quotient is snapped to the nearest integer.       */     \
static inline T ncl_divmod_##S(T a, T b, T *rem)                                    \
{                                                                                   \
    T m = fmod##SFX(a, b), q, fq;                                                   \
    if (b == 0) { *rem = m; return a / b; }                                         \
    q = (a - m) / b;                                                                \
    if (m != 0) {                                                                   \
        if (isless(b, 0) != isless(m, 0)) { m += b; q -= ONE; }                     \
    }                                                                               \
    else {                                                                          \
        m = copysign##SFX(0, b);                                                    \
    }                                                                               \
    if (q != 0) {                                                                   \
        fq = floor##SFX(q);                                                         \
        if (isgreater(q - fq, HALF)) { fq += ONE; }                                 \
    }                                                                               \
    else {                                                                          \
        fq = copysign##SFX(0, a / b);                                               \
    }                                                                               \
    *rem = m;                                                                       \
    return fq;                                                                      \
}                                                                                   \
static inline T ncl_floor_divide_##S(T a, T b)                                      \
{                                                                                   \
    T r;                                                                            \
    /* a zero divisor: plain division gives the IEEE inf/nan and its flag */       \
    if (b == 0) { return a / b; }                                                   \
    return ncl_divmod_##S(a, b, &r);                                                \
}                                                                                   \
static inline T ncl_remainder_##S(T a, T b)                                         \
{                                                                                   \
    T r;                                                                            \
    if (b == 0) { return fmod##SFX(a, b); }                                         \
    ncl_divmod_##S(a, b, &r);                                                       \
    return r;                                                                       \
}                                                                                   \
/* Pairwise summation with eight accumulators per block of at most 128      */     \
/* elements and halving (to multiples of 8) above that: the same association */    \
/* of additions as NumPy's float add reduction, hence the same result.       */    \
static T ncl_pairwise_sum_##S(const char *p, npy_intp n, npy_intp stride)           \
{                                                                                   \
    npy_intp i;                                                                     \
    if (n < 8) {                                                                    \
        T acc = -(T)0.0;  /* keeps the sum of only -0.0 negative */                 \
        for (i = 0; i < n; i++) { acc += *(const T *)(p + i * stride); }            \
        return acc;                                                                 \
    }                                                                               \
    if (n <= 128) {                                                                 \
        T r[8], acc;                                                                \
        npy_intp k, end = n - (n % 8);                                              \
        for (k = 0; k < 8; k++) { r[k] = *(const T *)(p + k * stride); }            \
        for (i = 8; i < end; i += 8) {                                              \
            for (k = 0; k < 8; k++) { r[k] += *(const T *)(p + (i + k) * stride); } \
        }                                                                           \
        acc = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));    \
        for (; i < n; i++) { acc += *(const T *)(p + i * stride); }                 \
        return acc;                                                                 \
    }                                                                               \
    else {                                                                          \
        npy_intp half = n / 2;                                                      \
        half -= half % 8;                                                           \
        return ncl_pairwise_sum_##S(p, half, stride)                                \
             + ncl_pairwise_sum_##S(p + half * stride, n - half, stride);           \
    }                                                                               \
}

NCL_FLOAT_OPS(float, float32, f, 1.0f, 0.5f)
NCL_FLOAT_OPS(double, float64, , 1.0, 0.5)

/* ----------------------------------------------------------------- ternary */
/* fma: a*b+c rounded once (C99 fma; the kernels are built with
 * -ffp-contract=off, so nothing else is fused). */
static inline float ncl_fma_float32(float a, float b, float c) { return fmaf(a, b, c); }
static inline double ncl_fma_float64(double a, double b, double c) { return fma(a, b, c); }
/* where: x where cond else y (a nonzero bool byte is true) */
#define NCL_WHERE(T, S) \
static inline T ncl_where_##S(ncl_bool c, T x, T y) { return c ? x : y; }
NCL_WHERE(ncl_bool, bool)
NCL_WHERE(int8_t, int8) NCL_WHERE(int16_t, int16) NCL_WHERE(int32_t, int32) NCL_WHERE(int64_t, int64)
NCL_WHERE(uint8_t, uint8) NCL_WHERE(uint16_t, uint16) NCL_WHERE(uint32_t, uint32) NCL_WHERE(uint64_t, uint64)
NCL_WHERE(float, float32) NCL_WHERE(double, float64)

/* ----------------------------------------------------------------- convert */
/* cast: C's conversion, as NumPy's own cast loops do it: to bool is
 * "nonzero", from bool reads a nonzero byte as 1, float to integer truncates
 * (a NaN, an infinity or a value out of range raises FE_INVALID, which NumPy
 * reports as "invalid value encountered in cast"), float64 to float32 rounds
 * to nearest (FE_OVERFLOW past the float32 range). */
#define NCL_CAST(S, SN, D, DN) static inline D ncl_cast_##SN##_##DN(S x) { return (D)x; }
#define NCL_CAST_B(S, SN, D, DN) static inline D ncl_cast_##SN##_##DN(S x) { return (D)(x != 0); }
#define NCL_CASTS_FROM(S, SN, C)                                                    \
C(S, SN, ncl_bool, bool) NCL_CAST(S, SN, int8_t, int8) NCL_CAST(S, SN, int16_t, int16) \
NCL_CAST(S, SN, int32_t, int32) NCL_CAST(S, SN, int64_t, int64)                       \
NCL_CAST(S, SN, uint8_t, uint8) NCL_CAST(S, SN, uint16_t, uint16)                     \
NCL_CAST(S, SN, uint32_t, uint32) NCL_CAST(S, SN, uint64_t, uint64)                   \
NCL_CAST(S, SN, float, float32) NCL_CAST(S, SN, double, float64)
/* a bool source: every target reads (x != 0) */
/* bool to bool copies the byte (astype does: a view holding 2 stays 2) */
#define NCL_CASTS_FROM_BOOL                                                         \
NCL_CAST(ncl_bool, bool, ncl_bool, bool) NCL_CAST_B(ncl_bool, bool, int8_t, int8)      \
NCL_CAST_B(ncl_bool, bool, int16_t, int16) NCL_CAST_B(ncl_bool, bool, int32_t, int32)  \
NCL_CAST_B(ncl_bool, bool, int64_t, int64) NCL_CAST_B(ncl_bool, bool, uint8_t, uint8)  \
NCL_CAST_B(ncl_bool, bool, uint16_t, uint16) NCL_CAST_B(ncl_bool, bool, uint32_t, uint32) \
NCL_CAST_B(ncl_bool, bool, uint64_t, uint64) NCL_CAST_B(ncl_bool, bool, float, float32) \
NCL_CAST_B(ncl_bool, bool, double, float64)
NCL_CASTS_FROM_BOOL
NCL_CASTS_FROM(int8_t, int8, NCL_CAST_B) NCL_CASTS_FROM(int16_t, int16, NCL_CAST_B)
NCL_CASTS_FROM(int32_t, int32, NCL_CAST_B) NCL_CASTS_FROM(int64_t, int64, NCL_CAST_B)
NCL_CASTS_FROM(uint8_t, uint8, NCL_CAST_B) NCL_CASTS_FROM(uint16_t, uint16, NCL_CAST_B)
NCL_CASTS_FROM(uint32_t, uint32, NCL_CAST_B) NCL_CASTS_FROM(uint64_t, uint64, NCL_CAST_B)
NCL_CASTS_FROM(float, float32, NCL_CAST_B) NCL_CASTS_FROM(double, float64, NCL_CAST_B)

#endif
