/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_spark_error: which of Spark's exceptions an Ember error is, so that the
 * plugin raises Spark's own (a SparkArithmeticException with its error class
 * and message parameters) and a user matching on the error class sees what
 * Spark would have raised. An error qualifies when its message carries
 * Spark's error class in brackets and, where Spark's message has parameters,
 * Spark's own words around them; anything else stays Ember's exception.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ember/spark.h"

#define ANSI_CONF "\"spark.sql.ansi.enabled\""

/* The text of msg between `from` (found at or after p) and the next `to`,
 * into buf; the position after `to`, or NULL. */
static const char *between(const char *p, const char *from, const char *to, char *buf,
                           size_t cap) {
    const char *a = p ? strstr(p, from) : NULL;
    if (!a)
        return NULL;
    a += strlen(from);
    const char *b = strstr(a, to);
    if (!b || (size_t)(b - a) >= cap || b == a)
        return NULL;
    memcpy(buf, a, (size_t)(b - a));
    buf[b - a] = '\0';
    return b + strlen(to);
}

/* [CAST_OVERFLOW] The value V of the type "S" cannot be cast to "T" due to an
 * overflow. (Spark's words; values.c writes them for integral casts) */
static json_t *cast_overflow(const char *at) {
    char v[64], s[32], t[32];
    const char *p = between(at, "The value ", " of the type \"", v, sizeof v);
    p = between(p ? p - 1 : NULL, "\"", "\" cannot be cast to \"", s, sizeof s);
    p = between(p ? p - 1 : NULL, "\"", "\" due to an overflow.", t, sizeof t);
    if (!p)
        return NULL;
    char qs[40], qt[40];
    snprintf(qs, sizeof qs, "\"%s\"", s);
    snprintf(qt, sizeof qt, "\"%s\"", t);
    return json_pack("{s:s, s:s, s:s, s:s}", "value", v, "sourceType", qs, "targetType", qt,
                     "ansiConfig", ANSI_CONF);
}

char *em_spark_error(const char *msg) {
    if (!msg)
        return NULL;
    json_t *params = NULL;
    const char *cls = NULL;
    const char *at;
    if ((at = strstr(msg, "[CAST_OVERFLOW] ")) != NULL) {
        params = cast_overflow(at);
        cls = "CAST_OVERFLOW";
    } else if ((at = strstr(msg, "[DIVIDE_BY_ZERO] ")) != NULL) {
        /* Spark's message names only the setting that turns it off */
        params = json_pack("{s:s}", "config", ANSI_CONF);
        cls = "DIVIDE_BY_ZERO";
    }
    if (!params)
        return NULL;
    json_t *doc = json_pack("{s:s, s:s, s:o}", "exception",
                            "org.apache.spark.SparkArithmeticException", "errorClass", cls,
                            "messageParameters", params);
    char *out = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return out;
}
