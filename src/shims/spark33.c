/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark 3.3: decimal arithmetic is printed with its coercions spelled out.
 * The optimizer wraps each operand in promote_precision(cast(x as T)) with
 * both operands widened to one type, and the whole operation in
 * CheckOverflow(e, DecimalType(p,s)) that carries the result type. So the
 * arithmetic operator's own type is its (promoted) operands' type and the
 * CheckOverflow around it gives the final precision and scale; inference
 * must not apply the precision rules a second time.
 *
 * 3.3.0 still printed exchange ids as [id=#N]; SPARK-39437 changed that to
 * [plan_id=N] in 3.3.1 (also 3.2.2), hence two instances of this line.
 */
#include "shims/shim.h"

static bool spark33_decimal_binary_type(const em_shim *s, em_binop op, em_type l, em_type r,
                                        em_type *out) {
    /* Promoted operands share one type: the operator returns it unchanged. */
    if (l.precision == r.precision && l.scale == r.scale &&
        (op == EM_OP_ADD || op == EM_OP_SUB || op == EM_OP_MUL || op == EM_OP_DIV ||
         op == EM_OP_REM)) {
        *out = l;
        return true;
    }
    return em_shim_decimal_rule(op, l, r, s->decimal_allow_precision_loss, out);
}

const em_shim em_shim_spark330 = {
    .name = "3.3.0",
    .aliases = "3.3.0-rc6",
    .order = 0,
    .legacy_exchange_id = true,
    .join_type_field = false,
    .catalog_qualified = false,
    .check_overflow_args = 2,
    .window_group_limit = false,
    .scan_hosts_subquery = false,
    .alias_names_embed_ids = true,
    .ansi_default = false,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = spark33_decimal_binary_type,
};

const em_shim em_shim_spark33 = {
    .name = "3.3",
    .aliases = "3.3.1 3.3.2 3.3.3 3.3.4",
    .order = 1,
    .legacy_exchange_id = false,
    .join_type_field = false,
    .catalog_qualified = false,
    .check_overflow_args = 2,
    .window_group_limit = false,
    .scan_hosts_subquery = false,
    .alias_names_embed_ids = true,
    .ansi_default = false,
    .decimal_allow_precision_loss = true,
    .decimal_binary_type = spark33_decimal_binary_type,
};
