/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error records. Messages are formatted once, where the failure is detected,
 * and outer layers add context with em_error_prefix ("lineitem/part-0.parquet:
 * ..."), so the text a user sees reads from the outermost place inwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/invariant.h"
#include "ember/status.h"

em_status em_error_setv(em_error *err, em_status code, const char *file, int line,
                        const char *fmt, va_list ap) {
    if (err) {
        err->code = code;
        err->file = file;
        err->line = line;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

em_status em_error_set(em_error *err, em_status code, const char *file, int line,
                       const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    em_error_setv(err, code, file, line, fmt, ap);
    va_end(ap);
    return code;
}

void em_error_prefix(em_error *err, const char *fmt, ...) {
    if (!err)
        return;
    char prefix[EM_ERROR_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[EM_ERROR_MSG_CAP];
    snprintf(joined, sizeof joined, "%s: %s", prefix, err->msg);
    memcpy(err->msg, joined, sizeof joined);
}

void em_error_clear(em_error *err) {
    if (err) {
        err->code = EM_OK;
        err->file = NULL;
        err->line = 0;
        err->msg[0] = '\0';
    }
}

const char *em_status_name(em_status s) {
    switch (s) {
    case EM_OK: return "EM_OK";
    case EM_DONE: return "EM_DONE";
    case EM_ERR_NOMEM: return "EM_ERR_NOMEM";
    case EM_ERR_IO: return "EM_ERR_IO";
    case EM_ERR_CORRUPT: return "EM_ERR_CORRUPT";
    case EM_ERR_PARSE: return "EM_ERR_PARSE";
    case EM_ERR_BIND: return "EM_ERR_BIND";
    case EM_ERR_TYPE: return "EM_ERR_TYPE";
    case EM_ERR_OVERFLOW: return "EM_ERR_OVERFLOW";
    case EM_ERR_UNSUPPORTED: return "EM_ERR_UNSUPPORTED";
    case EM_ERR_CANCELLED: return "EM_ERR_CANCELLED";
    case EM_ERR_INVALID: return "EM_ERR_INVALID";
    case EM_ERR_OOM_BUDGET: return "EM_ERR_OOM_BUDGET";
    case EM_ERR_INTERNAL: return "EM_ERR_INTERNAL";
    }
    return "EM_ERR_UNKNOWN";
}

em_status em_invariant_broken(em_error *err, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    em_error local;
    em_error *e = err ? err : &local;
    em_error_setv(e, EM_ERR_INTERNAL, file, line, fmt, ap);
    va_end(ap);
#ifndef NDEBUG
    fprintf(stderr, "ember: invariant broken at %s:%d: %s\n", file, line, e->msg);
    abort();
#endif
    return EM_ERR_INTERNAL;
}
