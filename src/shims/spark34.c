/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark 3.4: SPARK-39316 folded promote_precision and CheckOverflow into the
 * decimal arithmetic operators, so the result type is no longer printed and
 * is computed from the operands by DecimalPrecision's rules (with
 * spark.sql.decimalOperations.allowPrecisionLoss, default true). Joins print
 * a "Join type:" field and scans name the session catalog
 * (spark_catalog.default.t).
 */
#include "shims/shim.h"

bool em_shim_spark34_decimal_binary_type(const em_shim *s, em_binop op, em_type l, em_type r,
                                         em_type *out) {
    return em_shim_decimal_rule(op, l, r, s->decimal_allow_precision_loss, out);
}

const em_shim em_shim_spark34 = {
    .name = "3.4",
    .aliases = "3.4.0 3.4.1 3.4.2 3.4.3 3.4.4",
    .order = 2,
    .legacy_exchange_id = false,
    .join_type_field = true,
    .catalog_qualified = true,
    .check_overflow_args = 0,
    .window_group_limit = false,
    .scan_hosts_subquery = false,
    .alias_names_embed_ids = true,
    .ansi_default = false,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = em_shim_spark34_decimal_binary_type,
};
