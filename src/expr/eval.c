/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The interpreter: runs a compiled program over one batch.
 *
 * eval_step(s, rows) fills register s for the rows named by `rows` (a
 * selection, or all rows). Eager steps first evaluate their operands on the
 * same rows; lazy steps (AND, OR, CASE, if, coalesce) evaluate an operand
 * only on the rows whose outcome is still open, which is how Spark avoids
 * evaluating, say, a division in a CASE branch that is not taken. Each step
 * runs at most once per batch because every operand belongs to exactly one
 * parent.
 *
 * Kernels: arithmetic loops come from arith_impl.h, included once per
 * physical type, so that each type gets its own tight loop; comparisons
 * expand CMP_LOOP per type. Decimal + - * stay in 128 bits when the exact
 * result provably fits and fall back to decimal.c's wide helpers otherwise.
 * Other operations (casts, strings, dates, IN) go through a row-wise path
 * that reads scalars with em_ex_get and writes them back, which keeps their
 * semantics in one place (values.c, scalar.c); the hottest of them
 * (decimal casts, UnscaledValue, MakeDecimal, year) also have typed loops
 * that give the same results. Row-wise steps read constant operands
 * directly, without a register.
 *
 * Registers are columns of the batch's physical row count; rows outside the
 * selection stay null. ATTR steps share the input column's buffers instead
 * of copying. The root register is moved into the caller's column, and the
 * others are released after each evaluation, since they are charged to the
 * caller's pool.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/invariant.h"
#include "expr/internal.h"

static em_status eval_step(ex_ctx *x, int s, const int32_t *sel, int64_t n);

static const char *what_of(const ex_step *st, char *buf, size_t cap) {
    em_ex_describe(st->src, buf, cap);
    return buf;
}

static em_status overflow_error(const ex_step *st, const char *kind, em_error *err) {
    char d[256];
    return EM_FAIL(err, EM_ERR_OVERFLOW,
                   "[%s] in %s (set spark.sql.ansi.enabled=false to get null or wraparound)", kind,
                   what_of(st, d, sizeof d));
}

static em_status div_zero_error(const ex_step *st, em_error *err) {
    char d[256];
    return EM_FAIL(err, EM_ERR_INVALID,
                   "[DIVIDE_BY_ZERO] division by zero in %s (set spark.sql.ansi.enabled=false "
                   "to get null)",
                   what_of(st, d, sizeof d));
}

static em_column *reg(ex_ctx *x, int s) { return &x->prog->regs[s]; }

static em_status alloc_reg(ex_ctx *x, int s) {
    x->prog->steps[s].dec_bound_known = false;
    em_column_reset(reg(x, s));
    return em_ex_col_alloc(reg(x, s), x->prog->steps[s].type, x->n_rows, x->pool, x->err);
}

static inline bool valid(const em_column *c, int64_t i) { return em_column_is_valid(c, i); }

static inline void set_valid(em_column *c, int64_t i) { em_bit_set(c->validity->data, i); }

/* ---------------------------------------------------------------- arithmetic */

#define EX_INT_KERNEL
#define T int8_t
#define NAME arith_i8
#include "expr/arith_impl.h"
#define T int16_t
#define NAME arith_i16
#include "expr/arith_impl.h"
#define T int32_t
#define NAME arith_i32
#include "expr/arith_impl.h"
#define T int64_t
#define NAME arith_i64
#include "expr/arith_impl.h"
#undef EX_INT_KERNEL
#define T double
#define NAME arith_f64
#include "expr/arith_impl.h"
#define T float
#define NAME arith_f32
#include "expr/arith_impl.h"

/* v / 10^k rounded HALF_UP, within 128 bits. */
static inline em_i128 div_pow10_half_up(em_i128 v, int k) {
    em_i128 p = em_dec_pow10(k);
    em_i128 q = v / p, r = v % p;
    if (r < 0)
        r = -r;
    if (r >= p - r)
        q += v < 0 ? -1 : 1;
    return q;
}

/* Exact 128-bit fast paths for the common cases; false sends the row to the
 * general (bignum) helpers, which give the same results everywhere. */
static inline bool dec_fast(em_binop op, em_i128 l, int sa, em_i128 r, int sb, int rp, int rs,
                            em_i128 *out, bool *ok) {
    static const em_i128 lim38 =
        (em_i128)10000000000000000000ULL * (em_i128)10000000000000000000ULL; /* 10^38 */
    em_i128 res;
    switch (op) {
    case EM_OP_ADD:
    case EM_OP_SUB: {
        int s = sa > sb ? sa : sb;
        if (rs != s)
            return false;
        em_i128 l2 = l, r2 = r;
        if ((sa < s && __builtin_mul_overflow(l, em_dec_pow10(s - sa), &l2)) ||
            (sb < s && __builtin_mul_overflow(r, em_dec_pow10(s - sb), &r2)))
            return false;
        if (op == EM_OP_ADD ? __builtin_add_overflow(l2, r2, &res)
                            : __builtin_sub_overflow(l2, r2, &res))
            return false;
        *ok = em_dec_fits(res, rp);
        *out = res;
        return true;
    }
    case EM_OP_MUL: {
        if (l == (int64_t)l && r == (int64_t)r)
            res = (em_i128)(int64_t)l * (int64_t)r; /* one 64x64->128 multiply */
        else if (__builtin_mul_overflow(l, r, &res))
            return false;
        if (res >= lim38 || res <= -lim38)
            return false; /* may need MathContext(38) rounding first */
        int s = sa + sb;
        if (rs > s)
            return false;
        if (rs < s)
            res = div_pow10_half_up(res, s - rs);
        *ok = em_dec_fits(res, rp);
        *out = res;
        return true;
    }
    default:
        return false;
    }
}

/* Whether the rows (sel[0, n), or [0, n)) of c are all present: a byte of
 * the bitmap at a time where the rows are dense. */
static bool rows_all_valid(const em_column *c, const int32_t *sel, int64_t n) {
    if (!c->validity || c->null_count == 0)
        return true;
    const uint8_t *bits = c->validity->data;
    bool all = true;
    if (sel) {
        for (int64_t k = 0; k < n; k++)
            all &= em_bit_get(bits, sel[k]);
        return all;
    }
    uint8_t acc = 0xFF;
    for (int64_t b = 0; b < n / 8; b++)
        acc &= bits[b];
    for (int64_t i = n / 8 * 8; i < n; i++)
        all &= em_bit_get(bits, i);
    return all && acc == 0xFF;
}

/* Marks the rows (sel[0, n), or [0, n)) of c present. */
static void rows_set_valid(em_column *c, const int32_t *sel, int64_t n) {
    uint8_t *bits = c->validity->data;
    if (sel) {
        for (int64_t k = 0; k < n; k++)
            em_bit_set(bits, sel[k]);
        return;
    }
    memset(bits, 0xFF, (size_t)(n / 8));
    for (int64_t i = n / 8 * 8; i < n; i++)
        em_bit_set(bits, i);
}

/* A bound on |value| over the rows (all bits below the largest one's top
 * bit set) into *out when every row is valid and fits 63 bits; false
 * otherwise. Decimals are two 64-bit words, low first: a value fits when
 * the high word is the low word's sign. */
static inline int64_t word_at(const uint8_t *p, int64_t k) {
    int64_t w;
    memcpy(&w, p + 8 * k, sizeof w); /* (a plain load, without breaking the values' type) */
    return w;
}

static bool dec_rows_bound(const em_column *c, const int32_t *sel, int64_t n, uint64_t *out) {
    const uint8_t *w = c->values->data;
    uint64_t m = 0, wide = 0;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return false; /* the words are read low first */
#endif
    if (!rows_all_valid(c, sel, n))
        return false;
    EX_FOR_ROWS(sel, n, i, {
        int64_t lo = word_at(w, 2 * i), hi = word_at(w, 2 * i + 1);
        wide |= (uint64_t)(hi ^ (lo >> 63));
        m |= lo < 0 ? -(uint64_t)lo : (uint64_t)lo;
    });
    *out = m;
    return wide == 0 && m <= (uint64_t)INT64_MAX;
}

/* An operand of the small decimal path: a register, or a constant that was
 * not spread over a column (k). */
typedef struct dec_operand {
    int step;
    bool is_const;
    int64_t k;
} dec_operand;

/* Whether step arg, an operand of st, is a constant the small decimal path
 * reads as one value *k (its register is then filled only if that path
 * cannot take the batch). */
static bool dec_const_operand(const ex_ctx *x, const ex_step *st, int arg, int64_t *k) {
    const ex_step *c = &x->prog->steps[arg];
    if (st->op != EX_ARITH || st->type.id != EM_TYPE_DECIMAL || c->op != EX_CONST ||
        c->type.id != EM_TYPE_DECIMAL || c->k.null ||
        (st->bop != EM_OP_ADD && st->bop != EM_OP_SUB && st->bop != EM_OP_MUL) ||
        c->k.dec != (em_i128)(int64_t)c->k.dec)
        return false;
    *k = (int64_t)c->k.dec;
    return true;
}

/* dec_rows_bound of an operand, remembered for its register's batch. */
static bool operand_bound(ex_ctx *x, const dec_operand *d, const int32_t *sel, int64_t n,
                          uint64_t *out) {
    if (d->is_const) {
        *out = d->k < 0 ? -(uint64_t)d->k : (uint64_t)d->k;
        return true;
    }
    ex_step *st = &x->prog->steps[d->step];
    if (st->dec_bound_known) {
        *out = st->dec_bound;
        return true;
    }
    if (!dec_rows_bound(reg(x, d->step), sel, n, out))
        return false;
    st->dec_bound_known = true;
    st->dec_bound = *out;
    return true;
}

/*
 * A batch of additions, subtractions or multiplications of decimals whose
 * operands are all present and small (as most stored decimals are: prices,
 * quantities, rates) in 64-bit integers: when the operands' largest values
 * bound every result within 63 bits and the result's precision, and the
 * result's scale needs no rounding, no row can overflow, so the rows run
 * without per-row checks. The result's bound is remembered for the steps
 * reading it, and a constant operand is read as one value. False (nothing
 * written) sends the batch to the row-by-row path.
 */
static bool dec_batch_small(ex_ctx *x, int s, const dec_operand *da, const dec_operand *db,
                            const int32_t *sel, int64_t n) {
    ex_step *st = &x->prog->steps[s];
    const ex_step *sta = &x->prog->steps[da->step], *stb = &x->prog->steps[db->step];
    int sa = sta->type.scale, sb = stb->type.scale, rp = st->type.precision, rs = st->type.scale;
    em_binop op = st->bop;
    if (op != EM_OP_ADD && op != EM_OP_SUB && op != EM_OP_MUL)
        return false;
    uint64_t ma, mb, bound;
    if (!operand_bound(x, da, sel, n, &ma) || !operand_bound(x, db, sel, n, &mb))
        return false;
    int64_t fa = 1, fb = 1;
    if (op == EM_OP_MUL) {
        if (rs != sa + sb || __builtin_mul_overflow(ma, mb, &bound))
            return false;
    } else {
        int sc = sa > sb ? sa : sb;
        if (rs != sc || sc - sa > 18 || sc - sb > 18)
            return false;
        fa = (int64_t)em_dec_pow10(sc - sa);
        fb = (int64_t)em_dec_pow10(sc - sb);
        uint64_t ta, tb;
        if (__builtin_mul_overflow(ma, (uint64_t)fa, &ta) ||
            __builtin_mul_overflow(mb, (uint64_t)fb, &tb) || __builtin_add_overflow(ta, tb, &bound))
            return false;
    }
    if (bound > (uint64_t)INT64_MAX || !em_dec_fits((em_i128)bound, rp))
        return false;
    em_column *o = reg(x, s);
    const uint8_t *aw = da->is_const ? NULL : reg(x, da->step)->values->data;
    const uint8_t *bw = db->is_const ? NULL : reg(x, db->step)->values->data;
    em_i128 *ov = (em_i128 *)o->values->data;
    int64_t ka = da->k, kb = db->k;
#define DEC_SMALL_ROWS(L, R, expr)                                                                 \
    EX_FOR_ROWS(sel, n, i, {                                                                       \
        int64_t l = (L), r = (R);                                                                  \
        ov[i] = (em_i128)(expr);                                                                   \
    })
#define DEC_SMALL_OPS(L, R)                                                                        \
    do {                                                                                           \
        if (op == EM_OP_MUL)                                                                       \
            DEC_SMALL_ROWS(L, R, l * r);                                                           \
        else if (op == EM_OP_ADD)                                                                  \
            DEC_SMALL_ROWS(L, R, l * fa + r * fb);                                                 \
        else                                                                                       \
            DEC_SMALL_ROWS(L, R, l * fa - r * fb);                                                 \
    } while (0)
    if (aw && bw)
        DEC_SMALL_OPS(word_at(aw, 2 * i), word_at(bw, 2 * i));
    else if (bw)
        DEC_SMALL_OPS(ka, word_at(bw, 2 * i));
    else if (aw)
        DEC_SMALL_OPS(word_at(aw, 2 * i), kb);
    else
        DEC_SMALL_OPS(ka, kb);
#undef DEC_SMALL_OPS
#undef DEC_SMALL_ROWS
    rows_set_valid(o, sel, n);
    st->dec_bound_known = true;
    st->dec_bound = bound;
    return true;
}

static em_status arith_decimal(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    dec_operand da = {st->args[0], false, 0}, db = {st->args[1], false, 0};
    da.is_const = dec_const_operand(x, st, da.step, &da.k);
    db.is_const = dec_const_operand(x, st, db.step, &db.k);
    if (dec_batch_small(x, s, &da, &db, sel, n))
        return EM_OK;
    /* row by row: the constants are read from their registers */
    if (da.is_const)
        EM_TRY(eval_step(x, da.step, sel, n));
    if (db.is_const)
        EM_TRY(eval_step(x, db.step, sel, n));
    const em_column *a = reg(x, da.step), *b = reg(x, db.step);
    em_column *o = reg(x, s);
    const em_i128 *av = (const em_i128 *)a->values->data;
    const em_i128 *bv = (const em_i128 *)b->values->data;
    em_i128 *ov = (em_i128 *)o->values->data;
    int sa = a->type.scale, sb = b->type.scale, rp = st->type.precision, rs = st->type.scale;
    em_binop op = st->bop;
    EX_FOR_ROWS(sel, n, i, {
        if (valid(a, i) && valid(b, i)) {
            em_i128 l = av[i], r = bv[i], res = 0;
            bool ok = false;
            if ((op == EM_OP_DIV || op == EM_OP_REM) && r == 0) {
                if (!st->null_on_error)
                    return div_zero_error(st, x->err);
                continue;
            }
            if (!dec_fast(op, l, sa, r, sb, rp, rs, &res, &ok)) {
                switch (op) {
                case EM_OP_ADD:
                case EM_OP_SUB:
                    ok = em_dec_add(l, sa, r, sb, op == EM_OP_SUB, rp, rs, &res);
                    break;
                case EM_OP_MUL:
                    ok = em_dec_mul(l, sa, r, sb, rp, rs, &res);
                    break;
                case EM_OP_DIV:
                    ok = em_dec_div(l, sa, r, sb, rp, rs, &res);
                    break;
                case EM_OP_REM:
                    ok = em_dec_rem(l, sa, r, sb, rp, rs, &res);
                    break;
                default:
                    ok = false;
                    break;
                }
            }
            if (!ok) {
                if (!st->null_on_error)
                    return overflow_error(st, "NUMERIC_VALUE_OUT_OF_RANGE", x->err);
                continue;
            }
            ov[i] = res;
            set_valid(o, i);
        }
    });
    return EM_OK;
}

static em_status run_arith(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    if (x->prog->steps[st->args[0]].type.id == EM_TYPE_NULL ||
        x->prog->steps[st->args[1]].type.id == EM_TYPE_NULL)
        return EM_OK; /* null operand type: the result is all null */
    if (st->type.id == EM_TYPE_DECIMAL)
        return arith_decimal(x, s, sel, n);
    const em_column *a = reg(x, st->args[0]), *b = reg(x, st->args[1]);
    em_column *o = reg(x, s);
    switch (st->type.id) {
    case EM_TYPE_BYTE:
        return arith_i8(x, st, a, b, o, sel, n);
    case EM_TYPE_SHORT:
        return arith_i16(x, st, a, b, o, sel, n);
    case EM_TYPE_INT:
        return arith_i32(x, st, a, b, o, sel, n);
    case EM_TYPE_LONG:
        return arith_i64(x, st, a, b, o, sel, n);
    case EM_TYPE_DOUBLE:
        return arith_f64(x, st, a, b, o, sel, n);
    case EM_TYPE_FLOAT:
        return arith_f32(x, st, a, b, o, sel, n);
    default:
        return EM_UNREACHABLE(x->err, "arithmetic on an unexpected type");
    }
}

/* ---------------------------------------------------------------- comparison */

static inline bool cmp_result(em_binop op, int c) {
    switch (op) {
    case EM_OP_EQ:
    case EM_OP_NULLSAFE_EQ:
        return c == 0;
    case EM_OP_LT:
        return c < 0;
    case EM_OP_LE:
        return c <= 0;
    case EM_OP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

#define CMP_LOOP(T, CMPEXPR)                                                                       \
    do {                                                                                           \
        const T *av = (const T *)a->values->data;                                                  \
        const T *bv = (const T *)b->values->data;                                                  \
        EX_FOR_ROWS(sel, n, i, {                                                                   \
            bool va = valid(a, i), vb = valid(b, i);                                               \
            if (va && vb) {                                                                        \
                T l = av[i], r = bv[i];                                                            \
                int c = (CMPEXPR);                                                                 \
                em_bit_put(ov, i, cmp_result(op, c));                                              \
                set_valid(o, i);                                                                   \
            } else if (op == EM_OP_NULLSAFE_EQ) {                                                  \
                em_bit_put(ov, i, !va && !vb);                                                     \
                set_valid(o, i);                                                                   \
            }                                                                                      \
        });                                                                                        \
    } while (0)

static inline int cmp_f64(double l, double r) {
    if (l == r)
        return 0;
    bool nl = isnan(l), nr = isnan(r);
    if (nl || nr)
        return nl && nr ? 0 : (nl ? 1 : -1);
    return l < r ? -1 : 1;
}

/* UTF8String.compareTo: unsigned bytes, then length. */
static inline int str_order(const char *a, int32_t la, const char *b, int32_t lb) {
    int32_t m = la < lb ? la : lb;
    int c = m > 0 ? memcmp(a, b, (size_t)m) : 0;
    return c != 0 ? c : (la > lb) - (la < lb);
}

static em_status run_cmp(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    const em_column *a = reg(x, st->args[0]), *b = reg(x, st->args[1]);
    em_column *o = reg(x, s);
    uint8_t *ov = o->values->data;
    em_binop op = st->bop;
    em_type_id t = a->type.id;
    if (a->type.id == EM_TYPE_NULL || b->type.id == EM_TYPE_NULL) {
        if (op == EM_OP_NULLSAFE_EQ) {
            EX_FOR_ROWS(sel, n, i, {
                em_bit_put(ov, i, !valid(a, i) && !valid(b, i));
                set_valid(o, i);
            });
        }
        return EM_OK;
    }
    if (t == b->type.id) {
        switch (t) {
        case EM_TYPE_INT:
        case EM_TYPE_DATE:
            CMP_LOOP(int32_t, (l > r) - (l < r));
            return EM_OK;
        case EM_TYPE_LONG:
        case EM_TYPE_TIMESTAMP:
        case EM_TYPE_TIMESTAMP_NTZ:
            CMP_LOOP(int64_t, (l > r) - (l < r));
            return EM_OK;
        case EM_TYPE_DOUBLE:
            CMP_LOOP(double, cmp_f64(l, r));
            return EM_OK;
        case EM_TYPE_DECIMAL:
            if (a->type.scale == b->type.scale) {
                CMP_LOOP(em_i128, (l > r) - (l < r));
                return EM_OK;
            }
            break;
        case EM_TYPE_STRING:
        case EM_TYPE_BINARY: {
            if (!a->data || !b->data)
                break; /* no byte buffer: the row-wise path copes */
            const int32_t *ao = em_column_offsets(a), *bo = em_column_offsets(b);
            const char *ad = em_column_chars(a), *bd = em_column_chars(b);
            EX_FOR_ROWS(sel, n, i, {
                bool va = valid(a, i), vb = valid(b, i);
                if (va && vb) {
                    int c = str_order(ad + ao[i], ao[i + 1] - ao[i], bd + bo[i], bo[i + 1] - bo[i]);
                    em_bit_put(ov, i, cmp_result(op, c));
                    set_valid(o, i);
                } else if (op == EM_OP_NULLSAFE_EQ) {
                    em_bit_put(ov, i, !va && !vb);
                    set_valid(o, i);
                }
            });
            return EM_OK;
        }
        default:
            break;
        }
    }
    /* everything else row by row through the shared ordering */
    EX_FOR_ROWS(sel, n, i, {
        ex_value l, r;
        em_ex_get(a, i, &l);
        em_ex_get(b, i, &r);
        if (!l.null && !r.null) {
            em_bit_put(ov, i, cmp_result(op, em_ex_compare(&l, a->type, &r, b->type)));
            set_valid(o, i);
        } else if (op == EM_OP_NULLSAFE_EQ) {
            em_bit_put(ov, i, l.null && r.null);
            set_valid(o, i);
        }
    });
    return EM_OK;
}

/* ---------------------------------------------------------------- helpers */

/* Rows of sel[0..n) for which keep(row) holds, into a fresh array. */
static em_status alloc_rows(ex_ctx *x, int64_t n, int32_t **out) {
    *out = em_pool_alloc(x->pool, (n > 0 ? n : 1) * (int64_t)sizeof(int32_t), x->err);
    return *out ? EM_OK : (x->err ? x->err->code : EM_ERR_NOMEM);
}

static void free_rows(ex_ctx *x, int32_t *rows, int64_t n) {
    if (rows)
        em_pool_free(x->pool, rows, (n > 0 ? n : 1) * (int64_t)sizeof(int32_t));
}

/* Copies row i of src into row i of dst (same type); strings go through w. */
static em_status copy_row(em_column *dst, ex_strw *w, const em_column *src, int64_t i,
                          em_error *err) {
    if (src->type.id == EM_TYPE_NULL || !valid(src, i)) {
        if (w)
            return em_ex_strw_put(w, i, NULL, 0, true, err);
        return EM_OK;
    }
    if (w) {
        ex_value v;
        em_ex_get(src, i, &v);
        return em_ex_strw_put(w, i, v.s, v.len, false, err);
    }
    if (dst->type.id == EM_TYPE_BOOLEAN) {
        em_bit_put(dst->values->data, i, em_bit_get(src->values->data, i));
    } else {
        int wd = em_type_width(dst->type);
        memcpy(dst->values->data + i * wd, src->values->data + i * wd, (size_t)wd);
    }
    set_valid(dst, i);
    return EM_OK;
}

/* Writes the result of a lazy step: row i comes from register src_of[k]
 * (k = index of row i in sel), or is null when src_of[k] < 0. */
static em_status gather(ex_ctx *x, int s, const int32_t *sel, int64_t n, const int *src_of) {
    em_column *o = reg(x, s);
    bool var = em_type_is_varlen(o->type);
    ex_strw w = {o, 0};
    for (int64_t k = 0; k < n; k++) {
        int64_t i = sel ? sel[k] : k;
        if (src_of[k] < 0) {
            if (var)
                EM_TRY(em_ex_strw_put(&w, i, NULL, 0, true, x->err));
            continue;
        }
        EM_TRY(copy_row(o, var ? &w : NULL, reg(x, src_of[k]), i, x->err));
    }
    if (var)
        EM_TRY(em_ex_strw_finish(&w, x->n_rows, x->err));
    return EM_OK;
}

/* ---------------------------------------------------------------- lazy steps */

static em_status run_and_or(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    bool is_and = st->op == EX_AND;
    EM_TRY(eval_step(x, st->args[0], sel, n));
    const em_column *l = reg(x, st->args[0]);
    em_column *o = reg(x, s);
    int32_t *rest;
    EM_TRY(alloc_rows(x, n, &rest));
    int64_t m = 0;
    /* decided rows: AND false / OR true; the others need the right side */
    EX_FOR_ROWS(sel, n, i, {
        if (valid(l, i) && em_bit_get(l->values->data, i) != is_and) {
            em_bit_put(o->values->data, i, !is_and);
            set_valid(o, i);
        } else {
            rest[m++] = (int32_t)i;
        }
    });
    em_status rc = EM_OK;
    if (m > 0) {
        rc = eval_step(x, st->args[1], rest, m);
        if (rc == EM_OK) {
            const em_column *r = reg(x, st->args[1]);
            for (int64_t k = 0; k < m; k++) {
                int64_t i = rest[k];
                bool rv = valid(r, i);
                if (rv && em_bit_get(r->values->data, i) != is_and) {
                    em_bit_put(o->values->data, i, !is_and);
                    set_valid(o, i);
                } else if (rv && valid(l, i)) {
                    em_bit_put(o->values->data, i, is_and);
                    set_valid(o, i);
                }
                /* else null */
            }
        }
    }
    free_rows(x, rest, n);
    return rc;
}

static em_status run_case(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    int nargs = st->n_args;
    bool has_else = st->iarg != 0;
    int n_when = has_else ? (nargs - 1) / 2 : nargs / 2;
    int32_t *cur = NULL, *next = NULL, *take = NULL;
    int *src_of = NULL;
    em_status rc = EM_OK;
    if ((rc = alloc_rows(x, n, &cur)) != EM_OK || (rc = alloc_rows(x, n, &next)) != EM_OK ||
        (rc = alloc_rows(x, n, &take)) != EM_OK)
        goto done;
    src_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *src_of);
    /* pos_of maps a row back to its index in sel through a scan, so keep a
     * row -> k table over the physical rows */
    int64_t *k_of = malloc((size_t)(x->n_rows > 0 ? x->n_rows : 1) * sizeof *k_of);
    if (!src_of || !k_of) {
        free(k_of);
        rc = EM_FAIL(x->err, EM_ERR_NOMEM, "out of memory evaluating CASE");
        goto done;
    }
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = sel ? sel[k] : k;
        cur[m++] = (int32_t)i;
        k_of[i] = k;
        src_of[k] = -1;
    }
    for (int w = 0; w < n_when && m > 0 && rc == EM_OK; w++) {
        int cond = st->args[2 * w], val = st->args[2 * w + 1];
        if (st->op == EX_IF) {
            cond = st->args[0];
            val = st->args[1];
        }
        rc = eval_step(x, cond, cur, m);
        if (rc != EM_OK)
            break;
        const em_column *cc = reg(x, cond);
        int64_t nt = 0, nn = 0;
        for (int64_t k = 0; k < m; k++) {
            int64_t i = cur[k];
            if (valid(cc, i) && em_bit_get(cc->values->data, i))
                take[nt++] = (int32_t)i;
            else
                next[nn++] = (int32_t)i;
        }
        if (nt > 0) {
            rc = eval_step(x, val, take, nt);
            for (int64_t k = 0; k < nt; k++)
                src_of[k_of[take[k]]] = val;
        }
        int32_t *t = cur;
        cur = next;
        next = t;
        m = nn;
    }
    if (rc == EM_OK && has_else && m > 0) {
        int ev = st->args[nargs - 1];
        rc = eval_step(x, ev, cur, m);
        for (int64_t k = 0; k < m; k++)
            src_of[k_of[cur[k]]] = ev;
    }
    free(k_of);
    if (rc == EM_OK)
        rc = gather(x, s, sel, n, src_of);
done:
    free(src_of);
    free_rows(x, cur, n);
    free_rows(x, next, n);
    free_rows(x, take, n);
    return rc;
}

static em_status run_coalesce(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    int32_t *cur = NULL, *next = NULL;
    int *src_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *src_of);
    int64_t *k_of = malloc((size_t)(x->n_rows > 0 ? x->n_rows : 1) * sizeof *k_of);
    em_status rc = EM_OK;
    if (!src_of || !k_of) {
        rc = EM_FAIL(x->err, EM_ERR_NOMEM, "out of memory evaluating coalesce");
        goto done;
    }
    if ((rc = alloc_rows(x, n, &cur)) != EM_OK || (rc = alloc_rows(x, n, &next)) != EM_OK)
        goto done;
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = sel ? sel[k] : k;
        cur[m++] = (int32_t)i;
        k_of[i] = k;
        src_of[k] = -1;
    }
    for (int a = 0; a < st->n_args && m > 0; a++) {
        rc = eval_step(x, st->args[a], cur, m);
        if (rc != EM_OK)
            break;
        const em_column *r = reg(x, st->args[a]);
        int64_t nn = 0;
        for (int64_t k = 0; k < m; k++) {
            int64_t i = cur[k];
            if (r->type.id != EM_TYPE_NULL && valid(r, i))
                src_of[k_of[i]] = st->args[a];
            else
                next[nn++] = (int32_t)i;
        }
        int32_t *t = cur;
        cur = next;
        next = t;
        m = nn;
    }
    if (rc == EM_OK)
        rc = gather(x, s, sel, n, src_of);
done:
    free(src_of);
    free(k_of);
    free_rows(x, cur, n);
    free_rows(x, next, n);
    return rc;
}

/* ---------------------------------------------------------------- eager steps */

static em_status fill_const(ex_ctx *x, int s, const ex_value *v, const int32_t *sel, int64_t n) {
    em_column *o = reg(x, s);
    if (v->null)
        return EM_OK;
    if (em_type_is_varlen(o->type)) {
        ex_strw w = {o, 0};
        EX_FOR_ROWS(sel, n, i, { EM_TRY(em_ex_strw_put(&w, i, v->s, v->len, false, x->err)); });
        return em_ex_strw_finish(&w, x->n_rows, x->err);
    }
    /* one value for every row: its bytes once, then plain stores */
    if (o->type.id == EM_TYPE_NULL || o->type.id == EM_TYPE_BOOLEAN) {
        EX_FOR_ROWS(sel, n, i, { em_ex_put_fixed(o, i, v); });
        return EM_OK;
    }
    int w = em_type_width(o->type);
    uint8_t one[16];
    em_column tmp = *o;
    em_buffer vb = {.data = one, .capacity = sizeof one};
    uint8_t valid_bit = 0;
    em_buffer bb = {.data = &valid_bit, .capacity = 1};
    tmp.values = &vb;
    tmp.validity = &bb;
    em_ex_put_fixed(&tmp, 0, v);
    uint8_t *vals = o->values->data, *bits = o->validity->data;
    if (!sel) {
        for (int64_t i = 0; i < n; i++)
            memcpy(vals + i * w, one, (size_t)w);
        int64_t full = n / 8;
        memset(bits, 0xFF, (size_t)full);
        for (int64_t i = full * 8; i < n; i++)
            em_bit_set(bits, i);
        return EM_OK;
    }
    for (int64_t k = 0; k < n; k++) {
        memcpy(vals + (int64_t)sel[k] * w, one, (size_t)w);
        em_bit_set(bits, sel[k]);
    }
    return EM_OK;
}

static em_status run_subquery(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    ex_step *st = &x->prog->steps[s];
    if (!st->have_value) {
        em_column v;
        memset(&v, 0, sizeof v);
        em_status rc =
            x->prog->subquery(x->prog->subquery_ctx, st->src, st->type, x->prog->pool, &v, x->err);
        if (rc != EM_OK) {
            em_column_reset(&v);
            return rc;
        }
        if (v.length != 1 || !em_type_equal(v.type, st->type)) {
            char d[256];
            em_column_reset(&v);
            return EM_FAIL(x->err, EM_ERR_INVALID,
                           "scalar subquery %s returned %s rows of another type (one row of "
                           "the expression's type expected)",
                           what_of(st, d, sizeof d), v.length != 1 ? "not exactly one" : "");
        }
        st->value = v;
        st->have_value = true;
    }
    ex_value k;
    em_ex_get(&st->value, 0, &k);
    return fill_const(x, s, &k, sel, n);
}

/* Row-wise generic step: casts, scalar functions, IN, negation, abs. */
static em_status run_rowwise(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    const ex_step *st = &x->prog->steps[s];
    em_column *o = reg(x, s);
    bool var = em_type_is_varlen(o->type);
    ex_strw w = {o, 0};
    ex_value args[8], res;
    em_type at[8];
    int na = st->n_args < 8 ? st->n_args : 8;
    ex_value *argv = args;
    em_type *atv = at;
    if (st->n_args > 8) {
        argv = malloc((size_t)st->n_args * sizeof *argv);
        atv = malloc((size_t)st->n_args * sizeof *atv);
        if (!argv || !atv) {
            free(argv);
            free(atv);
            return EM_FAIL(x->err, EM_ERR_NOMEM, "out of memory evaluating an expression");
        }
        na = st->n_args;
    }
    bool rowwise_consts = st->op == EX_SCALAR || st->op == EX_IN;
    for (int a = 0; a < na; a++)
        atv[a] = x->prog->steps[st->args[a]].type;
    char what[256];
    what[0] = '\0';
    em_status rc = EM_OK;
    for (int64_t k = 0; k < n && rc == EM_OK; k++) {
        int64_t i = sel ? sel[k] : k;
        bool any_null = false;
        for (int a = 0; a < na; a++) {
            const ex_step *as = &x->prog->steps[st->args[a]];
            if (rowwise_consts && as->op == EX_CONST)
                argv[a] = as->k;
            else
                em_ex_get(reg(x, st->args[a]), i, &argv[a]);
            any_null |= argv[a].null;
        }
        em_strbuf_clear(&x->scratch);
        memset(&res, 0, sizeof res);
        if (any_null && st->op != EX_IN) {
            res.null = true;
        } else {
            if (!what[0] && st->src)
                what_of(st, what, sizeof what);
            switch (st->op) {
            case EX_CAST:
            case EX_CHECK_OVERFLOW:
                rc = em_ex_cast_value_tz(&argv[0], atv[0], st->type, st->tz, !st->null_on_error,
                                      what, &res, &x->scratch, x->err);
                break;
            case EX_SCALAR:
                rc = em_ex_scalar_apply(st, atv, argv, &res, &x->scratch, what, x->err);
                break;
            case EX_IN: {
                if (argv[0].null) {
                    res.null = true;
                    break;
                }
                if (na > 1) { /* non-literal items */
                    bool found = false, saw_null = false;
                    for (int a = 1; a < na && !found; a++) {
                        if (argv[a].null)
                            saw_null = true;
                        else
                            found = em_ex_compare(&argv[0], atv[0], &argv[a], atv[a]) == 0;
                    }
                    res.i = found;
                    res.null = !found && saw_null;
                    break;
                }
                int lo = 0, hi = st->n_list - 1;
                bool found = false;
                while (lo <= hi && !found) {
                    int mid = (lo + hi) / 2;
                    int c = em_ex_compare(&st->list[mid], atv[0], &argv[0], atv[0]);
                    if (c == 0)
                        found = true;
                    else if (c < 0)
                        lo = mid + 1;
                    else
                        hi = mid - 1;
                }
                res.i = found;
                res.null = !found && st->list_has_null;
                break;
            }
            case EX_NEGATE:
            case EX_ABS: {
                bool neg = st->op == EX_NEGATE ||
                           (atv[0].id == EM_TYPE_DECIMAL ? argv[0].dec < 0
                            : (atv[0].id == EM_TYPE_DOUBLE || atv[0].id == EM_TYPE_FLOAT)
                                ? signbit(argv[0].d)
                                : argv[0].i < 0);
                res = argv[0];
                if (!neg)
                    break;
                if (atv[0].id == EM_TYPE_DECIMAL) {
                    res.dec = -argv[0].dec;
                } else if (atv[0].id == EM_TYPE_DOUBLE || atv[0].id == EM_TYPE_FLOAT) {
                    res.d = -argv[0].d;
                } else {
                    int64_t minv = atv[0].id == EM_TYPE_LONG    ? INT64_MIN
                                   : atv[0].id == EM_TYPE_INT   ? INT32_MIN
                                   : atv[0].id == EM_TYPE_SHORT ? INT16_MIN
                                                                : INT8_MIN;
                    if (argv[0].i == minv) {
                        /* Java: -MIN == MIN; ANSI raises */
                        if (!st->null_on_error)
                            rc = overflow_error(st, "ARITHMETIC_OVERFLOW", x->err);
                        res.i = minv;
                    } else {
                        res.i = -argv[0].i;
                    }
                }
                break;
            }
            default:
                rc = EM_UNREACHABLE(x->err, "unexpected row-wise step");
            }
        }
        if (rc != EM_OK)
            break;
        if (var)
            rc = em_ex_strw_put(&w, i, res.s, res.len, res.null, x->err);
        else
            em_ex_put_fixed(o, i, &res);
    }
    if (rc == EM_OK && var)
        rc = em_ex_strw_finish(&w, x->n_rows, x->err);
    if (argv != args) {
        free(argv);
        free(atv);
    }
    return rc;
}

/* Decimal to decimal and integral to decimal casts are hot in 3.3 plans
 * (promote_precision(cast(...))): a direct loop. */
static bool fast_cast(ex_ctx *x, int s, const int32_t *sel, int64_t n, em_status *rc) {
    const ex_step *st = &x->prog->steps[s];
    const em_column *a = reg(x, st->args[0]);
    em_column *o = reg(x, s);
    if (st->type.id != EM_TYPE_DECIMAL)
        return false;
    em_i128 *ov = (em_i128 *)o->values->data;
    int rp = st->type.precision, rs = st->type.scale;
    *rc = EM_OK;
    if (a->type.id == EM_TYPE_DECIMAL) {
        const em_i128 *av = (const em_i128 *)a->values->data;
        int sa = a->type.scale;
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                em_i128 v;
                if (em_dec_rescale(av[i], sa, rs, rp, &v)) {
                    ov[i] = v;
                    set_valid(o, i);
                } else if (!st->null_on_error) {
                    *rc = overflow_error(st, "NUMERIC_VALUE_OUT_OF_RANGE", x->err);
                    return true;
                }
            }
        });
        return true;
    }
    if (a->type.id == EM_TYPE_INT || a->type.id == EM_TYPE_LONG) {
        em_i128 m = em_dec_pow10(rs);
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                em_i128 v = a->type.id == EM_TYPE_INT ? ((const int32_t *)a->values->data)[i]
                                                      : ((const int64_t *)a->values->data)[i];
                v *= m; /* |v| < 2^63 * 10^38 may overflow i128 only past 10^38 digits */
                if (rs <= 18 && em_dec_fits(v, rp)) {
                    ov[i] = v;
                    set_valid(o, i);
                } else {
                    em_i128 r;
                    em_i128 src = a->type.id == EM_TYPE_INT ? ((const int32_t *)a->values->data)[i]
                                                            : ((const int64_t *)a->values->data)[i];
                    if (em_dec_rescale(src, 0, rs, rp, &r)) {
                        ov[i] = r;
                        set_valid(o, i);
                    } else if (!st->null_on_error) {
                        *rc = overflow_error(st, "NUMERIC_VALUE_OUT_OF_RANGE", x->err);
                        return true;
                    }
                }
            }
        });
        return true;
    }
    return false;
}

/* Typed loops for the scalar functions on TPC-H's hot paths; the row-wise
 * path (scalar.c) defines their semantics and handles everything else. */
static bool fast_scalar(ex_ctx *x, int s, const int32_t *sel, int64_t n, em_status *rc) {
    const ex_step *st = &x->prog->steps[s];
    em_column *o = reg(x, s);
    *rc = EM_OK;
    if (st->n_args < 1 || x->prog->steps[st->args[0]].op == EX_CONST)
        return false;
    const em_column *a = reg(x, st->args[0]);
    switch (st->fn) {
    case EM_FN_UNSCALED: {
        /* decimal(p <= 18): the unscaled value fits a long */
        const em_i128 *av = (const em_i128 *)a->values->data;
        int64_t *ov = (int64_t *)o->values->data;
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                ov[i] = (int64_t)av[i];
                set_valid(o, i);
            }
        });
        return true;
    }
    case EM_FN_MAKE_DECIMAL: {
        const int64_t *av = (const int64_t *)a->values->data;
        em_i128 *ov = (em_i128 *)o->values->data;
        int p = st->type.precision;
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                if (em_dec_fits(av[i], p)) {
                    ov[i] = av[i];
                    set_valid(o, i);
                } else if (!st->null_on_error) {
                    return false; /* the row-wise path raises the error */
                }
            }
        });
        return true;
    }
    case EM_FN_YEAR: {
        const int32_t *av = (const int32_t *)a->values->data;
        int32_t *ov = (int32_t *)o->values->data;
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                int64_t y;
                int m, d;
                em_civil_from_days(av[i], &y, &m, &d);
                ov[i] = (int32_t)y;
                set_valid(o, i);
            }
        });
        return true;
    }
    default:
        return false;
    }
}

/* IN over a literal list of integers or strings, without a value per row:
 * the list holds few items (Spark turns long ones into INSET, which Ember
 * reads as the same step), so a linear scan of raw values wins over the
 * generic row-wise search. Doubles (NaN) and decimals take the generic path. */
/* Whether a value is among a list of constants (NULLs in it match nothing). */
static inline bool in_strings(const ex_value *list, int nl, const char *v, int32_t len) {
    /* the first byte before memcmp: most values differ there from every item */
    for (int k = 0; k < nl; k++)
        if (!list[k].null && list[k].len == len &&
            (len == 0 || (list[k].s[0] == v[0] && memcmp(list[k].s, v, (size_t)len) == 0)))
            return true;
    return false;
}

static inline bool in_ints(const ex_value *list, int nl, int64_t v) {
    for (int k = 0; k < nl; k++)
        if (!list[k].null && list[k].i == v)
            return true;
    return false;
}

static bool fast_in(ex_ctx *x, int s, const int32_t *sel, int64_t n, em_status *rc) {
    const ex_step *st = &x->prog->steps[s];
    *rc = EM_OK;
    if (st->n_args != 1 || x->prog->steps[st->args[0]].op == EX_CONST || st->n_list > 64)
        return false;
    const em_column *a = reg(x, st->args[0]);
    em_column *o = reg(x, s);
    const ex_value *list = st->list;
    int nl = st->n_list;
    bool miss_null = st->list_has_null; /* not found among a list holding NULL: NULL */
    switch (a->type.id) {
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)a->values->data;
        const char *bytes = a->data ? (const char *)a->data->data : "";
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                bool found = in_strings(list, nl, bytes + off[i], off[i + 1] - off[i]);
                if (found || !miss_null) {
                    em_bit_put(o->values->data, i, found);
                    set_valid(o, i);
                }
            }
        });
        return true;
    }
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: {
        ex_value v;
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                em_ex_get(a, i, &v);
                bool found = in_ints(list, nl, v.i);
                if (found || !miss_null) {
                    em_bit_put(o->values->data, i, found);
                    set_valid(o, i);
                }
            }
        });
        return true;
    }
    default:
        return false;
    }
}

static em_status eval_step(ex_ctx *x, int s, const int32_t *sel, int64_t n) {
    ex_step *st = &x->prog->steps[s];
    if (st->op == EX_INPUT) {
        if (st->ordinal >= x->in->n_cols)
            return EM_FAIL(x->err, EM_ERR_BIND, "input column %d is missing from the batch",
                           st->ordinal);
        const em_column *c = &x->in->cols[st->ordinal];
        if (!em_type_equal(c->type, st->type)) {
            char a[32], b[32], d[256];
            em_type_format(c->type, a, sizeof a);
            em_type_format(st->type, b, sizeof b);
            return EM_FAIL(x->err, EM_ERR_TYPE, "input column %d for %s is %s, expected %s",
                           st->ordinal, what_of(st, d, sizeof d), a, b);
        }
        st->dec_bound_known = false;
        em_column_reset(reg(x, s));
        em_column_share(reg(x, s), c);
        return EM_OK;
    }
    bool lazy = st->op == EX_AND || st->op == EX_OR || st->op == EX_CASE || st->op == EX_IF ||
                st->op == EX_COALESCE;
    /* row-wise steps read constant operands directly instead of a column
     * filled with copies of them */
    bool rowwise = st->op == EX_SCALAR || st->op == EX_IN;
    int64_t k;
    if (!lazy)
        for (int a = 0; a < st->n_args; a++)
            if (!(rowwise && x->prog->steps[st->args[a]].op == EX_CONST) &&
                !dec_const_operand(x, st, st->args[a], &k))
                EM_TRY(eval_step(x, st->args[a], sel, n));
    EM_TRY(alloc_reg(x, s));
    switch (st->op) {
    case EX_CONST:
        return fill_const(x, s, &st->k, sel, n);
    case EX_SUBQUERY:
        return run_subquery(x, s, sel, n);
    case EX_ARITH:
        return run_arith(x, s, sel, n);
    case EX_CMP:
        return run_cmp(x, s, sel, n);
    case EX_AND:
    case EX_OR:
        return run_and_or(x, s, sel, n);
    case EX_CASE:
    case EX_IF:
        return run_case(x, s, sel, n);
    case EX_COALESCE:
        return run_coalesce(x, s, sel, n);
    case EX_NOT: {
        const em_column *a = reg(x, st->args[0]);
        em_column *o = reg(x, s);
        EX_FOR_ROWS(sel, n, i, {
            if (valid(a, i)) {
                em_bit_put(o->values->data, i, !em_bit_get(a->values->data, i));
                set_valid(o, i);
            }
        });
        return EM_OK;
    }
    case EX_ISNULL:
    case EX_ISNOTNULL: {
        const em_column *a = reg(x, st->args[0]);
        em_column *o = reg(x, s);
        bool want_null = st->op == EX_ISNULL;
        EX_FOR_ROWS(sel, n, i, {
            bool isnull = a->type.id == EM_TYPE_NULL || !valid(a, i);
            em_bit_put(o->values->data, i, isnull == want_null);
            set_valid(o, i);
        });
        return EM_OK;
    }
    case EX_CAST:
    case EX_CHECK_OVERFLOW: {
        em_status rc;
        if (fast_cast(x, s, sel, n, &rc))
            return rc;
        return run_rowwise(x, s, sel, n);
    }
    case EX_SCALAR: {
        em_status rc;
        if (fast_scalar(x, s, sel, n, &rc))
            return rc;
        return run_rowwise(x, s, sel, n);
    }
    case EX_IN: {
        em_status rc;
        if (fast_in(x, s, sel, n, &rc))
            return rc;
        return run_rowwise(x, s, sel, n);
    }
    default:
        return run_rowwise(x, s, sel, n);
    }
}

/* ---------------------------------------------------------------- public */

/* Registers are released after every evaluation: they are charged to the
 * caller's pool, which need not outlive the program. */
static void release_regs(em_expr_prog *p) {
    for (int i = 0; i < p->n_steps; i++) {
        em_column_reset(&p->regs[i]);
        p->steps[i].dec_bound_known = false;
    }
}

em_status em_expr_eval(em_expr_prog *prog, const em_batch *in, em_pool *pool, em_column *out,
                       em_error *err) {
    memset(out, 0, sizeof *out);
    ex_ctx x = {prog, in, pool ? pool : prog->pool, in->n_rows, err, {0}};
    const int32_t *sel = in->sel;
    int64_t n = in->sel ? in->n_sel : in->n_rows;
    int root = prog->n_steps - 1;
    em_status rc = eval_step(&x, root, sel, n);
    em_strbuf_reset(&x.scratch);
    if (rc == EM_OK) {
        em_column *r = &prog->regs[root];
        if (prog->steps[root].op == EX_INPUT && sel) {
            /* a shared input column has values in unselected rows: copy and
             * mask them so the result honours the contract */
            rc = em_ex_col_alloc(out, r->type, in->n_rows, x.pool, err);
            if (rc == EM_OK) {
                bool var = em_type_is_varlen(r->type);
                ex_strw w = {out, 0};
                for (int64_t k = 0; k < n && rc == EM_OK; k++)
                    rc = copy_row(out, var ? &w : NULL, r, sel[k], err);
                if (rc == EM_OK && var)
                    rc = em_ex_strw_finish(&w, in->n_rows, err);
                if (rc != EM_OK)
                    em_column_reset(out);
            }
        } else {
            *out = *r;
            memset(r, 0, sizeof *r);
        }
        if (out->null_count >= 0 && out->validity)
            out->null_count = -1;
    }
    release_regs(prog);
    return rc;
}

/* Keeps the rows of rows[0..*n) (all rows 0..*n when *all) that KEEP(i)
 * accepts, written to rows[]. */
#define NARROW_ROWS(KEEP)                                                                          \
    do {                                                                                           \
        int64_t m_ = 0;                                                                            \
        if (*all) {                                                                                \
            for (int64_t i = 0; i < *n; i++)                                                       \
                if (KEEP)                                                                          \
                    rows[m_++] = (int32_t)i;                                                       \
        } else {                                                                                   \
            for (int64_t k_ = 0; k_ < *n; k_++) {                                                  \
                int64_t i = rows[k_];                                                              \
                if (KEEP)                                                                          \
                    rows[m_++] = (int32_t)i;                                                       \
            }                                                                                      \
        }                                                                                          \
        *n = m_;                                                                                   \
        *all = false;                                                                              \
    } while (0)

/* What a comparison keeps, once both sides are known not null. */
typedef enum cmp_want { CW_EQ, CW_NE, CW_LT, CW_LE, CW_GT, CW_GE } cmp_want;

static cmp_want want_of(em_binop op) {
    return op == EM_OP_EQ ? CW_EQ : op == EM_OP_LT ? CW_LT : op == EM_OP_LE ? CW_LE
         : op == EM_OP_GT ? CW_GT : CW_GE;
}
/* the operands swapped: k < col is col > k */
static cmp_want want_swapped(cmp_want w) {
    return w == CW_LT ? CW_GT : w == CW_LE ? CW_GE : w == CW_GT ? CW_LT : w == CW_GE ? CW_LE : w;
}
/* NOT (a op b), which is null where a op b is: the orders are total (NaN
 * the greatest double), so NOT a < b is a >= b */
static cmp_want want_negated(cmp_want w) {
    static const cmp_want neg[] = {CW_NE, CW_EQ, CW_GE, CW_GT, CW_LE, CW_LT};
    return neg[w];
}

/* Narrows rows to those where OK holds and ORDER (a three-way comparison of
 * row i) is what w wants. */
#define NARROW_ORDER(OK, ORDER)                                                                    \
    do {                                                                                           \
        switch (w) {                                                                               \
        case CW_EQ: NARROW_ROWS((OK) && (ORDER) == 0); break;                                      \
        case CW_NE: NARROW_ROWS((OK) && (ORDER) != 0); break;                                      \
        case CW_LT: NARROW_ROWS((OK) && (ORDER) < 0); break;                                       \
        case CW_LE: NARROW_ROWS((OK) && (ORDER) <= 0); break;                                      \
        case CW_GT: NARROW_ROWS((OK) && (ORDER) > 0); break;                                       \
        default: NARROW_ROWS((OK) && (ORDER) >= 0); break;                                         \
        }                                                                                          \
    } while (0)

/* Column c against constant r, or against column d when d is not NULL. */
#define NARROW_CMP(T, CMPEXPR, K)                                                                  \
    do {                                                                                           \
        const T *v_ = (const T *)c->values->data;                                                  \
        if (d) {                                                                                   \
            const T *u_ = (const T *)d->values->data;                                              \
            NARROW_ORDER(valid(c, i) && valid(d, i), CMPEXPR(v_[i], u_[i]));                       \
        } else {                                                                                   \
            const T r_ = (K);                                                                      \
            NARROW_ORDER(valid(c, i), CMPEXPR(v_[i], r_));                                         \
        }                                                                                          \
    } while (0)

#define CMP_ORDER(l, r) (((l) > (r)) - ((l) < (r)))

/* The operand of step s when it is an input column of the step's own type;
 * NULL otherwise (the general path reports a mismatch). */
static const em_column *input_operand(ex_ctx *x, int s) {
    const ex_step *st = &x->prog->steps[s];
    if (st->op != EX_INPUT || st->ordinal >= x->in->n_cols)
        return NULL;
    const em_column *c = &x->in->cols[st->ordinal];
    return em_type_equal(c->type, st->type) ? c : NULL;
}

/* The conjuncts Spark's filters are mostly made of, a column's nulls and a
 * column against a constant, narrow rows[] in one pass over the column: no
 * register of result bits is filled to be read back, and a column without
 * nulls leaves an isnotnull conjunct nothing to do. False when step s is not
 * of such a shape. */
static bool filter_fast(ex_ctx *x, int s, int32_t *rows, int64_t *n, bool *all) {
    const ex_step *st = &x->prog->steps[s];
    if (st->op == EX_ISNOTNULL || st->op == EX_ISNULL) {
        const em_column *c = input_operand(x, st->args[0]);
        if (!c || c->type.id == EM_TYPE_NULL)
            return false;
        if (st->op == EX_ISNOTNULL) {
            if (c->validity)
                NARROW_ROWS(valid(c, i));
        } else if (c->validity) {
            NARROW_ROWS(!valid(c, i));
        } else {
            *n = 0;
            *all = false;
        }
        return true;
    }
    if (st->op == EX_IN && st->n_args == 1 && st->n_list <= 64) {
        /* a column in a list of constants: a row missing from the list is
         * false or (the list holding NULL) null, dropped either way */
        const em_column *c = input_operand(x, st->args[0]);
        const ex_value *list = st->list;
        int nl = st->n_list;
        if (!c)
            return false;
        switch (c->type.id) {
        case EM_TYPE_STRING:
        case EM_TYPE_BINARY: {
            if (!c->data)
                return false;
            const int32_t *off = em_column_offsets(c);
            const char *chars = em_column_chars(c);
            NARROW_ROWS(valid(c, i) && in_strings(list, nl, chars + off[i], off[i + 1] - off[i]));
            return true;
        }
        case EM_TYPE_INT:
        case EM_TYPE_DATE: {
            const int32_t *v = (const int32_t *)c->values->data;
            NARROW_ROWS(valid(c, i) && in_ints(list, nl, v[i]));
            return true;
        }
        case EM_TYPE_LONG:
        case EM_TYPE_TIMESTAMP:
        case EM_TYPE_TIMESTAMP_NTZ: {
            const int64_t *v = (const int64_t *)c->values->data;
            NARROW_ROWS(valid(c, i) && in_ints(list, nl, v[i]));
            return true;
        }
        default:
            return false;
        }
    }
    bool negated = st->op == EX_NOT && x->prog->steps[st->args[0]].op == EX_CMP;
    if (negated)
        st = &x->prog->steps[st->args[0]];
    if (st->op != EX_CMP || st->bop == EM_OP_NULLSAFE_EQ)
        return false;
    cmp_want w = want_of(st->bop);
    int ci = st->args[0], ki = st->args[1];
    if (x->prog->steps[ci].op == EX_CONST) {
        ci = st->args[1];
        ki = st->args[0];
        w = want_swapped(w);
    }
    if (negated)
        w = want_negated(w);
    const ex_step *kst = &x->prog->steps[ki];
    const em_column *c = input_operand(x, ci);
    /* the other side: a constant of c's type, or a column of it (d) */
    const em_column *d = kst->op == EX_CONST ? NULL : input_operand(x, ki);
    if (!c || (kst->op != EX_CONST && !d) || !em_type_equal(kst->type, c->type))
        return false;
    const ex_value *k = &kst->k;
    if (!d && k->null) {
        *n = 0;
        *all = false;
        return true;
    }
    switch (c->type.id) {
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        NARROW_CMP(int32_t, CMP_ORDER, (int32_t)k->i);
        return true;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        NARROW_CMP(int64_t, CMP_ORDER, k->i);
        return true;
    case EM_TYPE_DOUBLE:
        NARROW_CMP(double, cmp_f64, k->d);
        return true;
    case EM_TYPE_DECIMAL:
        NARROW_CMP(em_i128, CMP_ORDER, k->dec);
        return true;
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        if (!c->data || (d && !d->data))
            return false;
        const int32_t *off = em_column_offsets(c);
        const char *chars = em_column_chars(c);
        if (d) {
            const int32_t *off2 = em_column_offsets(d);
            const char *chars2 = em_column_chars(d);
            NARROW_ORDER(valid(c, i) && valid(d, i),
                         str_order(chars + off[i], off[i + 1] - off[i], chars2 + off2[i],
                                   off2[i + 1] - off2[i]));
            return true;
        }
        const char *ks = k->s;
        int32_t kl = k->len;
        if (w == CW_EQ) {
            NARROW_ROWS(valid(c, i) && off[i + 1] - off[i] == kl &&
                        (kl == 0 || memcmp(chars + off[i], ks, (size_t)kl) == 0));
            return true;
        }
        NARROW_ORDER(valid(c, i), str_order(chars + off[i], off[i + 1] - off[i], ks, kl));
        return true;
    }
    default:
        return false;
    }
}

/* Narrows rows[0..*n) to those where step s is true. While *all, rows[] is
 * not written yet and stands for every row 0..*n. */
static em_status filter_rows(ex_ctx *x, int s, int32_t *rows, int64_t *n, bool *all);

/* A conjunct that cannot fail and reads only input columns and constants
 * (null tests, comparisons, IN lists): its cost class, 0 for a null test, 1
 * for fixed-width values, 2 for strings; -1 for anything else. */
static int conjunct_class(ex_ctx *x, int s) {
    const ex_step *st = &x->prog->steps[s];
    if (st->op == EX_ISNOTNULL || st->op == EX_ISNULL)
        return input_operand(x, st->args[0]) ? 0 : -1;
    if (st->op == EX_NOT && x->prog->steps[st->args[0]].op == EX_CMP)
        st = &x->prog->steps[st->args[0]];
    const em_column *c = NULL;
    if (st->op == EX_IN && st->n_args == 1) {
        c = input_operand(x, st->args[0]);
    } else if (st->op == EX_CMP) {
        for (int a = 0; a < 2; a++) {
            const ex_step *o = &x->prog->steps[st->args[a]];
            const em_column *oc = input_operand(x, st->args[a]);
            if (!oc && o->op != EX_CONST)
                return -1;
            c = oc ? oc : c;
        }
    }
    if (!c)
        return -1;
    return em_type_is_varlen(c->type) ? 2 : 1;
}

/* The conjuncts of an AND chain at s, in order, into out[0..*k); false when
 * there are more than cap. */
static bool conjuncts(ex_ctx *x, int s, int *out, int *k, int cap) {
    const ex_step *st = &x->prog->steps[s];
    if (st->op == EX_AND)
        return conjuncts(x, st->args[0], out, k, cap) && conjuncts(x, st->args[1], out, k, cap);
    if (*k == cap)
        return false;
    out[(*k)++] = s;
    return true;
}

/* An AND chain whose conjuncts all cannot fail runs them cheapest first
 * (null tests, then numbers and dates, then strings), so the string tests
 * see only the rows the others kept; the order is unobservable. A chain
 * with any other conjunct keeps Spark's order: a guard such as
 * (x <> 0 AND y / x > 1) must run first. */
static em_status filter_chain(ex_ctx *x, int s, int32_t *rows, int64_t *n, bool *all) {
    enum { MAX_CONJUNCTS = 32 };
    int cs[MAX_CONJUNCTS], cls[MAX_CONJUNCTS], k = 0;
    bool reorder = conjuncts(x, s, cs, &k, MAX_CONJUNCTS);
    for (int i = 0; reorder && i < k; i++)
        reorder = (cls[i] = conjunct_class(x, cs[i])) >= 0;
    if (!reorder) {
        const ex_step *st = &x->prog->steps[s];
        EM_TRY(filter_rows(x, st->args[0], rows, n, all));
        return filter_rows(x, st->args[1], rows, n, all);
    }
    for (int c = 0; c <= 2; c++)
        for (int i = 0; i < k; i++)
            if (cls[i] == c && (*n > 0 || *all))
                EM_TRY(filter_rows(x, cs[i], rows, n, all));
    return EM_OK;
}

static em_status filter_rows(ex_ctx *x, int s, int32_t *rows, int64_t *n, bool *all) {
    const ex_step *st = &x->prog->steps[s];
    if (st->op == EX_AND)
        return filter_chain(x, s, rows, n, all);
    if (filter_fast(x, s, rows, n, all))
        return EM_OK;
    EM_TRY(eval_step(x, s, *all ? NULL : rows, *n));
    const em_column *r = reg(x, s);
    if (r->type.id == EM_TYPE_BOOLEAN)
        NARROW_ROWS(valid(r, i) && em_bit_get(r->values->data, i));
    else {
        *n = 0;
        *all = false;
    }
    return EM_OK;
}

em_status em_expr_filter(em_expr_prog *prog, em_batch *in, em_error *err) {
    if (prog->steps[prog->n_steps - 1].type.id != EM_TYPE_BOOLEAN &&
        prog->steps[prog->n_steps - 1].type.id != EM_TYPE_NULL)
        return EM_FAIL(err, EM_ERR_TYPE, "filter condition is not boolean");
    ex_ctx x = {prog, in, in->pool ? in->pool : prog->pool, in->n_rows, err, {0}};
    int64_t n = in->sel ? in->n_sel : in->n_rows;
    const int64_t n0 = n;
    int32_t *rows;
    EM_TRY(alloc_rows(&x, n0, &rows));
    bool all = in->sel == NULL;
    if (!all)
        memcpy(rows, in->sel, (size_t)n * sizeof *rows);
    /* with no selection, rows[] is filled by the first conjunct that has to
     * look at the rows (an isnotnull of a column without nulls does not) */
    em_status rc = filter_rows(&x, prog->n_steps - 1, rows, &n, &all);
    em_strbuf_reset(&x.scratch);
    release_regs(prog);
    if (rc == EM_OK && !all) {
        rc = em_batch_sel_reserve(in, n, err);
        if (rc == EM_OK) {
            if (n > 0)
                memcpy(in->sel, rows, (size_t)n * sizeof *rows);
            in->n_sel = n;
        }
    }
    free_rows(&x, rows, n0);
    return rc;
}
