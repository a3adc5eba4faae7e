/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shim interface: one module per Spark release line (spark33.c ...
 * spark41.c) fills one em_shim, and every version-dependent decision of the
 * plan layer goes through the functions below, never through a version test
 * elsewhere. Two kinds of decisions live here:
 *
 *   printed forms   how an exchange id prints ([id=#N] in 3.3.0, [plan_id=N]
 *                   from 3.3.1), whether joins print a "Join type:" field
 *                   (3.4+), which printed features a line can produce at all
 *                   (CheckOverflow/promote_precision up to 3.3, catalog-
 *                   qualified scans from 3.4, WindowGroupLimit from 3.5,
 *                   scans hosting scalar subqueries from 4.0, alias names
 *                   without embedded ids in 4.1);
 *   semantics       the result type of decimal arithmetic (3.3: the operands'
 *                   promoted type, the printed CheckOverflow carries the
 *                   result; 3.4+: Spark's precision/scale rules computed in
 *                   the operator), allowPrecisionLoss and ANSI defaults.
 *
 * Detection: the parser records evidence (counts of version-specific printed
 * forms) while it reads the text; em_shim_detect_evidence asks every line
 * whether it could have printed that evidence. One piece of evidence needs
 * types: decimal arithmetic outside CheckOverflow rules out 3.3, so when 3.3
 * was chosen and typing finds such arithmetic, detection runs again and the
 * plan is retyped with the line that fits. Several lines often print a
 * plan identically (3.4, 3.5 and 4.0 differ in few TPC-H files): then the
 * candidates are all reported and the OLDEST compatible line is chosen, with a
 * reason saying so, because the parse is the same and a user who knows better
 * passes the version explicitly.
 */
#ifndef EM_SHIMS_SHIM_H
#define EM_SHIMS_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/plan.h"

/* Counts of version-specific printed forms found in one plan text. */
typedef struct em_dialect_evidence {
    int exchange_id_legacy;       /* "[id=#N]" after an exchange's arguments */
    int exchange_plan_id;         /* "[plan_id=N]" */
    int scans_catalog_qualified;  /* "Scan parquet spark_catalog.default.t" */
    int scans_unqualified;        /* "Scan parquet default.t" */
    int check_overflow_2;         /* CheckOverflow(e, DecimalType(p,s)) */
    int check_overflow_3;         /* CheckOverflow(e, DecimalType(p,s), b) */
    int promote_precision;        /* promote_precision(e) */
    int joins_with_type_field;    /* join details with "Join type:" */
    int joins_without_type_field; /* join details without it */
    int case_else_null;           /* CASE ... ELSE null END */
    int window_group_limit;       /* WindowGroupLimit operator */
    int scan_hosts_subquery;      /* a scan is a subquery's hosting operator */
    int alias_names_with_ids;     /* alias of an aggregate named with its ids: sum(x#1)#2 */
    int alias_names_without_ids;  /* the same alias named without ids: sum(x)#2 */
    int decimal_arith_unwrapped;  /* decimal arithmetic outside CheckOverflow, in a text
                                     without any CheckOverflow (known after typing) */
} em_dialect_evidence;

struct em_shim {
    const char *name;    /* "3.3.0", "3.3", "3.4", "3.5", "4.0", "4.1" */
    const char *aliases; /* other accepted spellings, space separated */
    int order;           /* 0 = oldest */
    /* printed forms */
    bool legacy_exchange_id; /* [id=#N] */
    bool join_type_field;    /* "Join type:" in join details */
    bool catalog_qualified;  /* scans print spark_catalog.<db>.<t> */
    int check_overflow_args; /* 0: CheckOverflow/promote_precision never printed */
    bool window_group_limit; /* the operator exists */
    bool scan_hosts_subquery;
    bool alias_names_embed_ids;
    /* semantics */
    bool ansi_default;                 /* spark.sql.ansi.enabled */
    bool decimal_allow_precision_loss; /* spark.sql.decimalOperations.allowPrecisionLoss */
    /*
     * Result type of `l op r` when both are decimals (op is +, -, *, /, %).
     * Returns false when the operator has no decimal rule.
     */
    bool (*decimal_binary_type)(const em_shim *s, em_binop op, em_type l, em_type r, em_type *out);
};

/* Spark's DecimalPrecision rules (3.4+ computed in the operator itself). */
bool em_shim_decimal_rule(em_binop op, em_type l, em_type r, bool allow_precision_loss,
                          em_type *out);
/* DecimalType.adjustPrecisionScale / DecimalType.bounded. */
em_type em_shim_decimal_adjust(int precision, int scale, bool allow_precision_loss);
/* The type of floor(x) and ceil(x) (Floor, Ceil) for x of type in; false when x is
 * not numeric. */
bool em_shim_floor_ceil_type(em_type in, em_type *out);

/* Writes an exchange id in the shim's form ("[plan_id=3]" / "[id=#3]"); returns the length. */
int em_shim_format_exchange_id(const em_shim *s, int64_t id, char *buf, size_t cap);
bool em_shim_prints_join_type(const em_shim *s);

/* Whether the line could print text with this evidence; why (when not) names the feature. */
bool em_shim_accepts(const em_shim *s, const em_dialect_evidence *ev, char *why, size_t cap);
/* Fills det from the evidence; returns false when no line fits. */
bool em_shim_detect_evidence(const em_dialect_evidence *ev, em_shim_detection *det);

/* 3.4's decimal rule (DecimalPrecision computed in the operator), shared by later lines. */
bool em_shim_spark34_decimal_binary_type(const em_shim *s, em_binop op, em_type l, em_type r,
                                         em_type *out);

/* The instances, defined one module per line. */
extern const em_shim em_shim_spark330;
extern const em_shim em_shim_spark33;
extern const em_shim em_shim_spark34;
extern const em_shim em_shim_spark35;
extern const em_shim em_shim_spark40;
extern const em_shim em_shim_spark41;

#endif
