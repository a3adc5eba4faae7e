/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dump writer: "LoreDump", a pass-through operator placed on an input
 * (or the output) of a selected operator. In a selected partition it writes
 * each batch it passes as one Parquet file before handing the same batch on,
 * so memory stays at one batch whatever the input's size, and the query's
 * result cannot change. Parquet files go through the writer's temporary
 * name and rename, meta files through em_lore_write_json: a failed run leaves
 * only whole files. partition.meta is written last, when the consumer has
 * finished (or stopped early: "exhausted" says which), and only when no
 * error was met, so its presence marks a complete partition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/parquet.h"
#include "lore/internal.h"
#include "ops/internal.h"

typedef struct dump_state {
    em_lore_session *s;
    lore_target *t;
    int input; /* EM_LORE_OUTPUT for the output */
    bool active;
    bool failed;
    bool finished;
    bool exhausted;
    char dir[4200]; /* .../input-K/partition-P */
    int n_cols;
    int *cols;       /* the dumped columns' positions */
    em_schema sub;   /* their schema */
    int64_t batches, rows;
} dump_state;

/* The target of a node of the session's plan. The runtime may build a
 * copy of a node (the root of a result stage reading a gathered child is
 * one, with the same id and kind), so equal ids and kinds match too. */
static lore_target *find_target(em_lore_session *s, const em_plan_node *node) {
    int id = em_lore_session_id_of(s, node);
    for (int i = 0; id >= 0 && i < s->n_targets; i++) {
        const em_plan_node *n = s->targets[i].node;
        if (s->targets[i].lore_id == id &&
            (n == node || (n->id == node->id && n->kind == node->kind)))
            return &s->targets[i];
    }
    return NULL;
}

static bool column_wanted(const em_lore_session *s, const em_expr *a) {
    if (s->n_columns == 0)
        return true;
    for (int i = 0; a && a->name && i < s->n_columns; i++) {
        char full[300];
        snprintf(full, sizeof full, "%s#%lld", a->name, (long long)a->id);
        if (strcasecmp(s->columns[i], a->name) == 0 || strcasecmp(s->columns[i], full) == 0)
            return true;
    }
    return false;
}

/* rdd.meta of one input (or the output), written once per query by the
 * first task that dumps it; schema is stolen. */
static em_status write_rdd_meta(em_lore_session *ses, lore_target *t, int input, json_t *schema,
                                bool all_columns, int n_parts, em_error *err) {
    int slot = input == EM_LORE_OUTPUT ? LORE_MAX_INPUTS : input;
    em_status s = EM_OK;
    pthread_mutex_lock(&ses->mu);
    if (!t->rdd_written[slot]) {
        json_t *parts = json_array();
        for (int p = 0; p < n_parts; p++)
            if (em_lore_selection_has(t->sel, p))
                json_array_append_new(parts, json_integer(p));
        char name[32], path[4300];
        em_lore_input_dirname(input, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s/rdd.meta", t->dir, name);
        json_t *j = json_pack("{s:s, s:i, s:s, s:i, s:o, s:O, s:b}", "format", LORE_FORMAT,
                              "loreId", t->lore_id, "name", name, "numPartitions", n_parts,
                              "dumpedPartitions", parts, "schema", schema, "allColumns",
                              all_columns);
        int64_t n = 0;
        s = em_lore_write_json(path, j, &n, err);
        json_decref(j);
        if (s == EM_OK) {
            t->rdd_written[slot] = true;
            atomic_fetch_add(&ses->bytes, n);
            atomic_fetch_add(&ses->files, 1);
        }
    }
    pthread_mutex_unlock(&ses->mu);
    json_decref(schema);
    return s;
}

static em_status write_partition_meta(em_lore_session *ses, const char *dir, int partition,
                                      int64_t batches, int64_t rows, bool exhausted,
                                      const em_schema *sc, em_error *err) {
    json_t *types = json_array();
    for (int i = 0; i < sc->n_fields; i++) {
        char t[64];
        em_type_format(sc->fields[i].type, t, sizeof t);
        json_array_append_new(types, json_string(t));
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/partition.meta", dir);
    json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:b, s:o}", "format", LORE_FORMAT, "partition",
                          partition, "batches", (json_int_t)batches, "rows", (json_int_t)rows,
                          "exhausted", exhausted, "types", types);
    int64_t n = 0;
    em_status s = em_lore_write_json(path, j, &n, err);
    json_decref(j);
    atomic_fetch_add(&ses->bytes, n);
    atomic_fetch_add(&ses->files, 1);
    return s;
}

/* One batch as DIR/batch-B.parquet (temporary name, renamed when whole). */
static em_status write_file(em_lore_session *ses, const char *dir, int64_t index,
                            const em_batch *b, em_error *err) {
    char path[4300];
    snprintf(path, sizeof path, "%s/batch-%lld.parquet", dir, (long long)index);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.pool = b->pool;
    em_pq_writer *pw = NULL;
    EM_TRY(em_pq_writer_open(path, &b->schema, &o, &pw, err));
    em_status s = em_pq_writer_write(pw, b, err);
    if (s != EM_OK) {
        em_pq_writer_abort(pw);
        return s;
    }
    EM_TRY(em_pq_writer_close(pw, err));
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        atomic_fetch_add(&ses->bytes, (long long)ftell(f));
        fclose(f);
    }
    atomic_fetch_add(&ses->files, 1);
    return EM_OK;
}

/* The scalar subqueries' values, asked from the task's provider as the
 * operator itself will: input-K/partition-P/batch-0.parquet of one row. */
static em_status dump_subqueries(dump_state *st, em_exec_ctx *ctx, em_error *err) {
    lore_target *t = st->t;
    for (int j = 0; j < t->n_subq; j++) {
        const em_expr *e = t->subq[j];
        int input = t->n_inputs + j;
        if (!ctx->expr_opts.subquery)
            return EM_FAIL(err, EM_ERR_INTERNAL, "LORE: no scalar subquery values in this task");
        em_schema sc = {0};
        EM_TRY(em_schema_init(&sc, 1, err));
        em_batch *b = NULL;
        em_status s = em_schema_set(&sc, 0, "value", e->type, true, err);
        if (s == EM_OK)
            s = em_batch_create(&sc, 1, ctx->pool, &b, err);
        em_schema_reset(&sc);
        if (s == EM_OK) {
            em_column_reset(&b->cols[0]);
            s = ctx->expr_opts.subquery(ctx->expr_opts.subquery_ctx, e, e->type, ctx->pool,
                                        &b->cols[0], err);
            if (s != EM_OK)
                memset(&b->cols[0], 0, sizeof b->cols[0]);
            b->n_rows = 1;
        }
        char name[32], dir[4300];
        em_lore_input_dirname(input, name, sizeof name);
        snprintf(dir, sizeof dir, "%s/%s/partition-%d", t->dir, name, ctx->partition);
        if (s == EM_OK)
            s = em_lore_mkdirs(dir, err);
        if (s == EM_OK)
            s = write_rdd_meta(st->s, t, input,
                               em_lore_schema_json(&b->schema, NULL, NULL, 1), true,
                               ctx->num_partitions, err);
        if (s == EM_OK)
            s = write_file(st->s, dir, 0, b, err);
        if (s == EM_OK)
            s = write_partition_meta(st->s, dir, ctx->partition, 1, 1, true, &b->schema, err);
        em_batch_destroy(b);
        EM_TRY(s);
    }
    return EM_OK;
}

static em_status dump_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    dump_state *st = op->state;
    em_op *child = op->children[0];
    EM_TRY(em_op_open(child, ctx, err));
    int max = em_lore_selection_max(st->t->sel);
    if (max >= ctx->num_partitions)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.ember.sql.lore.idsToDump: column %d: loreId %d selects partition "
                       "%d, but %s (%d) runs %d partition%s (0..%d)",
                       st->t->sel->column, st->t->lore_id, max, st->t->node->name,
                       st->t->node->id, ctx->num_partitions,
                       ctx->num_partitions == 1 ? "" : "s", ctx->num_partitions - 1);
    /* an input with none of spark.ember.sql.lore.columns is not dumped */
    st->active = st->n_cols > 0 && em_lore_selection_has(st->t->sel, ctx->partition);
    if (!st->active)
        return EM_OK;
    char name[32];
    em_lore_input_dirname(st->input, name, sizeof name);
    snprintf(st->dir, sizeof st->dir, "%s/%s/partition-%d", st->t->dir, name, ctx->partition);
    em_status s = em_lore_mkdirs(st->dir, err);
    if (s == EM_OK)
        s = write_rdd_meta(st->s, st->t, st->input,
                           em_lore_schema_json(&child->schema, child->output, st->cols, st->n_cols),
                           st->n_cols == child->n_output, ctx->num_partitions, err);
    /* subquery values once per partition: with the first input, or with
     * the output of an operator that has none */
    if (s == EM_OK && (st->input == 0 || (st->input == EM_LORE_OUTPUT && st->t->n_inputs == 0)))
        s = dump_subqueries(st, ctx, err);
    if (s != EM_OK)
        st->failed = true;
    return s;
}

/* A batch holding only the dumped columns (buffers shared). */
static em_status sub_batch(dump_state *st, const em_batch *b, em_batch **out, em_error *err) {
    EM_TRY(em_batch_create(&st->sub, 0, b->pool, out, err));
    em_batch *c = *out;
    for (int i = 0; i < st->n_cols; i++) {
        em_column_reset(&c->cols[i]);
        em_column_share(&c->cols[i], &b->cols[st->cols[i]]);
    }
    c->n_rows = b->n_rows;
    if (b->sel) {
        EM_TRY(em_batch_sel_reserve(c, b->n_sel, err));
        memcpy(c->sel, b->sel, sizeof *b->sel * (size_t)b->n_sel);
        c->n_sel = b->n_sel;
    }
    return EM_OK;
}

static em_status write_batch(dump_state *st, const em_batch *b, em_error *err) {
    em_batch *sub = NULL;
    const em_batch *w = b;
    em_status s = EM_OK;
    if (st->n_cols != b->n_cols) {
        s = sub_batch(st, b, &sub, err);
        w = sub;
    }
    if (s == EM_OK)
        s = write_file(st->s, st->dir, st->batches, w, err);
    em_batch_destroy(sub);
    EM_TRY(s);
    st->batches++;
    st->rows += em_batch_rows(b);
    return EM_OK;
}

static em_status finish(dump_state *st, em_error *err) {
    st->finished = true;
    const char *dash = strrchr(st->dir, '-');
    return write_partition_meta(st->s, st->dir, dash ? atoi(dash + 1) : -1, st->batches, st->rows,
                                st->exhausted, &st->sub, err);
}

static em_status dump_next(em_op *op, em_batch **out, em_error *err) {
    dump_state *st = op->state;
    em_status s = em_op_next(op->children[0], out, err);
    if (!st->active || st->failed)
        return s;
    if (s == EM_OK)
        s = write_batch(st, *out, err);
    else if (s == EM_DONE) {
        st->exhausted = true;
        em_error e2 = {0};
        em_status f = finish(st, &e2);
        if (f != EM_OK) {
            if (err)
                *err = e2;
            s = f;
        }
    }
    if (s != EM_OK && s != EM_DONE) {
        st->failed = true;
        return em_op_fail(op, err);
    }
    return s;
}

static void dump_close(em_op *op) {
    dump_state *st = op->state;
    if (st && st->active && !st->failed && !st->finished) {
        /* the consumer stopped early (a limit): what it read is complete */
        em_error e = {0};
        (void)finish(st, &e);
    }
    if (st) {
        st->active = false;
        free(st->cols);
        st->cols = NULL;
        em_schema_reset(&st->sub);
    }
    if (op->n_children > 0)
        em_op_close(op->children[0]);
}

static const em_op_vtab DUMP_VTAB = {
    .name = "LoreDump", .open = dump_open, .next = dump_next, .close = dump_close};

static em_status pass_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    return em_op_open(op->children[0], ctx, err);
}

static em_status pass_next(em_op *op, em_batch **out, em_error *err) {
    return em_op_next(op->children[0], out, err);
}

static void pass_close(em_op *op) {
    if (op->n_children > 0)
        em_op_close(op->children[0]);
}

static const em_op_vtab PASS_VTAB = {
    .name = "LoreInput", .open = pass_open, .next = pass_next, .close = pass_close};

/* The operator over child with child's output and schema. */
static em_status shell_over(const em_op_vtab *vt, em_op *child, size_t state_size, em_op **out,
                            em_error *err) {
    em_op *kids[1] = {child};
    EM_TRY(em_op_init(vt, NULL, kids, 1, state_size, out, err));
    em_status r = em_op_set_output(*out, child->output, child->n_output, err);
    if (r == EM_OK) {
        em_schema_reset(&(*out)->schema);
        r = em_schema_copy(&(*out)->schema, &child->schema, err);
    }
    if (r != EM_OK) {
        em_op_destroy(*out);
        *out = NULL;
    }
    return r;
}

em_status em_lore_passthrough(em_op *child, em_op **out, em_error *err) {
    return shell_over(&PASS_VTAB, child, 0, out, err);
}

em_status em_lore_wrap(em_lore_session *s, const em_plan_node *node, int input_index, em_op *op,
                       em_op **out, em_error *err) {
    *out = op;
    if (!s || !node || !op)
        return EM_OK;
    lore_target *t = find_target(s, node);
    /* an operator without inputs (a scan) has nothing but its output */
    if (!t || (input_index == EM_LORE_OUTPUT && !s->dump_output && t->n_inputs > 0))
        return EM_OK;
    if (input_index != EM_LORE_OUTPUT && (input_index < 0 || input_index >= t->n_inputs)) {
        em_op_destroy(op);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_INTERNAL, "LORE: %s (%d) has no input %d", node->name,
                       node->id, input_index);
    }
    em_op *w = NULL;
    *out = NULL;
    EM_TRY(shell_over(&DUMP_VTAB, op, sizeof(dump_state), &w, err));
    dump_state *st = w->state;
    st->s = s;
    st->t = t;
    st->input = input_index;
    em_status r = EM_OK;
    if (!(st->cols = calloc((size_t)(op->n_output + 1), sizeof *st->cols)))
        r = EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
    for (int i = 0; r == EM_OK && i < op->n_output; i++)
        if (column_wanted(s, op->output[i]))
            st->cols[st->n_cols++] = i;
    if (r == EM_OK)
        r = em_schema_init(&st->sub, st->n_cols, err);
    for (int i = 0; r == EM_OK && i < st->n_cols; i++) {
        const em_field *f = &op->schema.fields[st->cols[i]];
        r = em_schema_set(&st->sub, i, f->name, f->type, f->nullable, err);
    }
    if (r != EM_OK) {
        free(st->cols);
        em_schema_reset(&st->sub);
        em_op_destroy(w);
        return r;
    }
    *out = w;
    return EM_OK;
}
