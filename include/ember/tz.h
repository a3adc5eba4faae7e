/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time zones as Spark's session time zone uses them (java.time rules).
 *
 * A zone id is read as Spark's DateTimeUtils.getZoneId reads it: a fixed
 * offset (Z, +h, +hh, +hh:mm, +hhmm, +hh:mm:ss, +hhmmss, "+8:00"), UTC / GMT /
 * UT alone or followed by such an offset, one of java.time's short ids (PST,
 * IST, EST ...), or a region id (Europe/Berlin) looked up in the system's zone
 * database: TZif files (RFC 8536) under $TZDIR, default /usr/share/zoneinfo
 * (Debian package tzdata). Instants after a file's last transition follow its
 * POSIX TZ footer rule, for any year.
 *
 * Zones are loaded once and kept for the life of the process; a returned
 * em_tz is immutable and may be used from any thread.
 */
#ifndef EMBER_TZ_H
#define EMBER_TZ_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/status.h"

typedef struct em_tz em_tz;

/* The zone named by id. Errors: EM_ERR_INVALID naming an unknown or malformed
 * id, EM_ERR_IO when the zone database is not installed, EM_ERR_CORRUPT for a
 * zone file that does not parse, EM_ERR_NOMEM. */
em_status em_tz_find(const char *id, const em_tz **out, em_error *err) EM_MUST_CHECK;
/* The id the zone was found by. */
const char *em_tz_id(const em_tz *z);
/* True for a zone whose offset is zero at every instant (UTC, Z, +00:00, GMT). */
bool em_tz_is_utc(const em_tz *z);

/* The offset from UTC, in seconds, at an instant (seconds since the epoch). */
int32_t em_tz_offset(const em_tz *z, int64_t utc_seconds);
/* The instant of a local date-time (seconds since 1970-01-01T00:00 local), as
 * ZonedDateTime.of resolves it: a local time in a gap is moved forward by the
 * gap's length, one in an overlap takes the earlier (pre-transition) offset. */
int64_t em_tz_local_to_utc(const em_tz *z, int64_t local_seconds);
/* The first instant of a local date (LocalDate.atStartOfDay(zone)): when
 * midnight falls in a gap, the instant the gap ends. */
int64_t em_tz_day_start(const em_tz *z, int64_t days);

/* The same on microseconds (Spark's timestamp values). */
int64_t em_tz_utc_to_local_us(const em_tz *z, int64_t utc_us);
int64_t em_tz_local_to_utc_us(const em_tz *z, int64_t local_us);

#endif
