/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_exec_build: one task's tree under the overrides' decisions. The
 * walk itself is em_rop_build_tree (row_build.c); this file only reads the
 * engines from the exec plan, so that code linking the builder without
 * the overrides layer (the row operator tests) does not pull it in.
 * em_lore_exec_build is the same walk with a LORE dump session.
 */
#include "ember/lore.h"
#include "ops/row_internal.h"

static em_engine decided_engine(void *arg, const em_plan_node *node) {
    const em_node_decision *d = em_exec_plan_decision(arg, node);
    /* a node the exec plan does not know (another plan's) runs natively,
     * as em_op_build would run it */
    return d ? d->engine : EM_ENGINE_NATIVE;
}

em_status em_exec_build(void *xp, const em_plan_node *stage_root, em_op **out, em_error *err) {
    if (!xp || !stage_root) {
        *out = NULL;
        return EM_FAIL(err, EM_ERR_INVALID, "em_exec_build: no exec plan or stage root");
    }
    return em_rop_build_tree(stage_root, decided_engine, xp, out, err);
}

static em_engine all_native(void *arg, const em_plan_node *node) {
    (void)arg;
    (void)node;
    return EM_ENGINE_NATIVE;
}

em_status em_lore_exec_build(void *ctx, const em_plan_node *stage_root, em_op **out,
                             em_error *err) {
    const em_lore_build_ctx *c = ctx;
    if (!c || !stage_root) {
        *out = NULL;
        return EM_FAIL(err, EM_ERR_INVALID, "em_lore_exec_build: no build context or stage root");
    }
    return em_rop_build_tree_lore(stage_root, c->xp ? decided_engine : all_native, (void *)c->xp,
                               c->session, out, err);
}
