/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time zones (src/core/tz.c) against published transition dates: the US
 * and EU daylight saving rules (second Sunday of March 02:00 local to first
 * Sunday of November 02:00 local; last Sunday of March 01:00 UTC to last
 * Sunday of October 01:00 UTC), and java.time's resolution of local times in
 * gaps (shifted forward by the gap) and overlaps (the earlier offset).
 * Instants are written as UTC date-times, converted by utc() below.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember/tz.h"
#include "ember/value_text.h"

static int64_t utc(int y, int mo, int d, int h, int mi) {
    return em_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static const em_tz *zone(const char *id) {
    em_error err = {0};
    const em_tz *z = NULL;
    EM_ASSERT_OK(em_tz_find(id, &z, &err), &err);
    assert_non_null(z);
    return z;
}

/* The offset changes from `before` to `after` exactly at instant `at`. */
static void assert_change(const em_tz *z, int64_t at, int32_t before, int32_t after) {
    assert_int_equal(em_tz_offset(z, at - 1), before);
    assert_int_equal(em_tz_offset(z, at), after);
}

static void test_los_angeles_2024(void **state) {
    (void)state;
    const em_tz *z = zone("America/Los_Angeles");
    assert_false(em_tz_is_utc(z));
    /* PST -> PDT at 2024-03-10 10:00 UTC, PDT -> PST at 2024-11-03 09:00 UTC */
    assert_change(z, utc(2024, 3, 10, 10, 0), -8 * 3600, -7 * 3600);
    assert_change(z, utc(2024, 11, 3, 9, 0), -7 * 3600, -8 * 3600);
    /* local 02:30 on 2024-03-10 does not exist: it becomes 03:30 PDT */
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 3, 10, 2, 30)), utc(2024, 3, 10, 10, 30));
    /* local 01:30 on 2024-11-03 happens twice: the first (PDT) is taken */
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 11, 3, 1, 30)), utc(2024, 11, 3, 8, 30));
    /* plain local times on either side */
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 7, 1, 12, 0)), utc(2024, 7, 1, 19, 0));
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 1, 1, 0, 0)), utc(2024, 1, 1, 8, 0));
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 3, 10, 3, 0)), utc(2024, 3, 10, 10, 0));
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 11, 3, 2, 0)), utc(2024, 11, 3, 10, 0));
    /* microseconds keep their fraction, before 1970 too */
    assert_int_equal(em_tz_utc_to_local_us(z, -1), -1 - 8LL * 3600 * 1000000);
    assert_int_equal(em_tz_local_to_utc_us(z, utc(2024, 3, 10, 2, 30) * 1000000 + 123456),
                     utc(2024, 3, 10, 10, 30) * 1000000 + 123456);
}

static void test_berlin_2024(void **state) {
    (void)state;
    const em_tz *z = zone("Europe/Berlin");
    assert_change(z, utc(2024, 3, 31, 1, 0), 3600, 7200);
    assert_change(z, utc(2024, 10, 27, 1, 0), 7200, 3600);
    /* gap 02:00-03:00 local on 2024-03-31; overlap 02:00-03:00 on 2024-10-27 */
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 3, 31, 2, 30)), utc(2024, 3, 31, 1, 30));
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 10, 27, 2, 30)), utc(2024, 10, 27, 0, 30));
    assert_int_equal(em_tz_local_to_utc(z, utc(2024, 10, 27, 3, 0)), utc(2024, 10, 27, 2, 0));
}

static void test_footer_rule_far_future(void **state) {
    (void)state;
    /* past the files' tables (2037 at most): the POSIX TZ footer decides */
    const em_tz *la = zone("America/Los_Angeles");
    assert_int_equal(em_tz_offset(la, utc(2100, 1, 15, 0, 0)), -8 * 3600);
    assert_int_equal(em_tz_offset(la, utc(2100, 7, 1, 12, 0)), -7 * 3600);
    /* 2100-03-14 is the second Sunday of March */
    assert_change(la, utc(2100, 3, 14, 10, 0), -8 * 3600, -7 * 3600);
    assert_int_equal(em_tz_local_to_utc(la, utc(2100, 3, 14, 2, 30)), utc(2100, 3, 14, 10, 30));
    const em_tz *be = zone("Europe/Berlin");
    /* last Sundays: 2100-03-28 and 2100-10-31 */
    assert_change(be, utc(2100, 3, 28, 1, 0), 3600, 7200);
    assert_change(be, utc(2100, 10, 31, 1, 0), 7200, 3600);
    assert_int_equal(em_tz_local_to_utc(be, utc(2100, 10, 31, 2, 30)), utc(2100, 10, 31, 0, 30));
    /* year 9999 still follows the rule (July: summer time) */
    assert_int_equal(em_tz_offset(be, utc(9999, 7, 1, 0, 0)), 7200);
}

static void test_fixed_offsets(void **state) {
    (void)state;
    static const struct {
        const char *id;
        int32_t off;
    } fixed[] = {
        {"UTC", 0},           {"Z", 0},          {"GMT", 0},         {"+00:00", 0},
        {"+08:00", 8 * 3600}, {"+8:00", 8 * 3600}, {"-0530", -19800}, {"UTC+05:30", 19800},
        {"GMT-3", -3 * 3600}, {"EST", -5 * 3600}, {"+01:02:03", 3723}, {"Asia/Kolkata", 19800},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        const em_tz *z = zone(fixed[i].id);
        assert_string_equal(em_tz_id(z), fixed[i].id);
        assert_int_equal(em_tz_offset(z, utc(2024, 3, 10, 10, 0)), fixed[i].off);
        assert_int_equal(em_tz_offset(z, utc(1999, 12, 31, 23, 59)), fixed[i].off);
        assert_int_equal(em_tz_local_to_utc(z, 1000000), 1000000 - fixed[i].off);
        assert_true(em_tz_is_utc(z) == (fixed[i].off == 0));
    }
    /* short ids name regions: PST is Los Angeles, with its DST */
    assert_int_equal(em_tz_offset(zone("PST"), utc(2024, 7, 1, 0, 0)), -7 * 3600);
    /* the same id twice is the same loaded zone */
    assert_ptr_equal(zone("Europe/Berlin"), zone("Europe/Berlin"));
}

static void test_day_start_in_gap(void **state) {
    (void)state;
    /* Sao Paulo skipped 2018-11-04 00:00-01:00 local: the day starts at 01:00 -02 */
    const em_tz *z = zone("America/Sao_Paulo");
    int64_t day = em_days_from_civil(2018, 11, 4);
    assert_int_equal(em_tz_day_start(z, day), utc(2018, 11, 4, 3, 0));
    assert_int_equal(em_tz_day_start(z, day + 1), utc(2018, 11, 5, 2, 0));
    assert_int_equal(em_tz_day_start(zone("Asia/Kolkata"), day), utc(2018, 11, 3, 18, 30));
}

/* An independent reading of the same files: glibc's zdump (package libc-bin)
 * lists every transition as the instants on either side with their offsets.
 * Zones with negative DST (Dublin), half-hour DST (Lord_Howe), a skipped day
 * (Apia), frequent changes (Casablanca) and southern rules (Sydney), 1900 to
 * 2100, so the footer rule decides the last decades. Each local time maps
 * back to its instant, or to the earlier one of an overlap. */
static void test_matches_zdump(void **state) {
    (void)state;
    static const char *const zones[] = {
        "America/Los_Angeles", "Europe/Dublin",    "Australia/Lord_Howe", "Pacific/Apia",
        "Africa/Casablanca",   "Australia/Sydney", "America/Sao_Paulo",   "Pacific/Chatham"};
    for (size_t k = 0; k < sizeof zones / sizeof *zones; k++) {
        const em_tz *z = zone(zones[k]);
        char cmd[256], line[512];
        snprintf(cmd, sizeof cmd, "zdump -v -c 1900,2100 %s", zones[k]);
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        int checked = 0;
        while (fgets(line, sizeof line, f)) {
            char *at = strstr(line, "  "), *ut = strstr(line, " UT = ");
            char *g = strstr(line, "gmtoff=");
            struct tm tm = {0};
            if (!at || !ut || !g)
                continue;
            *ut = '\0';
            assert_non_null(strptime(at + 2, "%a %b %d %H:%M:%S %Y", &tm));
            int64_t t = (int64_t)timegm(&tm);
            if (em_tz_offset(z, t) != atoi(g + 7))
                fail_msg("%s at %s UT: offset %d, zdump says %s", zones[k], at + 2,
                         em_tz_offset(z, t), g + 7);
            for (int64_t d = -3600; d <= 3600; d += 900) {
                int64_t local = t + d + em_tz_offset(z, t + d), back = em_tz_local_to_utc(z, local);
                assert_true(back <= t + d);
                assert_int_equal(back + em_tz_offset(z, back), local);
            }
            checked++;
        }
        assert_int_equal(pclose(f), 0);
        assert_true(checked > 10); /* zdump ran and listed transitions */
    }
}

static void test_errors(void **state) {
    (void)state;
    static const char *const bad[] = {"Mars/Olympus_Mons", "+25:00", "+08:0", "America/../etc",
                                      "zone.tab", "",  "UTC+", "/etc/passwd"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        em_error err = {0};
        const em_tz *z = (const em_tz *)&err;
        assert_int_equal(em_tz_find(bad[i], &z, &err), EM_ERR_INVALID);
        assert_null(z);
        if (bad[i][0])
            assert_non_null(strstr(err.msg, bad[i]));
    }
    /* no database: the message says so (a zone not loaded yet) */
    const char *old = getenv("TZDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TZDIR", "/nonexistent/zoneinfo", 1);
    em_error err = {0};
    const em_tz *z = NULL;
    assert_int_equal(em_tz_find("Asia/Tokyo", &z, &err), EM_ERR_IO);
    assert_non_null(strstr(err.msg, "not installed"));
    assert_non_null(strstr(err.msg, "Asia/Tokyo"));
    /* fixed offsets need no database */
    EM_ASSERT_OK(em_tz_find("+09:00", &z, &err), &err);
    if (saved)
        setenv("TZDIR", saved, 1);
    else
        unsetenv("TZDIR");
    free(saved);
    assert_int_equal(em_tz_offset(zone("Asia/Tokyo"), 0), 9 * 3600);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_los_angeles_2024), cmocka_unit_test(test_berlin_2024),
        cmocka_unit_test(test_footer_rule_far_future), cmocka_unit_test(test_fixed_offsets),
        cmocka_unit_test(test_day_start_in_gap), cmocka_unit_test(test_matches_zdump),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
