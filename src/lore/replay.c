/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replay: a dump folder (loreId-N) back to a running operator. plan.meta's
 * plan text is parsed with its Spark line, the operator is built by
 * em_op_build, and the exchanges standing for its inputs are served the
 * dumped batches of the chosen partition through the task context, the way
 * the runtime serves a shuffle or a broadcast. Nothing but the folder is
 * read: no warehouse, no original plan.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember/parquet.h"
#include "ember/rowops.h"
#include "ember/task.h"
#include "ember/value_text.h"
#include "lore/internal.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static json_t *load_json(const char *path, em_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        EM_FAIL(err, EM_ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    fclose(f);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        EM_FAIL(err, EM_ERR_CORRUPT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    else if (!json_is_object(j)) {
        json_decref(j);
        j = NULL;
        EM_FAIL(err, EM_ERR_CORRUPT, "%s: not a JSON object", path);
    }
    return j;
}

static em_status read_parts(const char *path, json_t *rdd, int *n_parts, int **dumped,
                            int *n_dumped, em_error *err) {
    json_t *np = json_object_get(rdd, "numPartitions");
    json_t *dp = json_object_get(rdd, "dumpedPartitions");
    if (!json_is_integer(np) || !json_is_array(dp))
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: numPartitions or dumpedPartitions missing",
                       path);
    *n_parts = (int)json_integer_value(np);
    *n_dumped = (int)json_array_size(dp);
    *dumped = calloc((size_t)*n_dumped + 1, sizeof **dumped);
    if (!*dumped)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading %s", path);
    for (int i = 0; i < *n_dumped; i++)
        (*dumped)[i] = (int)json_integer_value(json_array_get(dp, (size_t)i));
    return EM_OK;
}

void em_lore_dump_close(em_lore_dump *d) {
    if (!d)
        return;
    for (int i = 0; i < d->n_inputs; i++) {
        free(d->inputs[i].dumped);
        em_batch_list_reset(&d->inputs[i].data);
    }
    free(d->inputs);
    free(d->dumped);
    em_schema_reset(&d->schema);
    em_exec_plan_destroy(d->row_xp);
    em_plan_destroy(d->plan);
    json_decref(d->meta);
    free(d->op_text);
    free(d->dir);
    free(d);
}

static em_status open_inputs(em_lore_dump *d, json_t *inputs, em_error *err) {
    d->n_inputs = (int)json_array_size(inputs);
    d->inputs = calloc((size_t)d->n_inputs + 1, sizeof *d->inputs);
    if (!d->inputs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", d->dir);
    for (int k = 0; k < d->n_inputs; k++) {
        lore_input *in = &d->inputs[k];
        json_t *ij = json_array_get(inputs, (size_t)k);
        in->exchange_id = (int)json_integer_value(json_object_get(ij, "exchangeId"));
        const char *kind = json_string_value(json_object_get(ij, "kind")) ?: "";
        in->broadcast = strcmp(kind, "broadcast") == 0;
        in->subquery = strcmp(kind, "subquery") == 0;
        in->expr_id = (int64_t)json_integer_value(json_object_get(ij, "exprId"));
        char path[4300];
        snprintf(path, sizeof path, "%s/input-%d/rdd.meta", d->dir, k);
        json_t *rdd = load_json(path, err);
        if (!rdd) {
            em_error_prefix(err, "input %d was not dumped (its operator never ran a selected "
                                 "partition?)",
                            k);
            return err ? err->code : EM_ERR_CORRUPT;
        }
        in->all_columns = json_is_true(json_object_get(rdd, "allColumns"));
        em_status s = read_parts(path, rdd, &in->n_parts, &in->dumped, &in->n_dumped, err);
        json_decref(rdd);
        EM_TRY(s);
    }
    return EM_OK;
}

em_status em_lore_dump_open(const char *dir, em_lore_dump **out, em_error *err) {
    *out = NULL;
    em_lore_dump *d = calloc(1, sizeof *d);
    if (!d || !(d->dir = strdup(dir))) {
        free(d);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", dir);
    }
    size_t dl = strlen(d->dir);
    while (dl > 1 && d->dir[dl - 1] == '/')
        d->dir[--dl] = '\0';
    char path[4300];
    snprintf(path, sizeof path, "%s/plan.meta", d->dir);
    em_status s = EM_OK;
    d->meta = load_json(path, err);
    if (!d->meta) {
        s = err ? err->code : EM_ERR_CORRUPT;
        em_error_prefix(err, "%s is not a LORE dump of one operator (DUMP/loreId-N)", d->dir);
        goto fail;
    }
    const char *format = json_string_value(json_object_get(d->meta, "format"));
    const char *text = json_string_value(json_object_get(d->meta, "plan"));
    const char *version = json_string_value(json_object_get(d->meta, "sparkVersion"));
    json_t *op_id = json_object_get(d->meta, "operatorId");
    json_t *inputs = json_object_get(d->meta, "inputs");
    if (!format || strcmp(format, LORE_FORMAT) != 0 || !text || !version ||
        !json_is_integer(op_id) || !json_is_array(inputs)) {
        s = EM_FAIL(err, EM_ERR_CORRUPT,
                    "%s: not a LORE plan.meta of format %s (format, plan, sparkVersion, "
                    "operatorId and inputs are required)",
                    path, LORE_FORMAT);
        goto fail;
    }
    d->lore_id = (int)json_integer_value(json_object_get(d->meta, "loreId"));
    d->op_text = strdup(json_string_value(json_object_get(d->meta, "operator")) ?: "?");
    json_t *confs = json_object_get(d->meta, "configs");
    d->ansi = strcasecmp(json_string_value(json_object_get(confs, "spark.sql.ansi.enabled")) ?: "",
                         "true") == 0;
    d->time_zone = json_string_value(json_object_get(confs, "spark.sql.session.timeZone"));
    const em_shim *shim = em_shim_for_version(version, err);
    if (!shim) {
        s = err ? err->code : EM_ERR_INVALID;
        em_error_prefix(err, "%s: sparkVersion", path);
        goto fail;
    }
    em_plan_parse_options po = {.shim = shim, .source_name = "plan.meta"};
    s = em_plan_parse(text, strlen(text), &po, &d->plan, err);
    if (s != EM_OK) {
        em_error_prefix(err, "%s", path);
        goto fail;
    }
    d->node = em_plan_node_by_id(d->plan, (int)json_integer_value(op_id));
    if (!d->node) {
        s = EM_FAIL(err, EM_ERR_CORRUPT, "%s: operator %d is not in its plan", path,
                    (int)json_integer_value(op_id));
        goto fail;
    }
    if ((s = open_inputs(d, inputs, err)) != EM_OK)
        goto fail;
    snprintf(path, sizeof path, "%s/output/rdd.meta", d->dir);
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        json_t *rdd = load_json(path, err);
        if (!rdd) {
            s = err ? err->code : EM_ERR_CORRUPT;
            goto fail;
        }
        d->has_output = true;
        int *parts = NULL, np = 0, nd = 0;
        s = read_parts(path, rdd, &np, &parts, &nd, err);
        json_decref(rdd);
        if (s != EM_OK)
            goto fail;
        if (d->n_inputs == 0 || d->node->kind == EM_NODE_EXCHANGE ||
            d->node->kind == EM_NODE_BROADCAST_EXCHANGE) {
            d->dumped = parts;
            d->n_dumped = nd;
            d->n_parts = np;
        } else {
            free(parts);
        }
    }
    if ((d->node->kind == EM_NODE_EXCHANGE || d->node->kind == EM_NODE_BROADCAST_EXCHANGE) &&
        d->n_inputs == 1) {
        /* an exchange replays reduce partitions: those its readers' output
         * holds, else every one of its partitioning */
        d->broadcast = d->node->kind == EM_NODE_BROADCAST_EXCHANGE;
        if (d->broadcast) {
            d->part.kind = RT_PART_SINGLE;
            d->part.n = 1;
        } else if ((s = em_rt_partitioning_parse(d->node, &d->part, err)) != EM_OK) {
            em_error_prefix(err, "%s", path);
            goto fail;
        }
        d->exchange = true;
        if (!d->has_output) {
            free(d->dumped);
            d->n_parts = d->part.n;
            d->dumped = calloc((size_t)d->part.n + 1, sizeof *d->dumped);
            if (!d->dumped) {
                s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", d->dir);
                goto fail;
            }
            for (d->n_dumped = 0; d->n_dumped < d->part.n; d->n_dumped++)
                d->dumped[d->n_dumped] = d->n_dumped;
        }
    } else if (d->n_inputs > 0) {
        /* a partition replays when every input holds it */
        lore_input *in0 = &d->inputs[0];
        d->n_parts = in0->n_parts;
        d->dumped = calloc((size_t)in0->n_dumped + 1, sizeof *d->dumped);
        if (!d->dumped) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", d->dir);
            goto fail;
        }
        for (int i = 0; i < in0->n_dumped; i++)
            d->dumped[d->n_dumped++] = in0->dumped[i];
    }
    s = em_schema_init(&d->schema, d->node->n_output, err);
    for (int i = 0; s == EM_OK && i < d->node->n_output; i++) {
        const em_expr *a = d->node->output[i];
        s = em_schema_set(&d->schema, i, a->name ? a->name : "",
                          a->type_known ? a->type : em_type_make(EM_TYPE_NULL), true, err);
    }
    if (s != EM_OK)
        goto fail;
    *out = d;
    return EM_OK;
fail:
    em_lore_dump_close(d);
    return s;
}

int em_lore_dump_id(const em_lore_dump *d) { return d->lore_id; }
const char *em_lore_dump_operator(const em_lore_dump *d) { return d->op_text; }
const char *em_lore_dump_plan_text(const em_lore_dump *d) {
    return json_string_value(json_object_get(d->meta, "plan"));
}
int em_lore_dump_n_partitions(const em_lore_dump *d) { return d->n_dumped; }
int em_lore_dump_partition_at(const em_lore_dump *d, int i) { return d->dumped[i]; }
bool em_lore_dump_has_output(const em_lore_dump *d) { return d->has_output; }
const em_schema *em_lore_dump_schema(const em_lore_dump *d) { return &d->schema; }

/* Reads DIR/NAME/partition-P's batches in order into out. */
em_status em_lore_load_partition(const char *dir, const char *name, int p, em_pool *pool,
                                em_batch_list *out, int64_t *rows, em_error *err) {
    memset(out, 0, sizeof *out);
    char path[4300];
    snprintf(path, sizeof path, "%s/%s/partition-%d/partition.meta", dir, name, p);
    json_t *pm = load_json(path, err);
    if (!pm) {
        em_error_prefix(err, "partition %d of %s was not dumped completely", p, name);
        return err ? err->code : EM_ERR_CORRUPT;
    }
    json_int_t nb = json_integer_value(json_object_get(pm, "batches"));
    json_decref(pm);
    if (nb < 0 || nb > (1 << 24))
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad batch count", path);
    out->batches = calloc((size_t)nb + 1, sizeof *out->batches);
    if (!out->batches)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory loading %s", path);
    em_status s = EM_OK;
    for (json_int_t b = 0; s == EM_OK && b < nb; b++) {
        snprintf(path, sizeof path, "%s/%s/partition-%d/batch-%lld.parquet", dir, name, p,
                 (long long)b);
        em_pq_file *f = NULL;
        em_pq_reader *r = NULL;
        em_pq_read_options ro = {.pool = pool};
        s = em_pq_file_open(path, &f, err);
        if (s == EM_OK)
            s = em_pq_reader_open(f, &ro, &r, err);
        em_batch *all = NULL;
        if (s == EM_OK)
            s = em_batch_create(em_pq_reader_schema(r), 0, pool, &all, err);
        while (s == EM_OK) {
            em_batch *rb = NULL;
            s = em_pq_reader_next(r, &rb, err);
            if (s == EM_OK)
                s = em_batch_append(all, rb, err);
        }
        if (s == EM_DONE)
            s = EM_OK;
        em_pq_reader_close(r);
        em_pq_file_close(f);
        if (s == EM_OK) {
            out->batches[out->n_batches++] = all;
            out->n_rows += em_batch_rows(all);
        } else {
            em_batch_destroy(all);
        }
    }
    if (s != EM_OK)
        em_batch_list_reset(out);
    else if (rows)
        *rows += out->n_rows;
    return s;
}

static lore_input *input_of(em_exec_ctx *ctx, const em_plan_node *x) {
    em_lore_dump *d = ((replay_ctx *)ctx->runtime)->d;
    for (int k = 0; k < d->n_inputs; k++)
        if (d->inputs[k].exchange_id == x->id)
            return &d->inputs[k];
    return NULL;
}

static em_status serve_input(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                             em_error *err) {
    lore_input *in = input_of(ctx, x);
    if (!in)
        return EM_FAIL(err, EM_ERR_INTERNAL, "LORE replay: no dumped input for %s (%d)", x->name,
                       x->id);
    *out = &in->data;
    return EM_OK;
}

/* The expression compiler's subquery provider: the dumped value. */
static em_status serve_subquery(void *ctx, const em_expr *subquery, em_type type, em_pool *pool,
                                em_column *out, em_error *err) {
    em_lore_dump *d = ctx;
    const em_expr *e = subquery;
    if (e->kind == EM_EXPR_FIELD && e->n_args > 0)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE replay: a field of a merged scalar subquery is not dumped");
    for (int k = 0; k < d->n_inputs; k++) {
        lore_input *in = &d->inputs[k];
        if (!in->subquery || in->expr_id != e->id)
            continue;
        if (in->data.n_batches < 1 || em_batch_rows(in->data.batches[0]) != 1)
            return EM_FAIL(err, EM_ERR_CORRUPT, "LORE replay: input-%d holds no value", k);
        const em_batch *b = in->data.batches[0];
        if (!em_type_equal(b->cols[0].type, type))
            return EM_FAIL(err, EM_ERR_CORRUPT, "LORE replay: input-%d's value has another type",
                           k);
        return em_column_take(&b->cols[0], b->sel, 1, pool, out, err);
    }
    return EM_FAIL(err, EM_ERR_INTERNAL, "LORE replay: scalar-subquery#%lld was not dumped",
                   (long long)e->id);
}

static bool has_partition(const int *parts, int n, int p) {
    for (int i = 0; i < n; i++)
        if (parts[i] == p)
            return true;
    return false;
}

static em_status prepare(em_lore_dump *d, int partition, em_pool *pool, int64_t *rows_in,
                         em_error *err) {
    if (d->node->kind == EM_NODE_SCAN || d->node->kind == EM_NODE_LOCAL_TABLE_SCAN)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE replay: %s is a scan; its dump holds its output only (output/)",
                       d->op_text);
    if (d->node->kind == EM_NODE_REUSED_EXCHANGE)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE replay: %s reads another exchange's output (its dump is what it "
                       "read): replay that exchange, under its own loreId",
                       d->op_text);
    if (d->node->kind == EM_NODE_EXCHANGE || d->node->kind == EM_NODE_BROADCAST_EXCHANGE)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE replay: %s has no map-side input dumped to partition again",
                       d->op_text);
    for (int k = 0; k < d->n_inputs; k++) {
        lore_input *in = &d->inputs[k];
        em_batch_list_reset(&in->data);
        if (!in->all_columns)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "LORE replay: input %d was dumped with spark.ember.sql.lore.columns "
                           "(a subset of its columns); replay needs every column",
                           k);
        if (!has_partition(in->dumped, in->n_dumped, partition))
            return EM_FAIL(err, EM_ERR_INVALID, "LORE replay: partition %d of input %d was not "
                                                "dumped",
                           partition, k);
        char name[32];
        em_lore_input_dirname(k, name, sizeof name);
        EM_TRY(em_lore_load_partition(d->dir, name, partition, pool, &in->data, rows_in, err));
    }
    replay_ctx *rc = &d->rc;
    memset(rc, 0, sizeof *rc);
    rc->d = d;
    rc->ctx.pool = pool;
    rc->ctx.partition = partition;
    rc->ctx.num_partitions = d->n_parts > 0 ? d->n_parts : 1;
    rc->ctx.expr_opts.ansi = d->ansi;
    rc->ctx.expr_opts.shim = em_plan_shim(d->plan);
    rc->ctx.expr_opts.time_zone = d->time_zone;
    rc->ctx.expr_opts.pool = pool;
    rc->ctx.expr_opts.subquery = serve_subquery;
    rc->ctx.expr_opts.subquery_ctx = d;
    rc->ctx.shuffle_input = serve_input;
    rc->ctx.broadcast_input = serve_input;
    rc->ctx.runtime = rc;
    return EM_OK;
}

/* The native operator, each input behind a LoreInput (em_lore_passthrough). */
static em_status build_native(em_lore_dump *d, em_op **op, em_error *err) {
    EM_TRY(em_op_build(d->node, op, err));
    for (int k = 0; k < (*op)->n_children; k++) {
        em_status s = em_lore_passthrough((*op)->children[k], &(*op)->children[k], err);
        if (s != EM_OK) {
            em_op_destroy(*op);
            *op = NULL;
            return s;
        }
    }
    return EM_OK;
}

em_status em_lore_replay_build(em_lore_dump *d, int partition, em_pool *pool, em_op **op,
                               em_exec_ctx **ctx, em_error *err) {
    *op = NULL;
    EM_TRY(prepare(d, partition, pool, NULL, err));
    EM_TRY(build_native(d, op, err));
    *ctx = &d->rc.ctx;
    return EM_OK;
}

/* The operator on the row engine: the rebuilt plan through the overrides
 * with Ember disabled puts every node on rows; em_exec_build then builds
 * the same tree shape, its exchanges read through the same context. */
static em_status build_row(em_lore_dump *d, em_op **op, em_error *err) {
    if (!d->row_xp) {
        EM_TRY(em_overrides_register_confs(err));
        em_conf *c = NULL;
        EM_TRY(em_conf_create(&c, err));
        em_status s = em_conf_set(c, "spark.ember.sql.enabled", "false", err);
        if (s == EM_OK)
            s = em_conf_set(c, "spark.sql.ansi.enabled", d->ansi ? "true" : "false", err);
        if (s == EM_OK)
            s = em_overrides_apply(d->plan, c, &d->row_xp, err);
        em_conf_destroy(c);
        EM_TRY(s);
    }
    return em_exec_build(d->row_xp, d->node, op, err);
}

typedef struct replay_build {
    em_lore_dump *d;
    em_lore_engine engine;
} replay_build;

static em_status build_replayed(void *arg, const em_plan_node *node, em_op **op, em_error *err) {
    (void)node;
    replay_build *rb = arg;
    return rb->engine == EM_LORE_ROW ? build_row(rb->d, op, err) : build_native(rb->d, op, err);
}

static em_status list_push(em_batch_list *l, em_batch *b, em_error *err) {
    em_batch **more = realloc(l->batches, sizeof *more * (size_t)(l->n_batches + 1));
    if (!more)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory partitioning a LORE input");
    l->batches = more;
    l->batches[l->n_batches++] = b;
    l->n_rows += em_batch_rows(b);
    return EM_OK;
}

/* Keeps the rows of b whose partition id is `want` (ids: one per present row). */
static em_status keep_partition(em_batch *b, const int32_t *ids, int want, em_error *err) {
    int64_t n = em_batch_rows(b), kept = 0;
    int32_t *rows = malloc(sizeof *rows * (size_t)(n + 1));
    if (!rows)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory partitioning a LORE input");
    for (int64_t i = 0; i < n; i++)
        if (ids[i] == want)
            rows[kept++] = b->sel ? b->sel[i] : (int32_t)i;
    em_status s = em_batch_sel_reserve(b, kept, err);
    if (s == EM_OK) {
        memcpy(b->sel, rows, sizeof *rows * (size_t)kept);
        b->n_sel = kept;
        s = em_batch_compact(b, err);
    }
    free(rows);
    return s;
}

/* An exchange's reduce partition: every dumped map partition's rows, in map
 * partition order, partitioned as the exchange partitions them (the same
 * partitioner the map tasks ran), those of `partition` kept. */
static em_status replay_exchange(em_lore_dump *d, int partition, em_pool *pool,
                                 em_batch_list *out, em_lore_replay_stats *st, em_error *err) {
    lore_input *in = &d->inputs[0];
    if (d->part.kind != RT_PART_HASH && d->part.kind != RT_PART_SINGLE)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LORE replay: %s partitions by %s, which replay does not reproduce (hash "
                       "and single-partition exchanges replay)",
                       d->op_text, em_rt_part_kind_name(d->part.kind));
    if (in->n_dumped != in->n_parts)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "LORE replay: %s is an exchange: each of its partitions takes rows from "
                       "every map partition, and input-0 holds %d of %d (dump it with [*])",
                       d->op_text, in->n_dumped, in->n_parts);
    if (partition < 0 || (partition >= d->part.n && !d->broadcast))
        return EM_FAIL(err, EM_ERR_INVALID, "LORE replay: %s has %d partitions, not %d",
                       d->op_text, d->part.n, partition + 1);
    int want = d->broadcast ? 0 : partition; /* a broadcast's every reader: all rows */
    const em_plan_node *map = d->node->children[0];
    em_expr_compile_options opts = {.ansi = d->ansi,
                                    .shim = em_plan_shim(d->plan),
                                    .time_zone = d->time_zone,
                                    .pool = pool};
    rt_partitioner *pt = NULL;
    EM_TRY(em_rt_partitioner_create(&d->part, (const em_expr *const *)map->output, map->n_output,
                                 &opts, 0, &pt, err));
    em_status s = EM_OK;
    int32_t *ids = NULL;
    int64_t cap = 0;
    for (int m = 0; s == EM_OK && m < in->n_parts; m++) {
        em_batch_list got = {0};
        s = em_lore_load_partition(d->dir, "input-0", m, pool, &got, &st->rows_in, err);
        for (int64_t b = 0; s == EM_OK && b < got.n_batches; b++) {
            em_batch *batch = got.batches[b];
            int64_t n = em_batch_rows(batch);
            if (n > cap) {
                int32_t *more = realloc(ids, sizeof *ids * (size_t)n);
                if (!more) {
                    s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory partitioning a LORE input");
                    break;
                }
                ids = more;
                cap = n;
            }
            s = em_rt_partitioner_ids(pt, batch, ids, err);
            if (s == EM_OK)
                s = keep_partition(batch, ids, want, err);
            if (s == EM_OK && em_batch_rows(batch) > 0) {
                s = list_push(out, batch, err);
                if (s == EM_OK)
                    got.batches[b] = NULL;
            }
        }
        em_batch_list_reset(&got);
    }
    free(ids);
    em_rt_partitioner_free(pt);
    return s;
}

em_status em_lore_replay_on(em_lore_dump *d, int partition, em_lore_engine engine, em_pool *pool,
                            em_batch_list *out, em_lore_replay_stats *stats, em_error *err) {
    memset(out, 0, sizeof *out);
    em_lore_replay_stats st = {0};
    if (d->exchange) {
        /* no operator to run: the partitioning is the exchange's work, the
         * same code whichever engine was asked for */
        int64_t t0 = now_ns();
        em_status s = replay_exchange(d, partition, pool, out, &st, err);
        st.run_ns = now_ns() - t0;
        st.rows_out = out->n_rows;
        st.batches_out = out->n_batches;
        if (s != EM_OK) {
            em_batch_list_reset(out);
            return s;
        }
        if (stats)
            *stats = st;
        return EM_OK;
    }
    int64_t t0 = now_ns();
    EM_TRY(prepare(d, partition, pool, &st.rows_in, err));
    st.load_ns = now_ns() - t0;
    int64_t used0 = em_pool_used(pool);
    t0 = now_ns();
    /* the operator runs as a task, like every task Ember runs: its inputs
     * served from the dump through the replay context's callbacks */
    replay_build rb = {d, engine};
    em_task_options o;
    memset(&o, 0, sizeof o);
    o.name = "LORE replay";
    o.parent_pool = pool;
    o.native_budget = -1;
    o.row_budget = -1;
    o.build = build_replayed;
    o.build_ctx = &rb;
    o.root = d->node;
    o.ctx = d->rc.ctx;
    em_task *task = NULL;
    em_status s = em_task_create(&o, &task, err);
    if (s == EM_OK)
        s = em_task_collect(task, pool, out, err);
    const em_op *op = task ? em_task_op(task) : NULL;
    if (op) {
        st.rows_out = op->metrics.rows_out;
        st.batches_out = op->metrics.batches_out;
    }
    em_task_destroy(task);
    st.run_ns = now_ns() - t0;
    st.peak_bytes = em_pool_peak(pool) - used0;
    for (int k = 0; k < d->n_inputs; k++)
        em_batch_list_reset(&d->inputs[k].data);
    if (s != EM_OK) {
        em_error_prefix(err, "LORE replay of %s on the %s engine, partition %d", d->op_text,
                        engine == EM_LORE_ROW ? "row" : "native", partition);
        return s;
    }
    if (stats)
        *stats = st;
    return EM_OK;
}

em_status em_lore_replay(em_lore_dump *d, int partition, em_pool *pool, em_batch_list *out,
                         em_lore_replay_stats *stats, em_error *err) {
    return em_lore_replay_on(d, partition, EM_LORE_NATIVE, pool, out, stats, err);
}

em_status em_lore_dump_read_output(em_lore_dump *d, int partition, em_pool *pool,
                                   em_batch_list *out, em_error *err) {
    memset(out, 0, sizeof *out);
    if (!d->has_output)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: the output was not dumped (set "
                                            "spark.ember.sql.lore.dumpOutput=true)",
                       d->dir);
    return em_lore_load_partition(d->dir, "output", partition, pool, out, NULL, err);
}

/* ------------------------------------------------------------------ comparison */

typedef struct row_cursor {
    const em_batch_list *l;
    int64_t batch, row;
} row_cursor;

/* Advances to the next row; false at the end. */
static bool cursor_next(row_cursor *c, const em_batch **b, int64_t *phys) {
    while (c->batch < c->l->n_batches) {
        const em_batch *cur = c->l->batches[c->batch];
        if (c->row < em_batch_rows(cur)) {
            *b = cur;
            *phys = cur->sel ? cur->sel[c->row] : c->row;
            c->row++;
            return true;
        }
        c->batch++;
        c->row = 0;
    }
    return false;
}

bool em_lore_results_equal(const em_batch_list *a, const em_batch_list *b, char *diff,
                           size_t diff_cap) {
    if (a->n_rows != b->n_rows) {
        snprintf(diff, diff_cap, "%lld rows vs %lld rows", (long long)a->n_rows,
                 (long long)b->n_rows);
        return false;
    }
    row_cursor ca = {.l = a}, cb = {.l = b};
    em_strbuf ta = {0}, tb = {0};
    bool equal = true;
    const em_batch *ba, *bb;
    int64_t ra, rb;
    for (int64_t row = 0; equal && cursor_next(&ca, &ba, &ra) && cursor_next(&cb, &bb, &rb);
         row++) {
        if (ba->n_cols != bb->n_cols) {
            snprintf(diff, diff_cap, "%d columns vs %d columns", ba->n_cols, bb->n_cols);
            equal = false;
            break;
        }
        for (int c = 0; c < ba->n_cols; c++) {
            const em_column *xa = &ba->cols[c], *xb = &bb->cols[c];
            if (!em_type_equal(xa->type, xb->type)) {
                char t1[64], t2[64];
                em_type_format(xa->type, t1, sizeof t1);
                em_type_format(xb->type, t2, sizeof t2);
                snprintf(diff, diff_cap, "column %d (%s): type %s vs %s", c,
                         ba->schema.fields[c].name, t1, t2);
                equal = false;
                break;
            }
            bool na = false, nb = false;
            em_strbuf_clear(&ta);
            em_strbuf_clear(&tb);
            if (em_value_text(xa, ra, &ta, &na, NULL) != EM_OK ||
                em_value_text(xb, rb, &tb, &nb, NULL) != EM_OK || na != nb ||
                strcmp(em_strbuf_cstr(&ta), em_strbuf_cstr(&tb)) != 0) {
                snprintf(diff, diff_cap, "row %lld column %d (%s): %s vs %s", (long long)row, c,
                         ba->schema.fields[c].name, na ? "null" : em_strbuf_cstr(&ta),
                         nb ? "null" : em_strbuf_cstr(&tb));
                equal = false;
                break;
            }
        }
    }
    em_strbuf_reset(&ta);
    em_strbuf_reset(&tb);
    return equal;
}

/* Every row of l as its canonical text, cells separated by US (0x1f). */
static char **row_texts(const em_batch_list *l, int64_t *n_out) {
    char **rows = calloc((size_t)l->n_rows + 1, sizeof *rows);
    row_cursor c = {.l = l};
    const em_batch *b;
    int64_t r, n = 0;
    em_strbuf sb = {0};
    while (rows && n < l->n_rows && cursor_next(&c, &b, &r)) {
        em_strbuf_clear(&sb);
        for (int k = 0; k < b->n_cols; k++) {
            bool is_null = false;
            if (k)
                em_strbuf_appends(&sb, "\x1f", NULL);
            size_t before = sb.len;
            if (em_value_text(&b->cols[k], r, &sb, &is_null, NULL) != EM_OK)
                em_strbuf_appends(&sb, "?", NULL);
            if (is_null && sb.len == before)
                em_strbuf_appends(&sb, "\x1enull", NULL); /* apart from the text "null" */
        }
        rows[n++] = strdup(em_strbuf_cstr(&sb));
    }
    em_strbuf_reset(&sb);
    *n_out = n;
    return rows;
}

static int cmp_text(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void printable(const char *row, char *buf, size_t cap) {
    size_t k = 0;
    for (const char *p = row; *p && k + 4 < cap; p++) {
        if (*p == '\x1f') {
            buf[k++] = ' ';
            buf[k++] = '|';
            buf[k++] = ' ';
        } else if (*p != '\x1e') {
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
}

bool em_lore_results_equal_unordered(const em_batch_list *a, const em_batch_list *b, char *diff,
                                     size_t diff_cap) {
    int64_t na = 0, nb = 0;
    char **ra = row_texts(a, &na), **rb = row_texts(b, &nb);
    bool equal = ra && rb;
    if (equal) {
        qsort(ra, (size_t)na, sizeof *ra, cmp_text);
        qsort(rb, (size_t)nb, sizeof *rb, cmp_text);
        int64_t i = 0;
        while (i < na && i < nb && strcmp(ra[i], rb[i]) == 0)
            i++;
        if (i < na || i < nb) {
            char x[200] = "(none)", y[200] = "(none)";
            if (i < na)
                printable(ra[i], x, sizeof x);
            if (i < nb)
                printable(rb[i], y, sizeof y);
            snprintf(diff, diff_cap, "%lld vs %lld rows; first row only on one side (sorted): %s "
                                     "vs %s",
                     (long long)na, (long long)nb, x, y);
            equal = false;
        }
    } else {
        snprintf(diff, diff_cap, "out of memory comparing");
    }
    for (int64_t i = 0; ra && i < na; i++)
        free(ra[i]);
    for (int64_t i = 0; rb && i < nb; i++)
        free(rb[i]);
    free(ra);
    free(rb);
    return equal;
}
