/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shim registry, the decisions shared by several lines, and detection.
 *
 * Lines are kept oldest first (em_shim_at). A line module (spark33.c ...)
 * states its printed forms and semantic defaults as data and supplies the
 * functions that differ; this file holds the rules they share: Spark's
 * DecimalPrecision arithmetic (adjustPrecisionScale with
 * allowPrecisionLoss, bounded without), the exchange-id form, and the test
 * of a text's evidence against a line's printed forms.
 *
 * Detection never guesses between lines that print a text identically: it
 * reports every compatible line and chooses the oldest, and says so in the
 * reason. When no line fits, the reason names the first contradiction found
 * for each line.
 */
#include <stdio.h>
#include <string.h>

#include "shims/shim.h"

static const em_shim *const all_shims[] = {
    &em_shim_spark330, &em_shim_spark33, &em_shim_spark34,
    &em_shim_spark35,  &em_shim_spark40, &em_shim_spark41,
};
#define N_SHIMS ((int)(sizeof all_shims / sizeof all_shims[0]))

int em_shim_count(void) { return N_SHIMS; }

const em_shim *em_shim_at(int i) { return i >= 0 && i < N_SHIMS ? all_shims[i] : NULL; }

const char *em_shim_name(const em_shim *shim) { return shim ? shim->name : "(none)"; }

bool em_shim_ansi_default(const em_shim *shim) { return shim && shim->ansi_default; }

/* True when word (len n) is one of the space-separated words of list. */
static bool shim_word_in(const char *list, const char *word, size_t n) {
    const char *p = list;
    while (p && *p) {
        while (*p == ' ')
            p++;
        const char *q = p;
        while (*q && *q != ' ')
            q++;
        if ((size_t)(q - p) == n && n > 0 && strncmp(p, word, n) == 0)
            return true;
        p = q;
    }
    return false;
}

const em_shim *em_shim_for_version(const char *version, em_error *err) {
    if (!version || !*version) {
        EM_FAIL(err, EM_ERR_INVALID, "empty Spark version");
        return NULL;
    }
    size_t n = strlen(version);
    for (int i = 0; i < N_SHIMS; i++) {
        if (strcmp(all_shims[i]->name, version) == 0 ||
            shim_word_in(all_shims[i]->aliases, version, n))
            return all_shims[i];
    }
    /* "3.5.4" -> the 3.5 line; "3.3.2" -> 3.3 (3.3.0 alone prints legacy ids). */
    for (int i = N_SHIMS - 1; i >= 0; i--) {
        size_t m = strlen(all_shims[i]->name);
        if (m == 3 && n > 4 && strncmp(version, all_shims[i]->name, 3) == 0 && version[3] == '.')
            return all_shims[i];
    }
    char known[256] = "";
    for (int i = 0; i < N_SHIMS; i++) {
        strncat(known, all_shims[i]->name, sizeof known - strlen(known) - 1);
        if (i + 1 < N_SHIMS)
            strncat(known, ", ", sizeof known - strlen(known) - 1);
    }
    EM_FAIL(err, EM_ERR_UNSUPPORTED, "unknown Spark version '%s' (known lines: %s)", version,
            known);
    return NULL;
}

em_type em_shim_decimal_adjust(int precision, int scale, bool allow_precision_loss) {
    if (!allow_precision_loss || precision <= EM_DECIMAL_MAX_PRECISION) {
        int p = precision < EM_DECIMAL_MAX_PRECISION ? precision : EM_DECIMAL_MAX_PRECISION;
        int s = scale < EM_DECIMAL_MAX_PRECISION ? scale : EM_DECIMAL_MAX_PRECISION;
        return em_type_decimal(p, s);
    }
    if (scale < 0)
        return em_type_decimal(EM_DECIMAL_MAX_PRECISION, scale);
    /* Keep the integral digits, give up fraction digits down to min(scale, 6). */
    int int_digits = precision - scale;
    int min_scale = scale < 6 ? scale : 6;
    int adjusted = EM_DECIMAL_MAX_PRECISION - int_digits;
    if (adjusted < min_scale)
        adjusted = min_scale;
    return em_type_decimal(EM_DECIMAL_MAX_PRECISION, adjusted);
}

/* Spark's Ceil/Floor.dataType: a decimal of scale 0 is already whole and keeps its
 * type; another decimal keeps its integral digits and one more for the carry
 * (ceil(9.5) is 10), scale 0; every other number becomes a bigint (a fractional
 * one through double). */
bool em_shim_floor_ceil_type(em_type in, em_type *out) {
    if (in.id == EM_TYPE_DECIMAL)
        *out = in.scale == 0 ? in : em_shim_decimal_adjust(in.precision - in.scale + 1, 0, false);
    else if (in.id >= EM_TYPE_BYTE && in.id <= EM_TYPE_DOUBLE) /* tinyint .. double */
        *out = em_type_make(EM_TYPE_LONG);
    else
        return false;
    return true;
}

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

bool em_shim_decimal_rule(em_binop op, em_type l, em_type r, bool allow_precision_loss,
                          em_type *out) {
    int p1 = l.precision, s1 = l.scale, p2 = r.precision, s2 = r.scale;
    switch (op) {
    case EM_OP_ADD:
    case EM_OP_SUB: {
        int scale = imax(s1, s2);
        int range = imax(p1 - s1, p2 - s2);
        *out = em_shim_decimal_adjust(scale + range + 1, scale, allow_precision_loss);
        return true;
    }
    case EM_OP_MUL:
        *out = em_shim_decimal_adjust(p1 + p2 + 1, s1 + s2, allow_precision_loss);
        return true;
    case EM_OP_DIV:
        if (allow_precision_loss) {
            int scale = imax(6, s1 + p2 + 1);
            *out = em_shim_decimal_adjust(p1 - s1 + s2 + scale, scale, true);
        } else {
            int int_dig = imin(EM_DECIMAL_MAX_PRECISION, p1 - s1 + s2);
            int dec_dig = imin(EM_DECIMAL_MAX_PRECISION, imax(6, s1 + p2 + 1));
            int diff = int_dig + dec_dig - EM_DECIMAL_MAX_PRECISION;
            if (diff > 0) {
                dec_dig -= diff / 2 + 1;
                int_dig = EM_DECIMAL_MAX_PRECISION - dec_dig;
            }
            *out = em_shim_decimal_adjust(int_dig + dec_dig, dec_dig, false);
        }
        return true;
    case EM_OP_REM: {
        int scale = imax(s1, s2);
        *out = em_shim_decimal_adjust(imin(p1 - s1, p2 - s2) + scale, scale, allow_precision_loss);
        return true;
    }
    default:
        return false;
    }
}

int em_shim_format_exchange_id(const em_shim *s, int64_t id, char *buf, size_t cap) {
    int n = s->legacy_exchange_id ? snprintf(buf, cap, "[id=#%lld]", (long long)id)
                                  : snprintf(buf, cap, "[plan_id=%lld]", (long long)id);
    return n < 0 ? 0 : n;
}

bool em_shim_prints_join_type(const em_shim *s) { return s->join_type_field; }

#define SHIM_REJECT(...)                                                                           \
    do {                                                                                           \
        if (why)                                                                                   \
            snprintf(why, cap, __VA_ARGS__);                                                       \
        return false;                                                                              \
    } while (0)

bool em_shim_accepts(const em_shim *s, const em_dialect_evidence *ev, char *why, size_t cap) {
    if (ev->exchange_id_legacy && !s->legacy_exchange_id)
        SHIM_REJECT("%s prints exchange ids as [plan_id=N], the text has [id=#N]", s->name);
    if (ev->exchange_plan_id && s->legacy_exchange_id)
        SHIM_REJECT("%s prints exchange ids as [id=#N], the text has [plan_id=N]", s->name);
    if (ev->scans_catalog_qualified && !s->catalog_qualified)
        SHIM_REJECT("%s prints scans as <db>.<table>, the text has spark_catalog.<db>.<table>",
                    s->name);
    if (ev->scans_unqualified && s->catalog_qualified)
        SHIM_REJECT("%s prints scans as spark_catalog.<db>.<table>, the text has <db>.<table>",
                    s->name);
    if (ev->check_overflow_3 && s->check_overflow_args != 3)
        SHIM_REJECT("%s never prints CheckOverflow with three arguments", s->name);
    if (ev->check_overflow_2 && s->check_overflow_args != 2)
        SHIM_REJECT("%s never prints CheckOverflow with two arguments", s->name);
    if (ev->promote_precision && s->check_overflow_args == 0)
        SHIM_REJECT("%s never prints promote_precision", s->name);
    if (ev->decimal_arith_unwrapped && s->check_overflow_args != 0)
        SHIM_REJECT("%s wraps decimal arithmetic in CheckOverflow, the text does not", s->name);
    if (ev->joins_with_type_field && !s->join_type_field)
        SHIM_REJECT("%s prints no 'Join type:' field, the text has one", s->name);
    if (ev->joins_without_type_field && s->join_type_field)
        SHIM_REJECT("%s prints a 'Join type:' field in every join, the text lacks it", s->name);
    if (ev->case_else_null)
        SHIM_REJECT("%s omits 'ELSE null' in CASE (only 3.2.0 printed it)", s->name);
    if (ev->window_group_limit && !s->window_group_limit)
        SHIM_REJECT("%s has no WindowGroupLimit operator", s->name);
    if (ev->scan_hosts_subquery && !s->scan_hosts_subquery)
        SHIM_REJECT("%s never pushes scalar subqueries into scans", s->name);
    if (ev->alias_names_with_ids && !s->alias_names_embed_ids)
        SHIM_REJECT("%s names generated aliases without expression ids", s->name);
    return true;
}

bool em_shim_detect_evidence(const em_dialect_evidence *ev, em_shim_detection *det) {
    memset(det, 0, sizeof *det);
    char why[N_SHIMS][160];
    int n_ok = 0;
    for (int i = 0; i < N_SHIMS; i++) {
        if (em_shim_accepts(all_shims[i], ev, why[i], sizeof why[i])) {
            det->candidates |= 1u << i;
            if (!det->chosen)
                det->chosen = all_shims[i];
            n_ok++;
        }
    }
    size_t used = 0;
    if (n_ok == 0) {
        used +=
            (size_t)snprintf(det->reason, sizeof det->reason, "no Spark line prints this text:");
        for (int i = 0; i < N_SHIMS && used < sizeof det->reason; i++)
            used += (size_t)snprintf(det->reason + used, sizeof det->reason - used, " %s;", why[i]);
        return false;
    }
    det->ambiguous = n_ok > 1;
    if (!det->ambiguous) {
        snprintf(det->reason, sizeof det->reason, "detected Spark %s (the only line printing it)",
                 det->chosen->name);
        return true;
    }
    used +=
        (size_t)snprintf(det->reason, sizeof det->reason, "Spark lines printing this text alike:");
    for (int i = 0; i < N_SHIMS && used < sizeof det->reason; i++)
        if (det->candidates & (1u << i))
            used += (size_t)snprintf(det->reason + used, sizeof det->reason - used, " %s",
                                     all_shims[i]->name);
    if (used < sizeof det->reason)
        used += (size_t)snprintf(det->reason + used, sizeof det->reason - used,
                                 "; chose the oldest, %s (pass the version to choose another)",
                                 det->chosen->name);
    /* Printing alike is harmless unless the candidates would also compute alike. */
    bool ansi_on = false, ansi_off = false, loss_on = false, loss_off = false;
    for (int i = 0; i < N_SHIMS; i++) {
        if (!(det->candidates & (1u << i)))
            continue;
        const em_shim *s = all_shims[i];
        *(s->ansi_default ? &ansi_on : &ansi_off) = true;
        *(s->decimal_allow_precision_loss ? &loss_on : &loss_off) = true;
    }
    det->semantics_differ = (ansi_on && ansi_off) || (loss_on && loss_off);
    if (ansi_on && ansi_off && used < sizeof det->reason) {
        used += (size_t)snprintf(det->reason + used, sizeof det->reason - used,
                                 "; they differ in ANSI mode (off in");
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < N_SHIMS && used < sizeof det->reason; i++)
                if ((det->candidates & (1u << i)) && all_shims[i]->ansi_default == (pass == 1))
                    used += (size_t)snprintf(det->reason + used, sizeof det->reason - used,
                                             " %s", all_shims[i]->name);
            if (used < sizeof det->reason)
                used += (size_t)snprintf(det->reason + used, sizeof det->reason - used, "%s",
                                         pass == 0 ? "; on in" : ")");
        }
    }
    return true;
}
