/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the overrides layer: the support rules (rules.c),
 * shared by the tagging pass (apply.c), the reports (report.c) and the
 * generated documentation (supported_ops.c).
 */
#ifndef EM_OVERRIDES_INTERNAL_H
#define EM_OVERRIDES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/overrides.h"

/* Sets of em_type_id, one bit per id. */
#define OV_T(id) (1u << (id))
#define OV_T_NULL OV_T(EM_TYPE_NULL)
#define OV_T_BOOL OV_T(EM_TYPE_BOOLEAN)
#define OV_T_INTEGRAL                                                                              \
    (OV_T(EM_TYPE_BYTE) | OV_T(EM_TYPE_SHORT) | OV_T(EM_TYPE_INT) | OV_T(EM_TYPE_LONG))
#define OV_T_FP (OV_T(EM_TYPE_FLOAT) | OV_T(EM_TYPE_DOUBLE))
#define OV_T_DEC OV_T(EM_TYPE_DECIMAL)
#define OV_T_NUMERIC (OV_T_INTEGRAL | OV_T_FP | OV_T_DEC)
#define OV_T_STR OV_T(EM_TYPE_STRING)
#define OV_T_BIN OV_T(EM_TYPE_BINARY)
#define OV_T_DATE OV_T(EM_TYPE_DATE)
#define OV_T_TS (OV_T(EM_TYPE_TIMESTAMP) | OV_T(EM_TYPE_TIMESTAMP_NTZ))
#define OV_T_ALL ((1u << EM_TYPE_COUNT_) - 1u)

/* What a rule-specific check sees. */
typedef struct ov_check_ctx {
    const em_expr *parent; /* the enclosing expression, or NULL at a node's top level */
} ov_check_ctx;

/* Writes why e cannot run natively into why (cap bytes) and returns false,
 * or returns true. Only called when the generic type checks passed. */
typedef bool (*ov_check_fn)(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap);

typedef struct ov_expr_rule {
    const char *cls;    /* Spark's class name */
    bool native;        /* the native engine implements it */
    bool switchless;    /* no spark.ember.sql.expression.* switch (partitionings) */
    uint32_t in_types;  /* types its value operands may have (checked when known) */
    uint32_t out_types; /* types it may produce (checked when known) */
    uint32_t partial;   /* of out_types: supported with limits (docs: PS) */
    bool incompat;      /* results may differ from Spark's */
    bool incompat_fp;   /* incompatible only with a floating-point operand */
    ov_check_fn check;  /* NULL: no rule-specific check */
    const char *note;   /* documentation: limits, incompatibility */
} ov_expr_rule;

typedef enum ov_exec_kind {
    OV_EXEC_NATIVE, /* has a native operator */
    OV_EXEC_ROW,    /* only the row engine runs it */
    OV_EXEC_PASS,   /* not an operator of either engine */
    OV_EXEC_REUSE,  /* ReusedExchange: the engine of the exchange it reads */
} ov_exec_kind;

typedef struct ov_exec_rule {
    em_node_kind kind;
    const char *cls; /* Spark's class name */
    ov_exec_kind how;
    uint32_t types; /* column types its output may hold natively */
    const char *note;
} ov_exec_rule;

/* The rule for a node kind (never NULL). */
const ov_exec_rule *em_ov_exec_rule_for(const em_plan_node *node);
/* Spark's class for a node (UNKNOWN nodes: their printed name plus "Exec"). */
const char *em_ov_exec_class(const em_plan_node *node, char *buf, size_t cap);

/* The rule for an expression; NULL for the structural kinds that are not
 * expressions of their own (LIST, TYPE, PLAN_ID). *cls gets the class name
 * (a static string, or the printed function name for unknown functions). */
const ov_expr_rule *em_ov_expr_rule_for(const em_expr *e, const char **cls);
/* The rule of an expression class ("Substring"); NULL when none. */
const ov_expr_rule *em_ov_expr_rule_named(const char *cls);

/* The rule of an aggregate expression's function (Sum, Count, ...). */
const ov_expr_rule *em_ov_agg_fn_rule(const em_expr *e, const char **cls);

/* Cast support: from -> to natively (time zones aside). */
bool em_ov_cast_supported(em_type_id from, em_type_id to);
/* Whether a cast between these types depends on the session time zone. */

/* The tables, for the documentation. */
size_t em_ov_n_exec_rules(void);
const ov_exec_rule *em_ov_exec_rule_at(size_t i);
size_t em_ov_n_expr_rules(void);
const ov_expr_rule *em_ov_expr_rule_at(size_t i);

#endif
