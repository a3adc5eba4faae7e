/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the plan parser: parse arbitrary bytes; when they parse,
 * print the plan (in its own dialect and in another line's), parse the
 * printed text again and require the second print to equal the first, write
 * it as JSON, then free. Any crash, sanitizer report or unstable round trip is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    em_plan *plan = NULL;
    em_error err;
    if (em_plan_parse((const char *)data, size, NULL, &plan, &err) != EM_OK)
        return 0;
    char *out = NULL;
    size_t n = 0;
    if (em_plan_print(plan, NULL, &out, &n, &err) == EM_OK) {
        em_plan_parse_options opt = {.shim = em_plan_shim(plan)};
        em_plan *again = NULL;
        if (em_plan_parse(out, n, &opt, &again, &err) == EM_OK) {
            char *out2 = NULL;
            size_t n2 = 0;
            if (em_plan_print(again, NULL, &out2, &n2, &err) == EM_OK &&
                (n2 != n || memcmp(out, out2, n) != 0))
                abort(); /* printing is not stable under reparsing */
            free(out2);
            em_plan_destroy(again);
        }
        free(out);
    }
    const em_shim *other = em_shim_at(em_shim_count() - 1);
    if (em_plan_print(plan, other, &out, &n, &err) == EM_OK)
        free(out);
    if (em_plan_to_json(plan, &out, &n, &err) == EM_OK)
        free(out);
    em_plan_destroy(plan);
    return 0;
}
