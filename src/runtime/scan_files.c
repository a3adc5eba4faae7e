/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a Scan's rows come from: its Location resolved to Parquet files, the
 * files' row groups packed into one partition per task, and the file types
 * that --retype substitutes for ReadSchema's.
 *
 * Resolution. The shared plans print a normalized Location naming only the
 * table folder under {warehouse_dir}; users paste real paths
 * (InMemoryFileIndex[file:/data/tpch/lineitem]). Both resolve against the
 * warehouse given on the command line by the folder's last component, so a
 * plan printed on one machine runs on data copied to another; a real path
 * that is not under the warehouse is read where it is.
 *
 * Packing follows Spark's FilePartition.maxSplitBytes: the split target is
 * min(maxPartitionBytes, max(openCostInBytes, totalBytes / parallelism)),
 * where every file costs its bytes plus openCostInBytes. Spark cuts files at
 * byte offsets and a row group belongs to the split holding its midpoint;
 * cutting at row-group boundaries gives the same rows without reading a
 * group twice. Files are taken in name order so a run is reproducible.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ember/parquet.h"
#include "runtime/internal.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static char *join_path(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    char *s = malloc(la + lb + 2);
    if (!s)
        return NULL;
    memcpy(s, a, la);
    s[la] = '/';
    memcpy(s + la + 1, b, lb + 1);
    return s;
}

/* "file:/x/y/" -> "/x/y"; other schemes are kept (and will not exist). */
static char *local_path(const char *p) {
    if (strncmp(p, "file://", 7) == 0)
        p += 7;
    else if (strncmp(p, "file:", 5) == 0)
        p += 5;
    char *s = strdup(p);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        s[--n] = '\0';
    return s;
}

static const char *last_component(const char *p) {
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* The folder or file the scan reads (malloc'ed). */
static em_status scan_location(const em_plan_node *scan, const char *warehouse, char **out,
                               em_error *err) {
    *out = NULL;
    const em_plan_field *loc = em_plan_node_field(scan, EM_FIELD_LOCATION);
    const char *printed = loc && loc->n_paths > 0 ? loc->paths[0] : NULL;
    if (!printed)
        printed = scan->table_name;
    if (!printed)
        return EM_FAIL(err, EM_ERR_INVALID, "%s (%d): no Location and no table name", scan->name,
                       scan->id);
    if (loc && loc->location_normalized) {
        if (!warehouse)
            return EM_FAIL(err, EM_ERR_INVALID,
                           "%s (%d): Location names {warehouse_dir}/%s; give --warehouse DIR",
                           scan->name, scan->id, printed);
        *out = join_path(warehouse, printed);
        return *out ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    char *real = local_path(printed);
    if (!real)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    /* a partitioned table prints its first partition folder ("t/d=1, ... 59
     * entries"): the table is the folder above its col=value levels */
    char *slash;
    while ((slash = strrchr(real, '/')) != NULL && slash > real && strchr(slash + 1, '=') &&
           slash[1] != '=')
        *slash = '\0';
    if (warehouse) {
        char *in_wh = join_path(warehouse, last_component(real));
        if (!in_wh) {
            free(real);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        if (exists(in_wh) || !exists(real)) {
            free(real);
            *out = in_wh;
            return EM_OK;
        }
        free(in_wh);
    }
    *out = real;
    return EM_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Spark's file index (HadoopFSUtils.shouldFilterOutPathName): names starting
 * with '_' or '.' are not data (_SUCCESS, .crc files, _temporary folders),
 * nor files still being copied; every other file is, whatever its suffix. */
static bool is_hidden(const char *name) {
    size_t n = strlen(name);
    return name[0] == '.' || name[0] == '_' ||
           (n >= 10 && strcmp(name + n - 10, "._COPYING_") == 0);
}

typedef struct file_list {
    char **paths;
    int n, cap;
} file_list;

static em_status list_push(file_list *l, char *path, em_error *err) {
    if (!path)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory listing files");
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 16;
        char **nl = realloc(l->paths, sizeof *nl * (size_t)ncap);
        if (!nl) {
            free(path);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory listing files");
        }
        l->paths = nl;
        l->cap = ncap;
    }
    l->paths[l->n++] = path;
    return EM_OK;
}

/* The data files under dir, its subfolders included (Hive partition folders
 * `name=value`, as Spark lists them). Anything but a file or a folder (a
 * FIFO, a socket, a device) is refused without being opened. */
static em_status list_files(const char *who, const char *dir, int depth, file_list *l,
                            em_error *err) {
    if (depth > 64)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: folders nested deeper than 64 under %s", who,
                       dir);
    DIR *d = opendir(dir);
    if (!d)
        return EM_FAIL(err, EM_ERR_IO, "%s: cannot list %s: %s", who, dir, strerror(errno));
    em_status s = EM_OK;
    struct dirent *de;
    while (s == EM_OK && (de = readdir(d)) != NULL) {
        if (is_hidden(de->d_name))
            continue;
        char *path = join_path(dir, de->d_name);
        struct stat st;
        if (!path) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory listing %s", dir);
        } else if (stat(path, &st) != 0) {
            s = EM_FAIL(err, EM_ERR_IO, "%s: %s: %s", who, path, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            s = list_files(who, path, depth + 1, l, err);
        } else if (S_ISREG(st.st_mode)) {
            s = list_push(l, path, err);
            path = NULL;
        } else {
            s = EM_FAIL(err, EM_ERR_INVALID,
                        "%s: %s in the table folder is not a regular file (a FIFO, socket or "
                        "device); it is not read",
                        who, path);
        }
        free(path);
    }
    closedir(d);
    return s;
}

em_status em_scan_files(const em_plan_node *scan, const char *warehouse_dir, char ***paths,
                        int *n_paths, em_error *err) {
    *paths = NULL;
    *n_paths = 0;
    char *where = NULL;
    EM_TRY(scan_location(scan, warehouse_dir, &where, err));
    struct stat st;
    if (stat(where, &st) != 0) {
        em_status s = EM_FAIL(err, EM_ERR_IO, "%s (%d) %s: table folder %s: %s", scan->name,
                              scan->id, scan->table_name ? scan->table_name : "", where,
                              strerror(errno));
        free(where);
        return s;
    }
    file_list l = {0};
    em_status s;
    if (S_ISDIR(st.st_mode)) {
        char who[160];
        snprintf(who, sizeof who, "%s (%d)", scan->name, scan->id);
        s = list_files(who, where, 0, &l, err);
        free(where);
    } else if (S_ISREG(st.st_mode)) {
        s = list_push(&l, where, err);
    } else {
        s = EM_FAIL(err, EM_ERR_INVALID, "%s (%d): %s is not a regular file or a folder",
                    scan->name, scan->id, where);
        free(where);
    }
    if (s != EM_OK) {
        em_scan_files_free(l.paths, l.n);
        return s;
    }
    if (l.n > 1)
        qsort(l.paths, (size_t)l.n, sizeof *l.paths, cmp_str);
    *paths = l.paths;
    *n_paths = l.n;
    return EM_OK;
}

void em_scan_files_free(char **paths, int n_paths) {
    for (int i = 0; paths && i < n_paths; i++)
        free(paths[i]);
    free(paths);
}

/* ------------------------------------------------------------------ splits */

void em_rt_scan_plan_reset(rt_scan_plan *p) {
    for (int i = 0; i < p->n_parts; i++)
        free(p->parts[i].splits);
    free(p->parts);
    for (int f = 0; p->file_parts && f < p->n_files; f++) {
        for (int k = 0; k < p->file_parts[f].n; k++) {
            free(p->file_parts[f].names[k]);
            free(p->file_parts[f].values[k]);
        }
        free(p->file_parts[f].names);
        free(p->file_parts[f].values);
    }
    free(p->file_parts);
    em_scan_files_free(p->files, p->n_files);
    memset(p, 0, sizeof *p);
}

/* A row group, or a row range of one (row_end > 0: the file's rows
 * [row_start, row_end)). */
typedef struct rg_cost {
    int file;
    int rg;
    int64_t bytes;
    int64_t rows, first_row;
    int64_t row_start, row_end;
} rg_cost;

/* A row group is cut into row ranges of at least this many rows, so that a
 * range pays for its dropped lead-in rows many times over. */
#define EM_SPLIT_MIN_ROWS ((int64_t)32768)

static em_status add_split(rt_scan_part *part, const char *path, const rt_file_parts *fp,
                           const rg_cost *g, em_error *err) {
    int rg = g->rg;
    em_scan_split *last = part->n_splits ? &part->splits[part->n_splits - 1] : NULL;
    if (last && last->path == path && last->end_row_group == rg && last->row_end == 0 &&
        g->row_end == 0) {
        last->end_row_group = rg + 1;
        return EM_OK;
    }
    em_scan_split *ns = realloc(part->splits, sizeof *ns * (size_t)(part->n_splits + 1));
    if (!ns)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scan splits");
    part->splits = ns;
    ns[part->n_splits++] = (em_scan_split){.path = path,
                                           .first_row_group = rg,
                                           .end_row_group = rg + 1,
                                           .row_start = g->row_start,
                                           .row_end = g->row_end,
                                           .n_partition_values = fp->n,
                                           .partition_names = (const char *const *)fp->names,
                                           .partition_values = (const char *const *)fp->values};
    return EM_OK;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A partition folder's text as Spark writes it (ExternalCatalogUtils
 * escapes characters as %XX); malloc'ed. */
static char *unescape_path_name(const char *s, size_t n) {
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; out && i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hex_digit(s[i + 1])) >= 0 &&
            (lo = hex_digit(s[i + 2])) >= 0) {
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    if (out)
        out[k] = '\0';
    return out;
}

/* The `name=value` folders between the table folder root and a file. */
static em_status file_partitions(const char *root, const char *path, rt_file_parts *fp,
                                 em_error *err) {
    memset(fp, 0, sizeof *fp);
    size_t rl = strlen(root);
    if (strncmp(path, root, rl) != 0 || path[rl] != '/')
        return EM_OK; /* the table is one file */
    const char *p = path + rl + 1, *slash;
    while ((slash = strchr(p, '/')) != NULL) {
        const char *eq = memchr(p, '=', (size_t)(slash - p));
        if (eq && eq > p) {
            char **nn = realloc(fp->names, sizeof *nn * (size_t)(fp->n + 1));
            if (nn)
                fp->names = nn;
            char **nv = nn ? realloc(fp->values, sizeof *nv * (size_t)(fp->n + 1)) : NULL;
            if (nv)
                fp->values = nv;
            if (!nn || !nv)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading partition folders");
            char *name = unescape_path_name(p, (size_t)(eq - p));
            char *value = unescape_path_name(eq + 1, (size_t)(slash - eq - 1));
            if (value && strcmp(value, "__HIVE_DEFAULT_PARTITION__") == 0) {
                free(value);
                value = NULL; /* Spark's null partition value */
            } else if (!value) {
                free(name);
                name = NULL;
            }
            fp->names[fp->n] = name;
            fp->values[fp->n] = value;
            fp->n++;
            if (!name)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading partition folders");
        }
        p = slash + 1;
    }
    return EM_OK;
}

/* Spark never splits a row group, so a table stored as one large row group
 * is read by one task and the stage above it runs on one core. Ember's
 * runtime cuts a row group larger than the target into up to `threads` row
 * ranges of at least EM_SPLIT_MIN_ROWS rows each; each task reads its range
 * (whole pages before it are passed over undecoded). Rows keep their file
 * order within and across the ranges. */
static int64_t range_pieces(const rg_cost *g, int64_t target, int threads) {
    int64_t pieces = target > 0 ? (g->bytes + target - 1) / target : 1;
    if (pieces > threads)
        pieces = threads;
    if (pieces > g->rows / EM_SPLIT_MIN_ROWS)
        pieces = g->rows / EM_SPLIT_MIN_ROWS;
    return pieces;
}

static em_status cut_large_row_groups(rg_cost **rgs, int64_t *n_rgs, int64_t target, int threads,
                                      em_error *err) {
    int64_t n_out = 0;
    for (int64_t i = 0; i < *n_rgs; i++) {
        const rg_cost *g = &(*rgs)[i];
        int64_t pieces = range_pieces(g, target, threads);
        n_out += pieces > 1 ? pieces : 1;
    }
    if (n_out == *n_rgs)
        return EM_OK;
    rg_cost *out = malloc(sizeof *out * (size_t)n_out);
    if (!out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scan splits");
    int64_t k = 0;
    for (int64_t i = 0; i < *n_rgs; i++) {
        const rg_cost *g = &(*rgs)[i];
        int64_t pieces = range_pieces(g, target, threads);
        if (pieces <= 1) {
            out[k++] = *g;
            continue;
        }
        for (int64_t p = 0; p < pieces; p++) {
            rg_cost r = *g;
            r.row_start = g->first_row + g->rows * p / pieces;
            r.row_end = g->first_row + g->rows * (p + 1) / pieces;
            r.rows = r.row_end - r.row_start;
            r.bytes = g->bytes / pieces;
            out[k++] = r;
        }
    }
    free(*rgs);
    *rgs = out;
    *n_rgs = n_out;
    return EM_OK;
}

em_status em_rt_scan_plan_make(const em_plan_node *scan, const char *warehouse_dir, int threads,
                            int64_t max_partition_bytes, int64_t open_cost_bytes,
                            bool cut_row_groups, rt_scan_plan *out, em_error *err) {
    memset(out, 0, sizeof *out);
    EM_TRY(em_scan_files(scan, warehouse_dir, &out->files, &out->n_files, err));
    rg_cost *rgs = NULL;
    int64_t n_rgs = 0, cap = 0, total = 0;
    char *root = NULL;
    em_status s = scan_location(scan, warehouse_dir, &root, err);
    if (s == EM_OK &&
        !(out->file_parts = calloc((size_t)out->n_files + 1, sizeof *out->file_parts)))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scan splits");
    for (int f = 0; s == EM_OK && f < out->n_files; f++)
        s = file_partitions(root, out->files[f], &out->file_parts[f], err);
    free(root);
    for (int f = 0; s == EM_OK && f < out->n_files; f++) {
        em_pq_file *pf = NULL;
        s = em_pq_file_open(out->files[f], &pf, err);
        if (s != EM_OK) {
            em_error_prefix(err, "%s (%d)", scan->name, scan->id);
            break;
        }
        int ng = em_pq_file_num_row_groups(pf);
        int ncols = em_pq_file_schema(pf)->n_fields;
        total += open_cost_bytes;
        int64_t first_row = 0;
        for (int g = 0; s == EM_OK && g < ng; g++) {
            int64_t rows = em_pq_file_row_group_rows(pf, g);
            first_row += rows;
            if (rows == 0)
                continue;
            int64_t bytes = 0;
            for (int c = 0; s == EM_OK && c < ncols; c++) {
                em_pq_chunk_info ci;
                s = em_pq_file_chunk_info(pf, g, c, &ci, err);
                bytes += ci.total_compressed_size;
            }
            if (s != EM_OK)
                break;
            if (n_rgs == cap) {
                cap = cap ? cap * 2 : 64;
                rg_cost *nr = realloc(rgs, sizeof *nr * (size_t)cap);
                if (!nr) {
                    s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scan splits");
                    break;
                }
                rgs = nr;
            }
            rgs[n_rgs++] = (rg_cost){f, g, bytes, rows, first_row - rows, 0, 0};
            total += bytes;
        }
        em_pq_file_close(pf);
    }
    if (s == EM_OK && n_rgs > 0) {
        int64_t per_core = total / (threads > 0 ? threads : 1);
        int64_t target = per_core > open_cost_bytes ? per_core : open_cost_bytes;
        if (target > max_partition_bytes)
            target = max_partition_bytes;
        if (cut_row_groups)
            s = cut_large_row_groups(&rgs, &n_rgs, target, threads, err);
        /* at most one partition per row group or range */
        out->parts = s == EM_OK ? calloc((size_t)n_rgs, sizeof *out->parts) : NULL;
        if (s == EM_OK && !out->parts)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning scan splits");
        int64_t cur = 0;
        int prev_file = -1;
        for (int64_t i = 0; s == EM_OK && i < n_rgs; i++) {
            int64_t cost = rgs[i].bytes + (rgs[i].file != prev_file ? open_cost_bytes : 0);
            if (out->n_parts == 0 || (cur > 0 && cur + cost > target)) {
                out->n_parts++;
                cur = 0;
                cost = rgs[i].bytes + open_cost_bytes;
            }
            cur += cost;
            prev_file = rgs[i].file;
            s = add_split(&out->parts[out->n_parts - 1], out->files[rgs[i].file],
                          &out->file_parts[rgs[i].file], &rgs[i], err);
        }
    }
    out->total_bytes = total;
    free(rgs);
    if (s != EM_OK)
        em_rt_scan_plan_reset(out);
    return s;
}

/* ------------------------------------------------------------------ retype */

typedef struct rt_retype_entry {
    const em_plan_node *scan; /* NULL: a warehouse table, named by table */
    char *table;
    em_schema schema; /* the first file's, or empty */
} rt_retype_entry;

struct em_retype_ctx {
    char *warehouse;
    bool scans;
    bool tables_listed;
    int n;
    rt_retype_entry *entries;
    char error[EM_ERROR_MSG_CAP];
};

em_status em_retype_ctx_create(const char *warehouse_dir, bool scans, em_retype_ctx **out,
                               em_error *err) {
    *out = calloc(1, sizeof **out);
    if (!*out || (warehouse_dir && !((*out)->warehouse = strdup(warehouse_dir)))) {
        free(*out);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    (*out)->scans = scans;
    return EM_OK;
}

void em_retype_ctx_destroy(em_retype_ctx *ctx) {
    if (!ctx)
        return;
    for (int i = 0; i < ctx->n; i++) {
        em_schema_reset(&ctx->entries[i].schema);
        free(ctx->entries[i].table);
    }
    free(ctx->entries);
    free(ctx->warehouse);
    free(ctx);
}

const char *em_retype_ctx_error(const em_retype_ctx *ctx) {
    return ctx && ctx->error[0] ? ctx->error : NULL;
}

static rt_retype_entry *new_entry(em_retype_ctx *ctx) {
    rt_retype_entry *ne = realloc(ctx->entries, sizeof *ne * (size_t)(ctx->n + 1));
    if (!ne)
        return NULL;
    ctx->entries = ne;
    rt_retype_entry *e = &ne[ctx->n++];
    memset(e, 0, sizeof *e);
    return e;
}

/* The first file's schema, or an empty one (the error is remembered). */
static void load_schema(em_retype_ctx *ctx, rt_retype_entry *e, char **files, int n, em_status s,
                        em_error *err) {
    if (s == EM_OK && n > 0) {
        em_pq_file *f = NULL;
        s = em_pq_file_open(files[0], &f, err);
        if (s == EM_OK)
            s = em_schema_copy(&e->schema, em_pq_file_schema(f), err);
        em_pq_file_close(f);
    }
    em_scan_files_free(files, n);
    if (s != EM_OK && !ctx->error[0])
        snprintf(ctx->error, sizeof ctx->error, "%s", err->msg);
}

static const em_schema *retype_schema(em_retype_ctx *ctx, const em_plan_node *scan) {
    for (int i = 0; i < ctx->n; i++)
        if (ctx->entries[i].scan == scan)
            return &ctx->entries[i].schema;
    rt_retype_entry *e = new_entry(ctx);
    if (!e)
        return NULL;
    e->scan = scan;
    em_error err = {0};
    char **files = NULL;
    int n = 0;
    em_status s = em_scan_files(scan, ctx->warehouse, &files, &n, &err);
    load_schema(ctx, e, files, n, s, &err);
    return &e->schema;
}

/* Every table folder of the warehouse, with its first file's schema. */
static void list_tables(em_retype_ctx *ctx) {
    ctx->tables_listed = true;
    DIR *d = ctx->warehouse ? opendir(ctx->warehouse) : NULL;
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || de->d_name[0] == '_')
            continue;
        char *dir = join_path(ctx->warehouse, de->d_name);
        if (!dir)
            break;
        if (!is_dir(dir)) {
            free(dir);
            continue;
        }
        rt_retype_entry *e = new_entry(ctx);
        if (!e || !(e->table = strdup(de->d_name))) {
            free(dir);
            break;
        }
        /* the folder's data files, as a scan of it would list them */
        file_list fl = {0};
        em_error lerr = {0};
        char *first = NULL;
        if (list_files(de->d_name, dir, 0, &fl, &lerr) == EM_OK && fl.n > 0) {
            qsort(fl.paths, (size_t)fl.n, sizeof *fl.paths, cmp_str);
            first = strdup(fl.paths[0]);
        }
        em_scan_files_free(fl.paths, fl.n);
        char **files = NULL;
        int n = 0;
        if (first && (files = malloc(sizeof *files))) {
            files[0] = first;
            first = NULL;
            n = 1;
        }
        free(first);
        free(dir);
        em_error err = {0};
        load_schema(ctx, e, files, n, EM_OK, &err);
    }
    closedir(d);
}

static bool local_table_type(em_retype_ctx *ctx, const char *column, em_type *type) {
    if (!ctx->tables_listed)
        list_tables(ctx);
    int found = 0;
    for (int i = 0; i < ctx->n; i++) {
        const em_schema *sc = &ctx->entries[i].schema;
        if (ctx->entries[i].scan)
            continue;
        for (int k = 0; k < sc->n_fields; k++)
            if (sc->fields[k].name && strcasecmp(sc->fields[k].name, column) == 0) {
                if (found && !em_type_equal(*type, sc->fields[k].type))
                    return false; /* ambiguous */
                *type = sc->fields[k].type;
                found++;
                break;
            }
    }
    return found > 0;
}

/* Spark's inference of a partition column's type from its folder values
 * (PartitioningUtils.inferPartitionColumnValue, widened over the values):
 * int, bigint, double, date, else string; a null value fits any. */
typedef enum { PT_NONE, PT_INT, PT_LONG, PT_DOUBLE, PT_DATE, PT_STRING } part_type;

static part_type value_type(const char *v) {
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (*v && !*end && !errno)
        return i >= INT32_MIN && i <= INT32_MAX ? PT_INT : PT_LONG;
    errno = 0;
    (void)strtod(v, &end);
    if (*v && !*end && !errno && strspn(v, "0123456789+-.eE") == strlen(v))
        return PT_DOUBLE;
    int y, m, d, n = 0;
    if (sscanf(v, "%4d-%2d-%2d%n", &y, &m, &d, &n) == 3 && n == (int)strlen(v) && m >= 1 &&
        m <= 12 && d >= 1 && d <= 31)
        return PT_DATE;
    return PT_STRING;
}

static part_type widen(part_type a, part_type b) {
    if (a == PT_NONE || a == b)
        return b;
    if (b == PT_NONE)
        return a;
    bool na = a == PT_INT || a == PT_LONG || a == PT_DOUBLE;
    bool nb = b == PT_INT || b == PT_LONG || b == PT_DOUBLE;
    return na && nb ? (a > b ? a : b) : PT_STRING;
}

/* A scan column its ReadSchema lacks is a partition column: typed from the
 * values of its `column=value` folders. */
static bool partition_type(const em_plan_node *scan, const char *warehouse, const char *column,
                           em_type *type) {
    const em_plan_field *rs = em_plan_node_field(scan, EM_FIELD_READ_SCHEMA);
    for (int k = 0; rs && k < rs->n_schema; k++)
        if (rs->schema[k].name && strcasecmp(rs->schema[k].name, column) == 0)
            return false;
    char **files = NULL, *root = NULL;
    int n = 0;
    em_error err = {0};
    part_type t = PT_NONE;
    bool seen = false;
    if (em_scan_files(scan, warehouse, &files, &n, &err) == EM_OK &&
        scan_location(scan, warehouse, &root, &err) == EM_OK) {
        for (int f = 0; f < n; f++) {
            rt_file_parts fp;
            if (file_partitions(root, files[f], &fp, &err) != EM_OK)
                fp.n = 0;
            for (int k = 0; k < fp.n; k++) {
                if (fp.names[k] && strcasecmp(fp.names[k], column) == 0) {
                    seen = true;
                    if (fp.values[k])
                        t = widen(t, value_type(fp.values[k]));
                }
                free(fp.names[k]);
                free(fp.values[k]);
            }
            free(fp.names);
            free(fp.values);
        }
    }
    free(root);
    em_scan_files_free(files, n);
    if (!seen)
        return false;
    static const em_type_id ids[] = {[PT_NONE] = EM_TYPE_STRING, [PT_INT] = EM_TYPE_INT,
                                     [PT_LONG] = EM_TYPE_LONG,   [PT_DOUBLE] = EM_TYPE_DOUBLE,
                                     [PT_DATE] = EM_TYPE_DATE,   [PT_STRING] = EM_TYPE_STRING};
    *type = em_type_make(ids[t]);
    return true;
}

bool em_retype_column_type(void *vctx, const em_plan_node *leaf, const char *column,
                           em_type *type) {
    em_retype_ctx *ctx = vctx;
    if (!ctx || !leaf || !column)
        return false;
    if (leaf->kind == EM_NODE_LOCAL_TABLE_SCAN)
        return local_table_type(ctx, column, type);
    if (leaf->kind == EM_NODE_SCAN && partition_type(leaf, ctx->warehouse, column, type))
        return true;
    if (leaf->kind != EM_NODE_SCAN || !ctx->scans)
        return false;
    const em_schema *sc = retype_schema(ctx, leaf);
    if (!sc)
        return false;
    for (int i = 0; i < sc->n_fields; i++)
        if (sc->fields[i].name && strcasecmp(sc->fields[i].name, column) == 0) {
            *type = sc->fields[i].type;
            return true;
        }
    return false;
}
