/* settings.c - parse the FTMPI_* table (see settings.h). */
#include "base/settings.h"

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */

#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define OFF(m) offsetof(fti_config_t, m), sizeof(((fti_config_t *)0)->m)

static const char *const world_choices[] = {"dynamic", "fixed_with_spares", NULL};
static const char *const bool_choices[] = {"0", "1", NULL};
static const char *const heal_install_choices[] = {"auto", "staged", "direct", NULL};
static const char *const heal_transport_choices[] = {"auto", "tcp", "ucx", NULL};
static const char *const sdc_tie_choices[] = {"continue", "stop", NULL};

const fti_config_field_t fti_config_table[] = {
    {"FTMPI_LIGHTHOUSE", "", "lighthouse address host:port (mode A), or host:port,host:port,... of a job's lighthouses elected through etcd (the manager moves to the leader when its lighthouse is gone or answers that it is a standby); empty with FTMPI_GROUP_SIZE set selects mode B",
     FTI_CFG_STRING, OFF(lighthouse), 0, 0, NULL},
    {"FTMPI_LH_ETCD", "", "ftmpi-lighthouse: etcd endpoints http(s)://host:port[,...]: several lighthouses of one job, one leader elected through an etcd lease, the others standing by (--etcd); empty = one lighthouse, no etcd",
     FTI_CFG_STRING, OFF(lh_etcd), 0, 0, NULL},
    {"FTMPI_LH_ETCD_PREFIX", "/ftmpi/ftmpi", "ftmpi-lighthouse: the job's keys in etcd, one prefix per job (--etcd-prefix)",
     FTI_CFG_STRING, OFF(lh_etcd_prefix), 0, 0, NULL},
    {"FTMPI_LH_ETCD_TTL_S", "2", "ftmpi-lighthouse: the leader's etcd lease in seconds, at most the heartbeat timeout; a standby leads at most this long after the leader died (--etcd-ttl)",
     FTI_CFG_INT, OFF(lh_etcd_ttl_s), 1, 3600, NULL},
    {"FTMPI_LH_ETCD_ADVERTISE", "", "ftmpi-lighthouse: the host:port standbys name as the leader; empty = the RPC address (--bind), the host name for 0.0.0.0 (--etcd-advertise)",
     FTI_CFG_STRING, OFF(lh_etcd_advertise), 0, 0, NULL},
    {"FTMPI_LH_ETCD_CA", "", "ftmpi-lighthouse: CA file for https etcd endpoints (--etcd-ca)",
     FTI_CFG_STRING, OFF(lh_etcd_ca), 0, 0, NULL},
    {"FTMPI_LH_ETCD_CERT", "", "ftmpi-lighthouse: TLS client certificate (PEM) to etcd (--etcd-cert)",
     FTI_CFG_STRING, OFF(lh_etcd_cert), 0, 0, NULL},
    {"FTMPI_LH_ETCD_KEY", "", "ftmpi-lighthouse: the TLS client certificate's key (PEM) (--etcd-key)",
     FTI_CFG_STRING, OFF(lh_etcd_key), 0, 0, NULL},
    {"FTMPI_LH_ETCD_USER", "", "ftmpi-lighthouse: etcd user name, with FTMPI_LH_ETCD_PASSWORD_FILE (--etcd-user)",
     FTI_CFG_STRING, OFF(lh_etcd_user), 0, 0, NULL},
    {"FTMPI_LH_ETCD_PASSWORD_FILE", "", "ftmpi-lighthouse: file holding the etcd user's password (--etcd-password-file)",
     FTI_CFG_STRING, OFF(lh_etcd_password_file), 0, 0, NULL},
    {"FTMPI_REPLICA_ID", "", "this replica group's id; empty = derived from host name and pid (ftmpi-run sets it)",
     FTI_CFG_STRING, OFF(replica_id), 0, 0, NULL},
    {"FTMPI_BIND_HOST", "127.0.0.1", "address the rank's data and RPC servers (and the drop-in's watchdog hub) bind and advertise; \"hostname\" = this node's name (multi-node jobs); \"if:ib0\", \"10.78.1.0/24\" or a comma list of both (as Open MPI's btl_tcp_if_include; first match wins) = the IPv4 address of this node's interface by name or subnet, to put healing and the data plane on the fast network",
     FTI_CFG_STRING, OFF(bind_host), 0, 0, NULL},
    {"FTMPI_GROUP_SIZE", "0", "mode B: ranks per replica group (0 = mode A, one group per mpirun)",
     FTI_CFG_INT, OFF(group_size), 0, 1 << 20, NULL},
    {"FTMPI_MIN_REPLICAS", "1", "fewest groups that may commit a step",
     FTI_CFG_INT, OFF(min_replicas), 1, 1 << 20, NULL},
    {"FTMPI_BACKEND", "auto", "cross-group data plane: auto or a backend of the build's table (baby-<x>: backend x in an ftmpi-baby child process; "
     "nccl ones only in builds with CUDA and NCCL, ucx in builds with UCX); auto: mpi in mode B, else ucx when every member offers it (FTMPI_UCX), else tcp, and nccl for device buffers when built with NCCL",
     FTI_CFG_NAME, OFF(backend), 0, 0, NULL},
    {"FTMPI_WORLD_SIZE_MODE", "dynamic", "dynamic, or fixed_with_spares (participants capped at min replicas)",
     FTI_CFG_ENUM, OFF(world_mode), 0, 0, world_choices},
    {"FTMPI_LH_JOIN_TIMEOUT_MS", "5000", "mode B: the lighthouse rank waits this long for groups that have not asked for a quorum yet",
     FTI_CFG_INT, OFF(lh_join_timeout_ms), 0, 3600000, NULL},
    {"FTMPI_LH_HEARTBEAT_TIMEOUT_MS", "5000", "mode B: a group without a heartbeat this long is left out of quorums; twice as long and it counts as gone",
     FTI_CFG_INT, OFF(lh_heartbeat_timeout_ms), 1, 3600000, NULL},
    {"FTMPI_LH_QUORUM_TICK_MS", "100", "mode B: the lighthouse rank re-evaluates the quorum this often",
     FTI_CFG_INT, OFF(lh_tick_ms), 1, 60000, NULL},
    {"FTMPI_TIMEOUT_MS", "10000", "deadline of a collective and of every intra-group wait; the drop-in (libftmpi_pmpi): also how long a silent rank counts as alive and a call may block once a rank is lost",
     FTI_CFG_INT, OFF(timeout_ms), 1, 3600000, NULL},
    {"FTMPI_QUORUM_TIMEOUT_MS", "60000", "how long FT_Quorum waits for a quorum",
     FTI_CFG_INT, OFF(quorum_timeout_ms), 1, 3600000, NULL},
    {"FTMPI_CONNECT_TIMEOUT_MS", "5000", "deadline of a TCP connect to a peer or the lighthouse",
     FTI_CFG_INT, OFF(connect_timeout_ms), 1, 3600000, NULL},
    {"FTMPI_HEARTBEAT_MS", "100", "interval of the manager's heartbeats to the lighthouse",
     FTI_CFG_INT, OFF(heartbeat_ms), 1, 600000, NULL},
    {"FTMPI_HEAL_TIMEOUT_MS", "60000", "deadline of one heal (metadata and all buffers)",
     FTI_CFG_INT, OFF(heal_timeout_ms), 1, 3600000, NULL},
    {"FTMPI_HEAL_INSTALL", "auto", "how a heal writes the registered buffers: staged (into staging memory, installed only once every rank of the group has a verified copy: a failed heal changes nothing), direct (straight into the buffers, no copy: a heal that fails after its first byte loses the group, which leaves with FT_ERR_GROUP_LOST and is restarted), auto = direct while the process has neither committed nor healed a step (mode A: its state is what a restart makes again), staged otherwise",
     FTI_CFG_ENUM, OFF(heal_install), 0, 0, heal_install_choices},
    {"FTMPI_HEAL_TRANSPORT", "auto", "how a heal moves the bytes: tcp (HEAL_FETCH replies over the rank server's connection), ucx (one-sided reads, ucp_get_nbx, of the source's mapped state; builds with UCX; a source that does not serve ucx is read over tcp), auto = ucx when this rank's backend is ucx (FTMPI_BACKEND=ucx, or auto with FTMPI_UCX=1), else tcp; the metadata and checksums go over the authenticated RPC either way; on one node or a TCP-only fabric UCX 1.13 emulates the reads and tcp is faster (PERFORMANCE 14)",
     FTI_CFG_ENUM, OFF(heal_transport), 0, 0, heal_transport_choices},
    {"FTMPI_INIT_SYNC", "1", "1: a fresh start copies the primary group's state at step 0",
     FTI_CFG_BOOL, OFF(init_sync), 0, 1, bool_choices},
    {"FTMPI_LOG_LEVEL", "warn", "none, error, warn, info, debug or trace",
     FTI_CFG_LOGLEVEL, OFF(log_level), 0, 5, NULL},
    {"FTMPI_EVENT_LOG", "", "path of a JSON-lines event log of each step (empty = off)",
     FTI_CFG_STRING, OFF(event_log), 0, 0, NULL},
    {"FTMPI_TOKEN_FILE", "", "file holding the job secret (mode 600; the lighthouse's --token-file): every control-plane and ring connection must prove it; at least 128 bits (make one with ftmpi-lighthouse --make-token FILE); empty = unauthenticated",
     FTI_CFG_STRING, OFF(token_file), 0, 0, NULL},
    {"FTMPI_CHUNK_BYTES", "262144", "pipeline chunk of the tcp and ucx rings (suffixes k, m, g)",
     FTI_CFG_BYTES, OFF(chunk_bytes), 4096, INT64_C(1) << 30, NULL},
    {"FTMPI_MAX_FRAME_BYTES", "16777216", "largest control-plane frame accepted (suffixes k, m, g)",
     FTI_CFG_BYTES, OFF(max_frame_bytes), 1024, INT64_C(1) << 31, NULL},
    {"FTMPI_RESTART_COUNT", "0", "restarts of this group so far (set by ftmpi-run)",
     FTI_CFG_INT, OFF(restart_count), 0, 1 << 30, NULL},
    {"FTMPI_RESTART_LOST_MS", "0", "set by ftmpi-run: the wall-clock time (ms since the epoch) when it saw the group's last run fail; a restarted group's recovery breakdown starts there (0 = unknown: at FT_Init)",
     FTI_CFG_INT, OFF(restart_lost_ms), 0, INT64_C(1) << 52, NULL},
    {"FTMPI_AGENT_DIR", "", "set by ftmpi-run: each rank keeps a file <pid>@<host> there from FT_Init to FT_Finalize, so the agent ends and restarts the group as soon as a rank of its node dies (marks of other nodes in a shared folder are not judged); empty = none",
     FTI_CFG_STRING, OFF(agent_dir), 0, 0, NULL},
    {"FTMPI_CKPT_DIR", "", "folder of durable checkpoints (step-<N>/ per checkpoint; shared by the ranks of a group); empty = none",
     FTI_CFG_STRING, OFF(ckpt_dir), 0, 0, NULL},
    {"FTMPI_CKPT_EVERY", "0", "write a checkpoint every N committed steps (0 = only when the program calls FT_Checkpoint)",
     FTI_CFG_INT, OFF(ckpt_every), 0, 1 << 30, NULL},
    {"FTMPI_CKPT_KEEP", "2", "published checkpoints kept; older ones are removed after a new one is published",
     FTI_CFG_INT, OFF(ckpt_keep), 1, 1 << 20, NULL},
    {"FTMPI_CKPT_LOAD", "auto", "at a fresh start (no group past step 0): auto = the newest complete checkpoint of FTMPI_CKPT_DIR, never, or a folder (a root or one step-<N>)",
     FTI_CFG_STRING, OFF(ckpt_load), 0, 0, NULL},
    {"FTMPI_AFFINITY", "1", "1: bind each rank's baby child near its GPU (hwloc) and set NCCL_IB_HCA/NCCL_SOCKET_IFNAME to the nearest NICs unless set; 0: the child inherits the rank's binding",
     FTI_CFG_BOOL, OFF(affinity), 0, 1, bool_choices},
    {"FTMPI_UCX", "0", "1: in mode A with FTMPI_BACKEND=auto, this rank offers ucx (in builds with UCX, when UCX loads); a slice takes ucx when every member of it offers ucx, tcp otherwise; 0 (the default while the ucx ring is slower than the tcp ring, PERFORMANCE section 14): this rank offers only tcp, so its slices take tcp and it never loads UCX",
     FTI_CFG_BOOL, OFF(ucx), 0, 1, bool_choices},
    {"FTMPI_BABY_PATH", "", "the ftmpi-baby program the baby-<backend> data planes start (empty = the installed one)",
     FTI_CFG_STRING, OFF(baby_path), 0, 0, NULL},
    {"FTMPI_SHIM_ON_FAILURE", "auto", "the drop-in (libftmpi_pmpi): what a protected call (MPI_Allreduce, MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allgather on a communicator spanning the world) does when a rank is lost: abort (the job, naming the lost ranks; non-zero exit status), return (an error; later calls run over the survivors), continue (redone over the survivors where it can be); auto = abort under MPI_ERRORS_ARE_FATAL, return otherwise; a rank blocked in any other call ends the job in every mode",
     FTI_CFG_NAME, OFF(shim_on_failure), 0, 0, NULL},
    {"FTMPI_SHIM_SUCCESS_AFTER_LOSS", "0", "the drop-in: 1 lets a job whose survivors finished after a rank died (return, continue) end with the program's own status; 0: every rank that saw a loss exits non-zero (70, after its output is flushed) and mpirun --enable-recovery is ended so that it returns 1; a stopped rank's job ends non-zero either way",
     FTI_CFG_BOOL, OFF(shim_success_after_loss), 0, 1, bool_choices},
    {"FTMPI_SHIM_RESCALE", "0", "the drop-in, continue: 1 scales sums by world size / survivors, so that a code that averages keeps averaging",
     FTI_CFG_BOOL, OFF(shim_rescale), 0, 1, bool_choices},
    {"FTMPI_MODEB_ZERO_COPY", "0", "mode B, mpi backend: 1 lets MPI write an FT_Allreduce buffer from ftmpi_mem_alloc itself (MPI_Iallreduce's or the ring's all-gather receives: no staging copy); "
     "after such a reduction failed, MPI may still write that buffer: FT_Allreduce refuses it (FT_ERR_STATE) and ftmpi_mem_free leaves it mapped; allocate another",
     FTI_CFG_BOOL, OFF(modeb_zero_copy), 0, 1, bool_choices},
    {"FTMPI_FLIGHT_RECORDS", "64", "flight recorder: the last N FT_Quorum/FT_Allreduce/FT_Commit calls each rank keeps in memory (operation, bytes, quorum id, start, end, result) and writes to FTMPI_EVENT_LOG (else its log) on a step's first FT_ERR_* and on SIGUSR1 (when the program has no SIGUSR1 handler); tools: ftmpi-flight; 0 = off",
     FTI_CFG_INT, OFF(flight_records), 0, 1 << 20, NULL},
    {"FTMPI_MODEB_ALLOW_NO_RECOVERY", "0", "mode B on an MPI whose ranks cannot survive a dead rank within one job (neither Open MPI's mpirun --enable-recovery nor working MPIX_Comm_revoke/shrink/agree, e.g. MPICH 4.0.2): 0 = FT_Init fails (FT_ERR_UNSUPPORTED) naming what is needed; 1 = start anyway (healthy runs work, one dead rank ends the job)",
     FTI_CFG_BOOL, OFF(modeb_allow_no_recovery), 0, 1, bool_choices},
    {"FTMPI_SDC_EVERY", "0", "silent data corruption check: every N committed steps each rank fingerprints its registered state (the heal checksum) and the lighthouse compares the groups at that step; a group that disagrees with a strict majority is reported and heals from the majority; 0 = off",
     FTI_CFG_INT, OFF(sdc_every), 0, 1 << 30, NULL},
    {"FTMPI_SDC_ON_TIE", "continue", "when the SDC check finds groups that differ with no strict majority (e.g. 2 groups): continue (every group involved is reported, the job goes on) or stop (FT_Quorum returns FT_ERR_SDC from then on)",
     FTI_CFG_ENUM, OFF(sdc_on_tie), 0, 0, sdc_tie_choices},
    {NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL},
};

static int parse_field(fti_config_t *cfg, const fti_config_field_t *f, const char *s, char *err,
                       size_t errlen)
{
    char *dst = (char *)cfg + f->offset;
    char why[FTI_REASON_SIZE];
    int64_t v;

    switch (f->type) {
    case FTI_CFG_STRING:
        if (strlen(s) >= f->size) {
            snprintf(err, errlen, "%s='%.40s...': %zu characters, at most %zu fit", f->name, s,
                     strlen(s), f->size - 1);
            return FT_ERR_CONFIG;
        }
        memcpy(dst, s, strlen(s) + 1);
        return FT_SUCCESS;
    case FTI_CFG_INT:
    case FTI_CFG_BYTES:
        if ((f->type == FTI_CFG_BYTES ? fti_parse_size : fti_parse_int64)(
                s, f->min, f->max, &v, why, sizeof(why)) != FT_SUCCESS) {
            snprintf(err, errlen, "%s=%s", f->name, why);
            return FT_ERR_CONFIG;
        }
        if (f->size == sizeof(int64_t))
            *(int64_t *)dst = v;
        else
            *(int *)dst = (int)v;
        return FT_SUCCESS;
    case FTI_CFG_BOOL:
        if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on")) {
            *(int *)dst = 1;
        } else if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
                   !strcasecmp(s, "off")) {
            *(int *)dst = 0;
        } else {
            snprintf(err, errlen, "%s='%s': expected 0/1, true/false, yes/no or on/off", f->name, s);
            return FT_ERR_CONFIG;
        }
        return FT_SUCCESS;
    case FTI_CFG_ENUM:
        for (int i = 0; f->choices[i]; i++) {
            if (!strcasecmp(s, f->choices[i])) {
                *(int *)dst = i;
                return FT_SUCCESS;
            }
        }
        {
            int n = snprintf(err, errlen, "%s='%s': expected one of", f->name, s);
            for (int i = 0; f->choices[i] && n > 0 && (size_t)n < errlen; i++)
                n += snprintf(err + n, errlen - n, " %s", f->choices[i]);
        }
        return FT_ERR_CONFIG;
    case FTI_CFG_NAME: {
        size_t n = strlen(s);
        bool ok = n > 0 && n < f->size;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_';
        if (!ok) {
            snprintf(err, errlen,
                     "%s='%.40s': expected a name of at most %zu letters, digits, '-' or '_'",
                     f->name, s, f->size - 1);
            return FT_ERR_CONFIG;
        }
        for (size_t i = 0; i <= n; i++)
            dst[i] = (char)tolower((unsigned char)s[i]);
        return FT_SUCCESS;
    }
    case FTI_CFG_LOGLEVEL:
        v = fti_log_level_parse(s);
        if (v < 0) {
            snprintf(err, errlen, "%s='%s': expected none, error, warn, info, debug or trace",
                     f->name, s);
            return FT_ERR_CONFIG;
        }
        *(int *)dst = (int)v;
        return FT_SUCCESS;
    }
    snprintf(err, errlen, "%s: internal: unknown field type", f->name);
    return FT_ERR_INTERNAL;
}

int fti_config_load_from(fti_config_t *cfg, const char *(*get)(const char *, void *), void *arg,
                         char *err, size_t errlen)
{
    fti_config_t tmp;
    memset(&tmp, 0, sizeof(tmp));
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        int rc = parse_field(&tmp, f, f->dflt, err, errlen);
        if (rc != FT_SUCCESS)
            return rc;
        const char *s = get(f->name, arg);
        if (s != NULL) {
            rc = parse_field(&tmp, f, s, err, errlen);
            if (rc != FT_SUCCESS)
                return rc;
        }
    }
    *cfg = tmp;
    return FT_SUCCESS;
}

static const char *env_get(const char *name, void *arg)
{
    (void)arg;
    return getenv(name);
}

static atomic_int loads;

int fti_config_load_count(void)
{
    return atomic_load(&loads);
}

int fti_config_load(fti_config_t *cfg, char *err, size_t errlen)
{
    atomic_fetch_add(&loads, 1);
    fti_config_t tmp;
    int rc = fti_config_load_from(&tmp, env_get, NULL, err, errlen);
    tmp.has_key = false;
    if (rc == FT_SUCCESS && tmp.token_file[0] != '\0') {
        rc = fti_auth_load_key(tmp.token_file, &tmp.key, err, errlen);
        if (rc != FT_SUCCESS) {
            size_t n = strlen(err);
            if (n + 20 < errlen) /* name the variable too */
                snprintf(err + n, errlen - n, " (FTMPI_TOKEN_FILE)");
        }
        tmp.has_key = rc == FT_SUCCESS;
    }
    if (rc == FT_SUCCESS)
        *cfg = tmp;
    return rc;
}

const fti_auth_key_t *fti_config_key(const fti_config_t *cfg)
{
    return cfg->has_key ? &cfg->key : NULL;
}

void fti_config_format(const fti_config_t *cfg, const fti_config_field_t *f, char *buf, size_t len)
{
    const char *src = (const char *)cfg + f->offset;
    switch (f->type) {
    case FTI_CFG_STRING:
    case FTI_CFG_NAME:
        snprintf(buf, len, "%s", src);
        break;
    case FTI_CFG_INT:
        if (f->size == sizeof(int64_t))
            snprintf(buf, len, "%" PRId64, *(const int64_t *)src);
        else
            snprintf(buf, len, "%d", *(const int *)src);
        break;
    case FTI_CFG_BOOL:
        snprintf(buf, len, "%d", *(const int *)src);
        break;
    case FTI_CFG_BYTES:
        snprintf(buf, len, "%" PRId64, *(const int64_t *)src);
        break;
    case FTI_CFG_ENUM:
        snprintf(buf, len, "%s", f->choices[*(const int *)src]);
        break;
    case FTI_CFG_LOGLEVEL:
        snprintf(buf, len, "%s", fti_log_level_name(*(const int *)src));
        break;
    default:
        snprintf(buf, len, "?");
    }
}

/* ---- unknown names -------------------------------------------------------- */

/* FTMPI_* names that are no settings of the library but are read by the
 * project's scripts, build and tests: never warned about. */
static const char *const other_names[] = {
    "FTMPI_BIN", "FTMPI_BUILD_DIR", "FTMPI_DASHBOARD_SHOT", "FTMPI_EXPORT", "FTMPI_MPI_LIBRARY",
    "FTMPI_MPI_STANDARD", "FTMPI_RPATH", "FTMPI_SANITIZERS", "FTMPI_WERROR", "FTMPI_PORT", NULL};
/* FTMPI_TEST_*: the test hooks, known only to a build that has them
 * (configure --enable-test-hooks): a production build holds no hook's name. */
static const char *const other_prefixes[] = {
#ifdef FTMPI_TEST_HOOKS
    "FTMPI_TEST_",
#endif
    "FTMPI_HAVE_", NULL};

/* Levenshtein distance of a and b (at most 63 characters of each count). */
static size_t edit_distance(const char *a, const char *b)
{
    enum { MAXL = 64 };
    size_t la = strnlen(a, MAXL - 1), lb = strnlen(b, MAXL - 1);
    size_t prev[MAXL], cur[MAXL];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
    }
    return prev[lb];
}

const char *fti_config_nearest(const char *name)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (const fti_config_field_t *f = fti_config_table; name && f->name; f++) {
        size_t d = edit_distance(name, f->name);
        if (d < best_d) {
            best_d = d;
            best = f->name;
        }
    }
    return best;
}

bool fti_config_known(const char *name)
{
    for (const fti_config_field_t *f = fti_config_table; f->name; f++)
        if (strcmp(name, f->name) == 0)
            return true;
    for (size_t i = 0; other_names[i]; i++)
        if (strcmp(name, other_names[i]) == 0)
            return true;
    for (size_t i = 0; other_prefixes[i]; i++)
        if (strncmp(name, other_prefixes[i], strlen(other_prefixes[i])) == 0)
            return true;
    return false;
}

extern char **environ;

int fti_config_warn_unknown(void)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&done))
        return 0;
    int n = 0;
    for (char **e = environ; e && *e; e++) {
        char name[FTI_PATH_SIZE];
        size_t len = strcspn(*e, "=");
        if (strncmp(*e, "FTMPI_", 6) != 0 || len >= sizeof(name))
            continue;
        memcpy(name, *e, len);
        name[len] = '\0';
        if (fti_config_known(name))
            continue;
        FTI_WARN("%s is not a libftmpi setting and is ignored; did you mean %s? (ftmpi-info "
                 "lists them all)",
                 name, fti_config_nearest(name));
        n++;
    }
    return n;
}
