/* auth.c - the job secret and the challenge-response handshake (see
 * auth.h), on OpenSSL's libcrypto: HMAC (SHA-256), RAND_bytes and
 * CRYPTO_memcmp. */
#include "base/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"

const uint8_t fti_auth_hello_magic[FTI_AUTH_MAGIC_LEN] = {'F', 'T', 'A', '3'};
const uint8_t fti_auth_proof_magic[FTI_AUTH_MAGIC_LEN] = {'F', 'T', 'A', '2'};
const uint8_t fti_auth_ack_magic[FTI_AUTH_MAGIC_LEN] = {'F', 'T', 'O', 'K'};

static const char key_label[] = "ftmpi-auth-v1 key";
static const char server_label[] = "ftmpi-auth-v1 server";
static const char client_label[] = "ftmpi-auth-v1 client";

static atomic_flag warned = ATOMIC_FLAG_INIT;

/* ---- the secret ---------------------------------------------------------- */

/* Reads at most FTI_AUTH_FILE_MAX bytes of an already checked fd into buf
 * (NUL-terminated); the length, or -1 with err filled. */
static ssize_t read_small(int fd, const char *path, char *buf, char *err, size_t errlen)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, FTI_AUTH_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "token file '%s': cannot read: %s", path, strerror(errno));
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > FTI_AUTH_FILE_MAX) {
            snprintf(err, errlen, "token file '%s': longer than %d bytes", path,
                     FTI_AUTH_FILE_MAX);
            return -1;
        }
    }
    buf[n] = '\0';
    return (ssize_t)n;
}

/* What a search of the secret s (n bytes) costs at most, from its length
 * and the kinds of characters in it (digits, lower and upper case
 * letters, anything else; hex digits alone count 4 bits), as *guesses_p; returns its bits, rounded down. */
static int secret_bits(const char *s, size_t n, double *guesses_p)
{
    bool digit = false, lower = false, upper = false, other = false, hex = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        hex &= isdigit(ch) || (ch >= 'a' && ch <= 'f');
        digit |= isdigit(ch) != 0;
        lower |= islower(ch) != 0;
        upper |= isupper(ch) != 0;
        other |= !isalnum(ch);
    }
    int alphabet = hex && lower ? 16 : 10 * digit + 26 * lower + 26 * upper + 33 * other;
    double g = 1;
    int bits = 0;
    for (size_t i = 0; i < n && g < 0x1p200; i++)
        g *= alphabet;
    for (double x = g; x >= 2; x /= 2)
        bits++;
    *guesses_p = g;
    return bits;
}

int fti_auth_read_token(const char *path, char *tok, size_t len, char *err, size_t errlen)
{
    char buf[FTI_AUTH_FILE_MAX + 2];
    struct stat sb;
    if (path == NULL || *path == '\0') {
        snprintf(err, errlen, "token file: no path given");
        return FT_ERR_CONFIG;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "token file '%s': cannot open: %s", path, strerror(errno));
        return FT_ERR_CONFIG;
    }
    ssize_t n = -1;
    if (fstat(fd, &sb) != 0)
        snprintf(err, errlen, "token file '%s': cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        snprintf(err, errlen, "token file '%s': not a regular file", path);
    else if (sb.st_mode & (S_IROTH | S_IWOTH))
        snprintf(err, errlen,
                 "token file '%s': readable or writable by others (mode %03o); "
                 "run: chmod o-rw '%s'",
                 path, (unsigned)(sb.st_mode & 0777), path);
    else
        n = read_small(fd, path, buf, err, errlen);
    close(fd);
    if (n < 0)
        return FT_ERR_CONFIG;
    if (strlen(buf) != (size_t)n) {
        snprintf(err, errlen, "token file '%s': holds a NUL byte (not a text secret)", path);
        return FT_ERR_CONFIG;
    }
    char *s = buf, *e = buf + n;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    if (*s == '\0') {
        snprintf(err, errlen, "token file '%s': empty (no secret in it)", path);
        return FT_ERR_CONFIG;
    }
    double guesses = 1;
    int bits = secret_bits(s, (size_t)(e - s), &guesses);
    if (guesses < 0x1p128) {
        snprintf(err, errlen,
                 "token file '%s': the secret is too weak (about %d bits; at least %d needed, "
                 "e.g. 32 random hex digits); make one with: ftmpi-lighthouse --make-token FILE",
                 path, bits, FTI_AUTH_MIN_BITS);
        OPENSSL_cleanse(buf, sizeof(buf));
        return FT_ERR_CONFIG;
    }
    if ((size_t)(e - s) >= len) {
        snprintf(err, errlen, "token file '%s': the secret is longer than %zu bytes", path,
                 len - 1);
        return FT_ERR_CONFIG;
    }
    memcpy(tok, s, (size_t)(e - s) + 1);
    OPENSSL_cleanse(buf, sizeof(buf));
    return FT_SUCCESS;
}

int fti_auth_mac_hex(const fti_auth_key_t *key, const char *label, const void *data, size_t len,
                     char hex[2 * FTI_AUTH_MAC_LEN + 1])
{
    uint8_t k[FTI_AUTH_MAC_LEN], mac[FTI_AUTH_MAC_LEN];
    unsigned int kl = 0, ml = 0;
    int rc = FT_SUCCESS;
    if (HMAC(EVP_sha256(), key->k, FTI_AUTH_KEY_LEN, (const unsigned char *)label, strlen(label),
             k, &kl) == NULL ||
        HMAC(EVP_sha256(), k, kl, data, len, mac, &ml) == NULL || ml != FTI_AUTH_MAC_LEN)
        rc = FT_ERR_INTERNAL;
    OPENSSL_cleanse(k, sizeof(k));
    for (size_t i = 0; rc == FT_SUCCESS && i < FTI_AUTH_MAC_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    return rc;
}

bool fti_auth_mac_check(const fti_auth_key_t *key, const char *label, const void *data,
                        size_t len, const char *hex)
{
    char want[2 * FTI_AUTH_MAC_LEN + 1];
    return fti_auth_mac_hex(key, label, data, len, want) == FT_SUCCESS &&
           CRYPTO_memcmp(want, hex, 2 * FTI_AUTH_MAC_LEN) == 0;
}

int fti_auth_make_token(const char *path, char *err, size_t errlen)
{
    uint8_t r[32];
    char hex[2 * sizeof(r) + 2];
    if (RAND_bytes(r, sizeof(r)) != 1) {
        snprintf(err, errlen, "no random bytes (libcrypto RAND_bytes failed)");
        return FT_ERR_SYSTEM;
    }
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    hex[2 * sizeof(r)] = '\n';
    hex[2 * sizeof(r) + 1] = '\0';
    OPENSSL_cleanse(r, sizeof(r));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        OPENSSL_cleanse(hex, sizeof(hex));
        snprintf(err, errlen, "'%s': cannot create: %s%s", path, strerror(e),
                 e == EEXIST ? " (never overwritten: remove it first)" : "");
        return e == EEXIST ? FT_ERR_EXISTS : FT_ERR_SYSTEM;
    }
    size_t n = strlen(hex);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, hex, n) == (ssize_t)n && fsync(fd) == 0;
    int e = errno;
    OPENSSL_cleanse(hex, sizeof(hex));
    if (close(fd) != 0 || !ok) {
        snprintf(err, errlen, "'%s': cannot write: %s", path, strerror(ok ? errno : e));
        unlink(path);
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

static int hmac(const fti_auth_key_t *key, const char *label, const uint8_t *a, const uint8_t *b,
                uint8_t mac[FTI_AUTH_MAC_LEN])
{
    uint8_t msg[sizeof(client_label) + 2 * FTI_AUTH_NONCE_LEN];
    size_t ll = strlen(label);
    unsigned int mlen = 0;
    memcpy(msg, label, ll);
    memcpy(msg + ll, a, FTI_AUTH_NONCE_LEN);
    memcpy(msg + ll + FTI_AUTH_NONCE_LEN, b, FTI_AUTH_NONCE_LEN);
    if (HMAC(EVP_sha256(), key->k, FTI_AUTH_KEY_LEN, msg, ll + 2 * FTI_AUTH_NONCE_LEN, mac,
             &mlen) == NULL ||
        mlen != FTI_AUTH_MAC_LEN) {
        FTI_ERROR("auth: HMAC-SHA256 failed (libcrypto)");
        return FT_ERR_INTERNAL;
    }
    return FT_SUCCESS;
}

int fti_auth_key_from_token(const char *tok, fti_auth_key_t *key_p)
{
    unsigned int mlen = 0;
    fti_auth_key_t k;
    if (tok == NULL || *tok == '\0')
        return FT_ERR_ARG;
    if (HMAC(EVP_sha256(), key_label, sizeof(key_label) - 1, (const unsigned char *)tok,
             strlen(tok), k.k, &mlen) == NULL ||
        mlen != FTI_AUTH_KEY_LEN) {
        FTI_ERROR("auth: HMAC-SHA256 failed (libcrypto)");
        return FT_ERR_INTERNAL;
    }
    *key_p = k;
    OPENSSL_cleanse(&k, sizeof(k));
    return FT_SUCCESS;
}

int fti_auth_load_key(const char *path, fti_auth_key_t *key_p, char *err, size_t errlen)
{
    char tok[FTI_AUTH_FILE_MAX + 1];
    fti_auth_key_t key;
    if (path == NULL || *path == '\0') {
        snprintf(err, errlen, "no token file named");
        return FT_ERR_ARG;
    }
    int rc = fti_auth_read_token(path, tok, sizeof(tok), err, errlen);
    if (rc == FT_SUCCESS && (rc = fti_auth_key_from_token(tok, &key)) != FT_SUCCESS)
        snprintf(err, errlen, "token file '%s': cannot derive the key", path);
    OPENSSL_cleanse(tok, sizeof(tok));
    if (rc != FT_SUCCESS)
        return rc;
    *key_p = key;
    OPENSSL_cleanse(&key, sizeof(key));
    return FT_SUCCESS;
}

void fti_auth_warn_unauthenticated(void)
{
    if (!atomic_flag_test_and_set(&warned))
        FTI_WARN("this job is unauthenticated: no job secret (FTMPI_TOKEN_FILE, the "
                 "lighthouse's --token-file), so anyone who can reach its ports can join, "
                 "read or stop it");
}

/* ---- the steps ------------------------------------------------------------- */

static int random_nonce(uint8_t n[FTI_AUTH_NONCE_LEN])
{
    if (RAND_bytes(n, FTI_AUTH_NONCE_LEN) != 1) {
        FTI_ERROR("auth: no random bytes (libcrypto RAND_bytes failed)");
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

int fti_auth_client_hello(fti_auth_state_t *st, uint8_t hello[FTI_AUTH_HELLO_LEN])
{
    int rc = random_nonce(st->nc);
    if (rc != FT_SUCCESS)
        return rc;
    memcpy(hello, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
    memcpy(hello + FTI_AUTH_MAGIC_LEN, st->nc, FTI_AUTH_NONCE_LEN);
    return FT_SUCCESS;
}

int fti_auth_client_answer(const fti_auth_key_t *key, fti_auth_state_t *st,
                           const uint8_t chal[FTI_AUTH_CHALLENGE_LEN],
                           uint8_t proof[FTI_AUTH_PROOF_LEN])
{
    if (memcmp(chal, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN) != 0)
        return FT_ERR_BAD_MESSAGE;
    memcpy(st->ns, chal + FTI_AUTH_MAGIC_LEN, FTI_AUTH_NONCE_LEN);
    memcpy(proof, fti_auth_proof_magic, FTI_AUTH_MAGIC_LEN);
    return hmac(key, client_label, st->nc, st->ns, proof + FTI_AUTH_MAGIC_LEN);
}

int fti_auth_client_finish(const fti_auth_key_t *key, const fti_auth_state_t *st,
                           const uint8_t ack[FTI_AUTH_ACK_LEN])
{
    uint8_t mac[FTI_AUTH_MAC_LEN];
    if (memcmp(ack, fti_auth_ack_magic, FTI_AUTH_MAGIC_LEN) != 0)
        return FT_ERR_BAD_MESSAGE;
    int rc = hmac(key, server_label, st->nc, st->ns, mac);
    if (rc != FT_SUCCESS)
        return rc;
    return CRYPTO_memcmp(mac, ack + FTI_AUTH_MAGIC_LEN, FTI_AUTH_MAC_LEN) == 0 ? FT_SUCCESS
                                                                              : FT_ERR_AUTH;
}

int fti_auth_server_challenge(const fti_auth_key_t *key, fti_auth_state_t *st,
                              const uint8_t hello[FTI_AUTH_HELLO_LEN],
                              uint8_t chal[FTI_AUTH_CHALLENGE_LEN])
{
    (void)key;
    if (memcmp(hello, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN) != 0)
        return FT_ERR_AUTH;
    memcpy(st->nc, hello + FTI_AUTH_MAGIC_LEN, FTI_AUTH_NONCE_LEN);
    int rc = random_nonce(st->ns);
    if (rc != FT_SUCCESS)
        return rc;
    memcpy(chal, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
    memcpy(chal + FTI_AUTH_MAGIC_LEN, st->ns, FTI_AUTH_NONCE_LEN);
    return FT_SUCCESS;
}

int fti_auth_server_verify(const fti_auth_key_t *key, const fti_auth_state_t *st,
                           const uint8_t proof[FTI_AUTH_PROOF_LEN],
                           uint8_t ack[FTI_AUTH_ACK_LEN])
{
    uint8_t mac[FTI_AUTH_MAC_LEN];
    if (memcmp(proof, fti_auth_proof_magic, FTI_AUTH_MAGIC_LEN) != 0)
        return FT_ERR_AUTH;
    int rc = hmac(key, client_label, st->nc, st->ns, mac);
    if (rc != FT_SUCCESS)
        return rc;
    if (CRYPTO_memcmp(mac, proof + FTI_AUTH_MAGIC_LEN, FTI_AUTH_MAC_LEN) != 0)
        return FT_ERR_AUTH;
    /* only now, to a client that proved the key, anything that depends on it */
    memcpy(ack, fti_auth_ack_magic, FTI_AUTH_MAGIC_LEN);
    return hmac(key, server_label, st->nc, st->ns, ack + FTI_AUTH_MAGIC_LEN);
}

/* ---- blocking ------------------------------------------------------------------ */

int fti_auth_connect_fd(int fd, const fti_auth_key_t *key, int64_t deadline_ms)
{
    fti_auth_state_t st;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], proof[FTI_AUTH_PROOF_LEN],
        ack[FTI_AUTH_ACK_LEN];
    if (key == NULL)
        return FT_SUCCESS;
    int rc = fti_auth_client_hello(&st, hello);
    if (rc == FT_SUCCESS)
        rc = fti_write_full(fd, hello, sizeof(hello), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(fd, chal, sizeof(chal), deadline_ms);
    if (rc == FT_SUCCESS && (rc = fti_auth_client_answer(key, &st, chal, proof)) != FT_SUCCESS)
        return rc == FT_ERR_BAD_MESSAGE ? FT_ERR_AUTH : rc;
    if (rc == FT_SUCCESS)
        rc = fti_write_full(fd, proof, sizeof(proof), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(fd, ack, sizeof(ack), deadline_ms);
    if (rc == FT_ERR_PROC_FAILED)
        FTI_WARN("auth: the peer closed during the handshake (it refused our job secret?)");
    if (rc == FT_SUCCESS && (rc = fti_auth_client_finish(key, &st, ack)) != FT_SUCCESS) {
        FTI_WARN("auth: the peer failed to prove the job secret (a different FTMPI_TOKEN_FILE?)");
        rc = FT_ERR_AUTH;
    }
    return rc;
}

int fti_auth_accept_fd(int fd, const fti_auth_key_t *key, int64_t deadline_ms)
{
    fti_auth_state_t st;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], proof[FTI_AUTH_PROOF_LEN],
        ack[FTI_AUTH_ACK_LEN];
    if (key == NULL)
        return FT_SUCCESS;
    int rc = fti_read_full(fd, hello, sizeof(hello), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = fti_auth_server_challenge(key, &st, hello, chal);
    if (rc == FT_SUCCESS)
        rc = fti_write_full(fd, chal, sizeof(chal), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(fd, proof, sizeof(proof), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = fti_auth_server_verify(key, &st, proof, ack);
    if (rc == FT_ERR_AUTH)
        FTI_WARN("auth: refused a peer without the job secret");
    if (rc == FT_SUCCESS)
        rc = fti_write_full(fd, ack, sizeof(ack), deadline_ms);
    return rc;
}

/* The phases of fti_auth_ring after the hello went out to next_fd. */
static int ring_phases(int next_fd, int prev_fd, const fti_auth_key_t *key, fti_auth_state_t *cs,
                       int64_t dl)
{
    fti_auth_state_t ss;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], proof[FTI_AUTH_PROOF_LEN],
        ack[FTI_AUTH_ACK_LEN];
    int rc = fti_read_full(prev_fd, hello, sizeof(hello), dl);
    if (rc == FT_SUCCESS && (rc = fti_auth_server_challenge(key, &ss, hello, chal)) == FT_SUCCESS)
        rc = fti_write_full(prev_fd, chal, sizeof(chal), dl);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(next_fd, chal, sizeof(chal), dl);
    if (rc == FT_SUCCESS && (rc = fti_auth_client_answer(key, cs, chal, proof)) == FT_SUCCESS)
        rc = fti_write_full(next_fd, proof, sizeof(proof), dl);
    else if (rc == FT_ERR_BAD_MESSAGE)
        rc = FT_ERR_AUTH;
    if (rc == FT_SUCCESS)
        rc = fti_read_full(prev_fd, proof, sizeof(proof), dl);
    if (rc == FT_SUCCESS && (rc = fti_auth_server_verify(key, &ss, proof, ack)) == FT_SUCCESS)
        rc = fti_write_full(prev_fd, ack, sizeof(ack), dl);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(next_fd, ack, sizeof(ack), dl);
    if (rc == FT_SUCCESS && fti_auth_client_finish(key, cs, ack) != FT_SUCCESS)
        rc = FT_ERR_AUTH;
    return rc;
}

int fti_auth_ring(int next_fd, int prev_fd, const fti_auth_key_t *key, int64_t deadline_ms)
{
    fti_auth_state_t cs;
    uint8_t hello[FTI_AUTH_HELLO_LEN];
    if (key == NULL)
        return FT_SUCCESS;
    int rc = fti_auth_client_hello(&cs, hello);
    if (rc == FT_SUCCESS)
        rc = fti_write_full(next_fd, hello, sizeof(hello), deadline_ms);
    if (rc == FT_SUCCESS)
        rc = ring_phases(next_fd, prev_fd, key, &cs, deadline_ms);
    if (rc == FT_ERR_AUTH)
        FTI_WARN("auth: a ring neighbour failed the job secret handshake (a different "
                 "FTMPI_TOKEN_FILE?)");
    else if (rc == FT_ERR_PROC_FAILED)
        FTI_WARN("auth: a ring neighbour closed during the handshake (it refused our job "
                 "secret?)");
    return rc;
}
