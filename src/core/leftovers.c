/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch folders of dead processes and unnamed files (see leftovers.h). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/leftovers.h"

/* A process's start time in clock ticks after boot (field 22 of
 * /proc/<pid>/stat); 0 when there is no such process or it has ended (a
 * zombie: killed, not yet reaped). */
static unsigned long long process_start(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces and parentheses: count after its last ')' */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return 0; /* field 3, the state: dead or a zombie */
    int field = 2;
    while (p && *p && field < 22) {
        if (*p++ == ' ')
            field++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

/* This process's pid namespace (the inode of /proc/self/ns/pid; 0 when
 * unknown): a pid means something only inside its namespace, so folders of
 * another container sharing the parent are never judged. */
static unsigned long long pid_namespace(void) {
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void em_owner_tag(char *buf, size_t cap) {
    long pid = (long)getpid();
    snprintf(buf, cap, "%llu-%ld-%llu", pid_namespace(), pid, process_start(pid));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    (void)(flag == FTW_DP ? rmdir(path) : unlink(path)); /* best effort: another may race us */
    return 0;
}

void em_sweep_orphans(const char *parent, const char *prefix) {
    DIR *dir = opendir(parent);
    if (!dir)
        return;
    size_t np = strlen(prefix);
    unsigned long long ns = pid_namespace();
    struct dirent *e;
    while ((e = readdir(dir))) {
        long pid;
        unsigned long long owner_ns, start;
        int used = 0;
        if (strncmp(e->d_name, prefix, np) != 0 ||
            sscanf(e->d_name + np, "%llu-%ld-%llu-%n", &owner_ns, &pid, &start, &used) != 3 ||
            used == 0 || ns == 0 || owner_ns != ns || pid <= 0 || process_start(pid) == start)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", parent, e->d_name) < sizeof path)
            nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(dir);
}

int em_file_create_unnamed(const char *path) {
#ifdef O_TMPFILE
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return -1;
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (fd >= 0 && access(proc, F_OK) != 0) {
        close(fd); /* no /proc to name it by at the end */
        return -1;
    }
    return fd;
#else
    (void)path;
    return -1;
#endif
}

int em_file_link_unnamed(int fd, const char *name) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0)
        return 0;
#ifdef AT_EMPTY_PATH
    /* the descriptor itself (needs CAP_DAC_READ_SEARCH) */
    if (linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH) == 0)
        return 0;
#endif
    return -1;
}
