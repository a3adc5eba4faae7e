/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_plan_readers_agree: the check that the two readers give one model. The
 * text is read with the leaf column types it never prints (a
 * LocalTableScan's, a scan's partition columns) taken from the JSON's
 * model; both models are written by em_plan_to_json and compared after
 * blanking what the JSON cannot carry (plan ids: SparkPlan.id is no
 * constructor field) and how the shim was chosen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/value_text.h"
#include "plan/internal.h"

static bool json_leaf_types(void *ctx, const em_plan_node *leaf, const char *column,
                            em_type *type) {
    const em_plan *jp = ctx;
    if (leaf->kind == EM_NODE_SCAN) {
        const em_plan_field *rs = em_plan_node_field(leaf, EM_FIELD_READ_SCHEMA);
        for (int i = 0; rs && i < rs->n_schema; i++)
            if (strcmp(rs->schema[i].name, column) == 0)
                return false;
    } else if (leaf->kind != EM_NODE_LOCAL_TABLE_SCAN) {
        return false;
    }
    const em_plan_node *twin = em_plan_node_by_id(jp, leaf->id);
    const em_plan_field *out = twin ? em_plan_node_field(twin, EM_FIELD_OUTPUT) : NULL;
    for (int i = 0; out && i < out->n_exprs; i++)
        if (out->exprs[i]->spark_type_known && strcmp(out->exprs[i]->name, column) == 0) {
            *type = out->exprs[i]->spark_type;
            return true;
        }
    return false;
}

/* Replaces the digits after each occurrence of `mark` with "N". */
static void blank_digits_after(char *s, const char *mark) {
    size_t m = strlen(mark);
    char *w = s;
    for (const char *r = s; *r;) {
        if (strncmp(r, mark, m) == 0) {
            memmove(w, r, m);
            w += m;
            r += m;
            if (*r == '-' || (*r >= '0' && *r <= '9')) {
                if (*r == '-')
                    r++;
                while (*r >= '0' && *r <= '9')
                    r++;
                *w++ = 'N'; /* after reading: w may be r */
            }
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

void em_plan_blank_ids(char *s) {
    blank_digits_after(s, "[plan_id=");
    blank_digits_after(s, "[id=#");
    blank_digits_after(s, "\"plan_id\": ");
}

static em_status model_json(const em_plan *plan, char **out, em_error *err) {
    size_t n;
    EM_TRY(em_plan_to_json(plan, out, &n, err));
    em_plan_blank_ids(*out);
    char *r = strstr(*out, "\"version_reason\": \"");
    if (r) {
        char *v = r + 19, *e = v;
        while (*e && *e != '"')
            e += *e == '\\' && e[1] ? 2 : 1;
        memmove(v, e, strlen(e) + 1);
    }
    return EM_OK;
}

/* The first line where a and b differ, with its number. */
static void first_difference(const char *a, const char *b, em_strbuf *diff) {
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    int na = (int)strcspn(la, "\n"), nb = (int)strcspn(lb, "\n");
    em_strbuf_appendf(diff, NULL, "model line %d: text gives \"%.*s\", JSON gives \"%.*s\"", line,
                      na > 300 ? 300 : na, la, nb > 300 ? 300 : nb, lb);
}

em_status em_plan_readers_agree(const char *text, size_t text_len, const char *json,
                                size_t json_len, const em_shim *shim, bool *same,
                                em_strbuf *diff, em_error *err) {
    *same = false;
    em_plan *jp = NULL, *tp = NULL;
    char *a = NULL, *b = NULL;
    em_plan_parse_options jo = {.shim = shim, .source_name = "json"};
    em_status s = em_plan_read_json(json, json_len, &jo, &jp, err);
    if (s == EM_OK) {
        em_plan_parse_options to = {.shim = em_plan_shim(jp),
                                    .column_type = json_leaf_types,
                                    .column_type_ctx = jp};
        s = em_plan_parse(text, text_len, &to, &tp, err);
    }
    if (s == EM_OK)
        s = model_json(tp, &a, err);
    if (s == EM_OK)
        s = model_json(jp, &b, err);
    if (s == EM_OK) {
        *same = strcmp(a, b) == 0;
        if (!*same && diff)
            first_difference(a, b, diff);
    }
    free(a);
    free(b);
    em_plan_destroy(tp);
    em_plan_destroy(jp);
    return s;
}
