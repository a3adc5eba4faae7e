/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark SQL data types: equality, physical widths, and Spark's simpleString
 * text ("int", "decimal(15,2)", "timestamp_ntz"), which is how ReadSchema and
 * the plan printer name types. Parsing is case-insensitive and also accepts
 * the DDL aliases Spark's parser knows (integer, long, short, byte, real,
 * dec/numeric, a bare "decimal" meaning decimal(10,0), and char(n)/varchar(n),
 * which Spark reads as string), so a type printed
 * by any Spark version reads back; formatting always produces the canonical
 * simpleString, so format(parse(x)) is the normal form of x.
 *
 * Schemas are small arrays of named fields; every name is a private copy so a
 * schema never borrows from the text it was parsed from.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ember/memory.h"
#include "ember/types.h"

bool em_type_equal(em_type a, em_type b) {
    if (a.id != b.id)
        return false;
    if (a.id == EM_TYPE_DECIMAL)
        return a.precision == b.precision && a.scale == b.scale;
    return true;
}

int em_type_width(em_type t) {
    switch (t.id) {
    case EM_TYPE_BYTE:
        return 1;
    case EM_TYPE_SHORT:
        return 2;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
    case EM_TYPE_FLOAT:
        return 4;
    case EM_TYPE_LONG:
    case EM_TYPE_DOUBLE:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return 8;
    case EM_TYPE_DECIMAL:
        return 16;
    default:
        return 0;
    }
}

bool em_type_is_varlen(em_type t) { return t.id == EM_TYPE_STRING || t.id == EM_TYPE_BINARY; }

/* Canonical simpleString names, indexed by em_type_id. */
static const char *const type_names[EM_TYPE_COUNT_] = {
    [EM_TYPE_NULL] = "void",
    [EM_TYPE_BOOLEAN] = "boolean",
    [EM_TYPE_BYTE] = "tinyint",
    [EM_TYPE_SHORT] = "smallint",
    [EM_TYPE_INT] = "int",
    [EM_TYPE_LONG] = "bigint",
    [EM_TYPE_FLOAT] = "float",
    [EM_TYPE_DOUBLE] = "double",
    [EM_TYPE_DECIMAL] = "decimal",
    [EM_TYPE_STRING] = "string",
    [EM_TYPE_BINARY] = "binary",
    [EM_TYPE_DATE] = "date",
    [EM_TYPE_TIMESTAMP] = "timestamp",
    [EM_TYPE_TIMESTAMP_NTZ] = "timestamp_ntz",
};

void em_type_format(em_type t, char *buf, size_t cap) {
    if (cap == 0)
        return;
    if (t.id < 0 || t.id >= EM_TYPE_COUNT_) {
        snprintf(buf, cap, "unknown(%d)", (int)t.id);
        return;
    }
    if (t.id == EM_TYPE_DECIMAL)
        snprintf(buf, cap, "decimal(%d,%d)", t.precision, t.scale);
    else
        snprintf(buf, cap, "%s", type_names[t.id]);
}

/* Other spellings Spark's DDL parser accepts for the same types. */
static const struct {
    const char *name;
    em_type_id id;
} type_aliases[] = {
    {"integer", EM_TYPE_INT},  {"long", EM_TYPE_LONG},
    {"short", EM_TYPE_SHORT},  {"byte", EM_TYPE_BYTE},
    {"real", EM_TYPE_FLOAT},   {"null", EM_TYPE_NULL},
    {"bool", EM_TYPE_BOOLEAN}, {"timestamp_ltz", EM_TYPE_TIMESTAMP},
};

static bool word_eq(const char *a, size_t alen, const char *b) {
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (tolower((unsigned char)a[i]) != b[i])
            return false;
    return true;
}

/* Parses an unsigned decimal integer at text[*pos], skipping blanks around it.
 */
static bool parse_small_uint(const char *text, size_t len, size_t *pos, int *out) {
    size_t i = *pos;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    size_t start = i;
    long v = 0;
    while (i < len && isdigit((unsigned char)text[i]) && v < 1000)
        v = v * 10 + (text[i++] - '0');
    if (i == start || v >= 1000)
        return false;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    *pos = i;
    *out = (int)v;
    return true;
}

em_status em_type_parse(const char *text, size_t len, em_type *out, em_error *err) {
    size_t b = 0, e = len;
    while (b < e && isspace((unsigned char)text[b]))
        b++;
    while (e > b && isspace((unsigned char)text[e - 1]))
        e--;
    size_t w = b;
    while (w < e && (isalnum((unsigned char)text[w]) || text[w] == '_'))
        w++;
    const char *word = text + b;
    size_t wlen = w - b;

    if (word_eq(word, wlen, "decimal") || word_eq(word, wlen, "dec") ||
        word_eq(word, wlen, "numeric")) {
        size_t i = w;
        while (i < e && isspace((unsigned char)text[i]))
            i++;
        if (i == e) { /* Spark: a bare DECIMAL is decimal(10,0) */
            *out = em_type_decimal(10, 0);
            return EM_OK;
        }
        int p = 0, s = 0;
        if (text[i] != '(')
            goto bad;
        i++;
        if (!parse_small_uint(text, e, &i, &p))
            goto bad;
        if (i < e && text[i] == ',') {
            i++;
            if (!parse_small_uint(text, e, &i, &s))
                goto bad;
        }
        if (i >= e || text[i] != ')' || i + 1 != e)
            goto bad;
        if (p < 1 || p > EM_DECIMAL_MAX_PRECISION || s > p)
            return EM_FAIL(err, EM_ERR_PARSE,
                           "type '%.*s': decimal precision must be 1..38 and scale 0..precision",
                           (int)len, text);
        *out = em_type_decimal(p, s);
        return EM_OK;
    }
    if (word_eq(word, wlen, "char") || word_eq(word, wlen, "varchar")) {
        /* Spark reads CHAR(n)/VARCHAR(n) columns as plain strings */
        size_t i = w;
        int n = 0;
        while (i < e && isspace((unsigned char)text[i]))
            i++;
        if (i < e && text[i] == '(') {
            i++;
            if (parse_small_uint(text, e, &i, &n) && n >= 1 && i + 1 == e && text[i] == ')') {
                *out = em_type_make(EM_TYPE_STRING);
                return EM_OK;
            }
        }
        goto bad;
    }
    if (w != e)
        goto bad;
    for (int id = 0; id < EM_TYPE_COUNT_; id++) {
        if (id != EM_TYPE_DECIMAL && word_eq(word, wlen, type_names[id])) {
            *out = em_type_make((em_type_id)id);
            return EM_OK;
        }
    }
    for (size_t k = 0; k < sizeof type_aliases / sizeof type_aliases[0]; k++) {
        if (word_eq(word, wlen, type_aliases[k].name)) {
            *out = em_type_make(type_aliases[k].id);
            return EM_OK;
        }
    }
bad:
    return EM_FAIL(err, EM_ERR_PARSE, "unknown or malformed type '%.*s'", (int)len, text);
}

em_status em_schema_init(em_schema *s, int n_fields, em_error *err) {
    s->n_fields = 0;
    s->fields = NULL;
    if (n_fields < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "schema with %d fields", n_fields);
    if (n_fields == 0)
        return EM_OK;
    s->fields = em_pool_calloc(NULL, (int64_t)n_fields * (int64_t)sizeof(em_field), err);
    if (!s->fields)
        return err ? err->code : EM_ERR_NOMEM;
    s->n_fields = n_fields;
    for (int i = 0; i < n_fields; i++)
        s->fields[i].nullable = true;
    return EM_OK;
}

em_status em_schema_set(em_schema *s, int i, const char *name, em_type type, bool nullable,
                        em_error *err) {
    if (i < 0 || i >= s->n_fields)
        return EM_FAIL(err, EM_ERR_INVALID, "schema field %d out of range (%d fields)", i,
                       s->n_fields);
    size_t n = strlen(name);
    char *copy = em_pool_alloc(NULL, (int64_t)n + 1, err);
    if (!copy)
        return err ? err->code : EM_ERR_NOMEM;
    memcpy(copy, name, n + 1);
    em_pool_free(NULL, s->fields[i].name, 0);
    s->fields[i].name = copy;
    s->fields[i].type = type;
    s->fields[i].nullable = nullable;
    return EM_OK;
}

em_status em_schema_copy(em_schema *dst, const em_schema *src, em_error *err) {
    em_schema tmp;
    EM_TRY(em_schema_init(&tmp, src->n_fields, err));
    for (int i = 0; i < src->n_fields; i++) {
        const em_field *f = &src->fields[i];
        em_status st = em_schema_set(&tmp, i, f->name ? f->name : "", f->type, f->nullable, err);
        if (st != EM_OK) {
            em_schema_reset(&tmp);
            return st;
        }
    }
    *dst = tmp;
    return EM_OK;
}

void em_schema_reset(em_schema *s) {
    if (!s)
        return;
    for (int i = 0; i < s->n_fields; i++)
        em_pool_free(NULL, s->fields[i].name, 0);
    em_pool_free(NULL, s->fields, 0);
    s->fields = NULL;
    s->n_fields = 0;
}

int em_schema_find(const em_schema *s, const char *name) {
    for (int i = 0; i < s->n_fields; i++)
        if (s->fields[i].name && strcmp(s->fields[i].name, name) == 0)
            return i;
    return -1;
}
