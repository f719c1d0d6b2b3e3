/* baby_mem.c - memfd regions shared with ftmpi-baby children (baby.h). */
#include "comm/baby.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"

struct node {
    fti_mem_region_t r;
    bool given_up; /* fti_mem_give_up: MPI may still write it */
    struct node *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *regions;
static size_t nregions;
static _Atomic uint64_t next_id = 1;
static _Atomic uint64_t frees;

int fti_mem_region_new(size_t bytes, fti_mem_region_t *r_p)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (bytes == 0 || bytes > SIZE_MAX - (size_t)pg)
        return FT_ERR_ARG;
    bytes = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    int fd = memfd_create("ftmpi-mem", MFD_CLOEXEC);
    if (fd < 0) {
        FTI_ERROR("memfd_create: %m");
        return FT_ERR_SYSTEM;
    }
    if (ftruncate(fd, (off_t)bytes) != 0) {
        FTI_ERROR("ftruncate of a %zu-byte memfd: %m", bytes);
        close(fd);
        return errno == ENOMEM || errno == EFBIG ? FT_ERR_NO_MEMORY : FT_ERR_SYSTEM;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        FTI_ERROR("mmap of a %zu-byte memfd: %m", bytes);
        close(fd);
        return FT_ERR_NO_MEMORY;
    }
    *r_p = (fti_mem_region_t){atomic_fetch_add(&next_id, 1), fd, p, bytes};
    return FT_SUCCESS;
}

void fti_mem_region_delete(fti_mem_region_t *r)
{
    if (r->base) {
        munmap(r->base, r->bytes);
        close(r->fd);
    }
    *r = (fti_mem_region_t){0, -1, NULL, 0};
}

int fti_mem_alloc(size_t bytes, void **p_p)
{
    struct node *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_mem_region_new(bytes, &n->r);
    if (rc != FT_SUCCESS) {
        free(n);
        return rc;
    }
    pthread_mutex_lock(&lock);
    n->next = regions;
    regions = n;
    nregions++;
    pthread_mutex_unlock(&lock);
    *p_p = n->r.base;
    return FT_SUCCESS;
}

int fti_mem_free(void *p)
{
    if (p == NULL)
        return FT_SUCCESS;
    pthread_mutex_lock(&lock);
    struct node **pp = &regions;
    while (*pp && (*pp)->r.base != p)
        pp = &(*pp)->next;
    struct node *n = *pp;
    if (n) {
        *pp = n->next;
        nregions--;
    }
    pthread_mutex_unlock(&lock);
    if (n == NULL)
        return FT_ERR_ARG;
    atomic_fetch_add(&frees, 1);
    if (n->r.base != NULL && n->given_up) { /* MPI's now: mapped for good */
        FTI_DEBUG("ftmpi_mem_free: %zu bytes given up by a failed zero-copy reduction stay mapped",
                  n->r.bytes);
        close(n->r.fd);
    } else {
        fti_mem_region_delete(&n->r);
    }
    free(n);
    return FT_SUCCESS;
}

/* The node holding [p, +len) (lock held), NULL when none. */
static struct node *node_of_locked(const void *p, size_t len)
{
    const char *c = p;
    for (struct node *n = regions; n; n = n->next)
        if (c >= n->r.base && (size_t)(c - n->r.base) <= n->r.bytes &&
            len <= n->r.bytes - (size_t)(c - n->r.base))
            return n;
    return NULL;
}

bool fti_mem_usable(const void *p, size_t len)
{
    pthread_mutex_lock(&lock);
    const struct node *n = node_of_locked(p, len);
    bool ok = n != NULL && !n->given_up;
    pthread_mutex_unlock(&lock);
    return ok;
}

size_t fti_mem_give_up(const void *p)
{
    pthread_mutex_lock(&lock);
    struct node *n = node_of_locked(p, 1);
    size_t bytes = n != NULL ? n->r.bytes : 0;
    if (n != NULL)
        n->given_up = true;
    pthread_mutex_unlock(&lock);
    return bytes;
}

bool fti_mem_given_up(const void *p)
{
    pthread_mutex_lock(&lock);
    const struct node *n = node_of_locked(p, 1);
    bool gone = n != NULL && n->given_up;
    pthread_mutex_unlock(&lock);
    return gone;
}

size_t fti_mem_regions(void)
{
    pthread_mutex_lock(&lock);
    size_t n = nregions;
    pthread_mutex_unlock(&lock);
    return n;
}

int fti_mem_find(const void *p, size_t len, uint64_t *id_p, size_t *off_p, int *fd_p)
{
    const char *c = p;
    int rc = FT_ERR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    for (struct node *n = regions; n; n = n->next) {
        if (n->given_up || c < n->r.base || (size_t)(c - n->r.base) > n->r.bytes ||
            len > n->r.bytes - (size_t)(c - n->r.base))
            continue;
        int fd = fd_p ? fcntl(n->r.fd, F_DUPFD_CLOEXEC, 0) : -1;
        if (fd_p && fd < 0) {
            FTI_ERROR("dup of a memfd: %m");
            rc = FT_ERR_SYSTEM;
            break;
        }
        *id_p = n->r.id;
        *off_p = (size_t)(c - n->r.base);
        if (fd_p)
            *fd_p = fd;
        rc = FT_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int fti_mem_live(uint64_t id)
{
    int live = 0;
    pthread_mutex_lock(&lock);
    for (struct node *n = regions; n && !live; n = n->next)
        live = n->r.id == id;
    pthread_mutex_unlock(&lock);
    return live;
}

uint64_t fti_mem_frees(void)
{
    return atomic_load(&frees);
}

/* The installed names (ftmpi.h); this layer cannot include ftmpi.h. */
FTMPI_EXPORT int ftmpi_mem_alloc(size_t bytes, void **ptr);
FTMPI_EXPORT int ftmpi_mem_free(void *ptr);

int ftmpi_mem_alloc(size_t bytes, void **ptr)
{
    return ptr == NULL ? FT_ERR_ARG : fti_mem_alloc(bytes, ptr);
}

int ftmpi_mem_free(void *ptr)
{
    return fti_mem_free(ptr);
}
