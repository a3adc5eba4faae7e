/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage-level resource profiles in the command line (run_profile.c): the
 * runtime options `ember run` and `ember explain` derive from the
 * configuration, and what they print about each stage's profile.
 */
#ifndef EM_CLI_PROFILE_H
#define EM_CLI_PROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "ember/conf.h"
#include "ember/overrides.h"
#include "ember/profile.h"
#include "ember/runtime.h"

typedef struct em_cli_profile {
    bool enforced; /* an executor key is set or auto-adjust is on */
    em_resource_profile def;
    em_profile_rules rules;
} em_cli_profile;

/* Reads the profile keys of conf into p and, when they are enforced, points
 * ro at p's profile and rules with the overrides' engines (xp) for the
 * stages' shapes. p must outlive em_query_create. Errors: the keys' (an
 * executor too small, fewer cores than spark.task.cpus, a bad ratio). */
em_status em_cli_profile_setup(const em_conf *conf, em_exec_plan *xp, em_cli_profile *p,
                               em_runtime_options *ro, em_error *err) EM_MUST_CHECK;
/* Whether a (canonical) key is read by the profiles. */
bool em_cli_profile_key(const char *key);
/* `ember explain`: each stage's profile, its shape and why it was adjusted
 * or kept. */
void em_cli_profile_print_explain(const em_query *q, const em_cli_profile *p, FILE *f);
/* `ember run --metrics`: per stage the tasks that ran at once and the
 * largest task's peak row and native memory against the budgets. */
void em_cli_profile_print_metrics(const em_query *q, FILE *f);

#endif
