/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark 3.5: prints like 3.4, plus the WindowGroupLimit operator (a rank
 * filter pushed below the window, SPARK-37099). Decimal rules as 3.4.
 */
#include "shims/shim.h"

const em_shim em_shim_spark35 = {
    .name = "3.5",
    .aliases = "3.5.0 3.5.1 3.5.2 3.5.3 3.5.4 3.5.5 3.5.6",
    .order = 3,
    .legacy_exchange_id = false,
    .join_type_field = true,
    .catalog_qualified = true,
    .check_overflow_args = 0,
    .window_group_limit = true,
    .scan_hosts_subquery = false,
    .alias_names_embed_ids = true,
    .ansi_default = false,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = em_shim_spark34_decimal_binary_type,
};
