/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Status values and error records. Every library function that can fail
 * returns an em_status and fills an optional caller-owned em_error whose
 * message names the place (file and byte offset, plan line and column,
 * config key). The library never exits or aborts on bad input.
 */
#ifndef EM_STATUS_H
#define EM_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_status {
    EM_OK = 0,
    EM_DONE = 1, /* end of a stream: not an error */
    EM_ERR_NOMEM = 100,
    EM_ERR_IO,
    EM_ERR_CORRUPT,
    EM_ERR_PARSE,
    EM_ERR_BIND,
    EM_ERR_TYPE,
    EM_ERR_OVERFLOW,
    EM_ERR_UNSUPPORTED,
    EM_ERR_CANCELLED,
    EM_ERR_INVALID, /* bad argument or configuration */
    EM_ERR_OOM_BUDGET, /* a memory pool's budget was exceeded */
    EM_ERR_INTERNAL,
} em_status;

#define EM_ERROR_MSG_CAP 1024

typedef struct em_error {
    em_status code;
    const char *file; /* source file of the failure (static string) */
    int line;
    char msg[EM_ERROR_MSG_CAP];
} em_error;

#if defined(__GNUC__)
#define EM_MUST_CHECK __attribute__((warn_unused_result))
#define EM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define EM_MUST_CHECK
#define EM_PRINTF(a, b)
#endif

/* Records code and message in err (which may be NULL) and returns code. */
em_status em_error_set(em_error *err, em_status code, const char *file, int line,
                       const char *fmt, ...) EM_PRINTF(5, 6);
em_status em_error_setv(em_error *err, em_status code, const char *file, int line,
                        const char *fmt, va_list ap);
/* Prepends "prefix: " to an existing message, to add outer context. */
void em_error_prefix(em_error *err, const char *fmt, ...) EM_PRINTF(2, 3);
void em_error_clear(em_error *err);
/* A short constant name for a status, e.g. "EM_ERR_CORRUPT". */
const char *em_status_name(em_status s);

#define EM_FAIL(err, code, ...) em_error_set((err), (code), __FILE__, __LINE__, __VA_ARGS__)

#define EM_TRY(expr)                                                                       \
    do {                                                                                   \
        em_status em_try_s_ = (expr);                                                      \
        if (em_try_s_ != EM_OK)                                                            \
            return em_try_s_;                                                              \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
