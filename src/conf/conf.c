/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conf object: one session's settings, validated when set.
 *
 * Every key is first resolved to what it names: a registered key (through
 * its canonical name or an alias), a family member (through either family
 * prefix), an unknown key in a namespace Ember owns or aliases (an error,
 * with the nearest known key by edit distance), or a foreign key (kept
 * verbatim). Settings are stored under the canonical name with the spelling
 * used, so an alias and its key set to different values are caught however
 * the two were ordered, while repeating one spelling replaces the value as
 * in Spark.
 *
 * Values are stored normalized (booleans lower case, enums as registered,
 * other registered values trimmed) and parsed again by the typed getters:
 * the text is small, reads are rare (per query, not per row), and the one
 * stored form is what plan.meta and explain print.
 *
 * Parsing follows Spark's rules: ConfigHelpers trims and uses Scala's
 * toBoolean/toInt/toLong/toDouble; JavaUtils.byteStringAs accepts digits
 * with an optional case-insensitive suffix of b, k, kb, m, mb, g, gb, t, tb,
 * p, pb (binary units), refuses fractions, and converts to the key's unit
 * truncating (so for spark.executor.memory, in MiB, "1536k" is 1 MiB).
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/internal.h"

#define KEY_CAP 512 /* longest key accepted, bytes */

typedef struct conf_entry {
    char *key;     /* canonical; owned */
    char *spelled; /* as set; owned */
    char *value;   /* normalized; owned */
} conf_entry;

struct em_conf {
    conf_entry *items;
    size_t n, cap;
};

/* What a key names. */
typedef enum key_kind { KEY_REGISTERED, KEY_MEMBER, KEY_RESERVED_UNKNOWN, KEY_FOREIGN } key_kind;

typedef struct resolved {
    key_kind kind;
    const em_conf_key *k;  /* KEY_REGISTERED */
    em_conf_family_id fam; /* KEY_MEMBER and unregistered family classes */
    bool in_family;        /* the key has a family prefix */
    bool member_default;   /* KEY_MEMBER */
    char canonical[KEY_CAP + 64];
} resolved;

static const char *const reserved_prefixes[] = {"spark.ember.", "spark.rapids.", "spark.gluten."};

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

static void resolve(const char *key, resolved *r) {
    memset(r, 0, sizeof *r);
    r->k = em_conf_lookup(key);
    if (r->k) {
        r->kind = KEY_REGISTERED;
        snprintf(r->canonical, sizeof r->canonical, "%s", r->k->name);
        return;
    }
    const char *cls;
    bool is_member;
    if (em_conf_family_find(key, &r->fam, &cls, &r->member_default, &is_member)) {
        r->in_family = true;
        snprintf(r->canonical, sizeof r->canonical, "%s%s", em_conf_family_get(r->fam)->prefix,
                 cls);
        if (is_member) {
            r->kind = KEY_MEMBER;
            return;
        }
        r->member_default = true; /* an unregistered class cannot be set: it reads enabled */
    }
    snprintf(r->canonical, sizeof r->canonical, "%s", key);
    for (size_t i = 0; i < sizeof reserved_prefixes / sizeof reserved_prefixes[0]; i++)
        if (has_prefix(key, reserved_prefixes[i])) {
            r->kind = KEY_RESERVED_UNKNOWN;
            return;
        }
    r->kind = KEY_FOREIGN;
}

/* --- parsing --- */

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A trimmed copy of s[0..n) in a malloc'd string, or NULL on out-of-memory. */
static char *trim_dup(const char *s, size_t n) {
    while (n && is_blank(*s))
        s++, n--;
    while (n && is_blank(s[n - 1]))
        n--;
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = '\0';
    }
    return t;
}

bool em_conf_parse_bool(const char *text, bool *out) {
    char *t = trim_dup(text, strlen(text));
    if (!t)
        return false;
    bool ok = true;
    if (!strcasecmp(t, "true"))
        *out = true;
    else if (!strcasecmp(t, "false"))
        *out = false;
    else
        ok = false;
    free(t);
    return ok;
}

/* Decimal integer with an optional sign, as Java's parseLong; false on junk or
 * overflow. */
static bool parse_long(const char *t, int64_t *out) {
    const char *p = t;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    errno = 0;
    long long v = strtoll(t, NULL, 10);
    if (errno == ERANGE)
        return false;
    *out = (int64_t)v;
    return true;
}

static bool parse_double(const char *t, double *out) {
    if (!*t)
        return false;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (*end || errno == ERANGE)
        return false;
    *out = v;
    return true;
}

static int64_t suffix_bytes(const char *s) {
    static const struct {
        const char *name;
        int shift;
    } sfx[] = {{"b", 0},   {"k", 10}, {"kb", 10}, {"m", 20}, {"mb", 20}, {"g", 30},
               {"gb", 30}, {"t", 40}, {"tb", 40}, {"p", 50}, {"pb", 50}};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
        if (!strcasecmp(s, sfx[i].name))
            return (int64_t)1 << sfx[i].shift;
    return 0;
}

/* Sizes: the reason for a refusal in why (static text), or NULL when it parsed. */
static const char *parse_bytes_why(const char *text, int64_t unit, int64_t *out) {
    char *t = trim_dup(text, strlen(text));
    if (!t)
        return "out of memory";
    const char *why = NULL;
    const char *p = t;
    while (isdigit((unsigned char)*p))
        p++;
    if (p == t) {
        why = "a size is digits with an optional unit (b, k, m, g, t, p), e.g. "
              "512m or 4g";
    } else if (*p == '.' && isdigit((unsigned char)p[1])) {
        why = "fractional sizes are not supported (write 1536m, not 1.5g)";
    } else {
        int64_t mult = *p ? suffix_bytes(p) : unit;
        uint64_t v = 0;
        for (const char *q = t; q < p && !why; q++) {
            v = v * 10 + (uint64_t)(*q - '0');
            if (v > (uint64_t)INT64_MAX)
                why = "the size is too large";
        }
        if (why) {
        } else if (!mult) {
            why = "unknown unit: use b, k, kb, m, mb, g, gb, t, tb, p or pb";
        } else if (v > (uint64_t)(INT64_MAX / mult)) {
            why = "the size is too large";
        } else {
            int64_t bytes = (int64_t)v * mult;
            *out = bytes / unit * unit; /* Spark converts to the key's unit, truncating */
        }
    }
    free(t);
    return why;
}

bool em_conf_parse_bytes(const char *text, int64_t unit, int64_t *out_bytes) {
    return parse_bytes_why(text, unit > 0 ? unit : 1, out_bytes) == NULL;
}

/* Validates text as k's value; on success *norm is a malloc'd normalized copy. */
static em_status validate(const em_conf_key *k, const char *spelled, const char *text, char **norm,
                          em_error *err) {
    char *t = trim_dup(text, strlen(text));
    if (!t)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", spelled);
    char where[KEY_CAP + 128];
    if (strcmp(spelled, k->name))
        snprintf(where, sizeof where, "%s (alias of %s)", spelled, k->name);
    else
        snprintf(where, sizeof where, "%s", spelled);
    em_status s = EM_OK;
    int64_t iv = 0;
    double dv = 0;
    bool numeric = false;
    switch (k->type) {
    case EM_CONF_BOOL: {
        bool b;
        if (!em_conf_parse_bool(t, &b)) {
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not a boolean (true or false)", where,
                        text);
            break;
        }
        strcpy(t, b ? "true" : "false");
        break;
    }
    case EM_CONF_INT:
    case EM_CONF_LONG:
        if (!parse_long(t, &iv) || (k->type == EM_CONF_INT && (iv < INT32_MIN || iv > INT32_MAX))) {
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not an %s (%s decimal integer)", where,
                        text, k->type == EM_CONF_INT ? "int" : "long",
                        k->type == EM_CONF_INT ? "32-bit" : "64-bit");
            break;
        }
        numeric = true;
        dv = (double)iv;
        break;
    case EM_CONF_DOUBLE:
        if (!parse_double(t, &dv)) {
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not a number (double)", where, text);
            break;
        }
        numeric = true;
        break;
    case EM_CONF_BYTES: {
        const char *why = parse_bytes_why(t, k->unit > 0 ? k->unit : 1, &iv);
        if (why) {
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not a size: %s", where, text, why);
            break;
        }
        numeric = true;
        dv = (double)iv;
        break;
    }
    case EM_CONF_ENUM: {
        int found = -1;
        for (int i = 0; i < EM_CONF_MAX_VALUES && k->values[i]; i++)
            if (!strcasecmp(k->values[i], t))
                found = i;
        if (found < 0) {
            char list[256] = "";
            for (int i = 0; i < EM_CONF_MAX_VALUES && k->values[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         k->values[i]);
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not one of %s", where, text, list);
            break;
        }
        strcpy(t, k->values[found]); /* same length: the match is case-insensitive */
        break;
    }
    case EM_CONF_STRING:
        break;
    }
    if (s == EM_OK && numeric && k->ranged && !(dv >= k->lo && dv <= k->hi))
        s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is out of range [%.17g, %.17g]", where, text,
                    k->lo, k->hi);
    if (s != EM_OK) {
        free(t);
        return s;
    }
    *norm = t;
    return EM_OK;
}

/* --- nearest key --- */

#define DIST_CAP 200

static int edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > DIST_CAP)
        n = DIST_CAP;
    if (m > DIST_CAP)
        m = DIST_CAP;
    int prev[DIST_CAP + 1], cur[DIST_CAP + 1];
    for (size_t j = 0; j <= m; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int sub = prev[j - 1] +
                      (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (m + 1) * sizeof *prev);
    }
    return prev[m];
}

typedef struct nearest {
    const char *query;
    const char *as_ember; /* query with spark.rapids./spark.gluten. read as
                             spark.ember., or NULL */
    int best;
    char out[KEY_CAP + 64];
} nearest;

/* Edit distance, except that a truncated key (the candidate starts with it, and it has at
 * least 3 characters after its last '.') counts as distance 1: "exec.Hash" means
 * HashAggregateExec, not the equally short SortExec. */
static int key_distance(const char *q, const char *cand) {
    const char *dot = strrchr(q, '.');
    size_t ql = strlen(q);
    if (dot && strlen(dot + 1) >= 3 && strlen(cand) > ql && !strncasecmp(cand, q, ql))
        return 1;
    return edit_distance(q, cand);
}

/* Scores are doubled distances, plus one when only the spark.ember. reading matched, so on
 * a tie the spelling in the user's own namespace (a rapids alias for a rapids key) wins. */
static void consider(nearest *nr, const char *cand) {
    int d = 2 * key_distance(nr->query, cand);
    if (nr->as_ember) {
        int d2 = 2 * key_distance(nr->as_ember, cand) + 1;
        if (d2 < d)
            d = d2;
    }
    if (d < nr->best) {
        nr->best = d;
        snprintf(nr->out, sizeof nr->out, "%s", cand);
    }
}

const char *em_conf_nearest_key(const char *key) {
    static _Thread_local char result[KEY_CAP + 64];
    nearest nr = {.query = key, .best = 1 << 30};
    char as_ember[KEY_CAP + 64];
    for (size_t i = 1; i < sizeof reserved_prefixes / sizeof reserved_prefixes[0]; i++)
        if (has_prefix(key, reserved_prefixes[i])) {
            snprintf(as_ember, sizeof as_ember, "spark.ember.%s",
                     key + strlen(reserved_prefixes[i]));
            nr.as_ember = as_ember;
        }
    /* a key with a family prefix names a class: only that family's members are candidates */
    em_conf_family_id in_fam;
    const char *cls_ignored;
    bool def_ignored, member_ignored;
    bool family_key = em_conf_family_find(key, &in_fam, &cls_ignored, &def_ignored, &member_ignored);
    for (size_t i = 0; i < em_conf_n_keys() && !family_key; i++) {
        const em_conf_key *k = em_conf_key_at(i);
        consider(&nr, k->name);
        for (int a = 0; a < EM_CONF_MAX_ALIASES && k->aliases[a]; a++)
            consider(&nr, k->aliases[a]);
    }
    char cand[KEY_CAP + 64];
    for (int f = 0; f < EM_CONF_FAMILY_COUNT_; f++) {
        if (family_key && f != (int)in_fam)
            continue;
        const em_conf_family *fam = em_conf_family_get((em_conf_family_id)f);
        const char *cls;
        for (size_t i = 0; em_conf_family_member((em_conf_family_id)f, i, &cls, NULL, NULL); i++) {
            snprintf(cand, sizeof cand, "%s%s", fam->prefix, cls);
            consider(&nr, cand);
            snprintf(cand, sizeof cand, "%s%s", fam->alias_prefix, cls);
            consider(&nr, cand);
        }
    }
    if (!nr.out[0] && family_key) /* no class registered yet: name the pattern */
        snprintf(nr.out, sizeof nr.out, "%s<SparkClassName>", em_conf_family_get(in_fam)->prefix);
    memcpy(result, nr.out, sizeof result);
    return result;
}

/* --- the conf object --- */

em_status em_conf_create(em_conf **out, em_error *err) {
    *out = calloc(1, sizeof **out);
    if (!*out || em_conf_builtins_failed()) {
        free(*out);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a conf");
    }
    return EM_OK;
}

void em_conf_destroy(em_conf *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->items[i].key);
        free(c->items[i].spelled);
        free(c->items[i].value);
    }
    free(c->items);
    free(c);
}

static conf_entry *find_entry(const em_conf *c, const char *canonical) {
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->items[i].key, canonical))
            return &c->items[i];
    return NULL;
}

/* Stores value (ownership taken) under r's canonical name, spelled as key. */
static em_status store(em_conf *c, const resolved *r, const char *key, char *value, em_error *err) {
    conf_entry *e = find_entry(c, r->canonical);
    if (e) {
        if (strcmp(e->spelled, key) && strcmp(e->value, value)) {
            em_status s = EM_FAIL(err, EM_ERR_INVALID,
                                  "%s=%s conflicts with %s=%s: both spell %s; set only one", key,
                                  value, e->spelled, e->value, r->canonical);
            free(value);
            return s;
        }
        free(e->value);
        e->value = value;
        return EM_OK;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        conf_entry *p = realloc(c->items, cap * sizeof *p);
        if (!p) {
            free(value);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", key);
        }
        c->items = p;
        c->cap = cap;
    }
    conf_entry ne = {strdup(r->canonical), strdup(key), value};
    if (!ne.key || !ne.spelled) {
        free(ne.key);
        free(ne.spelled);
        free(value);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", key);
    }
    c->items[c->n++] = ne;
    return EM_OK;
}

em_status em_conf_set(em_conf *c, const char *key_in, const char *value, em_error *err) {
    if (!c || !key_in || !value)
        return EM_FAIL(err, EM_ERR_INVALID, "em_conf_set: NULL argument");
    char *key = trim_dup(key_in, strlen(key_in));
    if (!key)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", key_in);
    em_status s = EM_OK;
    resolved r;
    char *norm = NULL;
    if (!*key) {
        s = EM_FAIL(err, EM_ERR_INVALID, "config key is empty (value '%s')", value);
        goto done;
    }
    if (strlen(key) > KEY_CAP) {
        s = EM_FAIL(err, EM_ERR_INVALID, "config key '%.64s...' is longer than %d bytes", key,
                    KEY_CAP);
        goto done;
    }
    resolve(key, &r);
    switch (r.kind) {
    case KEY_REGISTERED:
        s = validate(r.k, key, value, &norm, err);
        break;
    case KEY_MEMBER: {
        bool b;
        if (!em_conf_parse_bool(value, &b)) {
            s = EM_FAIL(err, EM_ERR_INVALID, "%s: '%s' is not a boolean (true or false)", key,
                        value);
            break;
        }
        norm = strdup(b ? "true" : "false");
        if (!norm)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", key);
        break;
    }
    case KEY_RESERVED_UNKNOWN:
        s = EM_FAIL(err, EM_ERR_INVALID,
                    "unknown config key %s%s; did you mean %s? (`ember conf` lists "
                    "every key)",
                    key, r.in_family ? " (no such class registered)" : "",
                    em_conf_nearest_key(key));
        break;
    case KEY_FOREIGN:
        norm = strdup(value); /* kept verbatim: its owner parses it */
        if (!norm)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", key);
        break;
    }
    if (s == EM_OK)
        s = store(c, &r, key, norm, err);
done:
    free(key);
    return s;
}

em_status em_conf_set_kv(em_conf *c, const char *kv, em_error *err) {
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq)
        return EM_FAIL(err, EM_ERR_INVALID, "config setting '%s' is not key=value",
                       kv ? kv : "(null)");
    size_t kl = (size_t)(eq - kv);
    char *key = malloc(kl + 1);
    if (!key)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory setting %s", kv);
    memcpy(key, kv, kl);
    key[kl] = '\0';
    em_status s = em_conf_set(c, key, eq + 1, err);
    free(key);
    return s;
}

size_t em_conf_n_set(const em_conf *c) { return c ? c->n : 0; }

bool em_conf_set_at(const em_conf *c, size_t i, const char **key, const char **spelled,
                    const char **value) {
    if (!c || i >= c->n)
        return false;
    if (key)
        *key = c->items[i].key;
    if (spelled)
        *spelled = c->items[i].spelled;
    if (value)
        *value = c->items[i].value;
    return true;
}

bool em_conf_is_set(const em_conf *c, const char *key) {
    resolved r;
    resolve(key, &r);
    return find_entry(c, r.canonical) != NULL;
}

const char *em_conf_get_text(const em_conf *c, const char *key) {
    resolved r;
    resolve(key, &r);
    conf_entry *e = find_entry(c, r.canonical);
    if (e)
        return e->value;
    if (r.kind == KEY_REGISTERED)
        return r.k->default_value;
    if (r.in_family)
        return r.member_default ? "true" : "false";
    return NULL;
}

/* The effective text of a registered key of type t (or a family key, for
 * booleans). */
static em_status typed_text(const em_conf *c, const char *key, em_conf_type t, const char **text,
                            const em_conf_key **kout, em_error *err) {
    resolved r;
    resolve(key, &r);
    if (r.in_family && t == EM_CONF_BOOL) {
        *text = em_conf_get_text(c, key);
        *kout = NULL;
        return EM_OK;
    }
    if (r.kind != KEY_REGISTERED)
        return EM_FAIL(err, EM_ERR_INVALID, "config key %s is not registered", key);
    bool ok = r.k->type == t || (t == EM_CONF_STRING && r.k->type == EM_CONF_ENUM);
    if (!ok)
        return EM_FAIL(err, EM_ERR_INVALID, "config key %s is a %s, read as a %s", r.k->name,
                       em_conf_type_name(r.k->type), em_conf_type_name(t));
    *kout = r.k;
    conf_entry *e = find_entry(c, r.canonical);
    *text = e ? e->value : r.k->default_value;
    return EM_OK;
}

static em_status no_default(const char *key, em_error *err) {
    return EM_FAIL(err, EM_ERR_INVALID, "config key %s is unset and has no default", key);
}

em_status em_conf_get_bool(const em_conf *c, const char *key, bool *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    EM_TRY(typed_text(c, key, EM_CONF_BOOL, &t, &k, err));
    if (!t)
        return no_default(key, err);
    if (!em_conf_parse_bool(t, out))
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not a boolean", key, t);
    return EM_OK;
}

em_status em_conf_get_long(const em_conf *c, const char *key, int64_t *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    em_status s = typed_text(c, key, EM_CONF_LONG, &t, &k, err);
    if (s != EM_OK) {
        /* an int reads as a long too */
        if (typed_text(c, key, EM_CONF_INT, &t, &k, NULL) != EM_OK)
            return s;
        em_error_clear(err);
    }
    if (!t)
        return no_default(key, err);
    if (!parse_long(t, out))
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not an integer", key, t);
    return EM_OK;
}

em_status em_conf_get_int(const em_conf *c, const char *key, int32_t *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    EM_TRY(typed_text(c, key, EM_CONF_INT, &t, &k, err));
    int64_t v;
    if (!t)
        return no_default(key, err);
    if (!parse_long(t, &v) || v < INT32_MIN || v > INT32_MAX)
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not an int", key, t);
    *out = (int32_t)v;
    return EM_OK;
}

em_status em_conf_get_double(const em_conf *c, const char *key, double *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    EM_TRY(typed_text(c, key, EM_CONF_DOUBLE, &t, &k, err));
    if (!t)
        return no_default(key, err);
    if (!parse_double(t, out))
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not a number", key, t);
    return EM_OK;
}

em_status em_conf_get_bytes(const em_conf *c, const char *key, int64_t *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    EM_TRY(typed_text(c, key, EM_CONF_BYTES, &t, &k, err));
    if (!t) {
        *out = -1;
        return EM_OK;
    }
    if (!em_conf_parse_bytes(t, k->unit, out))
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not a size", key, t);
    return EM_OK;
}

em_status em_conf_get_string(const em_conf *c, const char *key, const char **out, em_error *err) {
    const em_conf_key *k;
    return typed_text(c, key, EM_CONF_STRING, out, &k, err);
}

em_status em_conf_get_enum(const em_conf *c, const char *key, int *out, em_error *err) {
    const char *t;
    const em_conf_key *k;
    EM_TRY(typed_text(c, key, EM_CONF_ENUM, &t, &k, err));
    if (!t)
        return no_default(key, err);
    for (int i = 0; i < EM_CONF_MAX_VALUES && k->values[i]; i++)
        if (!strcasecmp(k->values[i], t)) {
            *out = i;
            return EM_OK;
        }
    return EM_FAIL(err, EM_ERR_INTERNAL, "%s: stored value '%s' is not allowed", key, t);
}

em_status em_conf_set_json(em_conf *c, const char *json, size_t len, em_error *err) {
    json_error_t je;
    json_t *doc = json_loadb(json, len, 0, &je);
    if (!doc)
        return EM_FAIL(err, EM_ERR_INVALID, "settings:%d:%d: %s", je.line, je.column, je.text);
    em_status s = json_is_object(doc)
                      ? EM_OK
                      : EM_FAIL(err, EM_ERR_INVALID, "settings: expected a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v) {
        if (s != EM_OK)
            break;
        s = json_is_string(v) ? em_conf_set(c, key, json_string_value(v), err)
                              : EM_FAIL(err, EM_ERR_INVALID, "setting %s: the value is not text",
                                        key);
    }
    json_decref(doc);
    return s;
}
