/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark.ember.sql.lore.idsToDump: "1[0 4-6 7], 2[*]".
 *
 * A hand-written scanner over the text with a column counter, so that every
 * error points at the token the user typed. The grammar and every decision
 * about odd input are in ember/lore.h; the point of refusing rather than
 * guessing (a bare id, "1[* 3]", a repeated id) is that a misread selection
 * silently dumps the wrong data, or far too much of it.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/lore.h"

typedef struct ids_scan {
    const char *text;
    size_t pos;
    em_error *err;
} ids_scan;

static int col_of(size_t pos) { return (int)pos + 1; }

static void skip_blanks(ids_scan *sc) {
    while (sc->text[sc->pos] == ' ' || sc->text[sc->pos] == '\t')
        sc->pos++;
}

/* The token starting at pos, for messages: up to the next separator. */
static void token_at(const ids_scan *sc, size_t pos, char *buf, size_t cap) {
    const char *p = sc->text + pos;
    size_t n = 0;
    if (*p == '\0') {
        snprintf(buf, cap, "end of text");
        return;
    }
    if (strchr("[],*", *p))
        n = 1;
    else
        while (p[n] && !strchr(" \t[],*", p[n]) && n + 1 < cap && n < 24)
            n++;
    snprintf(buf, cap, "'%.*s'", (int)n, p);
}

static em_status fail_at(ids_scan *sc, size_t pos, const char *what) {
    char tok[40];
    token_at(sc, pos, tok, sizeof tok);
    return EM_FAIL(sc->err, EM_ERR_INVALID, "idsToDump: column %d: %s, found %s", col_of(pos),
                   what, tok);
}

/* A non-negative decimal number that fits an int. */
static em_status number(ids_scan *sc, const char *what, int *out) {
    size_t start = sc->pos;
    if (!isdigit((unsigned char)sc->text[sc->pos]))
        return fail_at(sc, start, what);
    long long v = 0;
    while (isdigit((unsigned char)sc->text[sc->pos])) {
        v = v * 10 + (sc->text[sc->pos] - '0');
        if (v > INT_MAX - 1) /* hi of a range is lo + 1 at most INT_MAX */
            return EM_FAIL(sc->err, EM_ERR_INVALID, "idsToDump: column %d: number too large",
                           col_of(start));
        sc->pos++;
    }
    *out = (int)v;
    return EM_OK;
}

static em_status add_range(em_lore_selection *s, int lo, int hi, em_error *err) {
    em_lore_range *r = realloc(s->ranges, sizeof *r * (size_t)(s->n_ranges + 1));
    if (!r)
        return EM_FAIL(err, EM_ERR_NOMEM, "idsToDump: out of memory");
    s->ranges = r;
    s->ranges[s->n_ranges++] = (em_lore_range){lo, hi};
    return EM_OK;
}

/* The bracket's contents, after '[' up to and including ']'. */
static em_status parts(ids_scan *sc, em_lore_selection *s) {
    bool have_star = false, have_number = false;
    for (;;) {
        skip_blanks(sc);
        char c = sc->text[sc->pos];
        if (c == ']') {
            sc->pos++;
            if (!have_star && !have_number)
                s->all = true; /* "1[]": spark-rapids' docs' lost '*' */
            return EM_OK;
        }
        if (c == '*') {
            if (have_star || have_number)
                return fail_at(sc, sc->pos, "'*' selects every partition and must stand alone");
            have_star = true;
            sc->pos++;
            s->all = true;
            continue;
        }
        if (have_star)
            return fail_at(sc, sc->pos,
                           c == '\0' ? "expected ']'"
                                     : "'*' selects every partition and must stand alone");
        if (c == '\0')
            return fail_at(sc, sc->pos, "expected ']'");
        size_t start = sc->pos;
        int lo, hi;
        EM_TRY(number(sc, "expected a partition number, a range A-B, '*' or ']'", &lo));
        hi = lo + 1;
        if (sc->text[sc->pos] == '-') {
            sc->pos++;
            EM_TRY(number(sc, "expected the end of the range", &hi));
            if (hi <= lo)
                return EM_FAIL(sc->err, EM_ERR_INVALID,
                               "idsToDump: column %d: range %d-%d is empty (A-B is half "
                               "open: partitions A to B-1, so B must be greater than A)",
                               col_of(start), lo, hi);
        }
        char next = sc->text[sc->pos];
        if (next == '\0')
            return fail_at(sc, sc->pos, "expected ']'");
        if (next != ' ' && next != '\t' && next != ']')
            return fail_at(sc, sc->pos, "expected a blank or ']' after a partition");
        have_number = true;
        EM_TRY(add_range(s, lo, hi, sc->err));
    }
}

void em_lore_ids_reset(em_lore_ids *ids) {
    if (!ids)
        return;
    for (int i = 0; i < ids->n; i++)
        free(ids->items[i].ranges);
    free(ids->items);
    ids->items = NULL;
    ids->n = 0;
}

em_status em_lore_ids_parse(const char *text, em_lore_ids *out, em_error *err) {
    memset(out, 0, sizeof *out);
    if (!text)
        return EM_OK;
    ids_scan sc = {.text = text, .err = err};
    skip_blanks(&sc);
    if (text[sc.pos] == '\0')
        return EM_OK;
    em_status s = EM_OK;
    for (;;) {
        skip_blanks(&sc);
        size_t id_pos = sc.pos;
        int id;
        s = number(&sc, "expected an operator id (a LORE id, as explain prints [loreId=N])", &id);
        if (s != EM_OK)
            break;
        skip_blanks(&sc);
        if (text[sc.pos] != '[') {
            s = EM_FAIL(err, EM_ERR_INVALID,
                        "idsToDump: column %d: id %d needs its partitions in brackets (%d[*] "
                        "for every partition, %d[0 2-4] for some)",
                        col_of(id_pos), id, id, id);
            break;
        }
        const em_lore_selection *prev = em_lore_ids_find(out, id);
        if (prev) {
            s = EM_FAIL(err, EM_ERR_INVALID,
                        "idsToDump: column %d: id %d is already listed at column %d; list all its "
                        "partitions in one bracket",
                        col_of(id_pos), id, prev->column);
            break;
        }
        em_lore_selection *items = realloc(out->items, sizeof *items * (size_t)(out->n + 1));
        if (!items) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "idsToDump: out of memory");
            break;
        }
        out->items = items;
        em_lore_selection *sel = &out->items[out->n++];
        memset(sel, 0, sizeof *sel);
        sel->lore_id = id;
        sel->column = col_of(id_pos);
        sc.pos++; /* '[' */
        s = parts(&sc, sel);
        if (s != EM_OK)
            break;
        if (sel->all) {
            free(sel->ranges);
            sel->ranges = NULL;
            sel->n_ranges = 0;
        }
        skip_blanks(&sc);
        if (text[sc.pos] == '\0')
            return EM_OK;
        if (text[sc.pos] != ',') {
            s = fail_at(&sc, sc.pos, "expected ',' between ids");
            break;
        }
        sc.pos++;
    }
    em_lore_ids_reset(out);
    return s;
}

const em_lore_selection *em_lore_ids_find(const em_lore_ids *ids, int lore_id) {
    for (int i = 0; ids && i < ids->n; i++)
        if (ids->items[i].lore_id == lore_id)
            return &ids->items[i];
    return NULL;
}

bool em_lore_selection_has(const em_lore_selection *s, int partition) {
    if (!s)
        return false;
    if (s->all)
        return true;
    for (int i = 0; i < s->n_ranges; i++)
        if (partition >= s->ranges[i].lo && partition < s->ranges[i].hi)
            return true;
    return false;
}

int em_lore_selection_max(const em_lore_selection *s) {
    int max = -1;
    for (int i = 0; s && !s->all && i < s->n_ranges; i++)
        if (s->ranges[i].hi - 1 > max)
            max = s->ranges[i].hi - 1;
    return max;
}
