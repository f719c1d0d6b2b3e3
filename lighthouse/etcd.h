/*
 * lighthouse/etcd.h - a small blocking client of etcd's v3 API through its
 * JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/grant,
 * /v3/lease/keepalive, /v3/lease/revoke; keys and values base64), over
 * HTTP(S) with libcurl and json-c.  What the lighthouse's leader election
 * needs (lighthouse/leader.h), nothing more.  Built only with --with-etcd
 * (FTMPI_HAVE_ETCD); DESIGN section 6.
 *
 * Endpoints: "URL[,URL...]" (http://host:port or https://host:port); a
 * call that cannot reach one tries the next, and the one that answered is
 * asked first next time.  TLS: a CA file, a client certificate and key
 * when given (auth below).  User and password: the client asks etcd for a
 * token (/v3/auth/authenticate) and sends it with every call, asking anew
 * once when etcd says it is invalid.
 *
 * Errors: FT_ERR_CONNECT when no endpoint answered within the timeout (the
 * message, fti_etcd_last_error, names the last endpoint and why);
 * FT_ERR_NOT_FOUND for a key that is absent or a lease that expired;
 * FT_ERR_AUTH when etcd refuses the credentials; FT_ERR_BAD_MESSAGE for
 * an answer that does not decode; FT_ERR_ARG for bad arguments.
 *
 * Threads: calls on one handle are serialised by its lock (any thread).
 */
#ifndef FTI_LH_ETCD_H
#define FTI_LH_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"

#define FTI_ETCD_ENDPOINTS_SIZE 1024
#define FTI_ETCD_USER_SIZE 128

typedef struct fti_etcd_auth {
    char ca[FTI_PATH_SIZE];     /* CA file for https; "" = the system's */
    char cert[FTI_PATH_SIZE];   /* client certificate (PEM); "" = none */
    char key[FTI_PATH_SIZE];    /* its key (PEM) */
    char user[FTI_ETCD_USER_SIZE];     /* "" = no etcd authentication */
    char password[FTI_ETCD_USER_SIZE];
} fti_etcd_auth_t;

typedef struct fti_etcd *fti_etcd_h;

/* Checks endpoints ("URL[,URL...]", each http:// or https://) and makes
 * the handle; connects nothing yet.  auth may be NULL.  timeout_ms bounds
 * every call.  FT_ERR_ARG with why (may be NULL) naming the bad URL.
 * Release with fti_etcd_destroy. */
int fti_etcd_create(const char *endpoints, const fti_etcd_auth_t *auth, int timeout_ms,
                    fti_etcd_h *e_p, char *why, size_t why_len);
void fti_etcd_destroy(fti_etcd_h e);

/* Why the last call failed ("" after a success). */
void fti_etcd_last_error(fti_etcd_h e, char *buf, size_t len);

/* A key's value and revisions.  value is malloc'ed (NUL-terminated too);
 * release with fti_etcd_kv_clear. */
typedef struct fti_etcd_kv {
    char *value;
    size_t len;
    int64_t create_rev, mod_rev, lease;
} fti_etcd_kv_t;
void fti_etcd_kv_clear(fti_etcd_kv_t *kv);

/* The key's current value: FT_ERR_NOT_FOUND when absent. */
int fti_etcd_get(fti_etcd_h e, const char *key, fti_etcd_kv_t *kv_p);

/* The values of the keys that start with prefix, in key order: up to max
 * into kvs (each released with fti_etcd_kv_clear), *n_p how many; 0 when
 * none. */
int fti_etcd_list(fti_etcd_h e, const char *prefix, fti_etcd_kv_t *kvs, size_t max, size_t *n_p);

/* Grants a lease of ttl_s seconds (etcd may raise it to its minimum):
 * its id and the TTL granted. */
int fti_etcd_lease_grant(fti_etcd_h e, int64_t ttl_s, int64_t *id_p, int64_t *ttl_p);
/* Renews lease id: the TTL it has again; FT_ERR_NOT_FOUND when it expired. */
int fti_etcd_lease_keepalive(fti_etcd_h e, int64_t id, int64_t *ttl_p);
/* Revokes lease id (its keys are deleted); FT_ERR_NOT_FOUND when gone. */
int fti_etcd_lease_revoke(fti_etcd_h e, int64_t id);

/* A transaction: if every comparison holds (the key's CREATE or MOD
 * revision EQUAL to rev; rev 0 with CREATE: the key is absent), every put
 * is done, atomically; else nothing.  *ok_p says which; *rev_p (may be
 * NULL) gets the store's revision after it (the puts' mod revision). */
typedef enum { FTI_ETCD_CREATE_REV, FTI_ETCD_MOD_REV } fti_etcd_target_t;
typedef struct fti_etcd_cmp {
    const char *key;
    fti_etcd_target_t target;
    int64_t rev;
} fti_etcd_cmp_t;
typedef struct fti_etcd_put {
    const char *key;
    const void *value;
    size_t len;
    int64_t lease; /* 0 = none */
} fti_etcd_put_t;
int fti_etcd_txn(fti_etcd_h e, const fti_etcd_cmp_t *cmp, size_t n_cmp, const fti_etcd_put_t *put,
                 size_t n_put, bool *ok_p, int64_t *rev_p);

#endif
