/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Overrides: decide, node by node, what runs natively and what falls back to
 * the reference row engine, and say why (spark-rapids' GpuOverrides).
 *
 * Every node kind and every expression has a support rule: the Spark class
 * it stands for, its enabling config (spark.ember.sql.exec.<Class> /
 * spark.ember.sql.expression.<Class>, rapids spellings as aliases), the
 * input and output types it accepts, rule-specific checks, and whether it is
 * incompatible (results may differ slightly from Spark's; gated by
 * spark.ember.sql.incompatibleOps.enabled). A node is native only when its
 * rule, its config and every expression it holds are supported; otherwise it
 * falls back with every reason recorded. spark.ember.sql.enabled=false puts
 * everything on the row engine.
 *
 * The result (em_exec_plan) annotates the parsed plan without changing it:
 * per node an engine and reasons, and the transitions between engines
 * (RowToColumnar above a row node whose parent is native, ColumnarToRow
 * above a native node whose parent runs on rows). Spark's own
 * ColumnarToRow / InputAdapter / WholeStageCodegen nodes are pass-through:
 * they take their child's engine and never become transitions themselves.
 * Nothing here executes anything.
 *
 * Details the consumers rely on:
 *  - Exchanges are operators like the others: a native exchange stores
 *    what its native map side produced and its readers read it natively; a
 *    parent or child on the other engine gets a transition. A shuffle
 *    exchange whose child runs on rows and whose reader does too (or that
 *    is a root) goes to rows, with a reason (spark-rapids' rule: it would
 *    only add two transitions); its `supported` stays true.
 *  - A ReusedExchange takes the engine of the exchange it reads; its
 *    transition_above is judged against its own parent.
 *  - The root of a tree (main or subquery) never has a transition above it:
 *    the runtime collects its output whatever the engine.
 *  - A column or attribute of unknown type is no reason to fall back (both
 *    engines need the type; the runtime reports it).
 *  - After the rules accept a node, its expressions are compiled by the
 *    native compiler as the operator would; a refusal becomes the reason
 *    "native engine refused: ..." (a rule missing from src/overrides).
 *  - LORE ids: post-order over em_plan_exec_root, then each subquery tree
 *    in order, native nodes only, ReusedExchange excluded (nothing to dump).
 */
#ifndef EM_OVERRIDES_H
#define EM_OVERRIDES_H

#include <stdbool.h>

#include "ember/conf.h"
#include "ember/plan.h"
#include "ember/status.h"
#include "ember/value_text.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_engine {
    EM_ENGINE_NATIVE,
    EM_ENGINE_ROW,
    EM_ENGINE_PASS, /* Spark's ColumnarToRow, InputAdapter, WholeStageCodegen, AQE wrappers:
                       not an operator of either engine */
} em_engine;

/* Why something cannot run natively (or could, but does not). */
typedef struct em_fallback_reason {
    const char *text;       /* "the Expression Substring has been disabled: set
                               spark.ember.sql.expression.Substring=true to enable it" */
    const char *class_name; /* the exec or expression class it is about */
    const char *config;     /* the config that would enable it, or NULL */
} em_fallback_reason;

/* The decision for one expression of a node (one line of the report). */
typedef struct em_expr_decision {
    const em_expr *expr;
    const char *class_name; /* Spark's class: "Add", "Substring", "AttributeReference" */
    int depth;              /* 0 for the node's top-level expressions */
    bool supported;
    int n_reasons;
    const em_fallback_reason *reasons;
} em_expr_decision;

typedef struct em_node_decision {
    const em_plan_node *node;
    const char *class_name; /* Spark's exec class: "FilterExec", "BroadcastHashJoinExec" */
    em_engine engine;
    bool supported;        /* the rule, config and expressions allow native */
    bool transition_above; /* a RowToColumnar / ColumnarToRow sits between it and its
                              (non-pass-through) parent */
    int n_reasons;
    const em_fallback_reason *reasons;
    int n_exprs;
    const em_expr_decision *exprs;
    int lore_id; /* post-order id among native nodes; -1 when not native or tagging is off */
} em_node_decision;

typedef struct em_exec_plan em_exec_plan;

/*
 * Tags every node of the plan (main tree and subquery trees) under conf
 * (NULL: defaults). Errors: EM_ERR_INVALID for a bad config value,
 * EM_ERR_NOMEM. A node that cannot run on either engine is not an error
 * here: it falls back, and building its row operator reports it. The plan
 * must outlive the result (decisions point into it).
 */
em_status em_overrides_apply(const em_plan *plan, const em_conf *conf, em_exec_plan **out,
                             em_error *err) EM_MUST_CHECK;

/* Who runs what Ember does not: Ember's own runtime (its row engine), or
 * Spark (the plugin; Spark is then the fallback engine). */
typedef enum em_overrides_host {
    EM_HOST_EMBER = 0,
    /* Inside Spark: broadcasts, range and round-robin exchanges, hash and
     * single-partition exchanges over a non-native child, and AQE's stages
     * stay Spark's, as do operators that gather rows across partitions
     * themselves (TakeOrderedAndProject, CollectLimit), fragment inputs,
     * nodes whose types Ember would compute otherwise than Spark did, and
     * expressions whose evalMode the native engine does not honour;
     * EM_ENGINE_ROW then means "Spark runs it". */
    EM_HOST_SPARK,
} em_overrides_host;

/* em_overrides_apply for a host. */
em_status em_overrides_apply_host(const em_plan *plan, const em_conf *conf,
                                  em_overrides_host host, em_exec_plan **out,
                                  em_error *err) EM_MUST_CHECK;
void em_exec_plan_destroy(em_exec_plan *xp); /* NULL allowed */
const em_plan *em_exec_plan_source(const em_exec_plan *xp);
/* The decision for a node of the plan, or NULL for a node of another plan. */
const em_node_decision *em_exec_plan_decision(const em_exec_plan *xp, const em_plan_node *node);
/* Every node of the plan has one decision: those of the main tree (from
 * em_plan_root, so AQE sections and their initial plans too) and of each
 * subquery tree, ordered by node id (nodes sharing an id, such as AQE
 * sections, in tree order). i in [0, n). */
int em_exec_plan_n_decisions(const em_exec_plan *xp);
const em_node_decision *em_exec_plan_decision_at(const em_exec_plan *xp, int i);

/* Test mode (spark.ember.sql.test.enabled, as spark-rapids' test mode): EM_OK
 * when off, or when every node the host runs (the row engine, or Spark) is of
 * a class listed in spark.ember.sql.test.allowedNonNative (comma-separated,
 * plain or fully qualified); otherwise EM_ERR_UNSUPPORTED naming every such
 * node with its reasons. */
em_status em_exec_plan_check_test_mode(const em_exec_plan *xp, const em_conf *conf,
                                       em_overrides_host host, em_error *err) EM_MUST_CHECK;

typedef enum em_explain_mode {
    EM_EXPLAIN_NONE,
    EM_EXPLAIN_NOT_ON_ACCELERATOR,
    EM_EXPLAIN_ALL,
} em_explain_mode;

/* spark-rapids' report: one line per node and expression, two spaces per
 * depth, `*` native, `!` cannot (with every reason), `@` could but does not
 * (its node falls back): `*Exec <FilterExec> will run natively`,
 * `  @Expression <AttributeReference> x#1 could run natively`,
 * `!Exec <SortExec> cannot run natively because ...`. Pass-through nodes
 * are not listed. NOT_ON_ACCELERATOR prints only `!` and `@` lines; NONE
 * appends nothing. Appends to out. */
em_status em_exec_plan_report(const em_exec_plan *xp, em_explain_mode mode, em_strbuf *out,
                              em_error *err) EM_MUST_CHECK;
/* The final plan as a tree (Spark's `+- ` / `:- ` drawing): native nodes
 * prefixed "Ember" with ` [loreId=N]` when tagged, row nodes as Spark names
 * them followed by `  NOT NATIVE: <reasons>`, transitions as nodes of their
 * own, pass-through nodes left out; subquery trees follow. Appends to out. */
em_status em_exec_plan_print_tree(const em_exec_plan *xp, em_strbuf *out,
                                  em_error *err) EM_MUST_CHECK;

/* docs/supported_ops.md, generated from the rules. */
#define EM_OVERRIDES_DOCS_COMMAND "ember conf --supported-ops-md > docs/supported_ops.md"
em_status em_overrides_supported_ops_md(em_strbuf *out, em_error *err) EM_MUST_CHECK;
/* Registers every exec and expression class with the conf families (idempotent). */
em_status em_overrides_register_confs(em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
