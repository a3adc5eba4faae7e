/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark 4.0: ANSI mode on by default (spark.sql.ansi.enabled=true: overflow
 * and invalid casts raise errors instead of returning null). Nothing of it is
 * printed; the only printed change is that scalar subqueries are pushed into
 * scan filters, making the scan an extra hosting operator in the subquery
 * section. Decimal rules as 3.4.
 */
#include "shims/shim.h"

const em_shim em_shim_spark40 = {
    .name = "4.0",
    .aliases = "4.0.0 4.0.1",
    .order = 4,
    .legacy_exchange_id = false,
    .join_type_field = true,
    .catalog_qualified = true,
    .check_overflow_args = 0,
    .window_group_limit = true,
    .scan_hosts_subquery = true,
    .alias_names_embed_ids = true,
    .ansi_default = true,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = em_shim_spark34_decimal_binary_type,
};
