/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registered keys and the per-class families.
 *
 * The key table is a constant array in documentation order: Ember's own
 * keys first, grouped by area, then the Spark keys Ember reads. Lookup is a
 * linear scan over names and aliases; the table has a few dozen entries and
 * keys are resolved when set, not per row.
 *
 * Family members live in one growable array per family, kept sorted by
 * class name so listings and docs are stable whatever the registration
 * order. A mutex guards them because the overrides layer may register
 * classes while a session reads its switches. The members never shrink and
 * their names are never freed, so a borrowed class name stays valid for
 * the life of the process; built-in members are added once, on first use.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conf/internal.h"

#define MIB ((int64_t)1 << 20)

/* clang-format off */
static const em_conf_key keys[] = {
    /* --- SQL: what runs natively ------------------------------------------------------- */
    {.name = "spark.ember.sql.enabled", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "true",
     .doc = "Run supported operators natively. false runs the whole plan on the reference "
            "row engine (Spark's part), which is also the oracle the native engine is "
            "tested against."},
    {.name = "spark.ember.sql.explain", .type = EM_CONF_ENUM, .scope = EM_CONF_QUERY,
     .default_value = "NONE", .values = {"NONE", "NOT_ON_ACCELERATOR", "ALL"},
     .doc = "Print the override report when a query is planned: NONE prints nothing, "
            "NOT_ON_ACCELERATOR the nodes and expressions that cannot run natively with "
            "every reason, ALL every node and expression. Values are case-insensitive."},
    {.name = "spark.ember.sql.incompatibleOps.enabled", .type = EM_CONF_BOOL,
     .scope = EM_CONF_QUERY, .default_value = "false",
     .doc = "Allow native operators and expressions marked incompatible: their results may "
            "differ slightly from Spark's (e.g. floating-point aggregation order). Off by "
            "default, unlike recent spark-rapids releases: Ember's answers equal Spark's "
            "unless asked otherwise, and a class's own switch set to true also enables it."},
    {.name = "spark.ember.sql.concurrentNativeTasks", .type = EM_CONF_INT,
     .scope = EM_CONF_STARTUP, .default_value = "0", .ranged = true, .lo = 0, .hi = 1 << 20,
     .doc = "How many tasks may hold the native side at once (the accelerator task "
            "semaphore, acquired where data enters native execution and released where it "
            "leaves and at task end). 0: as many as there are worker threads."},
    {.name = "spark.ember.sql.retype", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "false",
     .doc = "Take the column types from the Parquet files rather than from the plan text "
            "and re-infer the plan's types from them (the CLI's --retype), so a plan "
            "printed for one schema (e.g. DECIMAL(10,0) money) runs on data of another "
            "(DECIMAL(15,2))."},
    {.name = "spark.ember.sql.emptyTableFolders", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "false",
     .doc = "ember run: read a table folder that holds no data file as an empty table, as "
            "Spark reads it. Off, such a folder fails the query naming it, so that a wrong "
            "--warehouse or a table not written yet is not an empty answer."},
    {.name = "spark.ember.sql.runtimeFilter.enabled", .type = EM_CONF_BOOL,
     .scope = EM_CONF_QUERY, .default_value = "true",
     .doc = "Let a scan drop the rows an equi-join above it would never match, by the keys "
            "of a broadcast on the join's other side (integral and date keys) whose rows went "
            "through a selective filter. ember run: once "
            "the broadcast is built, the scan's stage waiting for it when it did not already. "
            "In Spark: only when set explicitly, and only when the Ember node holding the "
            "scan reads that broadcast itself. A "
            "filter that keeps most rows of a task switches itself off."},
    {.name = "spark.ember.sql.test.enabled", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "false", .aliases = {"spark.rapids.sql.test.enabled"},
     .doc = "Test mode: fail the query when a node falls back to the row engine unless its "
            "class is listed in spark.ember.sql.test.allowedNonNative."},
    {.name = "spark.ember.sql.test.allowedNonNative", .type = EM_CONF_STRING,
     .scope = EM_CONF_QUERY, .default_value = "",
     .aliases = {"spark.rapids.sql.test.allowedNonGpu"},
     .doc = "Comma-separated Spark class names (e.g. SortMergeJoinExec) allowed to fall back "
            "in test mode."},

    /* --- LORE: operator ids, dump and replay -------------------------------------------- */
    {.name = "spark.ember.sql.lore.tag.enabled", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "true", .aliases = {"spark.rapids.sql.lore.tag.enabled"},
     .doc = "Give every native operator a LORE id (post-order over the final plan, from 0), "
            "printed as [loreId=N] by explain and the metrics."},
    {.name = "spark.ember.sql.lore.idBase", .type = EM_CONF_INT, .scope = EM_CONF_QUERY,
     .default_value = "0", .ranged = true, .lo = 0, .hi = 1 << 30,
     .doc = "The LORE id of the plan's first tagged operator. The Spark plugin sets it for "
            "each plan it is given within one query (AQE plans a query stage by stage) to "
            "the number of ids given so far, so that the ids of a query are unique; "
            "nothing else needs it."},
    {.name = "spark.ember.sql.lore.idsToDump", .type = EM_CONF_STRING, .scope = EM_CONF_QUERY,
     .aliases = {"spark.rapids.sql.lore.idsToDump"}, .default_note = "none",
     .doc = "Operators whose input to dump: comma-separated ID[parts], parts being "
            "space-separated partition numbers, half-open ranges A-B or * for all, e.g. "
            "`1[0 4-6 7], 2[*]`. Requires spark.ember.sql.lore.dumpPath."},
    {.name = "spark.ember.sql.lore.dumpPath", .type = EM_CONF_STRING, .scope = EM_CONF_QUERY,
     .aliases = {"spark.rapids.sql.lore.dumpPath"}, .default_note = "none",
     .doc = "Directory the LORE dump is written to (loreId-N/...); created when missing, "
            "refused when it exists and is not empty."},
    {.name = "spark.ember.sql.lore.dumpOutput", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .default_value = "false",
     .doc = "Also dump each selected operator's output, so a replay can check that it "
            "reproduces it exactly."},
    {.name = "spark.ember.sql.lore.columns", .type = EM_CONF_STRING, .scope = EM_CONF_QUERY,
     .default_note = "all columns",
     .doc = "Comma-separated column names: dump only these columns of the selected "
            "operators' inputs and outputs."},

    /* --- Stage-level resource profiles ---------------------------------------------------- */
    {.name = "spark.ember.autoAdjustStageResource.enabled", .type = EM_CONF_BOOL,
     .scope = EM_CONF_QUERY, .default_value = "false",
     .aliases = {"spark.gluten.auto.adjustStageResource.enabled"},
     .doc = "Derive each stage's resource profile from the default one when the stage falls "
            "back to the row engine or reads a heavy shuffle, to avoid running out of "
            "memory."},
    {.name = "spark.ember.autoAdjustStageResource.heap.ratio", .type = EM_CONF_DOUBLE,
     .scope = EM_CONF_QUERY, .default_value = "2.0", .ranged = true, .lo = 0, .hi = 1e6,
     .aliases = {"spark.gluten.auto.adjustStageResources.heap.ratio"},
     .doc = "An adjusted stage's row (heap) memory is the default profile's times this "
            "ratio."},
    {.name = "spark.ember.autoAdjustStageResource.offHeap.ratio", .type = EM_CONF_DOUBLE,
     .scope = EM_CONF_QUERY, .default_value = "0.5", .ranged = true, .lo = 0, .hi = 1e6,
     .aliases = {"spark.gluten.auto.adjustStageResources.offheap.ratio"},
     .doc = "An adjusted stage's native (off-heap) memory is the default profile's times this "
            "ratio."},
    {.name = "spark.ember.autoAdjustStageResource.fallenNode.ratio.threshold",
     .type = EM_CONF_DOUBLE, .scope = EM_CONF_QUERY, .default_value = "0.5", .ranged = true,
     .lo = 0, .hi = 1,
     .aliases = {"spark.gluten.auto.adjustStageResources.fallenNode.ratio.threshold"},
     .doc = "A stage whose share of fallback nodes is above this threshold is adjusted."},
    {.name = "spark.ember.autoAdjustStageResource.shuffleComplexity.threshold",
     .type = EM_CONF_LONG, .scope = EM_CONF_QUERY, .default_value = "10000000", .ranged = true,
     .lo = 1, .hi = 9.2e18,
     .doc = "A stage whose shuffle reads hold at least this many map statuses (the sum of "
            "mappers x reducers over its shuffle reads) is adjusted: the statuses are row "
            "(heap) memory."},

    /* --- Runtime ------------------------------------------------------------------------- */
    {.name = "spark.ember.runtime.threads", .type = EM_CONF_INT, .scope = EM_CONF_STARTUP,
     .default_value = "0", .ranged = true, .lo = 0, .hi = 1024,
     .doc = "Worker threads of the local runtime (the CLI's --threads). 0: the number of "
            "online cores."},
    {.name = "spark.ember.memory.budget", .type = EM_CONF_BYTES, .scope = EM_CONF_QUERY,
     .unit = 1, .default_note = "unlimited",
     .doc = "Memory budget of one query (the CLI's --memory): sorts, aggregates and shuffles "
            "spill, the result streams to the output, and a broadcast that does not fit is "
            "planned again as shuffled hash joins; what still does not fit fails with an "
            "out-of-memory error naming the stage."},

    /* --- the Spark plugin --------------------------------------------------------------- */
    {.name = "spark.ember.native.libraryPath", .type = EM_CONF_STRING, .scope = EM_CONF_STARTUP,
     .default_note = "the copy inside the plugin jar",
     .doc = "Path of libember_jni.so for the Spark plugin to load instead of the one its jar "
            "carries (also the EMBER_NATIVE_LIB environment variable)."},
    {.name = "spark.ember.spark.broadcastCache", .type = EM_CONF_BYTES, .scope = EM_CONF_STARTUP,
     .unit = 1, .default_value = "1g",
     .doc = "Bytes of broadcast relations an executor keeps in C for the Spark plugin after "
            "the tasks that read them end (each broadcast crosses into C once per executor "
            "and its hash tables are built once); the least recently used go first."},
    {.name = "spark.ember.spark.versionCheck", .type = EM_CONF_BOOL, .scope = EM_CONF_STARTUP,
     .default_value = "true",
     .doc = "The Spark plugin refuses to start on a Spark line its jar was not built for, "
            "naming the running version and the supported ones; false tries anyway (at the "
            "risk of failures where Spark's internal classes changed)."},
    {.name = "spark.ember.spark.shuffleFiles", .type = EM_CONF_BOOL, .scope = EM_CONF_STARTUP,
     .default_value = "true",
     .doc = "Whether the Spark plugin's map tasks write their shuffle data files from C "
            "(each reduce partition's blocks in Spark's layout, not compressed again: they are "
            "compact already) when Spark's sort-based shuffle runs on its local-disk files "
            "without I/O encryption or push-based shuffle; false: Spark's shuffle writer and "
            "codec take the blocks."},
    {.name = "spark.ember.spark.batchRows", .type = EM_CONF_INT, .scope = EM_CONF_QUERY,
     .default_value = "2048", .ranged = true, .lo = 1, .hi = 1 << 20,
     .doc = "Rows per Arrow batch when the Spark plugin hands Spark's rows (a shuffle's "
            "reduce side, a broadcast, an operator Spark runs) to an Ember node."},

    /* --- Spark's keys Ember reads ------------------------------------------------------ */
    {.name = "spark.sql.ansi.enabled", .type = EM_CONF_BOOL, .scope = EM_CONF_QUERY,
     .spark_key = true,
     .default_note = "version default: false up to Spark 3.5, true from Spark 4.0",
     .doc = "ANSI mode: overflow, invalid casts and division by zero raise errors instead of "
            "returning null or wrapping."},
    {.name = "spark.sql.shuffle.partitions", .type = EM_CONF_INT, .scope = EM_CONF_QUERY,
     .default_value = "200", .ranged = true, .lo = 1, .hi = 2147483647, .spark_key = true,
     .doc = "Partitions of a shuffle whose plan does not give their number."},
    {.name = "spark.sql.session.timeZone", .type = EM_CONF_STRING, .scope = EM_CONF_QUERY,
     .spark_key = true, .default_note = "the JVM's time zone (Ember: UTC)",
     .doc = "Session time zone for timestamp conversions: a region id (America/Los_Angeles) "
            "or an offset (+01:00)."},
    {.name = "spark.sql.files.maxPartitionBytes", .type = EM_CONF_BYTES, .scope = EM_CONF_QUERY,
     .default_value = "128m", .unit = 1, .spark_key = true, .ranged = true, .lo = 1,
     .hi = 9.2e18,
     .doc = "Most bytes of files packed into one scan partition."},
    {.name = "spark.sql.files.openCostInBytes", .type = EM_CONF_BYTES, .scope = EM_CONF_QUERY,
     .default_value = "4m", .unit = 1, .spark_key = true,
     .doc = "Estimated cost of opening a file, in bytes, when packing files into scan "
            "partitions."},
    {.name = "spark.sql.decimalOperations.allowPrecisionLoss", .type = EM_CONF_BOOL,
     .scope = EM_CONF_QUERY, .default_value = "true", .spark_key = true,
     .doc = "When a decimal result type would exceed precision 38, reduce its scale (at least "
            "6) instead of returning null or failing."},
    {.name = "spark.executor.memory", .type = EM_CONF_BYTES, .scope = EM_CONF_STARTUP,
     .default_value = "1g", .unit = MIB, .spark_key = true,
     .doc = "Executor heap: the row engine's memory in the default resource profile. A bare "
            "number is in MiB."},
    {.name = "spark.memory.offHeap.size", .type = EM_CONF_BYTES, .scope = EM_CONF_STARTUP,
     .default_value = "0", .unit = 1, .spark_key = true,
     .doc = "Off-heap memory: the native engine's pool in the default resource profile."},
    {.name = "spark.executor.cores", .type = EM_CONF_INT, .scope = EM_CONF_STARTUP,
     .default_value = "1", .ranged = true, .lo = 1, .hi = 1 << 20, .spark_key = true,
     .doc = "Cores per executor; with spark.task.cpus, the task slots of the default "
            "resource profile. Spark's default is 1 on YARN and Kubernetes and all the "
            "worker's cores in standalone mode; Ember assumes 1 when unset."},
    {.name = "spark.task.cpus", .type = EM_CONF_INT, .scope = EM_CONF_STARTUP,
     .default_value = "1", .ranged = true, .lo = 1, .hi = 1 << 20, .spark_key = true,
     .doc = "Cores each task takes."},
    {.name = "spark.local.dir", .type = EM_CONF_STRING, .scope = EM_CONF_STARTUP,
     .spark_key = true, .default_note = "the system temp dir ($TMPDIR, else /tmp)",
     .doc = "Scratch space. ember run makes each query's shuffle spill folder in it "
            "(removed with the query); it must be a writable directory. Spark spreads files "
            "over a comma-separated list; Ember uses the first directory. Sort and hash "
            "aggregate spill files go there too."},
};
/* clang-format on */

#define N_KEYS (sizeof keys / sizeof keys[0])

size_t em_conf_n_keys(void) { return N_KEYS; }

const em_conf_key *em_conf_key_at(size_t i) { return i < N_KEYS ? &keys[i] : NULL; }

const em_conf_key *em_conf_lookup(const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (!strcmp(keys[i].name, name))
            return &keys[i];
        for (int a = 0; a < EM_CONF_MAX_ALIASES && keys[i].aliases[a]; a++)
            if (!strcmp(keys[i].aliases[a], name))
                return &keys[i];
    }
    return NULL;
}

const char *em_conf_type_name(em_conf_type t) {
    switch (t) {
    case EM_CONF_BOOL:
        return "bool";
    case EM_CONF_INT:
        return "int";
    case EM_CONF_LONG:
        return "long";
    case EM_CONF_DOUBLE:
        return "double";
    case EM_CONF_BYTES:
        return "bytes";
    case EM_CONF_STRING:
        return "string";
    case EM_CONF_ENUM:
        return "enum";
    }
    return "?";
}

const char *em_conf_scope_name(em_conf_scope s) {
    return s == EM_CONF_STARTUP ? "startup" : "query";
}

/* --- families --- */

static const em_conf_family families[EM_CONF_FAMILY_COUNT_] = {
    {"spark.ember.sql.exec.", "spark.rapids.sql.exec.",
     "Enable the native implementation of one Spark physical operator, named "
     "by its class "
     "(e.g. FilterExec). false runs that operator on the row engine, with "
     "transitions around "
     "it."},
    {"spark.ember.sql.expression.", "spark.rapids.sql.expression.",
     "Enable the native implementation of one Spark expression, named by its "
     "class (e.g. "
     "Add). false makes every operator using it fall back to the row engine."},
};

/* The execs the operator layer builds today (src/ops/build.c) and the expressions the
 * evaluator compiles (src/expr), by Spark class name: every class with a native support
 * rule in src/overrides/rules.c (test_overrides checks that they agree), so the catalog
 * is the same whether or not the overrides registered their notes. */
static const char *const builtin_execs[] = {
    "FileSourceScanExec",
    "LocalTableScanExec",
    "FilterExec",
    "ProjectExec",
    "HashAggregateExec",
    "SortAggregateExec",
    "ObjectHashAggregateExec",
    "SortExec",
    "TakeOrderedAndProjectExec",
    "CollectLimitExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    "ExpandExec",
    "WindowExec",
    "WindowGroupLimitExec",
    "UnionExec",
    "ShuffleExchangeExec",
    "BroadcastExchangeExec",
    "BroadcastHashJoinExec",
    "ShuffledHashJoinExec",
    "SortMergeJoinExec",
    "BroadcastNestedLoopJoinExec",
    "CartesianProductExec",
};

/* clang-format off */
static const char *const builtin_exprs[] = {
    /* references, literals, structure */
    "Alias", "AttributeReference", "Literal", "ScalarSubquery", "DynamicPruningExpression",
    "KnownFloatingPointNormalized", "KnownNotNull", "PromotePrecision", "CheckOverflow",
    "MakeDecimal", "UnscaledValue", "Cast", "BoundReference", "SortOrder", "GetStructField",
    "InSubqueryExec",
    /* arithmetic and bitwise */
    "Add", "Subtract", "Multiply", "Divide", "Remainder", "IntegralDivide", "Pmod",
    "UnaryMinus", "Abs", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "ShiftLeft", "ShiftRight",
    "Floor", "Ceil", "Round", "Sqrt", "Exp", "Log", "Pow", "IsNaN", "NormalizeNaNAndZero",
    /* predicates and conditionals */
    "EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual", "GreaterThan",
    "GreaterThanOrEqual", "And", "Or", "Not", "In", "InSet", "IsNull", "IsNotNull", "Like",
    "CaseWhen", "If", "Coalesce",
    /* strings and dates */
    "Substring", "Concat", "Upper", "Lower", "StaticInvoke", "Length", "StringTrim", "StringTrimLeft",
    "StringTrimRight", "StartsWith", "EndsWith", "Contains", "Year", "Month", "DayOfMonth",
    "Quarter", "Hour", "Minute", "Second", "DateAdd", "DateSub", "DateDiff",
    /* aggregates */
    "AggregateExpression", "Sum", "Average", "Count", "Min", "Max", "First", "Last",
    "StddevSamp", "StddevPop", "VarianceSamp", "VariancePop",
    /* windows */
    "WindowExpression", "RowNumber", "Rank", "DenseRank", "PercentRank", "CumeDist", "NTile",
    "Lag", "Lead", "NthValue",
};
/* clang-format on */

typedef struct member {
    char *name; /* owned, never freed: callers borrow it for the process's life */
    bool default_enabled;
    char *note; /* owned, may be NULL; replaced on re-registration */
} member;

typedef struct member_list {
    member *items;
    size_t n, cap;
} member_list;

static member_list members[EM_CONF_FAMILY_COUNT_];
static pthread_mutex_t members_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static bool builtins_failed;

const em_conf_family *em_conf_family_get(em_conf_family_id fam) {
    return (unsigned)fam < EM_CONF_FAMILY_COUNT_ ? &families[fam] : NULL;
}

static bool family_valid_class(const char *s) {
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s == '.' || *s == '=' || *s == ' ' || *s == '\t' || *s == '\n')
            return false;
    return true;
}

/* Inserts or updates under the lock; returns false on out-of-memory. */
static bool family_put(member_list *l, const char *name, bool def, const char *note) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(l->items[mid].name, name);
        if (c == 0) {
            char *nn = note ? strdup(note) : NULL;
            if (note && !nn)
                return false;
            free(l->items[mid].note);
            l->items[mid].note = nn;
            l->items[mid].default_enabled = def;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        member *p = realloc(l->items, cap * sizeof *p);
        if (!p)
            return false;
        l->items = p;
        l->cap = cap;
    }
    member m = {strdup(name), def, note ? strdup(note) : NULL};
    if (!m.name || (note && !m.note)) {
        free(m.name);
        free(m.note);
        return false;
    }
    memmove(&l->items[lo + 1], &l->items[lo], (l->n - lo) * sizeof *l->items);
    l->items[lo] = m;
    l->n++;
    return true;
}

static void add_builtins(void) {
    pthread_mutex_lock(&members_lock);
    for (size_t i = 0; i < sizeof builtin_execs / sizeof builtin_execs[0]; i++)
        if (!family_put(&members[EM_CONF_FAMILY_EXEC], builtin_execs[i], true, NULL))
            builtins_failed = true;
    for (size_t i = 0; i < sizeof builtin_exprs / sizeof builtin_exprs[0]; i++)
        if (!family_put(&members[EM_CONF_FAMILY_EXPRESSION], builtin_exprs[i], true, NULL))
            builtins_failed = true;
    pthread_mutex_unlock(&members_lock);
}

static void ensure_builtins(void) { pthread_once(&builtins_once, add_builtins); }

em_status em_conf_family_register(em_conf_family_id fam, const char *class_name,
                                  bool default_enabled, const char *note, em_error *err) {
    if ((unsigned)fam >= EM_CONF_FAMILY_COUNT_)
        return EM_FAIL(err, EM_ERR_INVALID, "config family %d does not exist", (int)fam);
    if (!family_valid_class(class_name))
        return EM_FAIL(err, EM_ERR_INVALID,
                       "config family %s*: '%s' is not a class name (empty, or has "
                       "'.', '=' or "
                       "blanks)",
                       families[fam].prefix, class_name ? class_name : "(null)");
    ensure_builtins();
    pthread_mutex_lock(&members_lock);
    bool ok = family_put(&members[fam], class_name, default_enabled, note);
    pthread_mutex_unlock(&members_lock);
    if (!ok)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory registering %s%s", families[fam].prefix,
                       class_name);
    return EM_OK;
}

size_t em_conf_family_n_members(em_conf_family_id fam) {
    if ((unsigned)fam >= EM_CONF_FAMILY_COUNT_)
        return 0;
    ensure_builtins();
    pthread_mutex_lock(&members_lock);
    size_t n = members[fam].n;
    pthread_mutex_unlock(&members_lock);
    return n;
}

bool em_conf_family_member(em_conf_family_id fam, size_t i, const char **class_name,
                           bool *default_enabled, const char **note) {
    if ((unsigned)fam >= EM_CONF_FAMILY_COUNT_)
        return false;
    ensure_builtins();
    pthread_mutex_lock(&members_lock);
    bool ok = i < members[fam].n;
    if (ok) {
        if (class_name)
            *class_name = members[fam].items[i].name;
        if (default_enabled)
            *default_enabled = members[fam].items[i].default_enabled;
        if (note)
            *note = members[fam].items[i].note;
    }
    pthread_mutex_unlock(&members_lock);
    return ok;
}

bool em_conf_family_find(const char *key, em_conf_family_id *fam, const char **class_name,
                      bool *default_enabled, bool *is_member) {
    for (int f = 0; f < EM_CONF_FAMILY_COUNT_; f++) {
        const char *rest = NULL;
        size_t pl = strlen(families[f].prefix), al = strlen(families[f].alias_prefix);
        if (!strncmp(key, families[f].prefix, pl))
            rest = key + pl;
        else if (!strncmp(key, families[f].alias_prefix, al))
            rest = key + al;
        if (!rest)
            continue;
        *fam = (em_conf_family_id)f;
        *class_name = rest;
        *is_member = false;
        ensure_builtins();
        pthread_mutex_lock(&members_lock);
        const member_list *l = &members[f];
        for (size_t i = 0; i < l->n; i++)
            if (!strcmp(l->items[i].name, rest)) {
                *class_name = l->items[i].name;
                *default_enabled = l->items[i].default_enabled;
                *is_member = true;
                break;
            }
        pthread_mutex_unlock(&members_lock);
        return true;
    }
    return false;
}

bool em_conf_builtins_failed(void) {
    ensure_builtins();
    return builtins_failed;
}
