/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time zones from the system's TZif files (RFC 8536); see ember/tz.h.
 *
 * A zone is a sorted table of offset changes (instant, offset before, offset
 * after) plus, for instants after the last one, the POSIX TZ rule of the
 * file's footer. The rule is expanded on demand into the changes of the
 * years around the instant, so one lookup routine serves both. Entries that
 * only change the abbreviation or the DST flag are dropped: Spark only ever
 * asks for the total offset.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember/tz.h"
#include "ember/value_text.h"

typedef struct tz_change {
    int64_t at; /* UTC seconds */
    int32_t before, after;
} tz_change;

/* One end of a POSIX TZ rule: a day of the year and a local time. */
typedef struct tz_when {
    char kind; /* 'J': Julian 1..365 without Feb 29, 'D': 0..365, 'M': Mm.w.d */
    int n, m, w, d;
    int32_t secs; /* local time of day, may be negative or past 24h */
} tz_when;

struct em_tz {
    struct em_tz *next; /* the cache's list */
    char *id;
    int32_t initial; /* the offset before the first change */
    tz_change *changes;
    int n_changes;
    bool has_rule; /* the footer has daylight saving rules */
    int32_t std_off, dst_off;
    tz_when start, end;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static em_tz *cache;

/* ------------------------------------------------------------ lookups */

/* The offset at t over changes sorted by instant. */
static int32_t table_offset(const tz_change *c, int n, int32_t initial, int64_t t) {
    if (n == 0 || t < c[0].at)
        return initial;
    int lo = 0, hi = n - 1; /* the last change at or before t */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (c[mid].at <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return c[lo].after;
}

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

/* The change whose local window (where the local times around it are
 * skipped or repeated) starts last at or before local time l; -1 if none. */
static int local_change(const tz_change *c, int n, int64_t l) {
    int lo = 0, hi = n - 1, found = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (c[mid].at + min32(c[mid].before, c[mid].after) <= l) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

/* ZonedDateTime.of: in a gap or an overlap the offset before the change
 * applies (a gap's local time then lands after the gap, shifted by its length;
 * an overlap takes the earlier of its two instants). */
static int64_t table_local(const tz_change *c, int n, int32_t initial, int64_t l) {
    int i = local_change(c, n, l);
    if (i < 0)
        return l - initial;
    if (l < c[i].at + max32(c[i].before, c[i].after))
        return l - c[i].before;
    return l - c[i].after;
}

static bool leap_year(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int64_t floor_div(int64_t a, int64_t b) {
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The day (since the epoch) a rule end names in year y. */
static int64_t rule_day(const tz_when *w, int64_t y) {
    int64_t jan1 = em_days_from_civil(y, 1, 1);
    switch (w->kind) {
    case 'J':
        return jan1 + w->n - 1 + (leap_year(y) && w->n >= 60);
    case 'D':
        return jan1 + w->n;
    default: {
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int64_t first = em_days_from_civil(y, w->m, 1);
        int wd_first = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday; Sunday 0 */
        int64_t day = first + (w->d - wd_first + 7) % 7 + 7 * (w->w - 1);
        int len = mdays[w->m - 1] + (w->m == 2 && leap_year(y));
        while (day >= first + len)
            day -= 7;
        return day;
    }
    }
}

/* The rule's changes in the years y-1 .. y+1, sorted. */
static void rule_changes(const em_tz *z, int64_t y, tz_change out[6]) {
    int k = 0;
    for (int64_t yy = y - 1; yy <= y + 1; yy++) {
        out[k++] = (tz_change){rule_day(&z->start, yy) * 86400 + z->start.secs - z->std_off,
                               z->std_off, z->dst_off};
        out[k++] = (tz_change){rule_day(&z->end, yy) * 86400 + z->end.secs - z->dst_off,
                               z->dst_off, z->std_off};
    }
    for (int i = 1; i < 6; i++) /* insertion sort: southern zones end DST before starting it */
        for (int j = i; j > 0 && out[j].at < out[j - 1].at; j--) {
            tz_change t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
}

static int64_t year_of(int64_t seconds) {
    int64_t y;
    int m, d;
    em_civil_from_days(floor_div(seconds, 86400), &y, &m, &d);
    return y;
}

/* Whether the footer rule, not the table, covers t (UTC, or local when
 * `local`: a local time is within a day of its instant, so a margin of two
 * days past the last change keeps the table's last offset, which the rule
 * agrees with until the rule's next change). */
static bool rule_covers(const em_tz *z, int64_t t, bool local) {
    if (!z->has_rule)
        return false;
    if (z->n_changes == 0)
        return true;
    int64_t last = z->changes[z->n_changes - 1].at;
    return local ? t > last + 2 * 86400 : t >= last;
}

/* The changes that decide instant or local time t: the table, or the
 * rule's changes around t expanded into buf. */
typedef struct tz_span {
    const tz_change *c;
    int n;
    int32_t initial;
} tz_span;

static tz_span span_for(const em_tz *z, int64_t t, bool local, tz_change buf[6]) {
    if (rule_covers(z, t, local)) {
        rule_changes(z, year_of(t), buf);
        return (tz_span){buf, 6, buf[0].before};
    }
    return (tz_span){z->changes, z->n_changes, z->initial};
}

int32_t em_tz_offset(const em_tz *z, int64_t t) {
    tz_change buf[6];
    tz_span sp = span_for(z, t, false, buf);
    return table_offset(sp.c, sp.n, sp.initial, t);
}

int64_t em_tz_local_to_utc(const em_tz *z, int64_t l) {
    tz_change buf[6];
    tz_span sp = span_for(z, l, true, buf);
    return table_local(sp.c, sp.n, sp.initial, l);
}

int64_t em_tz_day_start(const em_tz *z, int64_t days) {
    int64_t l = days * 86400;
    tz_change buf[6];
    tz_span sp = span_for(z, l, true, buf);
    int i = local_change(sp.c, sp.n, l);
    /* midnight skipped: the day starts when the gap ends */
    if (i >= 0 && sp.c[i].after > sp.c[i].before && l < sp.c[i].at + sp.c[i].after)
        return sp.c[i].at;
    return table_local(sp.c, sp.n, sp.initial, l);
}

/* Unsigned arithmetic: instants near the ends of the range wrap instead of
 * overflowing (Spark raises an overflow there; nothing real lives there). */
static int64_t add_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

int64_t em_tz_utc_to_local_us(const em_tz *z, int64_t us) {
    int32_t off = em_tz_offset(z, floor_div(us, 1000000));
    return add_wrap(us, (int64_t)off * 1000000);
}

int64_t em_tz_local_to_utc_us(const em_tz *z, int64_t us) {
    int64_t s = floor_div(us, 1000000);
    int64_t shift = em_tz_local_to_utc(z, s) - s;
    return add_wrap(us, shift * 1000000);
}

const char *em_tz_id(const em_tz *z) { return z->id; }

bool em_tz_is_utc(const em_tz *z) {
    if (z->has_rule || z->initial != 0)
        return false;
    for (int i = 0; i < z->n_changes; i++)
        if (z->changes[i].after != 0)
            return false;
    return true;
}

/* ------------------------------------------------------------ POSIX TZ */

/* [+-]h[h[h]][:mm[:ss]] with hours up to max_h. */
static bool tz_hms(const char **pp, int max_h, int32_t *out) {
    const char *p = *pp;
    int sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    int32_t part[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (k > 0) {
            if (*p != ':')
                break;
            p++;
        }
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 3)
            part[k] = part[k] * 10 + (*p++ - '0'), digits++;
        if (digits == 0 || (k > 0 && (digits != 2 || part[k] > 59)))
            return false;
    }
    if (part[0] > max_h)
        return false;
    *out = sign * ((part[0] * 60 + part[1]) * 60 + part[2]);
    *pp = p;
    return true;
}

static bool tz_name(const char **pp) {
    const char *p = *pp;
    if (*p == '<') {
        while (*p && *p != '>')
            p++;
        if (*p != '>')
            return false;
        *pp = p + 1;
        return true;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    if (p - *pp < 3)
        return false;
    *pp = p;
    return true;
}

static bool tz_int(const char **pp, int lo, int hi, int *v) {
    const char *p = *pp;
    int x = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4)
        x = x * 10 + (*p++ - '0'), digits++;
    if (digits == 0 || x < lo || x > hi)
        return false;
    *v = x;
    *pp = p;
    return true;
}

static bool tz_when_parse(const char **pp, tz_when *w) {
    const char *p = *pp;
    memset(w, 0, sizeof *w);
    if (*p == 'J') {
        p++;
        w->kind = 'J';
        if (!tz_int(&p, 1, 365, &w->n))
            return false;
    } else if (*p == 'M') {
        p++;
        w->kind = 'M';
        if (!tz_int(&p, 1, 12, &w->m) || *p++ != '.' || !tz_int(&p, 1, 5, &w->w) ||
            *p++ != '.' || !tz_int(&p, 0, 6, &w->d))
            return false;
    } else {
        w->kind = 'D';
        if (!tz_int(&p, 0, 365, &w->n))
            return false;
    }
    w->secs = 2 * 3600;
    if (*p == '/') {
        p++;
        if (!tz_hms(&p, 167, &w->secs))
            return false;
    }
    *pp = p;
    return true;
}

/* The footer: "STD offset [DST [offset] ,start[/time],end[/time]]". POSIX
 * offsets count west of Greenwich; ours count east. */
static bool footer_parse(em_tz *z, const char *s) {
    const char *p = s;
    int32_t std;
    if (!tz_name(&p) || !tz_hms(&p, 24, &std))
        return false;
    z->std_off = -std;
    if (!*p)
        return true; /* no daylight saving: the table's last offset holds */
    if (!tz_name(&p))
        return false;
    z->dst_off = z->std_off + 3600;
    if (*p && *p != ',') {
        int32_t dst;
        if (!tz_hms(&p, 24, &dst))
            return false;
        z->dst_off = -dst;
    }
    if (*p++ != ',' || !tz_when_parse(&p, &z->start) || *p++ != ',' ||
        !tz_when_parse(&p, &z->end) || *p)
        return false;
    z->has_rule = true;
    return true;
}

/* ------------------------------------------------------------ TZif */

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p) {
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
} tzif_counts;

static bool tzif_header(const unsigned char *p, size_t n, tzif_counts *c) {
    if (n < 44 || memcmp(p, "TZif", 4) != 0)
        return false;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    return c->type > 0 && c->type <= 256 && c->time <= 1000000 && c->chars <= 1000000 &&
           c->leap <= 1000000 && c->isut <= 256 && c->isstd <= 256;
}

static size_t tzif_block_size(const tzif_counts *c, int tsize) {
    return (size_t)c->time * (size_t)(tsize + 1) + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (size_t)(tsize + 4) + c->isstd + c->isut;
}

static const char not_tzif[] = "not a TZif file";

/* Fills z's table and rule from a TZif file's bytes; false: malformed. */
static bool tzif_parse(em_tz *z, const unsigned char *p, size_t n, const char **why) {
    tzif_counts c;
    *why = not_tzif;
    if (!tzif_header(p, n, &c))
        return false;
    *why = "truncated TZif data";
    int tsize = 4;
    size_t at = 44;
    if (p[4] >= '2') { /* skip the 32-bit block for the 64-bit one */
        at += tzif_block_size(&c, 4);
        if (at > n || !tzif_header(p + at, n - at, &c))
            return false;
        at += 44;
        tsize = 8;
    }
    *why = "truncated TZif data";
    size_t block = tzif_block_size(&c, tsize);
    if (at + block > n)
        return false;
    if (c.leap > 0) {
        *why = "leap-second zone files are not supported (java.time has none)";
        return false;
    }
    const unsigned char *times = p + at, *idx = times + (size_t)c.time * (size_t)tsize;
    const unsigned char *types = idx + c.time;
    *why = "bad TZif time type";
    int32_t offs[256];
    for (uint32_t i = 0; i < c.type; i++) {
        offs[i] = (int32_t)be32(types + 6 * i);
        if (offs[i] < -25 * 3600 || offs[i] > 26 * 3600)
            return false;
    }
    z->initial = offs[0];
    z->changes = c.time ? malloc(c.time * sizeof *z->changes) : NULL;
    if (c.time && !z->changes) {
        *why = NULL;
        return false;
    }
    int32_t cur = z->initial;
    int64_t prev_at = INT64_MIN;
    for (uint32_t i = 0; i < c.time; i++) {
        int64_t t = tsize == 8 ? be64(times + 8 * i) : (int32_t)be32(times + 4 * i);
        if (idx[i] >= c.type || t <= prev_at)
            return false;
        prev_at = t;
        int32_t off = offs[idx[i]];
        if (off != cur)
            z->changes[z->n_changes++] = (tz_change){t, cur, off};
        cur = off;
    }
    if (tsize == 8) {
        const unsigned char *f = p + at + block;
        size_t left = n - (at + block);
        if (left >= 2 && f[0] == '\n') {
            const unsigned char *nl = memchr(f + 1, '\n', left - 1);
            char foot[256];
            size_t len = nl ? (size_t)(nl - f - 1) : 0;
            *why = "bad TZif footer (POSIX TZ string)";
            if (!nl || len >= sizeof foot)
                return false;
            memcpy(foot, f + 1, len);
            foot[len] = '\0';
            if (len > 0 && !footer_parse(z, foot))
                return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------ zone ids */

/* java.time's ZoneId.SHORT_IDS, which Spark passes to ZoneId.of. */
static const char *const short_ids[][2] = {
    {"ACT", "Australia/Darwin"},
    {"AET", "Australia/Sydney"},
    {"AGT", "America/Argentina/Buenos_Aires"},
    {"ART", "Africa/Cairo"},
    {"AST", "America/Anchorage"},
    {"BET", "America/Sao_Paulo"},
    {"BST", "Asia/Dhaka"},
    {"CAT", "Africa/Harare"},
    {"CNT", "America/St_Johns"},
    {"CST", "America/Chicago"},
    {"CTT", "Asia/Shanghai"},
    {"EAT", "Africa/Addis_Ababa"},
    {"ECT", "Europe/Paris"},
    {"IET", "America/Indiana/Indianapolis"},
    {"IST", "Asia/Kolkata"},
    {"JST", "Asia/Tokyo"},
    {"MIT", "Pacific/Apia"},
    {"NET", "Asia/Yerevan"},
    {"NST", "Pacific/Auckland"},
    {"PLT", "Asia/Karachi"},
    {"PNT", "America/Phoenix"},
    {"PRT", "America/Puerto_Rico"},
    {"PST", "America/Los_Angeles"},
    {"SST", "Pacific/Guadalcanal"},
    {"VST", "Asia/Ho_Chi_Minh"},
    {"EST", "-05:00"},
    {"MST", "-07:00"},
    {"HST", "-10:00"},
};

static bool digit2(const char *p, int *v) {
    if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
        return false;
    *v = (p[0] - '0') * 10 + (p[1] - '0');
    return true;
}

/* ZoneOffset.of: Z, +h, +hh, +hh:mm, +hhmm, +hh:mm:ss, +hhmmss, at most 18h. */
static bool offset_id(const char *s, int32_t *out) {
    size_t n = strlen(s);
    if (n == 1 && s[0] == 'Z') {
        *out = 0;
        return true;
    }
    if (n < 2 || (s[0] != '+' && s[0] != '-'))
        return false;
    int h = 0, m = 0, sec = 0;
    const char *p = s + 1;
    switch (n) {
    case 2:
        if (p[0] < '0' || p[0] > '9')
            return false;
        h = p[0] - '0';
        break;
    case 3:
        if (!digit2(p, &h))
            return false;
        break;
    case 5:
        if (!digit2(p, &h) || !digit2(p + 2, &m))
            return false;
        break;
    case 6:
        if (!digit2(p, &h) || p[2] != ':' || !digit2(p + 3, &m))
            return false;
        break;
    case 7:
        if (!digit2(p, &h) || !digit2(p + 2, &m) || !digit2(p + 4, &sec))
            return false;
        break;
    case 9:
        if (!digit2(p, &h) || p[2] != ':' || !digit2(p + 3, &m) || p[5] != ':' ||
            !digit2(p + 6, &sec))
            return false;
        break;
    default:
        return false;
    }
    int32_t total = h * 3600 + m * 60 + sec;
    if (h > 18 || m > 59 || sec > 59 || total > 18 * 3600)
        return false;
    *out = s[0] == '-' ? -total : total;
    return true;
}

/* ZoneRegion's id syntax, minus what would leave the database folder, and
 * minus the folder's files java.time does not list as zones. */
static bool region_id_ok(const char *s) {
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')) || !s[1])
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr("~/._+-", *p)))
            return false;
    if (strstr(s, "..") || strstr(s, "/.") || strstr(s, "//") || s[strlen(s) - 1] == '/')
        return false;
    static const char *const not_zones[] = {"posix/", "right/", "posixrules", "localtime",
                                            "Factory"};
    for (size_t i = 0; i < sizeof not_zones / sizeof *not_zones; i++)
        if (!strncmp(s, not_zones[i], strlen(not_zones[i])))
            return false;
    return true;
}

static em_status load_region(em_tz *z, const char *id, const char *asked, em_error *err) {
    const char *dir = getenv("TZDIR");
    if (!dir || !*dir)
        dir = "/usr/share/zoneinfo";
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return EM_FAIL(err, EM_ERR_IO,
                       "time zone '%s' needs the time-zone database, which is not installed: "
                       "no folder %s (install the tzdata package, or point TZDIR at one)",
                       asked, dir);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, id) >= sizeof path)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown time zone id '%s'", asked);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR)
            return EM_FAIL(err, EM_ERR_INVALID, "unknown time zone id '%s' (no %s)", asked, path);
        return EM_FAIL(err, EM_ERR_IO, "cannot read time zone file %s: %s", path, strerror(errno));
    }
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8192;
            unsigned char *nb = cap <= (1u << 22) ? realloc(buf, cap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                return EM_FAIL(err, cap > (1u << 22) ? EM_ERR_CORRUPT : EM_ERR_NOMEM,
                               "time zone file %s: too large or out of memory", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool read_err = ferror(f);
    fclose(f);
    if (read_err) {
        free(buf);
        return EM_FAIL(err, EM_ERR_IO, "cannot read time zone file %s", path);
    }
    const char *why;
    bool ok = tzif_parse(z, buf, n, &why);
    free(buf);
    if (ok)
        return EM_OK;
    if (!why)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory loading time zone '%s'", asked);
    /* a file of the folder that is no zone (zone.tab, tzdata.zi) is no id */
    if (why == not_tzif)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown time zone id '%s' (%s is not a zone file)",
                       asked, path);
    return EM_FAIL(err, EM_ERR_CORRUPT, "time zone file %s: %s", path, why);
}

/* Resolves id as Spark's getZoneId does, into a fresh zone. */
static em_status zone_load(const char *asked, em_tz *z, em_error *err) {
    /* Spark first widens a one-digit hour: "+8:00" -> "+08:00" */
    char id[256];
    size_t n = strlen(asked);
    if (n == 0 || n + 2 > sizeof id)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown time zone id '%s'", asked);
    memcpy(id, asked, n + 1);
    for (size_t i = 0; i + 2 < n; i++)
        if ((id[i] == '+' || id[i] == '-') && id[i + 1] >= '0' && id[i + 1] <= '9' &&
            id[i + 2] == ':') {
            memmove(id + i + 2, id + i + 1, n - i);
            id[i + 1] = '0';
            break;
        }
    for (size_t i = 0; i < sizeof short_ids / sizeof *short_ids; i++)
        if (!strcmp(id, short_ids[i][0])) {
            snprintf(id, sizeof id, "%s", short_ids[i][1]);
            break;
        }
    int32_t off;
    if (id[0] == 'Z' || id[0] == '+' || id[0] == '-' || strlen(id) <= 1) {
        if (!offset_id(id, &off))
            return EM_FAIL(err, EM_ERR_INVALID, "invalid time zone offset '%s'", asked);
        z->initial = off;
        return EM_OK;
    }
    static const char *const prefixes[] = {"UTC", "GMT", "UT"};
    for (int k = 0; k < 3; k++) {
        size_t pl = strlen(prefixes[k]);
        if (strncmp(id, prefixes[k], pl) != 0)
            continue;
        if (!id[pl]) {
            z->initial = 0;
            return EM_OK;
        }
        if (id[pl] == '+' || id[pl] == '-') {
            if (!offset_id(id + pl, &off))
                return EM_FAIL(err, EM_ERR_INVALID, "invalid time zone offset '%s'", asked);
            z->initial = off;
            return EM_OK;
        }
        break; /* GMT0, UTC... as a region */
    }
    if (!region_id_ok(id))
        return EM_FAIL(err, EM_ERR_INVALID, "unknown time zone id '%s'", asked);
    return load_region(z, id, asked, err);
}

em_status em_tz_find(const char *id, const em_tz **out, em_error *err) {
    *out = NULL;
    if (!id)
        return EM_FAIL(err, EM_ERR_INVALID, "no time zone id");
    pthread_mutex_lock(&cache_lock);
    for (em_tz *z = cache; z; z = z->next)
        if (!strcmp(z->id, id)) {
            pthread_mutex_unlock(&cache_lock);
            *out = z;
            return EM_OK;
        }
    /* loaded under the lock: a zone is read once even when tasks race */
    em_status st = EM_OK;
    em_tz *z = calloc(1, sizeof *z);
    if (z)
        z->id = strdup(id);
    if (!z || !z->id)
        st = EM_FAIL(err, EM_ERR_NOMEM, "out of memory loading time zone '%s'", id);
    else
        st = zone_load(id, z, err);
    if (st == EM_OK) {
        z->next = cache;
        cache = z;
        *out = z;
    } else if (z) {
        free(z->changes);
        free(z->id);
        free(z);
    }
    pthread_mutex_unlock(&cache_lock);
    return st;
}
