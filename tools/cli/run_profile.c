/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage-level resource profiles for `ember run` and `ember explain` (see
 * cli_profile.h and docs/resource-profiles.md).
 */
#include <string.h>

#include "cli_profile.h"

em_status em_cli_profile_setup(const em_conf *conf, em_exec_plan *xp, em_cli_profile *p,
                               em_runtime_options *ro, em_error *err) {
    memset(p, 0, sizeof *p);
    EM_TRY(em_profile_from_conf(conf, &p->enforced, &p->def, &p->rules, err));
    if (!p->enforced)
        return EM_OK;
    ro->profile = &p->def;
    ro->profile_rules = &p->rules;
    ro->engine = em_profile_exec_engine;
    ro->engine_ctx = xp;
    return EM_OK;
}

bool em_cli_profile_key(const char *key) {
    static const char *const keys[] = {"spark.executor.memory", "spark.memory.offHeap.size",
                                       "spark.executor.cores", "spark.task.cpus",
                                       "spark.ember.autoAdjustStageResource."};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (strncmp(key, keys[i], strlen(keys[i])) == 0)
            return true;
    return false;
}

/* Why a stage kept the default profile. */
static const char *kept_because(const em_stage_profile *sp, const em_stage_shape *sh,
                                bool unknown, const em_profile_rules *r, char *buf, size_t cap) {
    const char *under = unknown ? "the known map statuses under" : "map statuses under";
    if (sp->reason[0])
        return sp->reason; /* it should have been adjusted but cannot be held */
    if ((sp->fallback || sp->heavy_shuffle) && !r->enabled) {
        snprintf(buf, cap,
                 "%s%s%s; auto-adjust is off (spark.ember.autoAdjustStageResource.enabled)",
                 sp->fallback ? "falls back" : "", sp->fallback && sp->heavy_shuffle ? " and " : "",
                 sp->heavy_shuffle ? "reads a heavy shuffle" : "");
        return buf;
    }
    int n = sh->n_native + sh->n_fallback;
    if (sh->n_fallback == 0)
        snprintf(buf, cap, "nothing to adjust: %s, %s %lld", n ? "all native" : "no operator",
                 under, (long long)r->shuffle_threshold);
    else
        snprintf(buf, cap,
                 "nothing to adjust: %d of %d on the row engine (at most %g), no transition, %s "
                 "%lld",
                 sh->n_fallback, n, r->fallen_threshold, under, (long long)r->shuffle_threshold);
    return buf;
}

void em_cli_profile_print_explain(const em_query *q, const em_cli_profile *p, FILE *f) {
    if (!p->enforced) {
        fprintf(f, "\nResource profiles: not enforced (set spark.executor.memory, "
                   "spark.memory.offHeap.size, spark.executor.cores or spark.task.cpus, or "
                   "spark.ember.autoAdjustStageResource.enabled=true)\n");
        return;
    }
    const em_resource_profile *d = &p->def;
    char heap[32], off[32], pool[32], row[32], native[32];
    em_profile_format_bytes(d->executor_memory, heap, sizeof heap);
    em_profile_format_bytes(d->offheap_memory > 0 ? d->offheap_memory : -1, off, sizeof off);
    em_profile_format_bytes(d->row_pool, pool, sizeof pool);
    em_profile_format_bytes(d->row_per_task, row, sizeof row);
    em_profile_format_bytes(d->native_per_task, native, sizeof native);
    fprintf(f,
            "\nResource profiles (auto-adjust %s):\n"
            "  default: executor %s heap, %s off-heap, %d cores / %d per task: row pool %s, "
            "%d task%s at once, per task row %s, native %s\n",
            p->rules.enabled ? "on" : "off", heap, off, d->executor_cores, d->task_cpus, pool,
            d->task_slots, d->task_slots == 1 ? "" : "s", row, native);
    int unknown = 0;
    for (int i = 0; i < em_query_n_stages(q); i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        const em_stage_profile *sp = &si.profile;
        em_profile_format_bytes(sp->profile.row_per_task, row, sizeof row);
        em_profile_format_bytes(sp->profile.native_per_task, native, sizeof native);
        char buf[320];
        fprintf(f, "  stage %d  %d at once, per task row %s, native %s  %s\n", i,
                sp->profile.task_slots, row, native, sp->adjusted ? "ADJUSTED" : "kept");
        fprintf(f, "           %d native, %d row, %d transition%s, %lld%s map statuses: %s\n",
                si.shape.n_native, si.shape.n_fallback, si.shape.n_transitions,
                si.shape.n_transitions == 1 ? "" : "s", (long long)si.shape.shuffle_statuses,
                si.shuffle_unknown ? "+?" : "",
                sp->adjusted ? sp->reason : kept_because(sp, &si.shape, si.shuffle_unknown > 0, &p->rules, buf, sizeof buf));
        unknown += si.shuffle_unknown;
    }
    if (unknown)
        fprintf(f, "  (+?: the mappers of %d shuffle read%s are scan splits, known with "
                   "--warehouse)\n",
                unknown, unknown == 1 ? "" : "s");
}

void em_cli_profile_print_metrics(const em_query *q, FILE *f) {
    fprintf(f, "%-6s %-9s %8s %12s %22s %12s %22s\n", "stage", "profile", "at once", "row/task",
            "peak row (task)", "native/task", "peak native (task)");
    for (int i = 0; i < em_query_n_stages(q); i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        char row[32], native[32], prow[32], pnat[32], at[16], cell_r[48], cell_n[48];
        const char *kind = !si.profiled ? "none" : si.profile.adjusted ? "adjusted" : "default";
        em_profile_format_bytes(si.profiled ? si.profile.profile.row_per_task : -1, row,
                                sizeof row);
        em_profile_format_bytes(si.profiled ? si.profile.profile.native_per_task : -1, native,
                                sizeof native);
        em_profile_format_bytes(si.peak_row, prow, sizeof prow);
        em_profile_format_bytes(si.peak_native, pnat, sizeof pnat);
        if (si.profiled)
            snprintf(at, sizeof at, "%d/%d", si.max_running, si.profile.profile.task_slots);
        else
            snprintf(at, sizeof at, "%d", si.max_running);
        snprintf(cell_r, sizeof cell_r, "%s (%d)", prow, si.peak_row_task);
        snprintf(cell_n, sizeof cell_n, "%s (%d)", pnat, si.peak_native_task);
        fprintf(f, "%-6d %-9s %8s %12s %22s %12s %22s\n", i, kind, at, row, cell_r, native,
                cell_n);
    }
}
