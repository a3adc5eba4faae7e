/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Declarations shared by the configuration catalog's files: family lookup
 * by full key (either spelling) for the conf object and the docs.
 */
#ifndef EM_CONF_INTERNAL_H
#define EM_CONF_INTERNAL_H

#include "ember/conf.h"

/* When key starts with a family's prefix or alias prefix: sets *fam and
 * *class_name (the text after the prefix, or the registered member's own
 * string when it is one, with its default and *is_member = true) and returns
 * true. */
bool em_conf_family_find(const char *key, em_conf_family_id *fam, const char **class_name,
                      bool *default_enabled, bool *is_member);
/* Whether registering the built-in members ran out of memory. */
bool em_conf_builtins_failed(void);

#endif
