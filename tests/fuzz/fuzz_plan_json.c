/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the structured-plan reader: read arbitrary bytes as the
 * plugin's JSON plan, with the version from the JSON and with a shim given;
 * when they read, print the plan (its own dialect and another line's), write
 * it as JSON, print every subquery's expression, then free. Any crash,
 * sanitizer report or leak is a bug; errors must carry a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const em_plan *plan) {
    char *out = NULL;
    size_t n = 0;
    em_error err;
    if (em_plan_print(plan, NULL, &out, &n, &err) == EM_OK)
        free(out);
    const em_shim *other = em_shim_at(0);
    if (em_plan_print(plan, other, &out, &n, &err) == EM_OK)
        free(out);
    if (em_plan_to_json(plan, &out, &n, &err) == EM_OK)
        free(out);
    for (int i = 0; i < em_plan_n_subqueries(plan); i++) {
        const em_plan_subquery *sq = em_plan_subquery_at(plan, i);
        if (sq->expr && em_expr_print(sq->expr, NULL, &out, &n, &err) == EM_OK)
            free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    em_plan *plan = NULL;
    em_error err;
    em_status st = em_plan_read_json((const char *)data, size, NULL, &plan, &err);
    if (st == EM_OK) {
        exercise(plan);
        em_plan_destroy(plan);
    } else if (plan != NULL || err.msg[0] == '\0') {
        abort(); /* a failure leaves nothing behind and says why */
    }
    em_plan_parse_options opt = {.shim = em_shim_at(em_shim_count() - 1)};
    if (em_plan_read_json((const char *)data, size, &opt, &plan, &err) == EM_OK) {
        exercise(plan);
        em_plan_destroy(plan);
    }
    return 0;
}
