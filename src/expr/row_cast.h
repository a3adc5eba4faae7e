/* SPDX-License-Identifier: Apache-2.0 */
/* Casts and value texts of the row engine (row_cast.c). */
#ifndef EM_EXPR_ROW_CAST_H
#define EM_EXPR_ROW_CAST_H

#include "ember/tz.h"
#include "expr/row_internal.h"

typedef struct row_cast_ctx {
    bool ansi;        /* invalid input and overflow raise errors instead of null */
    const char *what; /* the expression, for messages */
} row_cast_ctx;

/* Casts a value of `from` to `to` (Spark's Cast); strings made go to arena. */
em_status em_row_cast(const row_cast_ctx *c, const em_datum *in, em_type from, em_type to,
                   em_row_arena *arena, em_datum *out, em_error *err) EM_MUST_CHECK;
/* The same in session time zone tz (NULL: UTC), which casts between
 * timestamp and date, string or timestamp_ntz follow. */
em_status em_row_cast_tz(const row_cast_ctx *c, const em_tz *tz, const em_datum *in, em_type from,
                      em_type to, em_row_arena *arena, em_datum *out, em_error *err) EM_MUST_CHECK;
bool em_row_cast_supported(em_type from, em_type to);
/* Spark's stringToDate (trimmed; yyyy[-m[m][-d[d][ |T...]]]). */
bool em_row_parse_date(const uint8_t *p, int64_t n, int64_t *days);
/* Spark's stringToTimestamp (see row_cast.c for the forms read): a text
 * without a zone is local time in tz (NULL: UTC); allow_zone false
 * (timestamp_ntz) refuses a zone suffix. Returns 1, 0 when invalid, -1 when
 * a region id needs the zone database and it is not installed. */
int em_row_parse_timestamp(const uint8_t *p, int64_t n, bool allow_zone, const em_tz *tz,
                        int64_t *us);
/* Java narrowing of a long to a smaller integral type. */
int64_t em_row_wrap(em_type_id t, int64_t v);
/* Texts of casts to string. */
void em_row_decimal_text(em_i128 unscaled, int scale, char *buf, size_t cap);
void em_row_date_text(int64_t days, char *buf, size_t cap);
void em_row_timestamp_text(int64_t us, char *buf, size_t cap);
/* BigDecimal.doubleValue: the correctly rounded double. */
double em_row_decimal_to_double(em_i128 unscaled, int scale);

#endif
