/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A LORE dump as a plan-test case (tests/plans/README.md's format), so that
 * an operator caught giving a wrong answer, in `ember run` or in a Spark
 * task, becomes a regression test with one command.
 *
 * One dumped partition makes the case: each input (the operator's children,
 * then the scalar subqueries it reads) is the table its stand-in scan in
 * the dump's plan reads (input-K), holding that partition's dumped rows;
 * the plan is the dump's stand-alone plan, whose exchanges then really run
 * (a single partition each, as the one dumped partition is all there is);
 * the expected rows are the dumped output of that partition. The columns a
 * stand-in scan has beyond what was dumped are filled in: the row number
 * that keeps an aggregate's stand-in from merging equal rows, and nulls for
 * the attributes that only type a final aggregate's functions.
 */
#include <stdlib.h>
#include <string.h>

#include "ember/value_text.h"
#include "lore/internal.h"

/* A field as the case format reads it back: quoted when it would otherwise
 * be read as something else (empty, NULL, blanks at its ends, a comma or a
 * quote inside, a comment or generator mark at the start of a row). */
static em_status put_field(em_strbuf *out, const em_column *col, int64_t row, bool first,
                           em_strbuf *tmp, em_error *err) {
    bool is_null = false;
    tmp->len = 0;
    if (tmp->data)
        tmp->data[0] = '\0';
    EM_TRY(em_value_text(col, row, tmp, &is_null, err));
    if (!first)
        em_strbuf_appends(out, ", ", NULL);
    if (is_null)
        return em_strbuf_appends(out, "NULL", err);
    const char *s = tmp->data ? tmp->data : "";
    size_t n = tmp->len;
    if (memchr(s, '\n', n) || memchr(s, '\r', n))
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE case: a value holds a line break, which a case row cannot");
    bool quote = n == 0 || strcmp(s, "NULL") == 0 || strchr(s, ',') || strchr(s, '"') ||
                 s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t' ||
                 (first && (s[0] == '#' || s[0] == '@'));
    if (!quote)
        return em_strbuf_append(out, s, n, err);
    em_strbuf_appends(out, "\"", NULL);
    for (size_t i = 0; i < n; i++)
        em_strbuf_append(out, s[i] == '"' ? "\"\"" : &s[i], s[i] == '"' ? 2 : 1, NULL);
    return em_strbuf_appends(out, "\"", err);
}

/* The rows of a list, one line each; a table's columns past the dumped ones
 * are the row number (`lore_row`) or null. */
static em_status put_rows(em_strbuf *out, const em_batch_list *rows, const em_schema_field *cols,
                          int n_cols, em_error *err) {
    em_strbuf tmp = {0};
    em_status s = EM_OK;
    int64_t number = 0;
    for (int64_t b = 0; s == EM_OK && b < rows->n_batches; b++) {
        const em_batch *batch = rows->batches[b];
        int width = cols ? n_cols : batch->n_cols;
        for (int64_t i = 0; s == EM_OK && i < em_batch_rows(batch); i++, number++) {
            int64_t r = batch->sel ? batch->sel[i] : i;
            for (int c = 0; s == EM_OK && c < width; c++) {
                if (c < batch->n_cols)
                    s = put_field(out, &batch->cols[c], r, c == 0, &tmp, err);
                else if (strcmp(cols[c].name, "lore_row") == 0)
                    em_strbuf_appendf(out, NULL, "%s%lld", c ? ", " : "", (long long)number);
                else
                    em_strbuf_appends(out, c ? ", NULL" : "NULL", NULL);
            }
            em_strbuf_appends(out, "\n", NULL);
        }
    }
    em_strbuf_reset(&tmp);
    return s;
}

/* The table a stand-in scan reads: "input-K" with the scan's ReadSchema. */
static em_status put_table(em_lore_dump *d, const em_plan_node *scan, int partition,
                           em_pool *pool, em_strbuf *out, em_error *err) {
    const char *t = scan->table_name;
    int k = t && strncmp(t, "input_", 6) == 0 ? atoi(t + 6) : -1;
    const em_plan_field *rs = em_plan_node_field(scan, EM_FIELD_READ_SCHEMA);
    if (k < 0 || !rs)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: scan (%d) of the plan is not a LORE input",
                       d->dir, scan->id);
    if (k < d->n_inputs && !d->inputs[k].all_columns)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE case: input %d was dumped with spark.ember.sql.lore.columns (a "
                       "subset of its columns); a case needs every column",
                       k);
    em_strbuf_appendf(out, NULL, "--- table input-%d (", k);
    for (int c = 0; c < rs->n_schema; c++)
        em_strbuf_appendf(out, NULL, "%s%s %s", c ? ", " : "", rs->schema[c].name,
                          rs->schema[c].type_text);
    em_strbuf_appends(out, ")\n", NULL);
    char name[32];
    em_lore_input_dirname(k, name, sizeof name);
    em_batch_list rows = {0};
    em_status s = em_lore_load_partition(d->dir, name, partition, pool, &rows, NULL, err);
    if (s == EM_OK)
        s = put_rows(out, &rows, rs->schema, rs->n_schema, err);
    em_batch_list_reset(&rows);
    return s;
}

em_status em_lore_case_write(em_lore_dump *d, int partition, const char *name, em_pool *pool,
                             em_strbuf *out, em_error *err) {
    if (!d->has_output)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "%s: a case needs the operator's output (dump it with "
                       "spark.ember.sql.lore.dumpOutput=true)",
                       d->dir);
    if (d->node->kind == EM_NODE_SCAN || d->node->n_children == 0 || d->exchange ||
        d->node->kind == EM_NODE_REUSED_EXCHANGE)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE case: %s is a source or an exchange; its dump is data, not an "
                       "operator to test",
                       d->op_text);
    em_batch_list expected = {0};
    EM_TRY(em_lore_load_partition(d->dir, "output", partition, pool, &expected, NULL, err));
    json_t *confs = json_object_get(d->meta, "configs");
    const char *ansi = json_string_value(json_object_get(confs, "spark.sql.ansi.enabled"));
    em_strbuf_appendf(out, NULL, "### case: %s\n", name && *name ? name : d->op_text);
    em_strbuf_appendf(out, NULL, "# from the LORE dump of %s, partition %d\n", d->op_text,
                      partition);
    em_status s = EM_OK;
    for (int id = 1; s == EM_OK && id <= em_plan_max_id(d->plan); id++) {
        const em_plan_node *n = em_plan_node_by_id(d->plan, id);
        if (n && n->kind == EM_NODE_SCAN)
            s = put_table(d, n, partition, pool, out, err);
    }
    if (s == EM_OK) {
        em_strbuf_appendf(out, NULL, "--- version %s\n", em_shim_name(em_plan_shim(d->plan)));
        if (ansi)
            em_strbuf_appendf(out, NULL, "--- conf spark.sql.ansi.enabled=%s\n", ansi);
        if (d->time_zone)
            em_strbuf_appendf(out, NULL, "--- conf spark.sql.session.timeZone=%s\n",
                              d->time_zone);
        const char *text = em_lore_dump_plan_text(d);
        em_strbuf_appends(out, "--- plan\n", NULL);
        em_strbuf_appends(out, text, NULL);
        if (text[0] && text[strlen(text) - 1] != '\n')
            em_strbuf_appends(out, "\n", NULL);
        bool ordered =
            d->node->kind == EM_NODE_SORT || d->node->kind == EM_NODE_TAKE_ORDERED_AND_PROJECT;
        em_strbuf_appendf(out, NULL, "--- expect %s\n", ordered ? "ordered" : "unordered");
        s = put_rows(out, &expected, NULL, 0, err);
    }
    em_batch_list_reset(&expected);
    if (s == EM_OK && (s = em_strbuf_status(out)) != EM_OK)
        EM_FAIL(err, s, "out of memory writing a LORE case");
    return s;
}
