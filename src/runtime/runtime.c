/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The query runner: stages cut from the plan (stage_cut.c), run in
 * dependency order, each as one task per partition on the query's threads;
 * what a task asks of the query while it runs is task_context.c's. The
 * query's, its stages' and its tasks' state is laid out in query.h.
 *
 * Partitions. A stage has as many tasks as its largest input: the scan
 * partitions of its scans, the reduce partitions of the shuffles it reads
 * (broadcasts are read whole by every task). Task p reads partition p of
 * each input (empty when that input has fewer), which for a Union is the
 * union of its children's partitions p rather than Spark's concatenation of
 * partition lists: the same rows, spread over fewer tasks.
 *
 * Data. Map tasks write their rows, split by reduce partition, into lists
 * of their own (no locking); after the stage the lists are concatenated per
 * reduce partition in task order. Range partitioning needs bounds over the
 * whole output, so its map tasks keep their rows with the sort keys
 * appended (spilled like other map output) and a bounded sample of the
 * keys; after the stage the runner takes the bounds from the samples and
 * deals each task's rows, in the order written, to that task's lists. All
 * outputs are charged to a pool per stage under the query's pool.
 *
 * Scheduling. Every stage whose inputs are done is started; independent
 * stages (the broadcasts under one join, a subquery and the scans beside it)
 * share the threads, each task taken by the next free thread. A stage's
 * output is freed when the last stage reading it has finished.
 *
 * Failure. The first task error is kept (prefixed with stage and partition)
 * and raises the cancel flag every operator polls; the remaining tasks of
 * running stages end early and no further stage starts.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember/task.h"
#include "runtime/query.h"

int64_t em_rt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *em_stage_kind_name(em_stage_kind k) {
    switch (k) {
    case EM_STAGE_SHUFFLE:
        return "shuffle";
    case EM_STAGE_BROADCAST:
        return "broadcast";
    case EM_STAGE_GATHER:
        return "gather";
    case EM_STAGE_SUBQUERY:
        return "subquery";
    case EM_STAGE_RESULT:
        return "result";
    }
    return "?";
}

void em_runtime_options_init(em_runtime_options *o) {
    memset(o, 0, sizeof *o);
    o->memory_budget = -1;
    o->ansi = -1;
    o->runtime_filters = true;
    o->prepass_filters = true;
}

const char *em_rt_node_name(const em_plan_node *n) {
    return n->name ? n->name : em_node_kind_name(n->kind);
}

/* ------------------------------------------------------------------ lifecycle
 */

static void range_free(rt_stage *st) {
    for (int t = 0; st->range && t < st->n_tasks; t++) {
        em_batch_list_reset(&st->range[t].rows);
        free(st->range[t].files.paths);
        em_rt_range_sampler_reset(&st->range[t].sample);
    }
    free(st->range);
    st->range = NULL;
    em_schema_reset(&st->range_schema);
}

static void stage_free_outputs(rt_stage *st) {
    if (st->task_out) {
        int64_t n = (int64_t)st->n_tasks * (st->kind == EM_STAGE_SHUFFLE ? st->n_out : 1);
        for (int64_t i = 0; i < n; i++)
            em_batch_list_reset(&st->task_out[i]);
        free(st->task_out);
        st->task_out = NULL;
    }
    range_free(st);
    if (st->parts) {
        for (int r = 0; r < st->n_out; r++)
            free(st->parts[r].batches);
        free(st->parts);
        st->parts = NULL;
    }
    if (st->spilled) {
        for (int64_t i = 0; i < (int64_t)st->n_tasks * st->n_out; i++)
            free(st->spilled[i].paths);
        free(st->spilled);
        st->spilled = NULL;
    }
    free(st->map_done);
    st->map_done = NULL;
    em_pool_destroy(st->out_pool);
    st->out_pool = NULL;
}

static void unplan_scans(rt_stage *st);

void em_rt_stage_free(rt_stage *st) {
    if (!st)
        return;
    stage_free_outputs(st);
    unplan_scans(st);
    free(st->scans);
    free(st->shuffle_inputs);
    free(st->deps);
    free(st->filters);
    free(st->syn_root);
    free(st->syn_exchange);
    free(st->base);
    pthread_mutex_destroy(&st->spill_mu);
    free(st);
}

void em_query_destroy(em_query *q) {
    if (!q)
        return;
    free(q->result.batches);
    for (int i = 0; i < q->n_stages; i++)
        em_rt_stage_free(q->stages[i]);
    free(q->stages);
    em_rt_threads_destroy(q->workers);
    em_rt_shared_destroy(q->shared);
    em_pool_destroy(q->pool);
    em_rt_sem_destroy(&q->sem);
    em_schema_reset(&q->schema);
    free(q->metrics);
    free(q->filters);
    free(q->metrics_list);
    em_rt_spill_dir_destroy(q->spill_dir); /* after the stages: nothing reads them now */
    free(q->spill_base);
    free(q->warehouse);
    free(q->time_zone);
    pthread_mutex_destroy(&q->mu);
    pthread_mutex_destroy(&q->sink_mu);
    pthread_cond_destroy(&q->sink_turn);
    free(q->sink_ended);
    free(q);
}

static em_status schema_of(const em_plan_node *n, em_schema *out, em_error *err) {
    EM_TRY(em_schema_init(out, n->n_output, err));
    for (int i = 0; i < n->n_output; i++) {
        const em_expr *a = n->output[i];
        em_type t = a->type_known ? a->type : em_type_make(EM_TYPE_NULL);
        EM_TRY(em_schema_set(out, i, a->name ? a->name : "", t, true, err));
    }
    return EM_OK;
}

static em_status build_native(void *build_ctx, const em_plan_node *node, em_op **out,
                              em_error *err) {
    (void)build_ctx;
    return em_op_build(node, out, err);
}

em_status em_query_create(const em_plan *plan, const em_runtime_options *opts, em_query **out,
                          em_error *err) {
    *out = NULL;
    em_query *q = calloc(1, sizeof *q);
    if (!q)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a query");
    pthread_mutex_init(&q->mu, NULL);
    pthread_mutex_init(&q->sink_mu, NULL);
    pthread_cond_init(&q->sink_turn, NULL);
    q->plan = plan;
    em_rt_sem_init(&q->sem, opts ? opts->concurrent_native_tasks : 0);
    if (opts)
        q->opts = *opts;
    else
        em_runtime_options_init(&q->opts);
    em_status s = EM_OK;
    if ((q->opts.warehouse_dir && !(q->warehouse = strdup(q->opts.warehouse_dir))) ||
        (q->opts.spill_dir && !(q->spill_base = strdup(q->opts.spill_dir))) ||
        (q->opts.time_zone && !(q->time_zone = strdup(q->opts.time_zone))))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a query");
    q->threads = q->opts.threads > 0 ? q->opts.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (q->threads < 1)
        q->threads = 1;
    q->ansi = q->opts.ansi < 0 ? em_shim_ansi_default(em_plan_shim(plan)) : q->opts.ansi != 0;
    q->build = q->opts.build ? q->opts.build : build_native;
    if (q->opts.profile) {
        q->profiled = true;
        q->profile = *q->opts.profile;
        if (q->opts.profile_rules)
            q->rules = *q->opts.profile_rules;
        else if (em_profile_rules_from_conf(NULL, &q->rules, err) != EM_OK)
            s = err ? err->code : EM_ERR_INTERNAL; /* the defaults cannot fail */
    }
    if (q->opts.max_partition_bytes <= 0)
        q->opts.max_partition_bytes = 128 << 20;
    if (q->opts.open_cost_bytes <= 0)
        q->opts.open_cost_bytes = 4 << 20;
    const em_plan_node *root = em_plan_exec_root(plan);
    if (s == EM_OK && !root)
        s = EM_FAIL(err, EM_ERR_INVALID, "the plan has no operators");
    rt_stage *res = NULL;
    if (s == EM_OK)
        s = em_rt_cut_stage(q, root, EM_STAGE_RESULT, &res, err);
    if (s == EM_OK && q->opts.runtime_filters)
        s = em_rt_plan_runtime_filters(q, err);
    if (s == EM_OK)
        s = schema_of(em_rt_skip_wrappers(root), &q->schema, err);
    q->max_id = em_plan_max_id(plan);
    if (s == EM_OK && !(q->metrics = calloc((size_t)q->max_id + 1, sizeof *q->metrics)))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a query");
    if (s != EM_OK) {
        em_query_destroy(q);
        return s;
    }
    *out = q;
    return EM_OK;
}

void em_query_cancel(em_query *q) {
    if (q)
        q->cancel = 1;
}

const em_schema *em_query_schema(const em_query *q) { return &q->schema; }
const em_plan_node *em_query_oom_broadcast(const em_query *q) { return q->oom_broadcast; }

const em_batch_list *em_query_result(const em_query *q) { return &q->result; }
int em_query_n_stages(const em_query *q) { return q->n_stages; }
int em_query_n_runtime_filters(const em_query *q) { return q->n_filters; }
const em_runtime_filter *em_query_runtime_filter_at(const em_query *q, int i) {
    return i >= 0 && i < q->n_filters ? &q->filters[i] : NULL;
}
int em_query_threads(const em_query *q) { return q->threads; }
int64_t em_query_peak_bytes(const em_query *q) { return q->pool ? em_pool_peak(q->pool) : 0; }

static int known_tasks(const em_query *q, const rt_stage *st);
static void stage_profile(const em_query *q, const rt_stage *st, em_stage_shape *shape,
                          em_stage_profile *prof, int *unknown);

void em_query_stage_info(const em_query *q, int i, em_stage_info *out) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= q->n_stages)
        return;
    const rt_stage *st = q->stages[i];
    out->index = st->index;
    out->kind = st->kind;
    out->node = st->node;
    out->n_out_partitions = st->n_out;
    switch (st->kind) {
    case EM_STAGE_SHUFFLE:
        out->partitioning = em_rt_part_kind_name(st->part.kind);
        break;
    case EM_STAGE_BROADCAST:
        out->partitioning = "broadcast";
        break;
    default:
        out->partitioning = "collect";
        break;
    }
    out->n_tasks = q->ran ? st->n_tasks : q->planned ? known_tasks(q, st) : -1;
    out->n_deps = st->n_deps;
    out->deps = st->deps;
    out->n_reused = st->n_reused;
    out->rows_out = st->rows_out;
    out->time_ns = st->time_ns;
    out->native_wait_ns = st->native_wait_ns;
    out->native_hold_ns = st->native_hold_ns;
    out->native_max_holders = st->native_max_holders;
    out->shared_builds = st->shared_builds;
    out->shared_uses = st->shared_uses;
    out->spill_bytes = st->spill_bytes;
    out->spill_files = st->spill_files;
    out->profiled = q->profiled;
    if (q->profiled && st->started) {
        out->shape = st->shape;
        out->profile = st->profile;
        out->shuffle_unknown = st->shuffle_unknown;
    } else if (q->profiled) {
        stage_profile(q, st, &out->shape, &out->profile, &out->shuffle_unknown);
    }
    out->max_running = st->max_running;
    out->peak_native = st->peak_native;
    out->peak_row = st->peak_row;
    out->peak_native_task = st->peak_native_task;
    out->peak_row_task = st->peak_row_task;
}

int em_query_n_metrics(const em_query *q) { return q->n_metrics_listed; }
const em_node_metrics *em_query_metrics_at(const em_query *q, int i) {
    return i >= 0 && i < q->n_metrics_listed ? &q->metrics_list[i] : NULL;
}

/* ------------------------------------------------------------------ tasks */

static em_status list_push(em_batch_list *l, em_batch *b, em_error *err) {
    int64_t n = l->n_batches;
    if (n == 0 || (n & (n - 1)) == 0) {
        em_batch **nb = realloc(l->batches, sizeof *nb * (size_t)(n ? n * 2 : 1));
        if (!nb)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory storing stage output");
        l->batches = nb;
    }
    l->batches[l->n_batches++] = b;
    return EM_OK;
}

/* Appends rows idx[0..n) (physical) of src's first schema->n_fields columns
 * to the list's last batch, or a new one of schema. */
static em_status list_append_rows(em_batch_list *l, const em_schema *schema, const em_batch *src,
                                  const int32_t *idx, int64_t n, em_pool *pool, em_error *err) {
    em_batch *last = l->n_batches ? l->batches[l->n_batches - 1] : NULL;
    if (!last || last->n_rows + n > EM_BATCH_CAP) {
        /* sized for these rows, grown as more come: with many partitions
         * most lists of a map task stay far smaller than a batch */
        EM_TRY(em_batch_create(schema, n, pool, &last, err));
        em_status s = list_push(l, last, err);
        if (s != EM_OK) {
            em_batch_destroy(last);
            return s;
        }
    }
    for (int c = 0; c < schema->n_fields; c++)
        EM_TRY(em_column_append_rows(&last->cols[c], &src->cols[c], idx, n, err));
    last->n_rows += n;
    l->n_rows += n;
    return EM_OK;
}

/* Splits b's present rows by ids into the task's per-partition lists
 * (the columns of schema: a range shuffle's rows leave their keys behind). */
static em_status distribute(rt_stage *st, int task, const em_schema *schema, const em_batch *b,
                            const int32_t *ids, int32_t *scratch, int64_t *counts, em_error *err) {
    int64_t n = em_batch_rows(b);
    em_batch_list *lists = &st->task_out[(int64_t)task * st->n_out];
    if (st->n_out == 1) {
        for (int64_t k = 0; k < n; k++)
            scratch[k] = b->sel ? b->sel[k] : (int32_t)k;
        return list_append_rows(&lists[0], schema, b, scratch, n, st->out_pool, err);
    }
    /* counting sort of the row numbers by partition */
    memset(counts, 0, sizeof *counts * (size_t)(st->n_out + 1));
    for (int64_t k = 0; k < n; k++)
        counts[ids[k] + 1]++;
    for (int r = 0; r < st->n_out; r++)
        counts[r + 1] += counts[r];
    for (int64_t k = 0; k < n; k++)
        scratch[counts[ids[k]]++] = b->sel ? b->sel[k] : (int32_t)k;
    int64_t start = 0;
    for (int r = 0; r < st->n_out; r++) {
        int64_t end = counts[r];
        if (end > start)
            EM_TRY(list_append_rows(&lists[r], schema, b, scratch + start, end - start,
                                    st->out_pool, err));
        start = end;
    }
    return EM_OK;
}

static void add_node_metrics(void *ctx, const em_plan_node *node, const char *op_name,
                             const em_op_metrics *om) {
    em_query *q = ctx;
    if (!node || node->id <= 0 || node->id > q->max_id)
        return;
    em_node_metrics *m = &q->metrics[node->id];
    const em_plan_node *real = em_plan_node_by_id(q->plan, node->id);
    m->node = real ? real : node;
    m->op_name = op_name;
    m->tasks++;
    m->m.rows_out += om->rows_out;
    m->m.batches_out += om->batches_out;
    m->m.time_ns += om->time_ns;
    m->m.spill_bytes += om->spill_bytes;
    if (om->peak_bytes > m->m.peak_bytes)
        m->m.peak_bytes = om->peak_bytes;
}

/* Bytes a batch's buffers hold. */
static int64_t batch_bytes(const em_batch *b) {
    int64_t n = 0;
    for (int c = 0; c < b->n_cols; c++) {
        const em_column *col = &b->cols[c];
        n += (col->values ? col->values->capacity : 0) + (col->data ? col->data->capacity : 0) +
             (col->validity ? col->validity->capacity : 0);
    }
    return n;
}

/* Whether the query's memory is near its budget: storing `need` more bytes
 * would leave less than half of it to the operators (the tasks running
 * beside this one need room to read and compute). */
static bool memory_tight(const em_query *q, int64_t need) {
    int64_t budget = em_pool_budget(q->pool);
    return budget >= 0 && em_pool_used(q->pool) + need > budget / 2;
}

/* Writes a list to a new spill file recorded in sp and frees its batches.
 * Output rows (not a range map task's rows, dealt again later) count in the
 * stage's rows. */
static em_status spill_list(em_query *q, rt_stage *st, em_batch_list *l, rt_spilled *sp,
                            bool output, em_error *err) {
    if (l->n_batches == 0)
        return EM_OK;
    if (sp->n == sp->cap) {
        int nc = sp->cap ? sp->cap * 2 : 4;
        const char **np = realloc(sp->paths, sizeof *np * (size_t)nc);
        if (!np)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory spilling shuffle output");
        sp->paths = np;
        sp->cap = nc;
    }
    const char *path = NULL;
    int64_t bytes = 0;
    EM_TRY(em_rt_spill_write(q->spill_dir, l, &path, &bytes, err));
    sp->paths[sp->n++] = path;
    pthread_mutex_lock(&q->mu);
    st->spill_bytes += bytes;
    if (output)
        st->spill_rows += l->n_rows;
    st->spill_files++;
    pthread_mutex_unlock(&q->mu);
    em_batch_list_reset(l);
    return EM_OK;
}

/* Writes what map task p holds to spill files and frees it: its partition
 * lists, or a range map task's rows until they are dealt. */
static em_status spill_map_output(em_query *q, rt_stage *st, int p, em_error *err) {
    if (st->range && !st->dealing)
        return spill_list(q, st, &st->range[p].rows, &st->range[p].files, false, err);
    for (int r = 0; r < st->n_out; r++) {
        int64_t i = (int64_t)p * st->n_out + r;
        EM_TRY(spill_list(q, st, &st->task_out[i], &st->spilled[i], true, err));
    }
    return EM_OK;
}

/* Spills what finished map tasks of the stage keep, while memory is tight:
 * they can no longer spill it themselves. */
static em_status spill_finished(em_query *q, rt_stage *st, em_error *err) {
    em_status s = EM_OK;
    pthread_mutex_lock(&st->spill_mu);
    for (int t = 0; s == EM_OK && t < st->n_tasks && memory_tight(q, 0); t++) {
        pthread_mutex_lock(&q->mu);
        bool done = st->map_done[t];
        pthread_mutex_unlock(&q->mu);
        if (done)
            s = spill_map_output(q, st, t, err);
    }
    pthread_mutex_unlock(&st->spill_mu);
    return s;
}

/* Near the budget (storing need more bytes would make it tight): this
 * task's stored rows go to disk first, once it holds enough for a file that
 * is not tiny; then what finished tasks hold. */
static em_status maybe_spill(em_query *q, rt_stage *st, int p, int64_t need, int64_t *held,
                             em_error *err) {
    if (!st->spilled || !memory_tight(q, need))
        return EM_OK;
    /* a small file rather than a failed charge when the budget is nearly out */
    if (*held >= em_pool_budget(q->pool) / 16 || (*held > 0 && em_pool_headroom(q->pool) < 4 * need)) {
        EM_TRY(spill_map_output(q, st, p, err));
        *held = 0;
    }
    return memory_tight(q, need) ? spill_finished(q, st, err) : EM_OK;
}

/* The first map task's row columns are the dealt lists' schema. */
static em_status keep_row_schema(rt_stage *st, const em_schema *sc, int nc, em_error *err) {
    em_query *q = st->base->q;
    em_status s = EM_OK;
    pthread_mutex_lock(&q->mu);
    if (!st->range_schema.fields) {
        em_schema rs;
        s = em_schema_init(&rs, nc, err);
        for (int c = 0; s == EM_OK && c < nc; c++)
            s = em_schema_set(&rs, c, sc->fields[c].name, sc->fields[c].type,
                              sc->fields[c].nullable, err);
        if (s == EM_OK)
            st->range_schema = rs;
        else
            em_schema_reset(&rs);
    }
    pthread_mutex_unlock(&q->mu);
    return s;
}

/* Keeps a batch of a range map task: its present rows with their sort keys
 * appended, the keys also offered to the task's sample. */
static em_status range_keep(rt_stage *st, int p, rt_partitioner *pt, const em_batch *b,
                            int32_t *scratch, em_pool *pool, em_error *err) {
    rt_range_task *rt = &st->range[p];
    int nk = st->part.n_keys, nc = b->n_cols;
    int64_t n = em_batch_rows(b);
    if (n == 0)
        return EM_OK;
    em_column *keys = calloc((size_t)(nk > 0 ? nk : 1), sizeof *keys);
    if (!keys)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory keeping range shuffle rows");
    em_status s = em_rt_partitioner_range_keys(pt, b, pool, keys, err);
    bool have_keys = s == EM_OK;
    em_schema sc;
    memset(&sc, 0, sizeof sc);
    if (s == EM_OK)
        s = em_schema_init(&sc, nc + nk, err);
    for (int c = 0; s == EM_OK && c < nc; c++)
        s = em_schema_set(&sc, c, b->schema.fields[c].name, b->schema.fields[c].type,
                          b->schema.fields[c].nullable, err);
    for (int k = 0; s == EM_OK && k < nk; k++) {
        char name[32];
        snprintf(name, sizeof name, "range_key_%d", k);
        s = em_schema_set(&sc, nc + k, name, keys[k].type, true, err);
    }
    if (s == EM_OK)
        s = keep_row_schema(st, &sc, nc, err);
    em_batch *copy = NULL;
    if (s == EM_OK)
        s = em_batch_create(&sc, n, st->out_pool, &copy, err);
    for (int64_t k = 0; s == EM_OK && k < n; k++)
        scratch[k] = b->sel ? b->sel[k] : (int32_t)k;
    for (int c = 0; s == EM_OK && c < nc + nk; c++)
        s = em_column_append_rows(&copy->cols[c], c < nc ? &b->cols[c] : &keys[c - nc], scratch,
                                  n, err);
    if (s == EM_OK) {
        copy->n_rows = n;
        s = list_push(&rt->rows, copy, err);
    }
    if (s != EM_OK) {
        em_batch_destroy(copy);
    } else {
        rt->rows.n_rows += n;
        s = em_rt_range_sampler_add(&rt->sample, &copy->cols[nc], nk, n, err);
    }
    for (int k = 0; have_keys && k < nk; k++)
        em_column_reset(&keys[k]);
    free(keys);
    em_schema_reset(&sc);
    return s;
}

static em_status run_map(rt_stage *st, int p, em_task *task, em_exec_ctx *ctx, em_error *err) {
    em_query *q = ((rt_task *)ctx->runtime)->q;
    const em_op *op = em_task_op(task);
    rt_partitioner *pt = NULL;
    EM_TRY(
        em_rt_partitioner_create(&st->part, op->output, op->n_output, &ctx->expr_opts, p, &pt, err));
    int32_t *ids = malloc(sizeof *ids * EM_BATCH_CAP);
    int32_t *scratch = malloc(sizeof *scratch * EM_BATCH_CAP);
    int64_t *counts = malloc(sizeof *counts * (size_t)(st->n_out + 1));
    int64_t id_cap = EM_BATCH_CAP;
    em_status s = ids && scratch && counts ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    int64_t held = 0; /* about the bytes this task stored since it last spilled */
    while (s == EM_OK) {
        em_batch *b = NULL;
        s = em_task_next(task, &b, err);
        if (s != EM_OK)
            break;
        int64_t n = em_batch_rows(b);
        if (n > id_cap) {
            int32_t *ni = realloc(ids, sizeof *ni * (size_t)n);
            int32_t *ns = ni ? realloc(scratch, sizeof *ns * (size_t)n) : NULL;
            if (ni)
                ids = ni;
            if (ns)
                scratch = ns;
            if (!ni || !ns) {
                s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
                break;
            }
            id_cap = n;
        }
        int64_t bb = batch_bytes(b);
        if (!st->range)
            s = em_rt_partitioner_ids(pt, b, ids, err);
        if (s == EM_OK)
            s = maybe_spill(q, st, p, 2 * bb, &held, err);
        if (s == EM_OK)
            s = st->range ? range_keep(st, p, pt, b, scratch, ctx->pool, err)
                          : distribute(st, p, &b->schema, b, ids, scratch, counts, err);
        held += bb;
    }
    /* the map side is done: what is left is shuffle storage */
    if (ctx->native_leave)
        ctx->native_leave(ctx);
    /* what a finished task keeps cannot be spilled later: spill it now if tight */
    if (s == EM_DONE && st->spilled && memory_tight(q, 0))
        s = spill_map_output(q, st, p, err);
    if (st->map_done && (s == EM_DONE || s == EM_OK)) {
        /* under the spill lock: a spill_finished in progress sees it either way */
        pthread_mutex_lock(&st->spill_mu);
        pthread_mutex_lock(&q->mu);
        st->map_done[p] = true;
        pthread_mutex_unlock(&q->mu);
        pthread_mutex_unlock(&st->spill_mu);
    }
    free(ids);
    free(scratch);
    free(counts);
    em_rt_partitioner_free(pt);
    return s == EM_DONE ? EM_OK : s;
}

/* Whether err is an out-of-memory error of the pool named name (not of an
 * ancestor's budget hit while charging it). */
static bool names_pool(const em_error *err, const char *name) {
    char quoted[96];
    snprintf(quoted, sizeof quoted, "out of memory in pool '%s'", name);
    return strstr(err->msg, quoted) != NULL;
}

/* Appends the stage's profile to a task's out-of-memory error: where its
 * budgets came from and what would give it more. */
static void explain_task_oom(const rt_stage *st, em_error *err) {
    const em_stage_profile *sp = &st->profile;
    char row[32], native[32];
    em_profile_format_bytes(sp->profile.row_per_task, row, sizeof row);
    em_profile_format_bytes(sp->profile.native_per_task, native, sizeof native);
    const char *why;
    if (sp->adjusted || sp->reason[0])
        why = sp->reason;
    else if (sp->fallback || sp->heavy_shuffle)
        why = sp->fallback ? "the stage falls back to the row engine: "
                             "spark.ember.autoAdjustStageResource.enabled=true gives it more row "
                             "memory per task"
                           : "the stage reads a heavy shuffle: "
                             "spark.ember.autoAdjustStageResource.enabled=true gives it more row "
                             "memory per task";
    else
        why = "raise spark.executor.memory (row pool) or spark.memory.offHeap.size (native pool)";
    size_t used = strlen(err->msg);
    if (used + 1 < sizeof err->msg)
        snprintf(err->msg + used, sizeof err->msg - used,
                 "; stage %d's resource profile%s: %d task%s at once, row memory %s and native "
                 "memory %s per task (%s)",
                 st->index, sp->adjusted ? " (adjusted)" : " (the default)", sp->profile.task_slots,
                 sp->profile.task_slots == 1 ? "" : "s", row, native, why);
}

/* Hands partition p's kept rows to the sink and frees them; sink_mu held. */
static em_status sink_kept(em_query *q, rt_stage *st, int p, em_error *err) {
    em_batch_list *l = &st->task_out[p];
    em_status s = EM_OK;
    for (int64_t i = 0; s == EM_OK && i < l->n_batches; i++)
        s = q->opts.result_sink(q->opts.result_sink_ctx, l->batches[i], err);
    em_batch_list_reset(l);
    return s;
}

/* Under a budget, the rows result tasks keep for later turns are bounded:
 * past a quarter of a thread's share, a task waits for its turn. The
 * partition due never waits, and tasks start in partition order, so the
 * one due is always running. The wait lets go of the task semaphore. */
static em_status wait_turn(em_query *q, rt_stage *st, int p, em_task *task, em_error *err) {
    int64_t budget = q->opts.memory_budget;
    int64_t keep = budget > 0 ? budget / (4 * (q->threads > 0 ? q->threads : 1)) : -1;
    if (keep < 0 || em_pool_used(st->out_pool) <= keep)
        return EM_OK;
    pthread_mutex_lock(&q->sink_mu);
    if (p == q->sink_next) {
        pthread_mutex_unlock(&q->sink_mu);
        return EM_OK;
    }
    em_exec_ctx *ctx = em_task_ctx(task);
    em_rt_native_leave(ctx);
    while (p != q->sink_next && em_pool_used(st->out_pool) > keep && !q->cancel) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 20 * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&q->sink_turn, &q->sink_mu, &until);
    }
    pthread_mutex_unlock(&q->sink_mu);
    if (q->cancel)
        return EM_FAIL(err, EM_ERR_CANCELLED, "query cancelled");
    return em_rt_native_enter(ctx, err);
}

/* A result task's rows: to the sink while its partition is the next one
 * due, else kept (copied) until the partitions ahead of it have ended. The
 * last to end hands on the kept rows of those after it that ended too. */
static em_status stream_result(em_query *q, rt_stage *st, int p, em_task *task, em_error *err) {
    em_status s;
    for (;;) {
        em_batch *b = NULL;
        s = em_task_next(task, &b, err);
        if (s != EM_OK)
            break;
        if (em_batch_rows(b) == 0)
            continue;
        EM_TRY(wait_turn(q, st, p, task, err));
        pthread_mutex_lock(&q->sink_mu);
        if (p == q->sink_next) {
            s = sink_kept(q, st, p, err);
            if (s == EM_OK)
                s = q->opts.result_sink(q->opts.result_sink_ctx, b, err);
        } else {
            s = em_rt_list_append_copy(&st->task_out[p], b, st->out_pool, err);
        }
        pthread_mutex_unlock(&q->sink_mu);
        if (s != EM_OK)
            return s;
    }
    if (s != EM_DONE)
        return s;
    s = EM_OK;
    pthread_mutex_lock(&q->sink_mu);
    q->sink_ended[p] = true;
    while (s == EM_OK && q->sink_next < st->n_tasks && q->sink_ended[q->sink_next])
        s = sink_kept(q, st, q->sink_next++, err);
    pthread_cond_broadcast(&q->sink_turn);
    pthread_mutex_unlock(&q->sink_mu);
    return s;
}

static em_status task_body(rt_task *t, em_error *err) {
    em_query *q = t->q;
    rt_stage *st = t->st;
    /* the pools' names ("stage S task T native pool") are what an
     * out-of-memory error names */
    char name[64];
    snprintf(name, sizeof name, "stage %d task %d", st->index, t->p);
    const em_resource_profile *prof = q->profiled ? &st->profile.profile : NULL;
    em_task_options o;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.parent_pool = q->pool;
    o.native_budget = prof ? prof->native_per_task : -1;
    o.row_budget = prof ? prof->row_per_task : -1;
    o.build = q->build;
    o.build_ctx = q->opts.build_ctx;
    o.root = st->build_root;
    o.ctx.partition = t->p;
    o.ctx.num_partitions = st->n_tasks;
    o.ctx.expr_opts.ansi = q->ansi;
    o.ctx.expr_opts.shim = em_plan_shim(q->plan);
    o.ctx.expr_opts.time_zone = q->time_zone;
    o.ctx.cancel = &q->cancel;
    em_rt_task_callbacks(&o.ctx, q);
    o.ctx.spill_dir = q->spill_base;
    if (q->opts.memory_budget > 0)
        o.ctx.memory_share = q->opts.memory_budget / (q->threads > 0 ? q->threads : 1);
    o.ctx.runtime = t;
    em_task *task = NULL;
    EM_TRY(em_task_create(&o, &task, err));
    em_exec_ctx *ctx = em_task_ctx(task);
    em_status s = em_task_open(task, err);
    if (s == EM_OK) {
        if (st->kind == EM_STAGE_SHUFFLE)
            s = run_map(st, t->p, task, ctx, err);
        else if (st->kind == EM_STAGE_RESULT && q->opts.result_sink)
            s = stream_result(q, st, t->p, task, err);
        else
            s = em_task_collect(task, st->out_pool, &st->task_out[t->p], err);
    }
    em_task_close(task);
    if (em_task_op(task)) {
        pthread_mutex_lock(&q->mu);
        em_task_node_metrics(task, add_node_metrics, q);
        pthread_mutex_unlock(&q->mu);
    }
    bool task_oom = s == EM_ERR_OOM_BUDGET && prof &&
                    (names_pool(err, em_pool_name(ctx->pool)) ||
                     names_pool(err, em_pool_name(ctx->row_pool)));
    if (task_oom)
        explain_task_oom(st, err);
    else if (s == EM_ERR_OOM_BUDGET && st->kind == EM_STAGE_BROADCAST)
        em_error_prefix(err,
                        "%s (%d): the broadcast relation does not fit in the query's memory "
                        "budget of %lld bytes",
                        em_rt_node_name(st->node), st->node->id, (long long)q->opts.memory_budget);
    em_rt_native_leave(ctx); /* also after a failure or a cancellation */
    pthread_mutex_lock(&q->mu);
    st->native_wait_ns += t->wait_ns;
    st->native_hold_ns += t->hold_ns;
    if (t->max_holders > st->native_max_holders)
        st->native_max_holders = t->max_holders;
    if (em_pool_peak(ctx->pool) > st->peak_native) {
        st->peak_native = em_pool_peak(ctx->pool);
        st->peak_native_task = t->p;
    }
    if (em_pool_peak(ctx->row_pool) > st->peak_row) {
        st->peak_row = em_pool_peak(ctx->row_pool);
        st->peak_row_task = t->p;
    }
    pthread_mutex_unlock(&q->mu);
    em_pool_release(ctx->row_pool, t->status_bytes);
    free(t->status_reads);
    em_task_destroy(task);
    return s;
}

/* The broadcast to blame for a stage's budget failure: the stage's own
 * relation, or else the largest relation held then (read by the stage's
 * joins, or collected beside it), when it holds an eighth of the budget.
 * NULL when none does. Called after every stage stopped. */
static const em_plan_node *oom_broadcast(const em_query *q, const rt_stage *st) {
    if (st->kind == EM_STAGE_BROADCAST)
        return st->node;
    const rt_stage *worst = NULL;
    int64_t worst_bytes = em_pool_budget(q->pool) / 8;
    for (int i = 0; i < q->n_stages; i++) {
        const rt_stage *d = q->stages[i];
        int64_t bytes = d->out_pool ? em_pool_used(d->out_pool) : 0;
        if (d->kind == EM_STAGE_BROADCAST && bytes >= worst_bytes) {
            worst = d;
            worst_bytes = bytes;
        }
    }
    return worst ? worst->node : NULL;
}

static void task_run(void *arg, int p) {
    rt_task *base = arg;
    em_query *q = base->q;
    if (q->cancel)
        return;
    rt_task t = {.q = q, .st = base->st, .p = p};
    em_error err;
    memset(&err, 0, sizeof err);
    pthread_mutex_lock(&q->mu);
    if (++base->st->running > base->st->max_running)
        base->st->max_running = base->st->running;
    pthread_mutex_unlock(&q->mu);
    em_status s = task_body(&t, &err);
    pthread_mutex_lock(&q->mu);
    base->st->running--;
    if (s == EM_OK) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    bool induced = s == EM_ERR_CANCELLED && q->cancel;
    if (q->first_status == EM_OK && !induced) {
        const rt_stage *st = base->st;
        q->first_status = s;
        q->first_err = err;
        if (!err.msg[0])
            snprintf(q->first_err.msg, sizeof q->first_err.msg, "%s", em_status_name(s));
        em_error_prefix(&q->first_err, "stage %d (%s of %s (%d)), partition %d", st->index,
                        em_stage_kind_name(st->kind), em_rt_node_name(st->node), st->node->id, p);
        q->first_err.code = s;
        /* the query's budget, not a task's (a resource profile's); the
         * relation to blame is chosen once every stage has stopped */
        if (s == EM_ERR_OOM_BUDGET && q->opts.memory_budget >= 0 && names_pool(&err, "query"))
            q->oom_stage = st;
    }
    q->cancel = 1;
    pthread_mutex_unlock(&q->mu);
    em_rt_sem_wake(&q->sem);
}

/* A profiled stage runs as task_slots lanes, each taking the next
 * partition until none is left: no more of its tasks run at once, and the
 * threads a lane does not take stay free for the stages beside it. */
static void lane_run(void *arg, int lane) {
    (void)lane;
    rt_task *base = arg;
    for (;;) {
        pthread_mutex_lock(&base->q->mu);
        int p = base->st->next_task < base->st->n_tasks ? base->st->next_task++ : -1;
        pthread_mutex_unlock(&base->q->mu);
        if (p < 0)
            return;
        task_run(arg, p);
    }
}

/* ------------------------------------------------------------------ stages */

static void unplan_scans(rt_stage *st) {
    for (int i = 0; st->scan_plans && i < st->n_scans; i++)
        em_rt_scan_plan_reset(&st->scan_plans[i]);
    free(st->scan_plans);
    st->scan_plans = NULL;
}

static em_status plan_scans(em_query *q, rt_stage *st, em_error *err) {
    if (st->n_scans == 0)
        return EM_OK;
    st->scan_plans = calloc((size_t)st->n_scans, sizeof *st->scan_plans);
    if (!st->scan_plans)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scans");
    for (int i = 0; i < st->n_scans; i++) {
        /* Row ranges add tasks running side by side; under a memory budget
         * each would have less room than the one task Spark's splits give
         * (q18 under 16 MiB: a partial aggregate could no longer fit one
         * batch's groups), so the budget keeps Spark's splits. */
        EM_TRY(em_rt_scan_plan_make(st->scans[i], q->warehouse, q->threads,
                                 q->opts.max_partition_bytes, q->opts.open_cost_bytes,
                                 q->opts.memory_budget < 0, &st->scan_plans[i], err));
        /* a table folder without data files: Spark reads an empty table, but here it is
         * far more often a wrong warehouse or a table not written yet */
        const em_plan_node *scan = st->scans[i];
        if (st->scan_plans[i].n_files == 0 && !q->opts.empty_table_folders)
            return EM_FAIL(err, EM_ERR_IO,
                           "%s (%d) %s: the table folder holds no data file (names starting "
                           "with '_' or '.' are not data); to read it as an empty table, as "
                           "Spark does, set spark.ember.sql.emptyTableFolders=true",
                           scan->name, scan->id, scan->table_name ? scan->table_name : "");
    }
    return EM_OK;
}

static int stage_tasks(const rt_stage *st) {
    if (st->n_scans == 0 && st->n_shuffle_inputs == 0)
        return 1;
    int n = 0;
    for (int i = 0; i < st->n_scans; i++)
        if (st->scan_plans[i].n_parts > n)
            n = st->scan_plans[i].n_parts;
    for (int i = 0; i < st->n_shuffle_inputs; i++)
        if (st->shuffle_inputs[i]->n_out > n)
            n = st->shuffle_inputs[i]->n_out;
    /* Spark outputs a nested-loop join's build rows with no stream partition too */
    return n == 0 && st->bnlj_keeps_build ? 1 : n;
}

em_status em_query_plan_tasks(em_query *q, em_error *err) {
    if (q->planned)
        return EM_OK;
    em_status s = EM_OK;
    for (int i = 0; s == EM_OK && i < q->n_stages; i++)
        s = plan_scans(q, q->stages[i], err);
    for (int i = 0; s != EM_OK && i < q->n_stages; i++)
        unplan_scans(q->stages[i]); /* a later call starts over */
    q->planned = s == EM_OK;
    return s;
}

/* The tasks a stage runs: known once it started or its scans are planned. */
static int known_tasks(const em_query *q, const rt_stage *st) {
    if (st->started)
        return st->n_tasks;
    return st->n_scans > 0 && !q->planned ? -1 : stage_tasks(st);
}

/* em_op_build's engines: Spark's wrappers pass, every other node is native. */
static em_engine native_engine(void *ctx, const em_plan_node *node) {
    (void)ctx;
    return em_rt_is_wrapper(node) ? EM_ENGINE_PASS : EM_ENGINE_NATIVE;
}

/* The stage's shape and profile from what is known now: its inputs' map
 * tasks once they ran (or their scans are planned). */
static void stage_profile(const em_query *q, const rt_stage *st, em_stage_shape *shape,
                          em_stage_profile *prof, int *unknown) {
    em_profile_stage_nodes(st->build_root, q->opts.engine ? q->opts.engine : native_engine,
                           q->opts.engine_ctx, shape);
    *unknown = 0;
    for (int i = 0; i < st->n_shuffle_inputs; i++) {
        const rt_stage *in = st->shuffle_inputs[i];
        bool again = false; /* a shuffle read twice (reused) has its statuses fetched once */
        for (int j = 0; j < i && !again; j++)
            again = st->shuffle_inputs[j] == in;
        int m = again ? 0 : known_tasks(q, in);
        if (m < 0)
            (*unknown)++;
        else
            shape->shuffle_statuses += (int64_t)m * in->n_out;
    }
    em_profile_for_stage(&q->profile, &q->rules, shape, prof);
}

/* Dealing a range shuffle's rows: the bounds, and the map task dealt. */
typedef struct range_deal {
    em_query *q;
    rt_stage *st;
    const rt_range_bounds *bounds;
    int task;
    int64_t held; /* bytes dealt since the task's lists last spilled */
    int64_t cap;
    int32_t *ids, *scratch;
    int64_t *counts;
} range_deal;

/* Deals one batch of a map task's rows (their keys the trailing columns) to
 * the task's partition lists, which spill as a hash shuffle's do. */
static em_status deal_batch(void *arg, const em_batch *b, em_error *err) {
    range_deal *d = arg;
    rt_stage *st = d->st;
    int nc = st->range_schema.n_fields;
    if (b->n_cols != nc + st->part.n_keys)
        return EM_FAIL(err, EM_ERR_INTERNAL, "range shuffle rows of %d columns, expected %d",
                       b->n_cols, nc + st->part.n_keys);
    int64_t n = em_batch_rows(b);
    if (n > d->cap) {
        int32_t *ni = realloc(d->ids, sizeof *ni * (size_t)n);
        if (ni)
            d->ids = ni;
        int32_t *ns = ni ? realloc(d->scratch, sizeof *ns * (size_t)n) : NULL;
        if (ns)
            d->scratch = ns;
        if (!ni || !ns)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory dealing range shuffle rows");
        d->cap = n;
    }
    EM_TRY(em_rt_range_bounds_ids(d->bounds, &b->cols[nc], b->sel, n, d->ids, err));
    EM_TRY(distribute(st, d->task, &st->range_schema, b, d->ids, d->scratch, d->counts, err));
    d->held += batch_bytes(b);
    return maybe_spill(d->q, st, d->task, 0, &d->held, err);
}

/* After a range map stage: bounds from the tasks' samples, then each map
 * task's rows dealt in the order it wrote them (its spill files one batch at
 * a time, then the rows it kept), so a partition holds the rows of map task
 * 0, then 1, ..., as a hash shuffle's does. */
static em_status finish_range(em_query *q, rt_stage *st, em_error *err) {
    rt_range_sample *samples = calloc((size_t)(st->n_tasks ? st->n_tasks : 1), sizeof *samples);
    if (!samples)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int t = 0; t < st->n_tasks; t++) {
        const rt_range_sampler *sm = &st->range[t].sample;
        samples[t] = (rt_range_sample){sm->n_rows, sm->n_kept, sm->keys};
    }
    rt_range_bounds *bounds = NULL;
    em_status s =
        em_rt_range_bounds_make(&st->part, samples, st->n_tasks, st->out_pool, &bounds, err);
    range_deal d = {.q = q, .st = st, .bounds = bounds};
    free(samples);
    for (int t = 0; t < st->n_tasks; t++)
        em_rt_range_sampler_reset(&st->range[t].sample);
    if (s == EM_OK && !(d.counts = malloc(sizeof *d.counts * (size_t)(st->n_out + 1))))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    st->dealing = true;
    for (int t = 0; s == EM_OK && t < st->n_tasks; t++) {
        rt_range_task *rt = &st->range[t];
        d.task = t;
        d.held = 0;
        for (int f = 0; s == EM_OK && f < rt->files.n; f++) {
            s = em_rt_spill_scan(rt->files.paths[f], st->out_pool, deal_batch, &d, err);
            unlink(rt->files.paths[f]); /* dealt: only its disk space is left */
        }
        /* each kept batch is freed once dealt: memory moves, it does not grow */
        for (int64_t i = 0; s == EM_OK && i < rt->rows.n_batches; i++) {
            s = deal_batch(&d, rt->rows.batches[i], err);
            em_batch_destroy(rt->rows.batches[i]);
            rt->rows.batches[i] = NULL;
        }
        em_batch_list_reset(&rt->rows);
    }
    em_rt_range_bounds_free(bounds);
    free(d.ids);
    free(d.scratch);
    free(d.counts);
    return s;
}

/* Concatenates the task lists into the per-partition views. */
static em_status merge_outputs(rt_stage *st, em_error *err) {
    st->parts = calloc((size_t)st->n_out, sizeof *st->parts);
    if (!st->parts)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    int per_task = st->kind == EM_STAGE_SHUFFLE ? st->n_out : 1;
    for (int r = 0; r < st->n_out; r++) {
        int64_t nb = 0;
        for (int t = 0; t < st->n_tasks; t++)
            nb += st->task_out[(int64_t)t * per_task + r].n_batches;
        em_batch_list *l = &st->parts[r];
        l->batches = malloc(sizeof *l->batches * (size_t)(nb ? nb : 1));
        if (!l->batches)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        for (int t = 0; t < st->n_tasks; t++) {
            const em_batch_list *src = &st->task_out[(int64_t)t * per_task + r];
            for (int64_t i = 0; i < src->n_batches; i++)
                l->batches[l->n_batches++] = src->batches[i];
            l->n_rows += src->n_rows;
        }
        st->rows_out += l->n_rows;
    }
    st->rows_out += st->spill_rows;
    return EM_OK;
}

/* Everything before a stage's tasks: partition count, output lists, then
 * the job is submitted. A stage without tasks (empty scans) is finished by
 * the caller right away. */
static em_status start_stage(em_query *q, rt_stage *st, em_error *err) {
    st->started = true;
    st->seq = q->next_stage_seq++;
    st->t0 = em_rt_now_ns();
    st->n_tasks = stage_tasks(st);
    if (st->syn_root == NULL && (st->kind == EM_STAGE_RESULT || st->kind == EM_STAGE_SUBQUERY)) {
        const em_plan_node *top = st->build_root;
        if ((top->kind == EM_NODE_TAKE_ORDERED_AND_PROJECT || top->kind == EM_NODE_COLLECT_LIMIT) &&
            st->n_tasks > 1)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "%s (%d) over an exchange of %d partitions is not supported yet",
                           em_rt_node_name(top), top->id, st->n_tasks);
    }
    char name[64];
    snprintf(name, sizeof name, "stage %d output", st->index);
    st->out_pool = em_pool_create(name, q->pool, -1);
    int per_task = st->kind == EM_STAGE_SHUFFLE ? st->n_out : 1;
    int64_t n_lists = (int64_t)st->n_tasks * per_task;
    st->task_out = calloc((size_t)(n_lists ? n_lists : 1), sizeof *st->task_out);
    bool range = st->kind == EM_STAGE_SHUFFLE && st->part.kind == RT_PART_RANGE;
    if (range && (st->range = calloc((size_t)(st->n_tasks ? st->n_tasks : 1), sizeof *st->range))) {
        /* Spark samples about 20 keys per output partition, 3 times over;
         * small map tasks are kept whole (the bounds then exact). Samples
         * stay in memory: a few hundred keys per task at most. */
        int64_t tasks = st->n_tasks ? st->n_tasks : 1;
        int64_t target = (60 * (int64_t)st->n_out + tasks - 1) / tasks;
        for (int t = 0; t < st->n_tasks; t++)
            st->range[t].sample = (rt_range_sampler){.pool = st->out_pool,
                                                     .target = target > 128 ? target : 128};
    }
    bool spillable = st->kind == EM_STAGE_SHUFFLE && q->opts.memory_budget >= 0;
    if (spillable &&
        (!(st->spilled = calloc((size_t)(n_lists ? n_lists : 1), sizeof *st->spilled)) ||
         !(st->map_done = calloc((size_t)(st->n_tasks ? st->n_tasks : 1), sizeof *st->map_done))))
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory starting stage %d", st->index);
    if (st->kind == EM_STAGE_RESULT && q->opts.result_sink &&
        !(q->sink_ended = calloc((size_t)(st->n_tasks ? st->n_tasks : 1), sizeof *q->sink_ended)))
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory starting stage %d", st->index);
    st->base = calloc(1, sizeof *st->base);
    if (!st->out_pool || !st->task_out || (range && !st->range) || !st->base)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory starting stage %d", st->index);
    *st->base = (rt_task){.q = q, .st = st};
    int lanes = st->n_tasks;
    if (q->profiled) {
        stage_profile(q, st, &st->shape, &st->profile, &st->shuffle_unknown);
        if (st->profile.profile.task_slots < lanes)
            lanes = st->profile.profile.task_slots;
    }
    if (st->n_tasks > 0) {
        st->job = (rt_job){lanes < st->n_tasks ? lane_run : task_run, st->base, lanes, 0, 0, NULL};
        em_rt_threads_submit(q->workers, &st->job);
    }
    return EM_OK;
}

/* Everything after a stage's tasks: the first error, range bounds, the
 * per-partition views. */
static em_status finish_stage(em_query *q, rt_stage *st, em_error *err) {
    em_status s = EM_OK;
    pthread_mutex_lock(&q->mu);
    if (q->first_status != EM_OK) {
        *err = q->first_err;
        s = q->first_status;
    } else if (q->cancel) {
        s = EM_FAIL(err, EM_ERR_CANCELLED, "query cancelled");
    }
    pthread_mutex_unlock(&q->mu);
    if (st->range) {
        if (s == EM_OK) {
            s = finish_range(q, st, err);
            if (s != EM_OK)
                em_error_prefix(err, "stage %d (range partitioning of %s (%d))", st->index,
                                em_rt_node_name(st->node), st->node->id);
        }
        range_free(st);
    }
    /* a finished stage's rows wait for its readers, where nothing can spill
     * them any more (they read views of them): on disk already if the
     * budget is a quarter used */
    for (int t = 0; s == EM_OK && st->spilled && !st->range && t < st->n_tasks &&
                    memory_tight(q, em_pool_budget(q->pool) / 4);
         t++)
        s = spill_map_output(q, st, t, err);
    if (s == EM_OK)
        s = merge_outputs(st, err);
    st->done = s == EM_OK;
    st->time_ns = em_rt_now_ns() - st->t0;
    return s;
}

static bool inputs_done(const em_query *q, const rt_stage *st) {
    for (int i = 0; i < st->n_deps; i++)
        if (!q->stages[st->deps[i]]->done)
            return false;
    return true;
}

/* After st: free the outputs nobody reads any more. */
static void release_inputs(em_query *q, const rt_stage *st) {
    for (int i = 0; i < st->n_deps; i++) {
        rt_stage *d = q->stages[st->deps[i]];
        if (--d->readers_left == 0 && d->kind != EM_STAGE_SUBQUERY &&
            d->kind != EM_STAGE_RESULT) {
            em_rt_shared_release(q->shared, d);
            stage_free_outputs(d);
        }
    }
}

/* Runs every stage whose inputs are done, several at once when they are
 * independent; returns the first error after every started stage ended. */
static em_status run_stages(em_query *q, em_error *err) {
    for (int i = 0; i < q->n_stages; i++)
        for (int d = 0; d < q->stages[i]->n_deps; d++)
            q->stages[q->stages[i]->deps[d]]->readers_left++;
    em_status s = EM_OK;
    em_error later; /* errors after the first one */
    int running = 0, finished = 0;
    for (;;) {
        for (int i = 0; s == EM_OK && i < q->n_stages; i++) {
            rt_stage *st = q->stages[i];
            if (st->started || !inputs_done(q, st))
                continue;
            s = start_stage(q, st, err);
            if (s == EM_OK && st->n_tasks == 0) { /* nothing to run: done now */
                s = finish_stage(q, st, err);
                finished++;
                if (s == EM_OK)
                    release_inputs(q, st);
                i = -1; /* its readers may be ready */
                continue;
            }
            if (s == EM_OK)
                running++;
        }
        if (s != EM_OK)
            q->cancel = 1;
        if (running == 0)
            break;
        rt_job *j = em_rt_threads_wait(q->workers);
        rt_stage *st = ((rt_task *)j->arg)->st;
        running--;
        finished++;
        em_status fs = finish_stage(q, st, s == EM_OK ? err : &later);
        if (s == EM_OK)
            s = fs;
        if (fs == EM_OK)
            release_inputs(q, st);
    }
    if (s == EM_OK && finished < q->n_stages)
        s = EM_FAIL(err, EM_ERR_INTERNAL, "%d stages could not start (cyclic inputs)",
                    q->n_stages - finished);
    return s;
}

static int cmp_metrics(const void *a, const void *b) {
    const em_node_metrics *x = a, *y = b;
    return x->node->id - y->node->id;
}

em_status em_query_run(em_query *q, em_error *err) {
    if (q->ran)
        return EM_FAIL(err, EM_ERR_INVALID, "a query runs once");
    q->ran = true;
    q->pool = em_pool_create("query", NULL, q->opts.memory_budget);
    if (!q->pool)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating the query pool");
    EM_TRY(em_query_plan_tasks(q, err));
    EM_TRY(em_rt_shared_create(q->pool, q->threads, &q->shared, err));
    EM_TRY(em_rt_spill_dir_create(q->spill_base, &q->spill_dir, err));
    EM_TRY(em_rt_threads_create(q->threads, &q->workers, err));
    em_status s = run_stages(q, err);
    if (q->oom_stage) /* the stages' outputs stand still now */
        q->oom_broadcast = oom_broadcast(q, q->oom_stage);
    if (s == EM_OK) {
        const rt_stage *res = q->stages[q->n_stages - 1];
        const em_batch_list *l = &res->parts[0];
        q->result.batches = malloc(sizeof *q->result.batches * (size_t)(l->n_batches + 1));
        if (!q->result.batches)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        memcpy(q->result.batches, l->batches, sizeof *l->batches * (size_t)l->n_batches);
        q->result.n_batches = l->n_batches;
        q->result.n_rows = l->n_rows;
    }
    int n = 0;
    for (int i = 0; i <= q->max_id; i++)
        n += q->metrics[i].tasks > 0;
    q->metrics_list = calloc((size_t)(n ? n : 1), sizeof *q->metrics_list);
    if (q->metrics_list) {
        for (int i = 0; i <= q->max_id; i++)
            if (q->metrics[i].tasks > 0)
                q->metrics_list[q->n_metrics_listed++] = q->metrics[i];
        qsort(q->metrics_list, (size_t)q->n_metrics_listed, sizeof *q->metrics_list, cmp_metrics);
    }
    return s;
}
