/*
 * killed.h - the group incarnations an operator killed (POST
 * /replica/<id>/kill), so that the lighthouse counts them neither healthy
 * nor a member whatever their processes still send.
 *
 * Rules (server.c applies them):
 *   1. A kill records (replica_id, incarnation): the incarnation of the
 *      group's last quorum request (0 when it never asked).
 *   2. A heartbeat or quorum request of a recorded (id, incarnation) is
 *      refused with FT_ERR_KILLED; it adds nothing to the quorum table.
 *   3. A request of the same id with another nonzero incarnation (the
 *      group restarted, e.g. by ftmpi-run) ends the record: that new
 *      incarnation is an ordinary group again.
 * At most FTI_LH_KILLED_MAX records; the oldest is forgotten first.
 *
 * Pure: no locks (the server holds its mutex), no clock, no logging.
 */
#ifndef FTI_LH_KILLED_H
#define FTI_LH_KILLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"

#define FTI_LH_KILLED_MAX 256

typedef struct fti_lh_killed {
    size_t n;
    struct {
        char id[FTI_REPLICA_ID_SIZE];
        uint64_t incarnation;
    } e[FTI_LH_KILLED_MAX]; /* oldest first */
} fti_lh_killed_t;

/* Records a kill (rule 1); a record of the same id is replaced. */
void fti_lh_killed_add(fti_lh_killed_t *k, const char *id, uint64_t incarnation);

typedef enum {
    FTI_LH_KILLED_NO,       /* not killed */
    FTI_LH_KILLED_YES,      /* rule 2: refuse */
    FTI_LH_KILLED_REJOINED  /* rule 3: the record ended now */
} fti_lh_killed_check_t;

/* Rules 2 and 3 for a call of (id, incarnation). */
fti_lh_killed_check_t fti_lh_killed_check(fti_lh_killed_t *k, const char *id,
                                          uint64_t incarnation);

/* Whether id has a record (any incarnation). */
bool fti_lh_killed_has(const fti_lh_killed_t *k, const char *id);

#endif
