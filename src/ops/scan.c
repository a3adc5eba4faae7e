/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scan parquet: reads the Parquet files (splits) the runtime assigns to
 * this task and produces the node's Output attributes.
 *
 * Columns are matched by name, as Spark's Parquet reader does: each output
 * attribute's name is looked up in ReadSchema (for its type) and in the
 * file's schema, exactly first, then ignoring case (Spark's default
 * spark.sql.caseSensitive=false). A column the file lacks reads as nulls
 * (schema evolution). A file type that differs from ReadSchema's is an
 * error naming the column, the file and both types; the state keeps a
 * `retype` flag for the later --retype mode, which takes the file's type.
 *
 * PushedFilters (data-source filter syntax, column names without ids) are
 * used only to skip whole row groups whose statistics prove that no row can
 * match; their rows are never dropped here, the Filter above does that
 * (Spark semantics: pushed filters are advisory for Parquet). Every unknown filter,
 * value that does not parse, or missing statistic means "may match". String
 * literals print unquoted, so a value may have lost trailing spaces: the
 * "below the minimum" test is skipped when the minimum starts with the value.
 *
 * Output attributes ReadSchema lacks are Hive partition columns (Spark's
 * FileSourceScanExec outputs the required schema, then the partition
 * columns): each split names their values as text, read back with Spark's
 * cast from string and repeated down every batch of the file. A split whose
 * values fail PartitionFilters is skipped unopened: Spark keeps those
 * predicates out of the Filter above, so they must hold here (splits Spark
 * listed already pass them, and are not tested again). Dynamic pruning's
 * filters only repeat what the join checks, and prune nothing here.
 *
 * Runtime filters (the runtime's, em_plan_runtime_filters) are the one
 * thing a scan drops rows for: rows whose key is outside a broadcast's key
 * set, which no join above would match. Row groups whose statistics miss
 * the set are skipped; the others' batches get a narrowed selection.
 *
 * Invariant: the reader's batches are shared (not copied) through a shell
 * labelled with the node's schema; all-null columns for missing file
 * columns and constant ones for partition columns are built per batch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember/parquet.h"
#include "ember/tz.h"
#include "expr/internal.h"
#include "ops/key_filter.h"
#include "ops/op_util.h"

typedef struct scan_state {
    bool retype; /* --retype: accept the file's types (not wired yet) */
    const em_scan_split *splits;
    int n_splits;
    int split;
    em_pq_file *file;
    em_pq_reader *reader;
    int n_out;
    em_type *out_types; /* from ReadSchema */
    int *file_col;      /* per output: file column, -1 = missing (nulls) */
    int *reader_col;    /* per output: column of the reader's batches, -1 = nulls */
    bool *is_part;      /* per output: a partition column */
    ex_value *part_val; /* per output: a partition column's value in this split */
    const em_tz *tz;    /* the session's, for timestamp partition values */
    em_batch *shell;
    const em_plan_field *pushed;
    em_expr_prog **part_filters; /* PartitionFilters but dynamic pruning's */
    int n_part_filters;
    em_batch *probe; /* one row: a split's partition values, nulls elsewhere */
    /* runtime filters: each a broadcast's key set and the output column it
     * tests; one that keeps most of the rows it tested is switched off */
    int n_rf;
    const em_key_set **rf_set;
    int *rf_col;
    int64_t *rf_in, *rf_kept;
    int32_t *rf_sel;
    int64_t rf_sel_cap;
} scan_state;

/* ------------------------------------------------------------ row-group
 * pruning */

/* The text of a filter argument (values like Brand#9 parse as attributes). */
static const char *arg_text(const em_expr *e, char *buf, size_t cap) {
    if (e->kind == EM_EXPR_LITERAL || e->kind == EM_EXPR_RAW)
        return e->text;
    if (e->kind == EM_EXPR_ATTR && e->name) {
        snprintf(buf, cap, "%s#%lld", e->name, (long long)e->id);
        return buf;
    }
    return NULL;
}

static int find_name(const em_schema *s, const char *name) {
    for (int i = 0; i < s->n_fields; i++)
        if (strcmp(s->fields[i].name, name) == 0)
            return i;
    for (int i = 0; i < s->n_fields; i++)
        if (strcasecmp(s->fields[i].name, name) == 0)
            return i;
    return -1;
}

typedef struct stat_ctx {
    em_pq_file *f;
    int rg;
} stat_ctx;

/* Compares literal v with a stats bound of type t: <0, 0, >0; *ok false when
 * not comparable. */
static int cmp_bound(em_type t, const ex_value *v, const em_pq_stats *s, bool max, bool *ok) {
    *ok = true;
    switch (t.id) {
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
    case EM_TYPE_DATE:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: {
        int64_t b = max ? s->max.i64 : s->min.i64;
        return v->i < b ? -1 : v->i > b;
    }
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        double b = max ? s->max.f64 : s->min.f64;
        if (isnan(b) || isnan(v->d)) {
            *ok = false;
            return 0;
        }
        return v->d < b ? -1 : v->d > b;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 b = max ? s->max.i128 : s->min.i128;
        return v->dec < b ? -1 : v->dec > b;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const uint8_t *p = max ? s->max.bytes.ptr : s->min.bytes.ptr;
        int32_t len = max ? s->max.bytes.len : s->min.bytes.len;
        int32_t m = v->len < len ? v->len : len;
        int c = m ? memcmp(v->s, p, (size_t)m) : 0;
        if (c)
            return c < 0 ? -1 : 1;
        if (v->len < len && !max) {
            /* v is a proper prefix of the minimum: v plus lost trailing
             * spaces might still reach it */
            *ok = false;
            return 0;
        }
        return v->len < len ? -1 : v->len > len;
    }
    default:
        *ok = false;
        return 0;
    }
}

#define EM_MAX_ZONE_US (18LL * 3600 * 1000000)

static bool may_match(const em_expr *e, const em_pq_file *f, int rg) {
    if (e->kind != EM_EXPR_CALL || !e->name)
        return true;
    const char *fn = e->name;
    if (strcmp(fn, "And") == 0 && e->n_args == 2)
        return may_match(e->args[0], f, rg) && may_match(e->args[1], f, rg);
    if (strcmp(fn, "Or") == 0 && e->n_args == 2)
        return may_match(e->args[0], f, rg) || may_match(e->args[1], f, rg);
    if (e->n_args < 1)
        return true;
    char buf[256];
    const char *col = arg_text(e->args[0], buf, sizeof buf);
    if (!col)
        return true;
    const em_schema *fs = em_pq_file_schema(f);
    int c = find_name(fs, col);
    if (c < 0)
        return true;
    em_pq_stats s;
    if (em_pq_file_stats(f, rg, c, &s, NULL) != EM_OK)
        return true;
    if (strcmp(fn, "IsNotNull") == 0)
        return !(s.has_null_count && s.null_count >= s.num_values && s.num_values > 0);
    if (strcmp(fn, "IsNull") == 0)
        return !(s.has_null_count && s.null_count == 0);
    /* value predicates are never true on null: a row group of nulls only
     * cannot match (parquet-mr drops it for In too) */
    static const char *const null_rejecting[] = {
        "EqualTo",  "In",       "GreaterThan",      "GreaterThanOrEqual", "LessThan",
        "LessThanOrEqual",     "StringStartsWith", "StringEndsWith",     "StringContains"};
    if (s.has_null_count && s.num_values > 0 && s.null_count >= s.num_values)
        for (size_t i = 0; i < sizeof null_rejecting / sizeof null_rejecting[0]; i++)
            if (strcmp(fn, null_rejecting[i]) == 0)
                return false;
    if (!s.has_min_max || e->n_args != 2)
        return true;
    em_type t = fs->fields[c].type;
    bool in = strcmp(fn, "In") == 0;
    const em_expr *va = e->args[1];
    int n_vals = in ? (va->kind == EM_EXPR_LIST ? va->n_args : -1) : 1;
    if (n_vals < 0)
        return true;
    for (int i = 0; i < n_vals; i++) {
        char vb[512];
        const char *vt = arg_text(in ? va->args[i] : va, vb, sizeof vb);
        ex_value v;
        if (!vt || em_ex_parse_literal(vt, t, &v, NULL) != EM_OK || v.null)
            return true;
        if (strcmp(fn, "StringStartsWith") == 0) {
            if (!em_type_is_varlen(t))
                return true;
            /* some value in [min, max] starts with v unless max < v-prefix
             * range or min > it */
            int32_t lmax = s.max.bytes.len < v.len ? s.max.bytes.len : v.len;
            int cmax = lmax ? memcmp(s.max.bytes.ptr, v.s, (size_t)lmax) : 0;
            if (cmax < 0 || (cmax == 0 && s.max.bytes.len < v.len))
                return false;
            int32_t lmin = s.min.bytes.len < v.len ? s.min.bytes.len : v.len;
            int cmin = lmin ? memcmp(s.min.bytes.ptr, v.s, (size_t)lmin) : 0;
            return cmin <= 0;
        }
        /* EXPLAIN prints a pushed timestamp (java.sql.Timestamp) in the JVM's
         * default zone, which the plan does not name: the instant meant may
         * lie up to the widest offset (18 h) either side of the text read as
         * UTC, so v stands for the latest of them against the minimum and
         * for the earliest against the maximum */
        ex_value v_hi = v, v_lo = v;
        if (t.id == EM_TYPE_TIMESTAMP) {
            v_hi.i = v.i > INT64_MAX - EM_MAX_ZONE_US ? INT64_MAX : v.i + EM_MAX_ZONE_US;
            v_lo.i = v.i < INT64_MIN + EM_MAX_ZONE_US ? INT64_MIN : v.i - EM_MAX_ZONE_US;
        }
        bool ok1, ok2;
        int vs_min = cmp_bound(t, &v_hi, &s, false, &ok1);
        int vs_max = cmp_bound(t, &v_lo, &s, true, &ok2);
        bool below = ok1 && vs_min < 0, above = ok2 && vs_max > 0;
        if (in || strcmp(fn, "EqualTo") == 0 || strcmp(fn, "EqualNullSafe") == 0) {
            if (!below && !above)
                return true; /* this value may be present */
            continue;
        }
        if (strcmp(fn, "GreaterThan") == 0) /* some x > v: needs max > v */
            return !(ok2 && vs_max >= 0);
        if (strcmp(fn, "GreaterThanOrEqual") == 0)
            return !above;
        if (strcmp(fn, "LessThan") == 0) /* needs min < v */
            return !(ok1 && vs_min <= 0);
        if (strcmp(fn, "LessThanOrEqual") == 0)
            return !below;
        return true;
    }
    /* EqualTo / In: no value can be present */
    return false;
}

/* ------------------------------------------------------------ the operator */

static em_status scan_bind(em_op *op, scan_state *st, em_error *err) {
    const em_plan_field *rs = em_plan_node_field(op->node, EM_FIELD_READ_SCHEMA);
    st->n_out = op->n_output;
    st->out_types = calloc((size_t)st->n_out + 1, sizeof *st->out_types);
    st->file_col = calloc((size_t)st->n_out + 1, sizeof *st->file_col);
    st->reader_col = calloc((size_t)st->n_out + 1, sizeof *st->reader_col);
    st->is_part = calloc((size_t)st->n_out + 1, sizeof *st->is_part);
    st->part_val = calloc((size_t)st->n_out + 1, sizeof *st->part_val);
    if (!st->out_types || !st->file_col || !st->reader_col || !st->is_part || !st->part_val)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < st->n_out; i++) {
        const em_expr *a = op->output[i];
        int k = -1;
        for (int j = 0; rs && j < rs->n_schema && k < 0; j++)
            if (strcmp(rs->schema[j].name, a->name) == 0)
                k = j;
        for (int j = 0; rs && j < rs->n_schema && k < 0; j++)
            if (strcasecmp(rs->schema[j].name, a->name) == 0)
                k = j;
        /* the attribute's type is what the operators above compiled
         * against (ReadSchema's, or the file's when the plan was retyped) */
        if (a->type_known)
            st->out_types[i] = a->type;
        else if (k >= 0 && rs->schema[k].type_known)
            st->out_types[i] = rs->schema[k].type;
        else
            return EM_FAIL(err, EM_ERR_UNSUPPORTED, "column %s: type not known", a->name);
        st->is_part[i] = k < 0;
    }
    return EM_OK;
}

static bool is_dynamic_pruning(const em_expr *e) {
    return e->kind == EM_EXPR_CALL && e->name && !strcasecmp(e->name, "dynamicpruningexpression");
}

static em_status compile_partition_filters(em_op *op, scan_state *st, em_exec_ctx *ctx,
                                           em_error *err) {
    const em_plan_field *pf = em_plan_node_field(op->node, EM_FIELD_PARTITION_FILTERS);
    if (!pf || pf->n_exprs == 0 || ctx->splits_pruned)
        return EM_OK;
    st->part_filters = calloc((size_t)pf->n_exprs, sizeof *st->part_filters);
    if (!st->part_filters)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < pf->n_exprs; i++) {
        if (is_dynamic_pruning(pf->exprs[i]))
            continue;
        EM_TRY(em_expr_compile(pf->exprs[i], (const em_expr *const *)op->output, op->n_output,
                               &ctx->expr_opts, &st->part_filters[st->n_part_filters], err));
        st->n_part_filters++;
    }
    return st->n_part_filters ? em_opu_shell_create(&op->schema, ctx->pool, &st->probe, err) : EM_OK;
}

/* Rows this many tested, a filter that kept more than 3/4 of them costs
 * more than it saves downstream. */
#define RF_TRIAL_ROWS 65536

static em_status open_runtime_filters(em_op *op, scan_state *st, em_exec_ctx *ctx, em_error *err) {
    const em_runtime_filter *fs = NULL;
    int n = ctx->runtime_filters && ctx->broadcast_shared
                ? ctx->runtime_filters(ctx, op->node, &fs)
                : 0;
    if (n <= 0)
        return EM_OK;
    st->rf_set = calloc((size_t)n, sizeof *st->rf_set);
    st->rf_col = calloc((size_t)n, sizeof *st->rf_col);
    st->rf_in = calloc((size_t)n, sizeof *st->rf_in);
    st->rf_kept = calloc((size_t)n, sizeof *st->rf_kept);
    if (!st->rf_set || !st->rf_col || !st->rf_in || !st->rf_kept)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const em_runtime_filter *f = &fs[i];
        if (f->scan_column < 0 || f->scan_column >= st->n_out ||
            !em_type_equal(st->out_types[f->scan_column],
                           f->source->output[f->source_column]->type))
            return EM_FAIL(err, EM_ERR_INTERNAL, "runtime filter on column %d of Scan parquet (%d)",
                           f->scan_column, op->node->id);
        char what[48];
        snprintf(what, sizeof what, "runtime filter keys of column %d", f->source_column);
        void *obj = NULL;
        EM_TRY(ctx->broadcast_shared(ctx, f->source, what, em_key_set_build, em_key_set_free,
                                     (void *)&f->source_column, &obj, err));
        st->rf_set[st->n_rf] = obj;
        st->rf_col[st->n_rf++] = f->scan_column;
    }
    return EM_OK;
}

/* Whether row group rg may hold a key of every runtime filter. */
static bool rf_row_group_may_match(const scan_state *st, int rg) {
    for (int i = 0; i < st->n_rf; i++) {
        int fc = st->file_col[st->rf_col[i]];
        em_pq_stats s;
        if (fc >= 0 && em_pq_file_stats(st->file, rg, fc, &s, NULL) == EM_OK && s.has_min_max &&
            !em_key_set_may_overlap(st->rf_set[i], s.min.i64, s.max.i64))
            return false;
    }
    return true;
}

static em_status apply_runtime_filters(scan_state *st, em_batch *b, em_error *err) {
    for (int i = 0; i < st->n_rf; i++) {
        if (st->rf_in[i] >= RF_TRIAL_ROWS && st->rf_kept[i] > st->rf_in[i] / 4 * 3)
            continue;
        if (st->rf_sel_cap < b->n_rows) {
            int32_t *ns = realloc(st->rf_sel, sizeof *ns * (size_t)b->n_rows);
            if (!ns)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
            st->rf_sel = ns;
            st->rf_sel_cap = b->n_rows;
        }
        int64_t in = em_batch_rows(b), kept;
        EM_TRY(em_key_set_filter(st->rf_set[i], b, st->rf_col[i], st->rf_sel, &kept, err));
        st->rf_in[i] += in;
        st->rf_kept[i] += kept;
    }
    return EM_OK;
}

static em_status scan_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    scan_state *st = op->state;
    if (scan_bind(op, st, err) != EM_OK)
        return em_op_fail(op, err);
    st->pushed = em_plan_node_field(op->node, EM_FIELD_PUSHED_FILTERS);
    const char *tz = ctx->expr_opts.time_zone;
    if (tz && em_tz_find(tz, &st->tz, err) != EM_OK)
        return em_op_fail(op, err);
    if (compile_partition_filters(op, st, ctx, err) != EM_OK)
        return em_op_fail(op, err);
    if (!ctx->scan_splits) {
        EM_FAIL(err, EM_ERR_INTERNAL, "no scan split provider");
        return em_op_fail(op, err);
    }
    if (ctx->scan_splits(ctx, op->node, &st->splits, &st->n_splits, err) != EM_OK)
        return em_op_fail(op, err);
    /* data enters the native side here: take the task semaphore */
    if (st->n_splits > 0 && ctx->native_enter && ctx->native_enter(ctx, err) != EM_OK)
        return em_op_fail(op, err);
    st->split = 0;
    if (em_opu_shell_create(&op->schema, ctx->pool, &st->shell, err) != EM_OK)
        return em_op_fail(op, err);
    if (st->n_splits > 0 && open_runtime_filters(op, st, ctx, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

/* Spark's (parquet-mr's) split rule: a row group belongs to the split that
 * holds its midpoint, the offset of its first column chunk (its dictionary
 * page when that comes first) plus half its compressed size. */
static em_status in_byte_range(em_pq_file *f, int rg, const em_scan_split *sp, bool *keep,
                               em_error *err) {
    int n_cols = em_pq_file_schema(f)->n_fields;
    int64_t start = 0, size = 0;
    for (int c = 0; c < n_cols; c++) {
        em_pq_chunk_info ci;
        EM_TRY(em_pq_file_chunk_info(f, rg, c, &ci, err));
        if (c == 0)
            start = ci.dictionary_page_offset > 0 && ci.dictionary_page_offset < ci.data_page_offset
                        ? ci.dictionary_page_offset
                        : ci.data_page_offset;
        size += ci.total_compressed_size;
    }
    int64_t mid = start + size / 2;
    *keep = mid >= sp->byte_start && mid < sp->byte_start + sp->byte_length;
    return EM_OK;
}

static void scan_close_file(scan_state *st) {
    em_pq_reader_close(st->reader);
    st->reader = NULL;
    em_pq_file_close(st->file);
    st->file = NULL;
}

/* The split's values of the partition columns, as Spark's cast from string
 * reads them (an invalid text is an error, not a null: Spark wrote it). */
static em_status split_partition_values(em_op *op, scan_state *st, const em_scan_split *sp,
                                        em_error *err) {
    for (int i = 0; i < st->n_out; i++) {
        if (!st->is_part[i])
            continue;
        const char *name = op->output[i]->name;
        int k = -1;
        for (int j = 0; j < sp->n_partition_values && k < 0; j++)
            if (sp->partition_names[j] && strcmp(sp->partition_names[j], name) == 0)
                k = j;
        for (int j = 0; j < sp->n_partition_values && k < 0; j++)
            if (sp->partition_names[j] && strcasecmp(sp->partition_names[j], name) == 0)
                k = j;
        if (k < 0)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "column %s is neither in ReadSchema nor a partition column of %s", name,
                           sp->path);
        const char *text = sp->partition_values[k];
        ex_value *v = &st->part_val[i];
        memset(v, 0, sizeof *v);
        if (!text) {
            v->null = true;
            continue;
        }
        ex_value in = {.s = text, .len = (int32_t)strlen(text)};
        if (st->out_types[i].id == EM_TYPE_STRING) {
            *v = in; /* the split's text outlives the task's batches */
            continue;
        }
        em_strbuf scratch;
        em_strbuf_init(&scratch);
        char what[160];
        snprintf(what, sizeof what, "partition column %s of %s", name, sp->path);
        em_status s = em_ex_cast_value_tz(&in, em_type_make(EM_TYPE_STRING), st->out_types[i], st->tz,
                                       true, what, v, &scratch, err);
        em_strbuf_reset(&scratch); /* no fixed-width result borrows it */
        EM_TRY(s);
    }
    return EM_OK;
}

/* A column of n rows all holding v. */
static em_status constant_column(em_column *c, em_type t, const ex_value *v, int64_t n,
                                 em_pool *pool, em_error *err) {
    if (v->null)
        return em_opu_null_column(c, t, n, pool, err);
    if (em_type_is_varlen(t)) {
        EM_TRY(em_column_init(c, t, n, pool, err));
        EM_TRY(em_column_reserve(c, n, (int64_t)v->len * n, err));
        for (int64_t r = 0; r < n; r++)
            EM_TRY(em_column_append_bytes(c, v->s, v->len, err));
        return EM_OK;
    }
    EM_TRY(em_ex_col_alloc(c, t, n, pool, err));
    for (int64_t r = 0; r < n; r++)
        em_ex_put_fixed(c, r, v);
    c->null_count = 0;
    return EM_OK;
}

/* Opens split st->split: maps columns, checks types, prunes row groups. */
static em_status scan_open_split(em_op *op, scan_state *st, em_error *err) {
    const em_scan_split *sp = &st->splits[st->split];
    EM_TRY(em_pq_file_open(sp->path, &st->file, err));
    const em_schema *fs = em_pq_file_schema(st->file);
    int *cols = calloc((size_t)st->n_out + 1, sizeof *cols);
    int n_cols = 0;
    int n_rg = em_pq_file_num_row_groups(st->file);
    bool *rgs = calloc((size_t)n_rg + 1, sizeof *rgs);
    if (!cols || !rgs) {
        free(cols);
        free(rgs);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", sp->path);
    }
    em_status s = EM_OK;
    for (int i = 0; i < st->n_out && s == EM_OK; i++) {
        if (st->is_part[i]) {
            st->file_col[i] = st->reader_col[i] = -1;
            continue;
        }
        int fc = find_name(fs, op->output[i]->name);
        st->file_col[i] = fc;
        st->reader_col[i] = -1;
        if (fc < 0)
            continue;
        em_type ft = fs->fields[fc].type;
        if (!em_type_equal(ft, st->out_types[i]) && !st->retype) {
            char a[64], b[64];
            em_type_format(ft, a, sizeof a);
            em_type_format(st->out_types[i], b, sizeof b);
            s = EM_FAIL(err, EM_ERR_TYPE,
                        "column %s in %s has type %s, the plan's ReadSchema says %s "
                        "(--retype takes the file's types)",
                        op->output[i]->name, sp->path, a, b);
            break;
        }
        int j = 0;
        while (j < n_cols && cols[j] != fc)
            j++;
        if (j == n_cols)
            cols[n_cols++] = fc;
        st->reader_col[i] = j;
    }
    int first = sp->first_row_group < 0 ? 0 : sp->first_row_group;
    int end = sp->end_row_group < 0 || sp->end_row_group > n_rg ? n_rg : sp->end_row_group;
    for (int rg = first; s == EM_OK && rg < end; rg++) {
        bool keep = em_pq_file_row_group_rows(st->file, rg) > 0;
        if (keep && sp->byte_length > 0)
            s = in_byte_range(st->file, rg, sp, &keep, err);
        for (int k = 0; keep && st->pushed && k < st->pushed->n_exprs; k++)
            keep = may_match(st->pushed->exprs[k], st->file, rg);
        keep = keep && rf_row_group_may_match(st, rg);
        rgs[rg] = keep;
    }
    if (s == EM_OK) {
        em_pq_read_options ro = {.columns = cols,
                                 .n_columns = n_cols,
                                 .row_groups = rgs,
                                 .batch_rows = EM_BATCH_CAP,
                                 .pool = op->ctx->pool,
                                 .row_start = sp->row_start,
                                 .row_end = sp->row_end};
        s = em_pq_reader_open(st->file, &ro, &st->reader, err);
    }
    free(cols);
    free(rgs);
    return s;
}

/* Reads split st->split's partition values; *keep is false when they fail
 * PartitionFilters (the split is then skipped without opening its file). */
static em_status split_passes(em_op *op, scan_state *st, bool *keep, em_error *err) {
    *keep = true;
    EM_TRY(split_partition_values(op, st, &st->splits[st->split], err));
    if (st->n_part_filters == 0)
        return EM_OK;
    em_batch *pb = st->probe;
    em_opu_shell_release(pb);
    for (int i = 0; i < st->n_out; i++)
        EM_TRY(st->is_part[i] ? constant_column(&pb->cols[i], st->out_types[i], &st->part_val[i], 1,
                                                op->ctx->pool, err)
                              : em_opu_null_column(&pb->cols[i], st->out_types[i], 1, op->ctx->pool,
                                                err));
    pb->n_rows = 1;
    for (int f = 0; *keep && f < st->n_part_filters; f++) {
        em_column c = {0};
        em_status s = em_expr_eval(st->part_filters[f], pb, op->ctx->pool, &c, err);
        *keep = s == EM_OK && em_column_is_valid(&c, 0) && em_bit_get(c.values->data, 0);
        em_column_reset(&c);
        EM_TRY(s);
    }
    return EM_OK;
}

static em_status scan_next(em_op *op, em_batch **out, em_error *err) {
    scan_state *st = op->state;
    for (;;) {
        if (!st->reader) {
            if (st->split >= st->n_splits)
                return EM_DONE;
            bool keep;
            if (split_passes(op, st, &keep, err) != EM_OK)
                return em_op_fail(op, err);
            if (!keep) {
                st->split++;
                continue;
            }
            if (scan_open_split(op, st, err) != EM_OK) {
                scan_close_file(st);
                return em_op_fail(op, err);
            }
        }
        em_batch *b = NULL;
        em_status s = em_pq_reader_next(st->reader, &b, err);
        if (s == EM_DONE) {
            scan_close_file(st);
            st->split++;
            continue;
        }
        if (s != EM_OK)
            return em_op_fail(op, err);
        em_batch *sh = st->shell;
        em_opu_shell_release(sh);
        for (int i = 0; i < st->n_out; i++) {
            if (st->reader_col[i] >= 0)
                em_column_share(&sh->cols[i], &b->cols[st->reader_col[i]]);
            else if (st->is_part[i]) {
                if (constant_column(&sh->cols[i], st->out_types[i], &st->part_val[i], b->n_rows,
                                    op->ctx->pool, err) != EM_OK)
                    return em_op_fail(op, err);
            } else if (em_opu_null_column(&sh->cols[i], st->out_types[i], b->n_rows, op->ctx->pool,
                                     err) != EM_OK)
                return em_op_fail(op, err);
        }
        sh->n_rows = b->n_rows;
        if (em_opu_set_sel(sh, b->sel, b->n_sel, err) != EM_OK ||
            apply_runtime_filters(st, sh, err) != EM_OK)
            return em_op_fail(op, err);
        if (em_batch_rows(sh) == 0)
            continue;
        *out = sh;
        return EM_OK;
    }
}

static void scan_close(em_op *op) {
    scan_state *st = op->state;
    if (!st)
        return;
    scan_close_file(st);
    em_batch_destroy(st->shell);
    st->shell = NULL;
    em_batch_destroy(st->probe);
    st->probe = NULL;
    for (int i = 0; i < st->n_part_filters; i++)
        em_expr_prog_destroy(st->part_filters[i]);
    free(st->part_filters);
    st->part_filters = NULL;
    st->n_part_filters = 0;
    free(st->rf_set);
    free(st->rf_col);
    free(st->rf_in);
    free(st->rf_kept);
    free(st->rf_sel);
    st->rf_set = NULL;
    st->rf_col = NULL;
    st->rf_in = st->rf_kept = NULL;
    st->rf_sel = NULL;
    st->n_rf = 0;
    st->rf_sel_cap = 0;
    free(st->out_types);
    free(st->file_col);
    free(st->reader_col);
    free(st->is_part);
    free(st->part_val);
    st->is_part = NULL;
    st->part_val = NULL;
    st->out_types = NULL;
    st->file_col = st->reader_col = NULL;
}

static const em_op_vtab SCAN_VTAB = {.name = "Scan parquet", .open = scan_open, .next = scan_next, .close = scan_close};

em_status em_op_scan_create(const em_plan_node *node, em_op **out, em_error *err) {
    return em_op_init(&SCAN_VTAB, node, NULL, 0, sizeof(scan_state), out, err);
}
