/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Invariants: what the code relies on and no input can break, only a bug.
 * Debug builds (the sanitizer and tiny-batch builds among them) abort with
 * the message and the place, so a test that breaks one stops there with its
 * stack; release builds fail the call with EM_ERR_INTERNAL naming it, so a
 * user's query ends with an error rather than a crash. Input that is merely
 * wrong (a plan, a file, a setting) gets its own error code, never these.
 *
 *   EM_ASSERT(n == cols, err, "%d columns, %d expected", n, cols);
 *   default: return EM_UNREACHABLE(err, "unknown step %d", op);
 */
#ifndef EM_CORE_INVARIANT_H
#define EM_CORE_INVARIANT_H

#include "ember/status.h"

em_status em_invariant_broken(em_error *err, const char *file, int line, const char *fmt, ...)
    EM_PRINTF(4, 5);

#define EM_UNREACHABLE(err, ...) em_invariant_broken((err), __FILE__, __LINE__, __VA_ARGS__)

#define EM_ASSERT(cond, err, ...)                                                          \
    do {                                                                                   \
        if (!(cond))                                                                       \
            return EM_UNREACHABLE((err), __VA_ARGS__);                                     \
    } while (0)

#endif
