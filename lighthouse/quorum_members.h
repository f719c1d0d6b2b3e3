/*
 * quorum_members.h - the values the quorum rules (quorum.h) work on: one
 * group's request (a member) and an issued quorum, with their copies,
 * releases and look-up (quorum_members.c).  No state, no rules.
 *
 * Threads: the values are plain data; whoever owns one serialises its use.
 */
#ifndef FTI_QUORUM_MEMBERS_H
#define FTI_QUORUM_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"

#define FTI_QID_MAX FTI_REPLICA_ID_SIZE /* replica_id buffer, with its NUL */
#define FTI_QADDR_MAX FTI_ADDRESS_SIZE  /* address buffers, with their NUL */

/* Largest QuorumMember.data accepted (bytes): a group's opaque data is
 * kept in the table, in the previous quorum and in every reply, so it
 * stays small (libftmpi itself sends at most 16 bytes). */
#define FTI_QUORUM_MAX_DATA 4096

/* ---- members --------------------------------------------------------- */

/* One group's quorum request (the QuorumMember message).  `data` is opaque
 * application bytes: whoever owns the struct owns data (release with
 * fti_qmember_clear).  Structs passed in by the caller are only read. */
typedef struct fti_qmember {
    char replica_id[FTI_QID_MAX];
    char address[FTI_QADDR_MAX];       /* manager RPC "host:port" */
    char store_address[FTI_QADDR_MAX]; /* store "host:port" */
    int64_t step;
    uint64_t world_size;
    bool shrink_only;
    int64_t commit_failures;
    uint64_t incarnation;              /* the manager process (quorum.h) */
    uint8_t *data;                     /* at most FTI_QUORUM_MAX_DATA bytes */
    size_t data_len;
} fti_qmember_t;

/* Deep copy of src into dst (dst is overwritten, not freed first).
 * FT_ERR_NO_MEMORY leaves dst with data NULL.  Release with
 * fti_qmember_clear. */
int fti_qmember_copy(fti_qmember_t *dst, const fti_qmember_t *src);

/* Frees m->data and sets it to NULL, data_len 0.  NULL-safe. */
void fti_qmember_clear(fti_qmember_t *m);

/* Deep copy of n members; NULL on allocation failure.  Release with
 * fti_qmembers_free. */
fti_qmember_t *fti_qmembers_dup(const fti_qmember_t *src, size_t n);

/* Clears n members and frees the array.  NULL-safe. */
void fti_qmembers_free(fti_qmember_t *members, size_t n);

/* ---- issued quorums -------------------------------------------------- */

typedef struct fti_quorum {
    int64_t quorum_id;
    int64_t created_ms;     /* now_ms given to fti_quorum_commit */
    size_t n_members;       /* >= 1 */
    fti_qmember_t *members; /* sorted by replica_id (strcmp), unique */
} fti_quorum_t;

/* Frees q, its members and their data.  NULL-safe. */
void fti_quorum_free(fti_quorum_t *q);

/* Index of replica_id in q->members (binary search), or -1. */
long fti_quorum_member_index(const fti_quorum_t *q, const char *replica_id);

#endif
