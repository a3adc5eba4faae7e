/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One arithmetic kernel per physical type, included by eval.c with
 *   T     the C type of both operands and the result
 *   NAME  the kernel's function name
 *   EX_INT_KERNEL defined for integral types
 *
 * Integral + - * follow Java: wraparound when the step tolerates overflow
 * (non-ANSI), an ARITHMETIC_OVERFLOW error otherwise; the overflow test is
 * the compiler builtin on T itself, which also computes the wrapped value.
 * Division and remainder by zero give null (non-ANSI) or DIVIDE_BY_ZERO.
 * MIN % -1 is 0 and MIN div -1 is MIN as in Java (C would trap).
 * Floating point follows IEEE except that x / 0 and x % 0 are null, as in
 * Spark's DivModLike.
 */
#ifndef T
#error "define T and NAME before including arith_impl.h"
#endif

static em_status NAME(ex_ctx *x, const ex_step *st, const em_column *a, const em_column *b,
                      em_column *o, const int32_t *sel, int64_t n) {
    const T *av = (const T *)a->values->data;
    const T *bv = (const T *)b->values->data;
    T *ov = (T *)o->values->data;
    em_binop op = st->bop;
    bool strict = !st->null_on_error;
    EX_FOR_ROWS(sel, n, i, {
        if (valid(a, i) && valid(b, i)) {
            T l = av[i], r = bv[i], res = 0;
#ifdef EX_INT_KERNEL
            const T tmin = (T)((uint64_t)1 << (sizeof(T) * 8 - 1));
            bool ovf = false;
            switch (op) {
            case EM_OP_ADD:
                ovf = __builtin_add_overflow(l, r, &res);
                break;
            case EM_OP_SUB:
                ovf = __builtin_sub_overflow(l, r, &res);
                break;
            case EM_OP_MUL:
                ovf = __builtin_mul_overflow(l, r, &res);
                break;
            case EM_OP_DIV:
            case EM_OP_INTDIV:
                if (r == 0) {
                    if (strict)
                        return div_zero_error(st, x->err);
                    continue;
                }
                if (l == tmin && r == -1) {
                    res = l;
                    ovf = true;
                } else {
                    res = (T)(l / r);
                }
                break;
            case EM_OP_REM:
                if (r == 0) {
                    if (strict)
                        return div_zero_error(st, x->err);
                    continue;
                }
                res = r == -1 ? 0 : (T)(l % r);
                break;
            case EM_OP_BITAND:
                res = (T)(l & r);
                break;
            case EM_OP_BITOR:
                res = (T)(l | r);
                break;
            case EM_OP_BITXOR:
                res = (T)(l ^ r);
                break;
            default:
                return EM_UNREACHABLE(x->err, "unexpected integral operator");
            }
            if (ovf && strict)
                return overflow_error(st, "ARITHMETIC_OVERFLOW", x->err);
#else
            switch (op) {
            case EM_OP_ADD:
                res = l + r;
                break;
            case EM_OP_SUB:
                res = l - r;
                break;
            case EM_OP_MUL:
                res = l * r;
                break;
            case EM_OP_DIV:
                if (r == 0) {
                    if (strict)
                        return div_zero_error(st, x->err);
                    continue;
                }
                res = l / r;
                break;
            case EM_OP_REM:
                if (r == 0) {
                    if (strict)
                        return div_zero_error(st, x->err);
                    continue;
                }
                res = (T)fmod((double)l, (double)r);
                break;
            default:
                return EM_UNREACHABLE(x->err, "unexpected floating-point operator");
            }
#endif
            ov[i] = res;
            set_valid(o, i);
        }
    });
    return EM_OK;
}

#undef T
#undef NAME
