/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark 4.1 (master after 4.0): generated alias names no longer embed
 * expression ids (SPARK-51371): `sum(l_quantity#8)#13 AS sum(l_quantity)#14`
 * where 4.0 printed `AS sum(l_quantity#14)#15`. Otherwise as 4.0.
 */
#include "shims/shim.h"

const em_shim em_shim_spark41 = {
    .name = "4.1",
    .aliases = "4.1.0 master 4.1.0-SNAPSHOT",
    .order = 5,
    .legacy_exchange_id = false,
    .join_type_field = true,
    .catalog_qualified = true,
    .check_overflow_args = 0,
    .window_group_limit = true,
    .scan_hosts_subquery = true,
    .alias_names_embed_ids = false,
    .ansi_default = true,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = em_shim_spark34_decimal_binary_type,
};
