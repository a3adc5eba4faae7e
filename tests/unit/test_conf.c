/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration catalog: parsing of every value type in Spark's syntax
 * (sizes with units, booleans in any case), enum and range validation,
 * aliases and conflicting alias values, nearest-key suggestions for unknown
 * Ember/rapids/Gluten keys, foreign spark.* keys kept, the per-class
 * families with their rapids spellings, and docs/configs.md kept in step
 * with the registry.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/conf.h"
#include "test_plan_common.h" /* plan_test_read */
#include "testutil.h"

static em_conf *new_conf(void) {
    em_conf *c = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_conf_create(&c, &err), &err);
    return c;
}

/* Sets and expects failure; returns the message (static). */
static const char *set_fails(em_conf *c, const char *kv) {
    static em_error err;
    memset(&err, 0, sizeof err);
    em_status s = em_conf_set_kv(c, kv, &err);
    if (s == EM_OK)
        fail_msg("--conf %s was accepted", kv);
    assert_int_equal(s, EM_ERR_INVALID);
    return err.msg;
}

#define SET_OK(c, kv)                                                                              \
    do {                                                                                           \
        em_error e_ = {0};                                                                         \
        EM_ASSERT_OK(em_conf_set_kv((c), (kv), &e_), &e_);                                         \
    } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fail_msg("'%s' does not contain '%s'", (hay), (needle));                               \
    } while (0)

static void test_bytes_parsing(void **state) {
    (void)state;
    int64_t v;
    assert_true(em_conf_parse_bytes("1g", 1, &v));
    assert_int_equal(v, 1073741824LL);
    assert_true(em_conf_parse_bytes("512m", 1, &v));
    assert_int_equal(v, 512LL << 20);
    assert_true(em_conf_parse_bytes("1024k", 1, &v));
    assert_int_equal(v, 1048576);
    assert_true(em_conf_parse_bytes("100b", 1, &v));
    assert_int_equal(v, 100);
    assert_true(em_conf_parse_bytes("12345", 1, &v));
    assert_int_equal(v, 12345);
    assert_true(em_conf_parse_bytes(" 4GB ", 1, &v)); /* trimmed, any case, two-letter unit */
    assert_int_equal(v, 4LL << 30);
    assert_true(em_conf_parse_bytes("2t", 1, &v));
    assert_int_equal(v, 2LL << 40);
    assert_true(em_conf_parse_bytes("1pb", 1, &v));
    assert_int_equal(v, 1LL << 50);
    assert_true(em_conf_parse_bytes("0", 1, &v));
    assert_int_equal(v, 0);
    /* a bare number is in the key's unit; suffixed values truncate to whole units */
    assert_true(em_conf_parse_bytes("4096", 1 << 20, &v));
    assert_int_equal(v, 4096LL << 20);
    assert_true(em_conf_parse_bytes("1536k", 1 << 20, &v));
    assert_int_equal(v, 1LL << 20);
    assert_false(em_conf_parse_bytes("1.5g", 1, &v));
    assert_false(em_conf_parse_bytes("4x", 1, &v));
    assert_false(em_conf_parse_bytes("g", 1, &v));
    assert_false(em_conf_parse_bytes("-1", 1, &v));
    assert_false(em_conf_parse_bytes("", 1, &v));
    assert_false(em_conf_parse_bytes("1 g", 1, &v));
    assert_false(em_conf_parse_bytes("99999999999p", 1, &v)); /* overflows int64 */
    assert_false(em_conf_parse_bytes("99999999999999999999", 1, &v));
}

static void test_bool_parsing(void **state) {
    (void)state;
    bool b = false;
    assert_true(em_conf_parse_bool("true", &b) && b);
    assert_true(em_conf_parse_bool("TRUE", &b) && b);
    assert_true(em_conf_parse_bool(" True ", &b) && b);
    assert_true(em_conf_parse_bool("false", &b) && !b);
    assert_true(em_conf_parse_bool("FaLsE", &b) && !b);
    assert_false(em_conf_parse_bool("yes", &b));
    assert_false(em_conf_parse_bool("1", &b));
    assert_false(em_conf_parse_bool("", &b));
}

static void test_typed_values(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    bool b;
    int32_t i;
    int64_t l;
    double d;
    const char *s;

    /* defaults, also with no conf at all */
    EM_ASSERT_OK(em_conf_get_bool(NULL, "spark.ember.sql.enabled", &b, &err), &err);
    assert_true(b);
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.incompatibleOps.enabled", &b, &err), &err);
    assert_false(b);
    EM_ASSERT_OK(em_conf_get_int(c, "spark.sql.shuffle.partitions", &i, &err), &err);
    assert_int_equal(i, 200);
    EM_ASSERT_OK(em_conf_get_bytes(c, "spark.sql.files.maxPartitionBytes", &l, &err), &err);
    assert_int_equal(l, 128LL << 20);
    EM_ASSERT_OK(em_conf_get_bytes(c, "spark.executor.memory", &l, &err), &err);
    assert_int_equal(l, 1LL << 30);
    EM_ASSERT_OK(em_conf_get_double(c, "spark.ember.autoAdjustStageResource.heap.ratio", &d, &err),
                 &err);
    assert_true(d == 2.0);
    EM_ASSERT_OK(em_conf_get_bytes(c, "spark.ember.memory.budget", &l, &err), &err);
    assert_int_equal(l, -1); /* unset, no default: unlimited */
    EM_ASSERT_OK(em_conf_get_string(c, "spark.ember.sql.lore.dumpPath", &s, &err), &err);
    assert_null(s);

    SET_OK(c, "spark.ember.sql.enabled=FALSE");
    SET_OK(c, "spark.sql.shuffle.partitions= 64 ");
    SET_OK(c, "spark.ember.autoAdjustStageResource.shuffleComplexity.threshold="
              "5000000000");
    SET_OK(c, "spark.ember.autoAdjustStageResource.offHeap.ratio=0.25");
    SET_OK(c, "spark.executor.memory=4096"); /* MiB */
    SET_OK(c, "spark.memory.offHeap.size=2g");
    SET_OK(c, "spark.sql.session.timeZone=America/Los_Angeles");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.enabled", &b, &err), &err);
    assert_false(b);
    assert_string_equal(em_conf_get_text(c, "spark.ember.sql.enabled"), "false");
    EM_ASSERT_OK(em_conf_get_int(c, "spark.sql.shuffle.partitions", &i, &err), &err);
    assert_int_equal(i, 64);
    EM_ASSERT_OK(em_conf_get_long(c,
                                  "spark.ember.autoAdjustStageResource.shuffleComplexity"
                                  ".threshold",
                                  &l, &err),
                 &err);
    assert_int_equal(l, 5000000000LL);
    EM_ASSERT_OK(em_conf_get_long(c, "spark.sql.shuffle.partitions", &l, &err), &err);
    assert_int_equal(l, 64); /* ints read as longs too */
    EM_ASSERT_OK(
        em_conf_get_double(c, "spark.ember.autoAdjustStageResource.offHeap.ratio", &d, &err), &err);
    assert_true(d == 0.25);
    EM_ASSERT_OK(em_conf_get_bytes(c, "spark.executor.memory", &l, &err), &err);
    assert_int_equal(l, 4096LL << 20);
    EM_ASSERT_OK(em_conf_get_bytes(c, "spark.memory.offHeap.size", &l, &err), &err);
    assert_int_equal(l, 2LL << 30);
    EM_ASSERT_OK(em_conf_get_string(c, "spark.sql.session.timeZone", &s, &err), &err);
    assert_string_equal(s, "America/Los_Angeles");

    /* bad values name the key, the value and what was expected */
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.enabled=yes"), "spark.ember.sql.enabled");
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.enabled=yes"), "'yes' is not a boolean");
    ASSERT_CONTAINS(set_fails(c, "spark.sql.shuffle.partitions=12x"), "'12x' is not an int");
    ASSERT_CONTAINS(set_fails(c, "spark.sql.shuffle.partitions=3000000000"), "not an int");
    ASSERT_CONTAINS(set_fails(c, "spark.sql.shuffle.partitions=0"), "out of range");
    ASSERT_CONTAINS(set_fails(c, "spark.ember.autoAdjustStageResource.heap.ratio=two"),
                    "not a number");
    ASSERT_CONTAINS(
        set_fails(c, "spark.ember.autoAdjustStageResource.fallenNode.ratio.threshold=1.5"),
        "out of range");
    ASSERT_CONTAINS(set_fails(c, "spark.executor.memory=1.5g"), "fractional");
    ASSERT_CONTAINS(set_fails(c, "spark.memory.offHeap.size=4x"), "unknown unit");
    ASSERT_CONTAINS(set_fails(c, "spark.ember.runtime.threads=-1"), "out of range");
    /* a refused value leaves the previous one */
    EM_ASSERT_OK(em_conf_get_int(c, "spark.sql.shuffle.partitions", &i, &err), &err);
    assert_int_equal(i, 64);
    /* last wins for one spelling */
    SET_OK(c, "spark.sql.shuffle.partitions=8");
    EM_ASSERT_OK(em_conf_get_int(c, "spark.sql.shuffle.partitions", &i, &err), &err);
    assert_int_equal(i, 8);

    /* reading with the wrong type or an unknown key is an error */
    assert_int_equal(em_conf_get_int(c, "spark.ember.sql.enabled", &i, &err), EM_ERR_INVALID);
    assert_int_equal(em_conf_get_bool(c, "spark.ember.nope", &b, &err), EM_ERR_INVALID);
    em_conf_destroy(c);
}

static void test_enum(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    int idx = -1;
    const char *s;
    EM_ASSERT_OK(em_conf_get_enum(c, "spark.ember.sql.explain", &idx, &err), &err);
    assert_int_equal(idx, 0);
    SET_OK(c, "spark.ember.sql.explain=not_on_accelerator");
    EM_ASSERT_OK(em_conf_get_enum(c, "spark.ember.sql.explain", &idx, &err), &err);
    assert_int_equal(idx, 1);
    EM_ASSERT_OK(em_conf_get_string(c, "spark.ember.sql.explain", &s, &err), &err);
    assert_string_equal(s, "NOT_ON_ACCELERATOR"); /* normalized to the listed spelling */
    const char *msg = set_fails(c, "spark.ember.sql.explain=SOME");
    ASSERT_CONTAINS(msg, "spark.ember.sql.explain");
    ASSERT_CONTAINS(msg, "'SOME'");
    ASSERT_CONTAINS(msg, "NONE, NOT_ON_ACCELERATOR, ALL");
    em_conf_destroy(c);
}

static void test_ansi_version_default(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    bool b;
    assert_false(em_conf_is_set(c, "spark.sql.ansi.enabled"));
    assert_int_equal(em_conf_get_bool(c, "spark.sql.ansi.enabled", &b, &err), EM_ERR_INVALID);
    ASSERT_CONTAINS(err.msg, "no default");
    SET_OK(c, "spark.sql.ansi.enabled=true");
    assert_true(em_conf_is_set(c, "spark.sql.ansi.enabled"));
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.sql.ansi.enabled", &b, &err), &err);
    assert_true(b);
    em_conf_destroy(c);
}

static void test_aliases(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    bool b;
    double d;
    const char *s;
    assert_ptr_equal(em_conf_lookup("spark.rapids.sql.lore.idsToDump"),
                     em_conf_lookup("spark.ember.sql.lore.idsToDump"));
    SET_OK(c, "spark.rapids.sql.lore.tag.enabled=false");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.lore.tag.enabled", &b, &err), &err);
    assert_false(b);
    SET_OK(c, "spark.gluten.auto.adjustStageResources.heap.ratio=3.5");
    EM_ASSERT_OK(em_conf_get_double(c, "spark.ember.autoAdjustStageResource.heap.ratio", &d, &err),
                 &err);
    assert_true(d == 3.5);
    /* read through the alias too */
    EM_ASSERT_OK(
        em_conf_get_double(c, "spark.gluten.auto.adjustStageResources.heap.ratio", &d, &err), &err);
    assert_true(d == 3.5);
    SET_OK(c, "spark.gluten.auto.adjustStageResource.enabled=true");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.autoAdjustStageResource.enabled", &b, &err),
                 &err);
    assert_true(b);
    SET_OK(c, "spark.gluten.auto.adjustStageResources.offheap.ratio=0.75");
    SET_OK(c, "spark.gluten.auto.adjustStageResources.fallenNode.ratio.threshold=0.3");
    EM_ASSERT_OK(em_conf_get_double(
                     c, "spark.ember.autoAdjustStageResource.fallenNode.ratio.threshold", &d, &err),
                 &err);
    assert_true(d == 0.3);

    /* the setting is listed under its canonical key with the spelling used */
    const char *key, *spelled, *value;
    assert_true(em_conf_set_at(c, 0, &key, &spelled, &value));
    assert_string_equal(key, "spark.ember.sql.lore.tag.enabled");
    assert_string_equal(spelled, "spark.rapids.sql.lore.tag.enabled");
    assert_string_equal(value, "false");

    /* a key and its alias with different values: an error naming both, in either
     * order */
    SET_OK(c, "spark.rapids.sql.lore.idsToDump=1[*]");
    const char *msg = set_fails(c, "spark.ember.sql.lore.idsToDump=2[*]");
    ASSERT_CONTAINS(msg, "spark.ember.sql.lore.idsToDump=2[*]");
    ASSERT_CONTAINS(msg, "spark.rapids.sql.lore.idsToDump=1[*]");
    EM_ASSERT_OK(em_conf_get_string(c, "spark.ember.sql.lore.idsToDump", &s, &err), &err);
    assert_string_equal(s, "1[*]");
    SET_OK(c, "spark.ember.sql.lore.dumpPath=/tmp/a");
    msg = set_fails(c, "spark.rapids.sql.lore.dumpPath=/tmp/b");
    ASSERT_CONTAINS(msg, "spark.rapids.sql.lore.dumpPath=/tmp/b");
    ASSERT_CONTAINS(msg, "spark.ember.sql.lore.dumpPath=/tmp/a");
    /* ... but the same value through both spellings is fine */
    SET_OK(c, "spark.rapids.sql.lore.dumpPath=/tmp/a");
    /* booleans are compared normalized */
    SET_OK(c, "spark.ember.sql.lore.tag.enabled=FALSE");
    msg = set_fails(c, "spark.ember.sql.lore.tag.enabled=true");
    ASSERT_CONTAINS(msg, "spark.rapids.sql.lore.tag.enabled=false");
    em_conf_destroy(c);
}

static void test_unknown_keys(void **state) {
    (void)state;
    em_conf *c = new_conf();
    const char *msg = set_fails(c, "spark.ember.sql.enable=true");
    ASSERT_CONTAINS(msg, "unknown config key spark.ember.sql.enable;");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.enabled?");
    msg = set_fails(c, "spark.ember.sql.lore.idToDump=1");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.lore.idsToDump?");
    msg = set_fails(c, "spark.ember.sql.explian=ALL");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.explain?");
    msg = set_fails(c, "spark.ember.autoAdjustStageResources.enabled=true");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.autoAdjustStageResource.enabled?");
    /* rapids / gluten keys that are not aliases are refused too */
    msg = set_fails(c, "spark.rapids.sql.lore.dumpPat=/x");
    ASSERT_CONTAINS(msg, "did you mean spark.rapids.sql.lore.dumpPath?");
    msg = set_fails(c, "spark.rapids.sql.incompatibleOps.enabled=true");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.incompatibleOps.enabled?");
    msg = set_fails(c, "spark.gluten.auto.adjustStageResources.heap.ration=2");
    ASSERT_CONTAINS(msg, "did you mean spark.gluten.auto.adjustStageResources.heap.ratio?");
    assert_string_equal(em_conf_nearest_key("spark.ember.runtime.thread"),
                        "spark.ember.runtime.threads");
    /* keys are case-sensitive, as in Spark */
    set_fails(c, "spark.ember.sql.Enabled=true");
    assert_int_equal(em_conf_n_set(c), 0);
    /* malformed settings */
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.enabled"), "not key=value");
    ASSERT_CONTAINS(set_fails(c, "=true"), "empty");
    em_conf_destroy(c);
}

static void test_foreign_keys_kept(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    bool b;
    SET_OK(c, "spark.sql.adaptive.enabled=true");
    SET_OK(c, "spark.some.future.key= anything at all ");
    SET_OK(c, "spark.sql.autoBroadcastJoinThreshold=10MB");
    assert_true(em_conf_is_set(c, "spark.sql.adaptive.enabled"));
    assert_string_equal(em_conf_get_text(c, "spark.some.future.key"), " anything at all ");
    assert_string_equal(em_conf_get_text(c, "spark.sql.autoBroadcastJoinThreshold"), "10MB");
    assert_null(em_conf_get_text(c, "spark.not.set"));
    /* kept, but not typed: Ember does not read them */
    assert_int_equal(em_conf_get_bool(c, "spark.sql.adaptive.enabled", &b, &err), EM_ERR_INVALID);
    assert_int_equal(em_conf_n_set(c), 3);
    const char *key, *value;
    assert_true(em_conf_set_at(c, 1, &key, NULL, &value));
    assert_string_equal(key, "spark.some.future.key");
    assert_false(em_conf_set_at(c, 3, &key, NULL, &value));
    em_conf_destroy(c);
}

static void test_families(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    bool b;
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.exec.FilterExec", &b, &err), &err);
    assert_true(b);
    SET_OK(c, "spark.ember.sql.exec.FilterExec=false");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.exec.FilterExec", &b, &err), &err);
    assert_false(b);
    /* the rapids spelling reads and sets the same switch */
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.rapids.sql.exec.FilterExec", &b, &err), &err);
    assert_false(b);
    SET_OK(c, "spark.rapids.sql.exec.SortExec=False");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.exec.SortExec", &b, &err), &err);
    assert_false(b);
    const char *key;
    assert_true(em_conf_set_at(c, 1, &key, NULL, NULL));
    assert_string_equal(key, "spark.ember.sql.exec.SortExec");
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.exec.SortExec=true"),
                    "spark.rapids.sql.exec.SortExec=false");
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.exec.ProjectExec=maybe"), "not a boolean");
    /* unknown classes: the nearest registered one is suggested */
    const char *msg = set_fails(c, "spark.ember.sql.exec.FiltreExec=false");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.exec.FilterExec?");
    msg = set_fails(c, "spark.rapids.sql.exec.SortMergeJoin=false");
    ASSERT_CONTAINS(msg, "did you mean spark.rapids.sql.exec.SortMergeJoinExec?");
    /* a family key suggests a class of its own family, not some other key */
    msg = set_fails(c, "spark.rapids.sql.exec.Foo=true");
    ASSERT_CONTAINS(msg, "did you mean spark.rapids.sql.exec.");
    msg = set_fails(c, "spark.ember.sql.expression.Substr=true");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.expression.Substring?");
    msg = set_fails(c, "spark.ember.sql.exec.Hash=false"); /* truncated: a prefix match */
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.exec.HashAggregateExec?");
    msg = set_fails(c, "spark.ember.sql.lore.dump=x");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.lore.dump");
    msg = set_fails(c, "spark.ember.sql.expression.Addd=true");
    ASSERT_CONTAINS(msg, "did you mean spark.ember.sql.expression.Add?");

    /* built-in expressions, and more registered by the overrides layer */
    SET_OK(c, "spark.rapids.sql.expression.Add=false");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.expression.Add", &b, &err), &err);
    assert_false(b);
    size_t n_expr = em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION);
    ASSERT_CONTAINS(set_fails(c, "spark.ember.sql.expression.Explode=false"),
                    "no such class registered");
    EM_ASSERT_OK(em_conf_family_register(EM_CONF_FAMILY_EXPRESSION, "Explode", true, NULL, &err),
                 &err);
    EM_ASSERT_OK(em_conf_family_register(EM_CONF_FAMILY_EXPRESSION, "Sum", false,
                                         "floating-point order", &err),
                 &err);
    SET_OK(c, "spark.ember.sql.expression.Explode=false");
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.rapids.sql.expression.Explode", &b, &err), &err);
    assert_false(b);
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.expression.Sum", &b, &err), &err);
    assert_false(b); /* registered default */
    /* re-registering updates the default */
    EM_ASSERT_OK(em_conf_family_register(EM_CONF_FAMILY_EXPRESSION, "Sum", true, NULL, &err), &err);
    EM_ASSERT_OK(em_conf_get_bool(c, "spark.ember.sql.expression.Sum", &b, &err), &err);
    assert_true(b);
    assert_int_equal(em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION), n_expr + 1);
    assert_int_equal(em_conf_family_register(EM_CONF_FAMILY_EXEC, "Bad.Name", true, NULL, &err),
                     EM_ERR_INVALID);
    assert_int_equal(em_conf_family_register(EM_CONF_FAMILY_EXEC, "", true, NULL, &err),
                     EM_ERR_INVALID);

    /* members are listed in name order, the built-in execs among them */
    const char *prev = "", *cls;
    bool saw_bhj = false;
    for (size_t i = 0; em_conf_family_member(EM_CONF_FAMILY_EXEC, i, &cls, NULL, NULL); i++) {
        assert_true(strcmp(prev, cls) < 0);
        prev = cls;
        saw_bhj |= !strcmp(cls, "BroadcastHashJoinExec");
    }
    assert_true(saw_bhj);
    em_conf_destroy(c);
}

static void test_registry_sane(void **state) {
    (void)state;
    em_conf *c = new_conf();
    em_error err = {0};
    /* every default parses as its own type, and every name and alias is unique */
    for (size_t i = 0; i < em_conf_n_keys(); i++) {
        const em_conf_key *k = em_conf_key_at(i);
        assert_non_null(k->doc);
        assert_ptr_equal(em_conf_lookup(k->name), k);
        for (int a = 0; a < EM_CONF_MAX_ALIASES && k->aliases[a]; a++)
            assert_ptr_equal(em_conf_lookup(k->aliases[a]), k);
        if (k->default_value) {
            em_status s = em_conf_set(c, k->name, k->default_value, &err);
            if (s != EM_OK)
                fail_msg("default of %s does not validate: %s", k->name, err.msg);
        } else {
            assert_non_null(k->default_note);
        }
    }
    for (size_t i = 0; i < em_conf_n_keys(); i++)
        for (size_t j = i + 1; j < em_conf_n_keys(); j++)
            assert_string_not_equal(em_conf_key_at(i)->name, em_conf_key_at(j)->name);
    em_conf_destroy(c);
}

/* docs/configs.md must be what the generator prints now. Runs first (before any
 * test registers family members), over the built-in registry as the CLI sees
 * it. */
static void test_docs_not_stale(void **state) {
    (void)state;
    /* the checkout: $EMBER_SOURCE (set by ctest), else two levels above this file */
    const char *src = getenv("EMBER_SOURCE");
    char path[4096];
    if (src)
        snprintf(path, sizeof path, "%s/docs/configs.md", src);
    else {
        const char *cut = strstr(__FILE__, "tests/unit/");
        snprintf(path, sizeof path, "%.*sdocs/configs.md", (int)(cut ? cut - __FILE__ : 0),
                 __FILE__);
    }
    char *want = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_conf_markdown(false, &want, &err), &err);
    size_t have_len;
    char *have = plan_test_read(path, &have_len);
    if (!have || strcmp(have, want)) {
        size_t at = 0;
        if (have)
            while (have[at] && have[at] == want[at])
                at++;
        fail_msg("%s is %s (first difference at byte %zu); regenerate it with:\n  %s", path,
                 have ? "stale" : "missing", at, EM_CONF_DOCS_COMMAND);
    }
    ASSERT_CONTAINS(want, "spark.ember.sql.exec.<SparkClassName>");
    ASSERT_CONTAINS(want, "`FilterExec`");
    free(have);
    free(want);
    char *all = NULL;
    EM_ASSERT_OK(em_conf_markdown(true, &all, &err), &err);
    ASSERT_CONTAINS(all, "| `spark.ember.sql.exec.FilterExec` | true |");
    free(all);
    char *text = NULL;
    EM_ASSERT_OK(em_conf_text(false, &text, &err), &err);
    ASSERT_CONTAINS(text, "spark.ember.sql.explain\n    type: enum (NONE, "
                          "NOT_ON_ACCELERATOR, ALL)");
    ASSERT_CONTAINS(text, "version default");
    free(text);
}

/* Registrations from several threads while others read switches and suggestions: every
 * class ends up registered once, in order (run under ASan/TSan builds to catch races). */
#define REG_THREADS 4
#define REG_EACH 50

static void *register_many(void *arg) {
    int t = (int)(intptr_t)arg;
    em_error err = {0};
    char name[64];
    for (int i = 0; i < REG_EACH; i++) {
        snprintf(name, sizeof name, "ThreadTest%dExpr%d", t, i);
        if (em_conf_family_register(EM_CONF_FAMILY_EXPRESSION, name, i % 2 == 0, NULL, &err))
            return (void *)1;
        bool b;
        if (em_conf_get_bool(NULL, "spark.ember.sql.exec.FilterExec", &b, &err) || !b)
            return (void *)1;
        (void)em_conf_nearest_key("spark.ember.sql.expression.ThreadTest0Expr");
    }
    return NULL;
}

static void test_family_threads(void **state) {
    (void)state;
    size_t before = em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION);
    pthread_t th[REG_THREADS];
    for (int t = 0; t < REG_THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, register_many, (void *)(intptr_t)t), 0);
    for (int t = 0; t < REG_THREADS; t++) {
        void *rc;
        assert_int_equal(pthread_join(th[t], &rc), 0);
        assert_null(rc);
    }
    assert_int_equal(em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION),
                     before + REG_THREADS * REG_EACH);
    const char *prev = "", *cls;
    for (size_t i = 0; em_conf_family_member(EM_CONF_FAMILY_EXPRESSION, i, &cls, NULL, NULL); i++) {
        assert_true(strcmp(prev, cls) < 0);
        prev = cls;
    }
    em_error err = {0};
    bool b = true;
    EM_ASSERT_OK(em_conf_get_bool(NULL, "spark.ember.sql.expression.ThreadTest3Expr7", &b, &err),
                 &err);
    assert_false(b);
}

/* The CLI prints what the library renders: `ember conf --markdown` reproduces the committed
 * page, --all lists each switch, a bad argument is a usage error. */
static void test_cli(void **state) {
    (void)state;
    const char *bin = em_test_ember_bin();
    if (!bin)
        fail_msg("EMBER_BIN is not set: run this test through ctest");
    const char *dir = em_test_tmpdir("conf_cli");
    const char *src = getenv("EMBER_SOURCE");
    if (!src)
        fail_msg("EMBER_SOURCE is not set: run this test through ctest");
    assert_int_equal(em_test_system("'%s' conf --markdown > '%s/configs.md'", bin, dir), 0);
    assert_int_equal(em_test_system("cmp -s '%s/configs.md' '%s/docs/configs.md'", dir, src), 0);
    assert_int_equal(
        em_test_system("'%s' conf --all | grep -qx 'spark.ember.sql.exec.SortMergeJoinExec'", bin),
        0);
    assert_int_equal(em_test_system("'%s' conf | grep -q 'spark.sql.ansi.enabled'", bin), 0);
    assert_int_equal(em_test_system("'%s' conf --bogus 2>/dev/null", bin), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docs_not_stale),
        cmocka_unit_test(test_bytes_parsing),
        cmocka_unit_test(test_bool_parsing),
        cmocka_unit_test(test_typed_values),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_ansi_version_default),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_foreign_keys_kept),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_registry_sane),
        cmocka_unit_test(test_family_threads),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
