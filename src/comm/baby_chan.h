/*
 * baby_chan.h - the command channel between a rank and its ftmpi-baby child
 * (DESIGN section 5, baby-<backend>): a socketpair carrying messages of a
 * fixed 32-byte header and a small payload; the region of a buffer rides as
 * a memfd passed with SCM_RIGHTS.  Both sides link this file (libfti_comm,
 * no MPI, no control plane).
 *
 * Every command carries the parent's absolute deadline (CLOCK_MONOTONIC
 * milliseconds, the same clock in both processes); the reply carries the
 * sequence number of its command and an FT_ERR_* code.  A message with a
 * bad magic, version, type or length is FT_ERR_BAD_MESSAGE; a closed channel
 * is FT_ERR_PROC_FAILED; a wait past the deadline is FT_ERR_TIMEOUT.
 */
#ifndef FTI_BABY_CHAN_H
#define FTI_BABY_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"
#include "base/sizes.h"

#define FTI_BABY_MAGIC 0x46544242u /* "FTBB" */
#define FTI_BABY_VERSION 1u
#define FTI_BABY_MAX_PAYLOAD 1024u
#define FTI_BABY_FD 3 /* the child's end of the channel after exec */

enum fti_baby_type {
    FTI_BABY_LISTEN = 1, /* fti_baby_listen_t -> reply fti_baby_addr_t */
    FTI_BABY_CONNECT,    /* fti_baby_connect_t: build the tcp ring */
    FTI_BABY_MAP,        /* fti_baby_map_t + the region's memfd */
    FTI_BABY_UNMAP,      /* fti_baby_map_t (bytes ignored) */
    FTI_BABY_ALLREDUCE,  /* fti_baby_allreduce_t, in place in a mapped region */
    FTI_BABY_ABORT,      /* drop the ring, stay alive */
    FTI_BABY_EXIT,       /* reply, then exit 0 */
    /* baby-nccl (children built with NCCL; others answer FT_ERR_UNSUPPORTED) */
    FTI_BABY_NCCL_ID,        /* -> reply fti_baby_nccl_id_t: a new unique id */
    FTI_BABY_NCCL_INIT,      /* fti_baby_nccl_init_t: join the communicator */
    FTI_BABY_NCCL_ALLREDUCE, /* fti_baby_nccl_allreduce_t -> fti_baby_nccl_done_t or nothing */
    FTI_BABY_AUTH,           /* fti_baby_auth_t: the job's key, for the rings built after */
    FTI_BABY_TYPE_END,
    FTI_BABY_REPLY = 0x100 /* | the command's type */
};

typedef struct fti_baby_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t seq;
    int32_t rc;          /* replies: FT_SUCCESS or FT_ERR_* */
    int64_t deadline_ms; /* commands: the parent's absolute deadline */
    uint32_t len;        /* payload bytes that follow */
    uint32_t reserved;   /* 0 */
} fti_baby_hdr_t;

/* The job secret's wire key (auth.h: HMAC(label, secret), never the secret
 * itself), sent once right after the spawn when the rank has one: so the
 * child's tcp ring runs the same challenge-response as the in-process ring
 * (fti_auth_ring), and the key never shows on a command line or in an
 * environment (/proc/PID/cmdline, /proc/PID/environ). */
typedef struct fti_baby_auth {
    uint8_t key[FTI_AUTH_KEY_LEN];
} fti_baby_auth_t;

typedef struct fti_baby_listen {
    char bind_host[FTI_HOST_SIZE];
} fti_baby_listen_t;

typedef struct fti_baby_addr {
    char address[FTI_ADDRESS_SIZE];
} fti_baby_addr_t;

typedef struct fti_baby_connect {
    int32_t rank, size;
    uint64_t chunk_bytes;
    uint64_t small_max; /* UINT64_MAX: the ring's default */
    char next_addr[FTI_ADDRESS_SIZE];
} fti_baby_connect_t;

typedef struct fti_baby_map {
    uint64_t region_id;
    uint64_t bytes;
} fti_baby_map_t;

typedef struct fti_baby_allreduce {
    uint64_t region_id;
    uint64_t offset; /* of the buffer in the region */
    uint64_t count;
    int32_t dtype, op; /* enum fti_dtype, enum fti_op */
} fti_baby_allreduce_t;

/* baby-nccl payloads: the unique id's bytes, and a device buffer as a
 * CUDA IPC memory handle of its allocation plus the buffer's offset.
 * Ordering (no cudaDeviceSynchronize in the rank): with FTI_BABY_NCCL_WAIT
 * the command carries the CUDA IPC event handle of the rank's event, just
 * recorded after the work that wrote the buffer; the child opens it once
 * per handle and makes its NCCL stream wait on it (cudaStreamWaitEvent).
 * The child answers FT_ERR_NOT_FOUND when it cannot open or wait on it
 * (nothing ran: the rank synchronizes its device and sends again without
 * the flag).  The reply (fti_baby_nccl_done_t, or nothing if the child has
 * no event) carries the handle of the child's event, recorded on its
 * stream after the collective, which the rank opens once per child and
 * polls before its call returns. */
#define FTI_BABY_NCCL_ID_BYTES 128
#define FTI_BABY_IPC_BYTES 64
typedef struct fti_baby_nccl_id {
    unsigned char id[FTI_BABY_NCCL_ID_BYTES];
} fti_baby_nccl_id_t;

typedef struct fti_baby_nccl_init {
    unsigned char id[FTI_BABY_NCCL_ID_BYTES];
    int32_t rank, size;
    int32_t device; /* the parent's CUDA device */
    int32_t reserved;
} fti_baby_nccl_init_t;

typedef struct fti_baby_nccl_allreduce {
    unsigned char handle[FTI_BABY_IPC_BYTES]; /* cudaIpcMemHandle_t */
    uint64_t offset; /* of the buffer in the allocation */
    uint64_t alloc_bytes;
    uint64_t count;
    int32_t dtype, op;
    unsigned char event[FTI_BABY_IPC_BYTES]; /* cudaIpcEventHandle_t, with FTI_BABY_NCCL_WAIT */
    uint32_t flags;    /* FTI_BABY_NCCL_WAIT */
    uint32_t reserved; /* 0 */
} fti_baby_nccl_allreduce_t;
#define FTI_BABY_NCCL_WAIT 0x1u /* wait on the event before the collective */

typedef struct fti_baby_nccl_done {
    unsigned char event[FTI_BABY_IPC_BYTES]; /* cudaIpcEventHandle_t of the child's event */
} fti_baby_nccl_done_t;

/* Sends one message (header fields magic, version, len, reserved are
 * filled in here) with len payload bytes, and pass_fd (>= 0) as
 * SCM_RIGHTS, before deadline_ms.  fd is non-blocking. */
int fti_baby_send(int fd, fti_baby_hdr_t *h, const void *payload, size_t len, int pass_fd,
                  int64_t deadline_ms);

/* Receives one message before deadline_ms: the header into *h, the payload
 * (at most cap bytes, else FT_ERR_BAD_MESSAGE) into payload.  A passed fd
 * is stored in *fd_p (-1 if none; fd_p NULL: closed and refused as
 * FT_ERR_BAD_MESSAGE); the caller closes it. */
int fti_baby_recv(int fd, fti_baby_hdr_t *h, void *payload, size_t cap, int *fd_p,
                  int64_t deadline_ms);
/* The same, trying for the header for up to spin_us (a non-blocking
 * recvmsg and sched_yield in turn) before it blocks in poll: a message due
 * within microseconds then costs no sleep and wake-up of this process. */
int fti_baby_recv_spin(int fd, fti_baby_hdr_t *h, void *payload, size_t cap, int *fd_p,
                       int spin_us, int64_t deadline_ms);

#endif
