/*
 * auth.h - the job secret and the control plane's challenge-response
 * (DESIGN.md section 6).  No MPI, no protobuf; HMAC-SHA256, the random
 * nonces and the constant-time comparison come from OpenSSL's libcrypto.
 *
 * The secret is a file's contents (FTMPI_TOKEN_FILE, the lighthouse's
 * --token-file), leading and trailing white space trimmed; the same text is
 * the lighthouse's HTTP bearer token.  The file must be a regular file that
 * is neither readable nor writable by others, and not empty.  The key used
 * on the wire is HMAC-SHA256(label, secret), never the secret itself.
 *
 * Handshake, before any frame, on every control-plane connection (base/rpc_client.c and
 * base/rpc_conn.c run it on connect and accept) and on the data plane's ring sockets
 * (fti_auth_connect_fd / fti_auth_accept_fd):
 *   client -> server  HELLO     "FTA3" | Nc (32 random bytes)
 *   server -> client  CHALLENGE "FTA3" | Ns (32 random bytes)
 *   client -> server  PROOF     "FTA2" | HMAC(key, "ftmpi-auth-v1 client" | Nc | Ns)
 *   server -> client  ACK       "FTOK" | HMAC(key, "ftmpi-auth-v1 server" | Nc | Ns)
 * The client proves first: the server sends nothing that depends on the
 * key before it verified the client's proof, so a client without the
 * secret gets nothing to search offline (issue 23: a MAC in the first reply
 * gave a six-digit secret away in seconds).  The client then checks the
 * server's MAC and talks to it only if it is right.  A client's proof goes
 * only to servers it chose to call (addresses from its configuration or
 * from the authenticated control plane); what a fake server at such an
 * address could search offline is a MAC under a secret of at least 128
 * bits (fti_auth_read_token refuses shorter ones), out of reach.
 * A server refuses a client that fails (or sends anything but HELLO) with
 * an RPC error frame of status FT_ERR_AUTH on the control plane, by closing
 * on the ring.
 * Both sides prove that they hold the key over nonces that the other side
 * chose, so neither a replayed nor a reflected answer passes; the labels
 * differ so that the server's answer can never serve as a client proof.
 * A peer that fails is refused before any of its frames is decoded.
 *
 * There is no process-wide key: whoever reads the token file (FT_Init
 * through fti_config_load into its fti_config_t, ftmpi-lighthouse from
 * --token-file, ftmpi-baby from its parent) holds the key and passes it to
 * every server, client, ring and checkpoint that needs it; NULL everywhere
 * means "no secret" (an unauthenticated job).
 */
#ifndef FTI_AUTH_H
#define FTI_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTI_AUTH_KEY_LEN 32
#define FTI_AUTH_NONCE_LEN 32
#define FTI_AUTH_MAC_LEN 32
#define FTI_AUTH_MAGIC_LEN 4
#define FTI_AUTH_HELLO_LEN (FTI_AUTH_MAGIC_LEN + FTI_AUTH_NONCE_LEN)
#define FTI_AUTH_CHALLENGE_LEN (FTI_AUTH_MAGIC_LEN + FTI_AUTH_NONCE_LEN)
#define FTI_AUTH_PROOF_LEN (FTI_AUTH_MAGIC_LEN + FTI_AUTH_MAC_LEN)
#define FTI_AUTH_ACK_LEN (FTI_AUTH_MAGIC_LEN + FTI_AUTH_MAC_LEN)
/* The fewest bits of secret taken (fti_auth_read_token). */
#define FTI_AUTH_MIN_BITS 128
/* How long an unauthenticated connection may take to finish the handshake. */
#define FTI_AUTH_TIMEOUT_MS 10000
/* Largest token file read (the secret is much shorter). */
#define FTI_AUTH_FILE_MAX 4096

extern const uint8_t fti_auth_hello_magic[FTI_AUTH_MAGIC_LEN];  /* "FTA3" */
extern const uint8_t fti_auth_proof_magic[FTI_AUTH_MAGIC_LEN];  /* "FTA2" */
extern const uint8_t fti_auth_ack_magic[FTI_AUTH_MAGIC_LEN];    /* "FTOK" */

typedef struct fti_auth_key {
    uint8_t k[FTI_AUTH_KEY_LEN];
} fti_auth_key_t;

/* One side's handshake state: both nonces. */
typedef struct fti_auth_state {
    uint8_t nc[FTI_AUTH_NONCE_LEN];
    uint8_t ns[FTI_AUTH_NONCE_LEN];
} fti_auth_state_t;

/* Reads the secret of a token file into tok (size len, NUL-terminated,
 * trimmed).  Refuses (FT_ERR_CONFIG, err names the file and why) a file
 * that cannot be read, is not a regular file, is readable or writable by
 * others, is empty, holds a NUL byte, whose secret does not fit, or whose
 * secret has fewer than FTI_AUTH_MIN_BITS bits (estimated from its length
 * and the kinds of characters in it; the message says how to make one). */
int fti_auth_read_token(const char *path, char *tok, size_t len, char *err, size_t errlen);

/* Writes a new secret (32 random bytes, 64 hex digits and a newline) to
 * path, created with mode 0600; refuses (FT_ERR_EXISTS) to replace any
 * existing file or link.  FT_ERR_SYSTEM with err otherwise. */
int fti_auth_make_token(const char *path, char *err, size_t errlen);

/* HMAC-SHA256 of [data, +len) under a key derived from key with its own
 * label (HMAC(key, label)), as 64 hex digits and a NUL in hex: a MAC of the
 * job's secret for another use than the handshake (checkpoint metadata).
 * fti_auth_mac_check compares one in constant time. */
int fti_auth_mac_hex(const fti_auth_key_t *key, const char *label, const void *data, size_t len,
                     char hex[2 * FTI_AUTH_MAC_LEN + 1]);
bool fti_auth_mac_check(const fti_auth_key_t *key, const char *label, const void *data,
                        size_t len, const char *hex);

/* Derives the wire key from a secret's text. */
int fti_auth_key_from_token(const char *tok, fti_auth_key_t *key_p);

/* Reads the secret of the token file path (fti_auth_read_token) and
 * derives its key into *key_p.  FT_ERR_CONFIG with err filled as above;
 * FT_ERR_ARG when path is NULL or "" (no secret: the caller's job is
 * unauthenticated and it passes a NULL key on). */
int fti_auth_load_key(const char *path, fti_auth_key_t *key_p, char *err, size_t errlen);
/* Logs once per process, at warn level, that the control plane runs
 * without a secret (servers and clients call it when they start keyless). */
void fti_auth_warn_unauthenticated(void);

/* ---- the handshake as pure steps (base/rpc_conn.c, the event-driven server) ---------- */

/* Client: draws Nc, writes HELLO. */
int fti_auth_client_hello(fti_auth_state_t *st, uint8_t hello[FTI_AUTH_HELLO_LEN]);
/* Client: takes the server's CHALLENGE (FT_ERR_BAD_MESSAGE when it is no
 * challenge) and writes PROOF. */
int fti_auth_client_answer(const fti_auth_key_t *key, fti_auth_state_t *st,
                           const uint8_t chal[FTI_AUTH_CHALLENGE_LEN],
                           uint8_t proof[FTI_AUTH_PROOF_LEN]);
/* Client: checks the server's ACK: FT_SUCCESS when its MAC is right,
 * FT_ERR_AUTH when it is wrong, FT_ERR_BAD_MESSAGE when it is no ACK. */
int fti_auth_client_finish(const fti_auth_key_t *key, const fti_auth_state_t *st,
                           const uint8_t ack[FTI_AUTH_ACK_LEN]);
/* Server: takes HELLO (FT_ERR_AUTH when it is none), draws Ns, writes
 * CHALLENGE (nothing in it depends on the key). */
int fti_auth_server_challenge(const fti_auth_key_t *key, fti_auth_state_t *st,
                              const uint8_t hello[FTI_AUTH_HELLO_LEN],
                              uint8_t chal[FTI_AUTH_CHALLENGE_LEN]);
/* Server: FT_SUCCESS when PROOF is right, and then writes ACK (its own
 * MAC); else FT_ERR_AUTH and ack is left alone. */
int fti_auth_server_verify(const fti_auth_key_t *key, const fti_auth_state_t *st,
                           const uint8_t proof[FTI_AUTH_PROOF_LEN],
                           uint8_t ack[FTI_AUTH_ACK_LEN]);

/* ---- blocking, on a connected non-blocking socket (the tcp ring) -------- */

/* Runs the client / server side on fd before deadline_ms (monotonic ms)
 * with key (NULL: no secret, FT_SUCCESS at once without a handshake).
 * FT_ERR_AUTH when the peer fails, FT_ERR_TIMEOUT, FT_ERR_PROC_FAILED when
 * it closes.  Logs a refused peer once (warn). */
int fti_auth_connect_fd(int fd, const fti_auth_key_t *key, int64_t deadline_ms);
int fti_auth_accept_fd(int fd, const fti_auth_key_t *key, int64_t deadline_ms);

/* Both sides at once on a ring (the tcp ring: every rank connected to
 * the next one, next_fd, and accepted from the previous one, prev_fd):
 * client on next_fd, server on prev_fd, in lockstep phases (hello out;
 * hello in, challenge out; challenge in, proof out; proof in, ack out; ack
 * in) so that no rank waits for a neighbour that waits for it (running
 * connect_fd then accept_fd would deadlock the ring).  Same key and
 * results as above. */
int fti_auth_ring(int next_fd, int prev_fd, const fti_auth_key_t *key, int64_t deadline_ms);

#endif
