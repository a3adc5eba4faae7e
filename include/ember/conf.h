/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration catalog: every key Ember reads, with its type, default,
 * documentation, scope and aliases, and a conf object holding one session's
 * settings.
 *
 * Keys come in three kinds. Registered keys (em_conf_key) are Ember's own
 * `spark.ember.*` knobs and the Spark keys Ember reads; each may carry
 * aliases (spark-rapids' `spark.rapids.*`, Gluten's `spark.gluten.*`) that
 * resolve to the one canonical key. Families are per-class switches:
 * `spark.ember.sql.exec.<SparkClassName>` and
 * `spark.ember.sql.expression.<SparkClassName>` (aliases
 * `spark.rapids.sql.exec.*` and `spark.rapids.sql.expression.*`), whose
 * members (class names) are registered at run time by the layer that knows
 * them (the overrides); the execs Ember runs today are registered built in.
 * Everything else: an unknown key in a namespace Ember owns or aliases
 * (`spark.ember.`, `spark.rapids.`, `spark.gluten.`) is an error naming the
 * nearest known key; any other key (Spark has thousands, and user code
 * reads its own) is accepted and kept verbatim, so it can be listed and
 * passed through.
 *
 * Values are text in Spark's syntax and are validated when set:
 * booleans are `true`/`false` in any case, ints and longs are decimal
 * integers, sizes are `<n>[b|k|kb|m|mb|g|gb|t|tb|p|pb]` (binary units,
 * case-insensitive, no fractions) where a bare number is in the key's own
 * unit (MiB for spark.executor.memory, bytes elsewhere), and enums take
 * one of their listed values in any case. Leading and trailing blanks are
 * ignored, as Spark trims.
 *
 * The registry is process-wide. Family members may be registered from any
 * thread at any time (a mutex guards them); registered keys are constant.
 */
#ifndef EM_CONF_H
#define EM_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_conf_type {
    EM_CONF_BOOL,
    EM_CONF_INT,  /* 32-bit signed */
    EM_CONF_LONG, /* 64-bit signed */
    EM_CONF_DOUBLE,
    EM_CONF_BYTES, /* a size with Spark's units; read as bytes */
    EM_CONF_STRING,
    EM_CONF_ENUM, /* one of em_conf_key.values */
} em_conf_type;

typedef enum em_conf_scope {
    EM_CONF_STARTUP, /* read once when the process (executor) starts */
    EM_CONF_QUERY,   /* read for every query: may differ between queries */
} em_conf_scope;

#define EM_CONF_MAX_ALIASES 3
#define EM_CONF_MAX_VALUES 6

typedef struct em_conf_key {
    const char *name; /* canonical spelling */
    em_conf_type type;
    em_conf_scope scope;
    const char *default_value; /* in Spark's syntax; NULL: none (see default_note) */
    const char *default_note;  /* shown for the default when the value depends on
                                * context (e.g. the Spark version), or NULL */
    const char *doc;
    const char *aliases[EM_CONF_MAX_ALIASES]; /* NULL-terminated */
    const char *values[EM_CONF_MAX_VALUES];   /* EM_CONF_ENUM: allowed values,
                                                 NULL-terminated */
    int64_t unit; /* EM_CONF_BYTES: bytes per unit of a bare number (1 or 1 << 20) */
    bool ranged;  /* numeric types: lo <= value <= hi */
    double lo, hi;
    bool spark_key; /* a key owned by Spark that Ember reads */
} em_conf_key;

/* The registered keys, in documentation order. */
size_t em_conf_n_keys(void);
const em_conf_key *em_conf_key_at(size_t i);
/* The key named name or one of its aliases; NULL for families and unknown keys. */
const em_conf_key *em_conf_lookup(const char *name);
const char *em_conf_type_name(em_conf_type t);
const char *em_conf_scope_name(em_conf_scope s);

/* Families of per-class boolean switches. */
typedef enum em_conf_family_id {
    EM_CONF_FAMILY_EXEC,       /* spark.ember.sql.exec.<SparkClassName> */
    EM_CONF_FAMILY_EXPRESSION, /* spark.ember.sql.expression.<SparkClassName> */
    EM_CONF_FAMILY_COUNT_
} em_conf_family_id;

typedef struct em_conf_family {
    const char *prefix;       /* "spark.ember.sql.exec." */
    const char *alias_prefix; /* "spark.rapids.sql.exec." */
    const char *doc;
} em_conf_family;

const em_conf_family *em_conf_family_get(em_conf_family_id fam);
/* Registers (or re-registers, updating default and note) the class name as a
 * member of the family: its key defaults to default_enabled. note (may be
 * NULL) is documentation, e.g. why a class is off by default. Both strings
 * are copied. EM_ERR_INVALID for an empty name or one with '.', '=' or
 * blanks. Safe from any thread. */
em_status em_conf_family_register(em_conf_family_id fam, const char *class_name,
                                  bool default_enabled, const char *note,
                                  em_error *err) EM_MUST_CHECK;
/* The number of members and the i-th in name order. Strings stay valid
 * until the process ends (a re-registration may change the note: callers
 * that keep it should copy it). */
size_t em_conf_family_n_members(em_conf_family_id fam);
bool em_conf_family_member(em_conf_family_id fam, size_t i, const char **class_name,
                           bool *default_enabled, const char **note);

/* One session's settings. */
typedef struct em_conf em_conf;

em_status em_conf_create(em_conf **out, em_error *err) EM_MUST_CHECK;
void em_conf_destroy(em_conf *c); /* NULL is fine */

/* Sets key to value (both copied; blanks around the key are ignored, as in
 * Spark's SET). An alias sets its canonical key; setting
 * one key through two spellings to different values is an error naming
 * both, while setting it again through the same spelling replaces the value
 * (Spark's last-wins). Errors (EM_ERR_INVALID, naming the key and value):
 * a value that does not parse as the key's type or lies outside its range
 * or its allowed values; an unknown key under spark.ember./spark.rapids./
 * spark.gluten. (the nearest known key is suggested); an empty key. */
em_status em_conf_set(em_conf *c, const char *key, const char *value, em_error *err) EM_MUST_CHECK;
/* The CLI's --conf: "key=value" split at the first '='. */
em_status em_conf_set_kv(em_conf *c, const char *kv, em_error *err) EM_MUST_CHECK;
/* Every member of a JSON object {"key": "value", ...} (the Spark plugin's
 * settings), as em_conf_set; len bytes of text. A value must be a string. */
em_status em_conf_set_json(em_conf *c, const char *json, size_t len, em_error *err) EM_MUST_CHECK;

/* The settings made, in the order first made: canonical key, the spelling
 * used, the stored value (normalized: booleans lower case, enums as listed,
 * registered values trimmed, other keys' values verbatim). Borrowed from c,
 * valid until the next set or destroy. */
size_t em_conf_n_set(const em_conf *c);
bool em_conf_set_at(const em_conf *c, size_t i, const char **key, const char **spelled,
                    const char **value);
/* Whether key (any spelling) was set. */
bool em_conf_is_set(const em_conf *c, const char *key);
/* The effective text of key: its set value, else its default, else NULL.
 * Unknown keys that were kept return their value. Borrowed. */
const char *em_conf_get_text(const em_conf *c, const char *key);

/* Typed reads, defaults applied; c may be NULL (defaults only). key may be
 * any spelling, including family keys (booleans: a class not registered
 * reads as enabled, since it cannot have been set). An int key reads as a
 * long too. EM_ERR_INVALID when the key is not registered, has another
 * type, or is unset with no default (context-dependent defaults such as
 * spark.sql.ansi.enabled: check em_conf_is_set first). */
em_status em_conf_get_bool(const em_conf *c, const char *key, bool *out,
                           em_error *err) EM_MUST_CHECK;
em_status em_conf_get_int(const em_conf *c, const char *key, int32_t *out,
                          em_error *err) EM_MUST_CHECK;
em_status em_conf_get_long(const em_conf *c, const char *key, int64_t *out,
                           em_error *err) EM_MUST_CHECK;
em_status em_conf_get_double(const em_conf *c, const char *key, double *out,
                             em_error *err) EM_MUST_CHECK;
/* Sizes in bytes; a key with no default that is unset reads as -1. */
em_status em_conf_get_bytes(const em_conf *c, const char *key, int64_t *out,
                            em_error *err) EM_MUST_CHECK;
/* Strings and enums: *out is borrowed (NULL when unset with no default). */
em_status em_conf_get_string(const em_conf *c, const char *key, const char **out,
                             em_error *err) EM_MUST_CHECK;
/* Enums: the index of the value in em_conf_key.values. */
em_status em_conf_get_enum(const em_conf *c, const char *key, int *out,
                           em_error *err) EM_MUST_CHECK;

/* Parsers behind the setters, in Spark's syntax (the text is trimmed). For
 * sizes, unit is the bytes of a bare number; a suffixed value is converted
 * to whole units, truncating as Spark does, and returned in bytes. */
bool em_conf_parse_bool(const char *text, bool *out);
bool em_conf_parse_bytes(const char *text, int64_t unit, int64_t *out_bytes);

/* The nearest known key to an unknown one (registered names, aliases and
 * family members), by edit distance; borrowed or static. */
const char *em_conf_nearest_key(const char *key);

/* The catalog as a Markdown page (docs/configs.md) or as plain text for
 * `ember conf`. all: list every family member as a row of its own (else
 * the family's members are named in one paragraph). *out is malloc'd;
 * the caller frees it. */
em_status em_conf_markdown(bool all, char **out, em_error *err) EM_MUST_CHECK;
em_status em_conf_text(bool all, char **out, em_error *err) EM_MUST_CHECK;

/* The command that regenerates docs/configs.md. */
#define EM_CONF_DOCS_COMMAND "ember conf --markdown > docs/configs.md"

#ifdef __cplusplus
}
#endif
#endif
