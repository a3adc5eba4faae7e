/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the Spark plugin asks of Ember on the driver, once per plan it
 * prepares: given Spark's physical plan (the structured JSON the plugin
 * writes, read by em_plan_read_json) and the session's settings, which
 * nodes run in Ember and why the others do not, the LORE ids, the
 * spark-rapids style report, and the fragments: the maximal subtrees of
 * native nodes, each of which becomes one Ember node in Spark's plan, with
 * the nodes below it that Spark runs as its inputs. The decisions are the
 * overrides' (em_overrides_apply_host with EM_HOST_SPARK), the same rules
 * `ember explain` applies to printed plans.
 *
 * The answer is JSON:
 *
 *   {"nodes": [{"source": i, "id": n, "class": "FilterExec", "native": true,
 *               "loreId": 3, "reasons": ["..."]}, ...],
 *    "fragments": [{"root": i, "inputs": [j, ...]}, ...],
 *    "report": "...",      the spark.ember.sql.explain report ("" for NONE)
 *    "tree": "..."}        the plan as it will run (ember explain's tree)
 *
 * with sources the JSON "id"s of the plan's nodes (fragments only over the
 * main tree: Spark prepares subquery plans on their own).
 */
#ifndef EM_SPARK_H
#define EM_SPARK_H

#include <stddef.h>

#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* conf_json: {"key": "value", ...} (spark.ember.*, their spark-rapids and
 * Gluten aliases, and the Spark settings Ember reads). *out is malloc'ed
 * (caller frees), NUL-terminated. Errors: EM_ERR_INVALID for a bad or
 * unknown setting (naming it, with the nearest known key), EM_ERR_PARSE for a
 * plan that cannot be read, EM_ERR_NOMEM. */
em_status em_spark_plan(const char *plan_json, size_t plan_len, const char *conf_json,
                        size_t conf_len, char **out, size_t *out_len,
                        em_error *err) EM_MUST_CHECK;

/* The exception Spark raises for an error Ember reported as msg, when msg is
 * one of Spark's errors in Spark's form (its error class in brackets, and
 * Spark's words around its message parameters): malloc'ed JSON
 * {"exception": "org.apache.spark.SparkArithmeticException", "errorClass":
 * "CAST_OVERFLOW", "messageParameters": {...}} (caller frees), else NULL: the
 * plugin raises Ember's own exception. */
char *em_spark_error(const char *msg);

#ifdef __cplusplus
}
#endif
#endif
