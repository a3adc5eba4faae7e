/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scratch folders that outlive a killed process. A folder that only its
 * process removes (shuffle spill, the TPC-H generator's staging) is left
 * behind by SIGKILL; so its name carries its owner, <prefix><ns>-<pid>-<start>-...
 * with the process's pid namespace and its start time in clock ticks after
 * boot, and the next process making one under the same parent first removes
 * those of its own namespace whose owner is gone: no such process, or one
 * started at another time (a reused pid). Another container's folders are
 * never touched.
 */
#ifndef EM_CORE_LEFTOVERS_H
#define EM_CORE_LEFTOVERS_H

#include <stddef.h>

/* Files written unnamed (O_TMPFILE) and named only when complete, so a
 * killed process leaves no half-written one. em_file_create_unnamed opens
 * one for writing in path's folder; -1 where the system cannot (no
 * O_TMPFILE, or no /proc/self/fd to name it by later): the caller writes
 * under a temporary name instead. em_file_link_unnamed gives it `name`;
 * 0, or -1 with errno set. */
int em_file_create_unnamed(const char *path);
int em_file_link_unnamed(int fd, const char *name);

/* "<ns>-<pid>-<start>" of this process, for a scratch folder's name. */
void em_owner_tag(char *buf, size_t cap);
/* Removes, with everything in them, the entries of parent named
 * <prefix><ns>-<pid>-<start>-<rest> whose owner (in this pid namespace) is gone. */
void em_sweep_orphans(const char *parent, const char *prefix);

#endif
