/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task record, shared by task.c (its life) and fragment.c (fragment
 * tasks, which hang their input state on it).
 */
#ifndef EM_RUNTIME_TASK_INTERNAL_H
#define EM_RUNTIME_TASK_INTERNAL_H

#include "ember/task.h"

struct em_task {
    char name[96];
    em_op_build_fn build;
    void *build_ctx;
    const em_plan_node *root;
    em_exec_ctx ctx;      /* pools owned; callbacks and runtime borrowed from the creator */
    volatile int cancel;  /* watched when the creator gave no flag */
    em_op *op;            /* owned, built by open */
    bool opened;
    em_status status;     /* EM_OK while running; EM_DONE at the end; the error after one */
    /* fragment tasks: frees what ctx.runtime holds (inputs, splits), after the tree */
    void (*on_destroy)(em_task *t);
};

#endif
