/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the unit tests: fresh temporary folders, the location of
 * ../shared and of the ember binary, a small TPC-H warehouse, and status
 * assertions that print the error message when they fail.
 */
#ifndef EM_TESTUTIL_H
#define EM_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/status.h"

/* Creates (emptying first) a folder for one test and returns its path (static storage,
 * valid until the next call). */
const char *em_test_tmpdir(const char *name);
/* ../shared, or $EMBER_SHARED; NULL when it does not exist. */
const char *em_test_shared_dir(void);
/* The ember binary ($EMBER_BIN), or NULL. */
const char *em_test_ember_bin(void);
/* TPC-H SF 0.01 in Spark's schema, generated once per process into the
 * temporary folder `name`; its path (static storage). */
const char *em_test_tpch_warehouse(const char *name);
/* Runs a shell command, returns its exit status (-1 on failure to run). */
int em_test_system(const char *fmt, ...);

#define EM_ASSERT_OK(expr, errp)                                                           \
    do {                                                                                   \
        em_status s_ = (expr);                                                             \
        if (s_ != EM_OK)                                                                   \
            fail_msg("%s returned %s: %s", #expr, em_status_name(s_), (errp)->msg);        \
    } while (0)

#endif
