/* tmpdir.h -- temporary files for the unit suites under $TMPDIR. Include after cmocka.h. */
#ifndef AISCHED_TEST_TMPDIR_H
#define AISCHED_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes "$TMPDIR/<stem>XXXXXX" into buf (/tmp when TMPDIR is unset or
 * empty), a template for mkstemp or mkdtemp; fails the test when it does
 * not fit in n bytes. Returns buf. */
static inline char *tmp_template(char *buf, size_t n, const char *stem)
{
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    int len = snprintf(buf, n, "%s/%sXXXXXX", dir, stem);
    if (len < 0 || (size_t)len >= n)
        fail_msg("TMPDIR too long for a %zu-byte path: %s", n, dir);
    return buf;
}

static inline int tmp_rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes dir and everything under it without following symlinks;
 * 0 on success, -1 on the first failure. */
static inline int tmp_rm_tree(const char *dir)
{
    return nftw(dir, tmp_rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

#endif
