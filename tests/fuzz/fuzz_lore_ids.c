/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the idsToDump parser: any bytes either parse or fail with
 * a message; a parsed selection must answer membership questions for any
 * partition and the largest one it names must be selected.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember/lore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    em_lore_ids ids;
    em_error err;
    if (em_lore_ids_parse(text, &ids, &err) == EM_OK) {
        for (int i = 0; i < ids.n; i++) {
            const em_lore_selection *s = &ids.items[i];
            if (em_lore_ids_find(&ids, s->lore_id) != s)
                abort(); /* ids are unique */
            int max = em_lore_selection_max(s);
            if (max >= 0 && !em_lore_selection_has(s, max))
                abort();
            if (!s->all && em_lore_selection_has(s, max + 1))
                abort();
        }
        em_lore_ids_reset(&ids);
    } else if (err.msg[0] == '\0') {
        abort(); /* every failure says why */
    }
    free(text);
    return 0;
}
