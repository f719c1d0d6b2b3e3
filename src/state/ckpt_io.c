/* ckpt_io.c - checkpoint files on disk (see ckpt_io.h). */
#include "state/ckpt_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "state/reshard.h"
#include "base/util.h"

#define PATH_MAX_LEN 1024

static int sys_err(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return FT_ERR_SYSTEM;
}

static int fsync_path(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sys_err(err, errlen, "open", path);
    int rc = fsync(fd) == 0 ? FT_SUCCESS : sys_err(err, errlen, "fsync", path);
    close(fd);
    return rc;
}

/* Whether st (of path) is a folder of this user that neither its group
 * nor others can write; else err says what is wrong and how to fix it. */
static int own_dir(const struct stat *st, const char *path, char *err, size_t errlen)
{
    if (!S_ISDIR(st->st_mode)) {
        snprintf(err, errlen, "%s is not a folder (a link, a file?); checkpoints are never written "
                 "or removed through it", path);
        return FT_ERR_ARG;
    }
    if (st->st_uid != geteuid()) {
        snprintf(err, errlen, "checkpoint folder %s belongs to uid %u, not to this user (uid %u): "
                 "whoever owns it could plant links or forged checkpoints there; use a folder of "
                 "your own (mkdir -m 700 DIR)", path, (unsigned)st->st_uid, (unsigned)geteuid());
        return FT_ERR_ARG;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen, "checkpoint folder %s can be written by its group or others (mode "
                 "%03o): they could plant links or forged checkpoints there; chmod go-w %s, or "
                 "use a folder of your own (mkdir -m 700 DIR)", path,
                 (unsigned)(st->st_mode & 0777), path);
        return FT_ERR_ARG;
    }
    return FT_SUCCESS;
}

/* Opens the checkpoint root (O_DIRECTORY; the root itself may be a link the
 * user made) and checks it with own_dir.  A descriptor, or -1 with err. */
static int root_open(const char *root, char *err, size_t errlen)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        sys_err(err, errlen, "open", root);
        return -1;
    }
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? sys_err(err, errlen, "stat", root)
                                 : own_dir(&st, root, err, errlen);
    if (rc != FT_SUCCESS) {
        close(fd);
        return -1;
    }
    return fd;
}

int fti_ckpt_root_prepare(const char *root, char *err, size_t errlen)
{
    if (mkdir(root, 0700) != 0 && errno != EEXIST)
        return sys_err(err, errlen, "mkdir", root);
    int fd = root_open(root, err, errlen);
    if (fd < 0)
        return FT_ERR_ARG;
    close(fd);
    return FT_SUCCESS;
}

/* The folder holding path (its last component cut) into parent, and the
 * last component into *base_p (points into path). */
static void split_path(const char *path, char *parent, size_t len, const char **base_p)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        fti_strlcpy(parent, ".", len);
        *base_p = path;
        return;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/x": the parent is "/" */
    snprintf(parent, len, "%.*s", (int)n, path);
    *base_p = slash + 1;
}

int fti_ckpt_mkdir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) == 0)
        return FT_SUCCESS;
    if (errno != EEXIST)
        return sys_err(err, errlen, "mkdir", dir);
    /* other ranks of the group make it too; anything else there (a link
     * planted where the folder goes) is refused, never written through */
    struct stat st;
    if (lstat(dir, &st) != 0)
        return sys_err(err, errlen, "stat", dir);
    return own_dir(&st, dir, err, errlen);
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, FTI_MIN(len, (size_t)1 << 30));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return sys_err(err, errlen, "open", path);
    int rc = FT_SUCCESS;
    if (write_all(fd, data, len) != 0)
        rc = sys_err(err, errlen, "write", path);
    else if (fsync(fd) != 0)
        rc = sys_err(err, errlen, "fsync", path);
    if (close(fd) != 0 && rc == FT_SUCCESS)
        rc = sys_err(err, errlen, "close", path);
    return rc;
}

/* Regions in file order, disjoint, inside [0, len): the layout state/ckpt_step.c
 * makes; anything else is summed after the write. */
static bool regions_in_order(size_t len, const size_t *off, const size_t *rlen, size_t n)
{
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (off[i] < end || off[i] > len || rlen[i] > len - off[i])
            return false;
        end = off[i] + rlen[i];
    }
    return true;
}

/* A piece of the file: writes it after summing it into *sum (when not
 * NULL) while it is in the cache, and starts the writeback of what was
 * written since the last start every FTI_CKPT_KICK bytes, so that the
 * disk works while the rest is summed and copied (the fsync then waits
 * for less).  Pieces of a region start on its FTI_CKPT_SUM_BLOCK grid. */
struct sum_writer {
    int fd;
    off_t at, kicked;
};

#define FTI_CKPT_CHUNK (2 * FTI_CKPT_SUM_BLOCK)
#define FTI_CKPT_KICK ((off_t)32 << 20)

static int put_piece(struct sum_writer *sw, const char *p, size_t len, uint64_t *sum)
{
    for (size_t done = 0; done < len;) {
        size_t k = FTI_MIN(len - done, FTI_CKPT_CHUNK);
        if (sum != NULL)
            *sum = fti_ckpt_sum_update(*sum, p + done, k);
        if (write_all(sw->fd, p + done, k) != 0)
            return -1;
        done += k;
        sw->at += (off_t)k;
        if (sw->at - sw->kicked >= FTI_CKPT_KICK) {
            /* a hint: the fsync below is what makes the bytes durable */
            (void)sync_file_range(sw->fd, sw->kicked, sw->at - sw->kicked,
                                  SYNC_FILE_RANGE_WRITE);
            sw->kicked = sw->at;
        }
    }
    return 0;
}

static int write_summed(int fd, const char *data, size_t len, const size_t *off,
                        const size_t *rlen, size_t n, uint64_t *sums)
{
    struct sum_writer sw = {fd, 0, 0};
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        sums[i] = 0;
        if (put_piece(&sw, data + pos, off[i] - pos, NULL) != 0 ||
            put_piece(&sw, data + off[i], rlen[i], &sums[i]) != 0)
            return -1;
        pos = off[i] + rlen[i];
    }
    return put_piece(&sw, data + pos, len - pos, NULL);
}

int fti_ckpt_write_rank_sums(const char *dir, int rank, const void *data, size_t len,
                             const size_t *reg_off, const size_t *reg_len, size_t n,
                             uint64_t *sums, char *err, size_t errlen)
{
    char path[PATH_MAX_LEN];
    const char *base;
    split_path(dir, path, sizeof(path), &base);
    int rfd = root_open(path, err, errlen);
    if (rfd < 0)
        return FT_ERR_ARG;
    close(rfd);
    int rc = fti_ckpt_mkdir(dir, err, errlen);
    if (rc != FT_SUCCESS)
        return rc;
    snprintf(path, sizeof(path), "%s/rank-%d.bin", dir, rank);
    bool fused = regions_in_order(len, reg_off, reg_len, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return sys_err(err, errlen, "open", path);
    if ((fused ? write_summed(fd, data, len, reg_off, reg_len, n, sums)
               : write_summed(fd, data, len, NULL, NULL, 0, NULL)) != 0)
        rc = sys_err(err, errlen, "write", path);
    else if (fsync(fd) != 0)
        rc = sys_err(err, errlen, "fsync", path);
    if (close(fd) != 0 && rc == FT_SUCCESS)
        rc = sys_err(err, errlen, "close", path);
    for (size_t i = 0; rc == FT_SUCCESS && !fused && i < n; i++)
        sums[i] = fti_ckpt_sum((const char *)data + reg_off[i], reg_len[i]);
    return rc != FT_SUCCESS ? rc : fsync_path(dir, err, errlen);
}

int fti_ckpt_write_rank(const char *dir, int rank, const void *data, size_t len, char *err,
                        size_t errlen)
{
    return fti_ckpt_write_rank_sums(dir, rank, data, len, NULL, NULL, 0, NULL, err, errlen);
}

void fti_ckpt_step_dir(const char *root, int64_t step, char *path, size_t len)
{
    snprintf(path, len, "%s/step-%" PRId64, root, step);
}

/* ---- the metadata's MAC --------------------------------------------------
 *
 * With a job secret (the key its callers pass), checkpoint.meta ends with a line
 * "mac <64 hex>": HMAC-SHA256 over every byte before it, under a key
 * derived from the job's key with its own label (so that it is never a
 * handshake's MAC).  The metadata holds every shard's checksum, so a
 * forged or altered checkpoint fails the MAC or its shards' checksums. */
#define MAC_LINE_LEN (4 + 2 * FTI_AUTH_MAC_LEN + 1) /* "mac " hex "\n" */

static const char meta_label[] = "ftmpi-checkpoint-v1 meta key";

static int meta_mac(const fti_auth_key_t *key, const char *text, size_t len,
                    char hex[2 * FTI_AUTH_MAC_LEN + 1])
{
    return fti_auth_mac_hex(key, meta_label, text, len, hex);
}

int fti_ckpt_publish(const char *root, const char *dir, const fti_ckpt_meta_t *m,
                     const fti_auth_key_t *key, char *err, size_t errlen)
{
    char path[PATH_MAX_LEN], *text = NULL;
    size_t len = 0;
    int rc = fti_ckpt_meta_format(m, &text, &len);
    if (rc != FT_SUCCESS) {
        snprintf(err, errlen, "out of memory formatting the metadata of step %" PRId64, m->step);
        return rc;
    }
    if (key != NULL) {
        char hex[2 * FTI_AUTH_MAC_LEN + 1];
        char *t = realloc(text, len + MAC_LINE_LEN + 1);
        if (t == NULL) {
            free(text);
            snprintf(err, errlen, "out of memory formatting the metadata of step %" PRId64,
                     m->step);
            return FT_ERR_NO_MEMORY;
        }
        text = t;
        if (meta_mac(key, text, len, hex) != FT_SUCCESS) {
            free(text);
            snprintf(err, errlen, "HMAC-SHA256 of the metadata of step %" PRId64 " failed",
                     m->step);
            return FT_ERR_INTERNAL;
        }
        snprintf(text + len, MAC_LINE_LEN + 1, "mac %s\n", hex);
        len += MAC_LINE_LEN;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, FTI_CKPT_META);
    rc = write_file(path, text, len, err, errlen);
    free(text);
    if (rc == FT_SUCCESS)
        rc = fsync_path(dir, err, errlen);
    if (rc != FT_SUCCESS)
        return rc;
    int rfd = root_open(root, err, errlen);
    if (rfd < 0)
        return FT_ERR_ARG;
    close(rfd);
    fti_ckpt_step_dir(root, m->step, path, sizeof(path));
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        fti_ckpt_remove_dir(dir);
        snprintf(err, errlen, "%s is already published", path);
        return FT_ERR_EXISTS;
    }
    if (rename(dir, path) != 0) {
        int e = errno;
        rc = sys_err(err, errlen, "rename to", path);
        if (e == EEXIST || e == ENOTEMPTY) {
            fti_ckpt_remove_dir(dir);
            rc = FT_ERR_EXISTS;
        }
        return rc;
    }
    return fsync_path(root, err, errlen);
}

/* Removes folder `name` of the folder open as pfd and its files (one
 * level), through descriptors and never following a link: a link (or
 * anything but a folder) where the folder should be is reported once and
 * left alone, and so is what it points to.  shown names it in the log.
 * Whether it was removed. */
static bool remove_at(int pfd, const char *name, const char *shown)
{
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            FTI_WARN("checkpoint: %s is a link or not a folder where a checkpoint folder should be; "
                     "left alone (and what it points to)", shown);
        return false;
    }
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return false;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        (void)unlinkat(dirfd(d), e->d_name, 0); /* a link: the link itself goes */
    }
    closedir(d);
    return unlinkat(pfd, name, AT_REMOVEDIR) == 0;
}

void fti_ckpt_remove_dir(const char *dir)
{
    char parent[PATH_MAX_LEN];
    const char *base;
    split_path(dir, parent, sizeof(parent), &base);
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return;
    (void)remove_at(pfd, base, dir);
    close(pfd);
}

/* Whether entry name of the folder open as pfd is a real folder (not a
 * link); a link or other thing is reported (once per call site and name). */
static bool is_real_dir(int pfd, const char *root, const char *name)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    if (S_ISDIR(st.st_mode))
        return true;
    FTI_WARN("checkpoint: %s/%s is a link or not a folder where a checkpoint folder should be; "
             "left alone (and what it points to)", root, name);
    return false;
}

/* step-<N> (published: *tmp_p false) or step-<N>.tmp-<anything>. */
static bool parse_step_name(const char *name, int64_t *step_p, bool *tmp_p)
{
    if (strncmp(name, "step-", 5) != 0)
        return false;
    const char *p = name + 5;
    int64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*p - '0');
    }
    if (*p == '\0')
        *tmp_p = false;
    else if (strncmp(p, ".tmp-", 5) == 0)
        *tmp_p = true;
    else
        return false;
    *step_p = v;
    return true;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int fti_ckpt_list(const char *root, int64_t **steps_p, size_t *n_p, char *err, size_t errlen)
{
    DIR *d = opendir(root);
    if (d == NULL)
        return sys_err(err, errlen, "opendir", root);
    int pfd = dirfd(d);
    int64_t *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t step;
        bool tmp;
        if (!parse_step_name(e->d_name, &step, &tmp) || tmp || !is_real_dir(pfd, root, e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *nv = realloc(v, cap * sizeof(*nv));
            if (nv == NULL) {
                free(v);
                closedir(d);
                snprintf(err, errlen, "out of memory listing %s", root);
                return FT_ERR_NO_MEMORY;
            }
            v = nv;
        }
        v[n++] = step;
    }
    closedir(d);
    if (n > 0)
        qsort(v, n, sizeof(*v), cmp_desc);
    *steps_p = v;
    *n_p = n;
    return FT_SUCCESS;
}

int fti_ckpt_prune(const char *root, int keep)
{
    int64_t *steps = NULL;
    size_t n = 0;
    char err[FTI_PATH_SIZE * 2] = "", name[64];
    int removed = 0;
    if (keep < 1)
        return 0;
    int rfd = root_open(root, err, sizeof(err));
    if (rfd < 0) {
        FTI_ERROR("checkpoint: nothing pruned: %s", err);
        return 0;
    }
    if (fti_ckpt_list(root, &steps, &n, err, sizeof(err)) != FT_SUCCESS) {
        close(rfd);
        return 0;
    }
    for (size_t i = (size_t)keep; i < n; i++) {
        char shown[PATH_MAX_LEN];
        snprintf(name, sizeof(name), "step-%" PRId64, steps[i]);
        snprintf(shown, sizeof(shown), "%s/%s", root, name);
        removed += remove_at(rfd, name, shown);
    }
    int64_t newest = n > 0 ? steps[0] : -1;
    free(steps);
    int lfd = dup(rfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (d == NULL && lfd >= 0)
        close(lfd);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        int64_t step;
        bool tmp;
        if (parse_step_name(e->d_name, &step, &tmp) && tmp && step <= newest) {
            char shown[PATH_MAX_LEN];
            snprintf(shown, sizeof(shown), "%s/%s", root, e->d_name);
            removed += remove_at(rfd, e->d_name, shown);
        }
    }
    if (d != NULL)
        closedir(d);
    close(rfd);
    return removed;
}

int fti_ckpt_meta_read(const char *dir, const fti_auth_key_t *key, fti_ckpt_meta_t *m, char *err,
                       size_t errlen)
{
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof(path), "%s/%s", dir, FTI_CKPT_META);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sys_err(err, errlen, "open", path);
    char *text = malloc(1 << 20);
    size_t len = text ? fread(text, 1, 1 << 20, f) : 0;
    fclose(f);
    if (text == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return FT_ERR_NO_MEMORY;
    }
    /* the MAC line, when there is one, is the last MAC_LINE_LEN bytes */
    bool has_mac = len >= MAC_LINE_LEN && text[len - 1] == '\n' &&
                   (len == MAC_LINE_LEN || text[len - MAC_LINE_LEN - 1] == '\n') &&
                   memcmp(text + len - MAC_LINE_LEN, "mac ", 4) == 0;
    if (key != NULL) {
        if (!has_mac) {
            free(text);
            snprintf(err, errlen, "%s: no MAC, and this job has a secret: a checkpoint written "
                     "without the job's secret (or forged) is never loaded", path);
            return FT_ERR_AUTH;
        }
        if (!fti_auth_mac_check(key, meta_label, text, len - MAC_LINE_LEN,
                                text + len - MAC_LINE_LEN + 4)) {
            free(text);
            snprintf(err, errlen, "%s: fails its MAC under the job's secret (written with "
                     "another secret, altered or forged); never loaded", path);
            return FT_ERR_AUTH;
        }
    }
    if (has_mac)
        len -= MAC_LINE_LEN; /* without a secret it cannot be checked: ignored */
    char why[FTI_REASON_SIZE];
    int rc = fti_ckpt_meta_parse(text, len, m, why, sizeof(why));
    free(text);
    if (rc != FT_SUCCESS)
        snprintf(err, errlen, "%s: %s", path, why);
    return rc;
}
