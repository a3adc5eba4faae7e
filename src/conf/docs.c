/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog rendered for people: docs/configs.md (Markdown) and the text
 * `ember conf` prints. Both are produced from the registry alone, in the
 * registry's order, so the generated page is byte-for-byte reproducible and
 * a test can compare the committed file with a fresh rendering.
 *
 * Markdown table cells cannot hold '|' or newlines; cell text is escaped
 * here rather than trusting every doc string to avoid them.
 */
#include <stdlib.h>
#include <string.h>

#include "conf/internal.h"
#include "ember/value_text.h"

static void md_cell(em_strbuf *sb, const char *s) {
    for (; s && *s; s++) {
        if (*s == '|')
            em_strbuf_appends(sb, "\\|", NULL);
        else if (*s == '\n')
            em_strbuf_appends(sb, " ", NULL);
        else
            em_strbuf_append(sb, s, 1, NULL);
    }
}

/* "enum (A, B, C)", "bytes (bare number: MiB)" or the type's name. */
static void type_text(em_strbuf *sb, const em_conf_key *k) {
    em_strbuf_appends(sb, em_conf_type_name(k->type), NULL);
    if (k->type == EM_CONF_ENUM) {
        em_strbuf_appends(sb, " (", NULL);
        for (int i = 0; i < EM_CONF_MAX_VALUES && k->values[i]; i++)
            em_strbuf_appendf(sb, NULL, "%s%s", i ? ", " : "", k->values[i]);
        em_strbuf_appends(sb, ")", NULL);
    } else if (k->type == EM_CONF_BYTES && k->unit == ((int64_t)1 << 20)) {
        em_strbuf_appends(sb, " (bare number: MiB)", NULL);
    }
}

static const char *default_text(const em_conf_key *k) {
    if (k->default_note)
        return k->default_note;
    if (!k->default_value)
        return "none";
    return *k->default_value ? k->default_value : "(empty)";
}

static void aliases_text(em_strbuf *sb, const em_conf_key *k, const char *sep, bool code) {
    for (int a = 0; a < EM_CONF_MAX_ALIASES && k->aliases[a]; a++)
        em_strbuf_appendf(sb, NULL, "%s%s%s%s", a ? sep : "", code ? "`" : "", k->aliases[a],
                          code ? "`" : "");
}

static void md_key_table(em_strbuf *sb, bool spark_keys) {
    em_strbuf_appends(sb,
                      "| Key | Type | Default | Scope | Aliases | Meaning |\n"
                      "|-----|------|---------|-------|---------|---------|\n",
                      NULL);
    for (size_t i = 0; i < em_conf_n_keys(); i++) {
        const em_conf_key *k = em_conf_key_at(i);
        if (k->spark_key != spark_keys)
            continue;
        em_strbuf_appendf(sb, NULL, "| `%s` | ", k->name);
        em_strbuf tt = {0};
        type_text(&tt, k);
        md_cell(sb, em_strbuf_cstr(&tt));
        em_strbuf_reset(&tt);
        em_strbuf_appends(sb, " | ", NULL);
        md_cell(sb, default_text(k));
        em_strbuf_appendf(sb, NULL, " | %s | ", em_conf_scope_name(k->scope));
        aliases_text(sb, k, "<br>", true);
        em_strbuf_appends(sb, " | ", NULL);
        md_cell(sb, k->doc);
        em_strbuf_appends(sb, " |\n", NULL);
    }
}

static void md_family(em_strbuf *sb, em_conf_family_id f, bool all) {
    const em_conf_family *fam = em_conf_family_get(f);
    em_strbuf_appendf(sb, NULL,
                      "\n### `%s<SparkClassName>`\n\n"
                      "Alias: `%s<SparkClassName>`. Type bool, scope query, "
                      "default true unless "
                      "noted.\n\n%s\n\n",
                      fam->prefix, fam->alias_prefix, fam->doc);
    size_t n = em_conf_family_n_members(f);
    if (n == 0) {
        em_strbuf_appends(sb, "No classes are registered yet.\n", NULL);
        return;
    }
    const char *cls, *note;
    bool def;
    if (all) {
        em_strbuf_appends(sb, "| Key | Default | Note |\n|-----|---------|------|\n", NULL);
        for (size_t i = 0; em_conf_family_member(f, i, &cls, &def, &note); i++) {
            em_strbuf_appendf(sb, NULL, "| `%s%s` | %s | ", fam->prefix, cls,
                              def ? "true" : "false");
            md_cell(sb, note);
            em_strbuf_appends(sb, " |\n", NULL);
        }
        return;
    }
    em_strbuf_appendf(sb, NULL, "Registered classes (%zu): ", n);
    for (size_t i = 0; em_conf_family_member(f, i, &cls, &def, &note); i++)
        em_strbuf_appendf(sb, NULL, "%s`%s`%s", i ? ", " : "", cls, def ? "" : " (default false)");
    em_strbuf_appends(sb, ".\n", NULL);
}

static em_status finish(em_strbuf *sb, char **out, em_error *err) {
    if (em_strbuf_status(sb) != EM_OK) {
        em_strbuf_reset(sb);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory rendering the config catalog");
    }
    *out = sb->data ? sb->data : calloc(1, 1);
    if (!*out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory rendering the config catalog");
    return EM_OK;
}

em_status em_conf_markdown(bool all, char **out, em_error *err) {
    em_strbuf sb = {0};
    em_strbuf_appendf(&sb, NULL,
                      "<!-- Generated from the config registry (src/conf/registry.c); do not "
                      "edit by hand.\n"
                      "     Regenerate with: %s -->\n\n"
                      "# Ember configuration\n\n"
                      "Every key Ember reads. Set them as Spark does (`--conf key=value`; "
                      "`ember run` takes "
                      "the same `--conf`). `ember conf` prints this catalog, `ember conf "
                      "--all` with one line "
                      "per operator switch.\n\n"
                      "- **Scope**: `startup` keys are read once when the process (executor) "
                      "starts; `query` "
                      "keys are read for every query.\n"
                      "- **Aliases**: spark-rapids' (`spark.rapids.*`) and Gluten's "
                      "(`spark.gluten.*`) "
                      "spellings of a key are accepted and mean the Ember key. Setting a key "
                      "and its alias "
                      "to different values is an error naming both.\n"
                      "- **Values** are validated when set: booleans are `true`/`false` in any "
                      "case; ints "
                      "and longs are decimal integers; sizes are a whole number with an "
                      "optional unit `b`, "
                      "`k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb`, `p`/`pb` (binary: `1k` = 1024 "
                      "bytes; any "
                      "case; no fractions), and a bare number is in the key's unit (MiB for "
                      "`spark.executor.memory`, bytes elsewhere); enums take one of the listed "
                      "values in "
                      "any case. Blanks around values are ignored.\n"
                      "- **Unknown keys**: an unknown key under `spark.ember.`, "
                      "`spark.rapids.` or "
                      "`spark.gluten.` is an error that suggests the nearest known key. Any "
                      "other key "
                      "(Spark has thousands) is accepted and kept unchanged, so it can be "
                      "passed on.\n"
                      "- A default written in words (e.g. *version default*) depends on the "
                      "context the key "
                      "is read in.\n\n"
                      "## Ember keys\n\n",
                      EM_CONF_DOCS_COMMAND);
    md_key_table(&sb, false);
    em_strbuf_appends(&sb, "\n## Spark keys Ember reads\n\n", NULL);
    md_key_table(&sb, true);
    em_strbuf_appends(&sb,
                      "\n## Per-operator switches\n\nOne boolean key per Spark class. The "
                      "class names are registered by the layer that implements them; a class "
                      "that is not registered is an unknown key.\n",
                      NULL);
    for (int f = 0; f < EM_CONF_FAMILY_COUNT_; f++)
        md_family(&sb, (em_conf_family_id)f, all);
    return finish(&sb, out, err);
}

em_status em_conf_text(bool all, char **out, em_error *err) {
    em_strbuf sb = {0};
    for (size_t i = 0; i < em_conf_n_keys(); i++) {
        const em_conf_key *k = em_conf_key_at(i);
        em_strbuf_appendf(&sb, NULL, "%s\n    type: ", k->name);
        type_text(&sb, k);
        em_strbuf_appendf(&sb, NULL, "; default: %s; scope: %s%s\n", default_text(k),
                          em_conf_scope_name(k->scope), k->spark_key ? "; Spark's key" : "");
        if (k->aliases[0]) {
            em_strbuf_appends(&sb, "    aliases: ", NULL);
            aliases_text(&sb, k, ", ", false);
            em_strbuf_appends(&sb, "\n", NULL);
        }
        em_strbuf_appendf(&sb, NULL, "    %s\n", k->doc);
    }
    for (int f = 0; f < EM_CONF_FAMILY_COUNT_; f++) {
        const em_conf_family *fam = em_conf_family_get((em_conf_family_id)f);
        em_strbuf_appendf(&sb, NULL,
                          "%s<SparkClassName>\n    type: bool; default: true unless noted; "
                          "scope: query\n    aliases: %s<SparkClassName>\n    %s\n",
                          fam->prefix, fam->alias_prefix, fam->doc);
        const char *cls, *note;
        bool def;
        size_t n = em_conf_family_n_members((em_conf_family_id)f);
        if (!all && n)
            em_strbuf_appendf(&sb, NULL, "    classes (%zu; --all lists each):", n);
        for (size_t i = 0; em_conf_family_member((em_conf_family_id)f, i, &cls, &def, &note); i++) {
            if (all)
                em_strbuf_appendf(&sb, NULL, "%s%s\n    type: bool; default: %s%s%s\n", fam->prefix,
                                  cls, def ? "true" : "false", note ? "; " : "", note ? note : "");
            else
                em_strbuf_appendf(&sb, NULL, " %s%s", cls, def ? "" : "(false)");
        }
        if (!all && n)
            em_strbuf_appends(&sb, "\n", NULL);
    }
    return finish(&sb, out, err);
}
