/*
 * comms.c - which communicators libftmpi_pmpi protects: every intra-
 * communicator whose group is the whole world, however it was made
 * (MPI_COMM_WORLD, MPI_Comm_dup, MPI_Comm_split with one color and any key,
 * MPI_Comm_create ..., from C or Fortran).  The duplicates made through the
 * C wrapper are remembered (a quick answer); any other communicator is
 * compared with the world at each call (MPI_Comm_compare, local: the
 * group sizes first, then the members), so a handle freed and reused by
 * a Fortran caller, whose MPI_COMM_FREE passes by, is never taken for
 * what it was.
 */
#include "mpi_shim/shim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/log.h"

static MPI_Comm *dups;
static int n_dups, cap_dups;

int fti_shim_world_order(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return FTI_WORLD_SAME_ORDER;
    for (int i = 0; i < n_dups; i++)
        if (dups[i] == comm)
            return FTI_WORLD_SAME_ORDER;
    int res = MPI_UNEQUAL;
    if (comm == MPI_COMM_NULL || PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) != MPI_SUCCESS)
        return FTI_WORLD_NOT;
    if (res == MPI_IDENT || res == MPI_CONGRUENT)
        return FTI_WORLD_SAME_ORDER;
    return res == MPI_SIMILAR ? FTI_WORLD_REORDERED : FTI_WORLD_NOT;
}

bool fti_shim_world_like(MPI_Comm comm)
{
    return fti_shim_world_order(comm) != FTI_WORLD_NOT;
}

/* Remembers a new duplicate of a world-like comm (none when out of memory:
 * the duplicate then goes unprotected, straight to MPI). */
static void add(MPI_Comm comm)
{
    if (n_dups == cap_dups) {
        int cap = cap_dups ? 2 * cap_dups : 8;
        MPI_Comm *p = realloc(dups, (size_t)cap * sizeof(*p));
        if (p == NULL)
            return;
        dups = p;
        cap_dups = cap;
    }
    dups[n_dups++] = comm;
}

int fti_shim_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS && fti_shim_world_like(comm))
        add(*newcomm);
    return rc;
}

int fti_shim_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS && fti_shim_world_like(comm))
        add(*newcomm);
    return rc;
}

int fti_shim_Comm_free(MPI_Comm *comm)
{
    for (int i = 0; comm != NULL && i < n_dups; i++) {
        if (dups[i] == *comm) {
            dups[i] = dups[--n_dups];
            break;
        }
    }
    return PMPI_Comm_free(comm);
}

/* ---- calls that went to MPI unprotected (MPI_Finalize's lines) */

#define SHIM_MAX_KINDS 96

static struct {
    _Atomic(const char *) name; /* a wrapper's string literal */
    atomic_uint_fast64_t calls;
    atomic_bool spanned;        /* at least one on a communicator spanning the world */
} kinds[SHIM_MAX_KINDS];
static atomic_int n_kinds;
static pthread_mutex_t kinds_lock = PTHREAD_MUTEX_INITIALIZER;

void fti_shim_note_passed(const char *name, MPI_Comm comm)
{
    int n = atomic_load_explicit(&n_kinds, memory_order_acquire), i;
    for (i = 0; i < n; i++)
        if (atomic_load_explicit(&kinds[i].name, memory_order_relaxed) == name)
            break;
    if (i == n) {
        pthread_mutex_lock(&kinds_lock);
        n = atomic_load(&n_kinds);
        for (i = 0; i < n && atomic_load(&kinds[i].name) != name; i++)
            ;
        if (i == n && n < SHIM_MAX_KINDS) {
            atomic_store(&kinds[n].name, name);
            atomic_store_explicit(&n_kinds, n + 1, memory_order_release);
        }
        pthread_mutex_unlock(&kinds_lock);
        if (i == SHIM_MAX_KINDS)
            return;
    }
    atomic_fetch_add_explicit(&kinds[i].calls, 1, memory_order_relaxed);
    if (comm != MPI_COMM_NULL && !atomic_load_explicit(&kinds[i].spanned, memory_order_relaxed) &&
        fti_shim_world_like(comm))
        atomic_store_explicit(&kinds[i].spanned, true, memory_order_relaxed);
}

void fti_shim_report_passed(void)
{
    int n = atomic_load(&n_kinds);
    for (int i = 0; i < n; i++) {
        const char *name = atomic_load(&kinds[i].name);
        unsigned long long calls = (unsigned long long)atomic_load(&kinds[i].calls);
        if (atomic_load(&kinds[i].spanned))
            FTI_WARN("libftmpi_pmpi: %llu %s call(s) went to MPI unprotected, on a communicator "
                     "spanning the world (watched: a lost rank ends the job, not redone)",
                     calls, name);
        else
            FTI_INFO("libftmpi_pmpi: %llu %s call(s) went to MPI unprotected (watched: a lost "
                     "rank ends the job)",
                     calls, name);
    }
}
