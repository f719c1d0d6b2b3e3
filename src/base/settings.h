/*
 * settings.h - the one table of FTMPI_* environment variables.
 *
 * fti_config_load() reads every variable once (FT_Init calls it); nothing
 * else in the library calls getenv for FTMPI_* settings.  ftmpi-info prints
 * the table and doc/ENVIRONMENT.md is generated from it.
 */
#ifndef FTI_SETTINGS_H
#define FTI_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"
#include "base/sizes.h"

/* A name setting (FTI_CFG_NAME) holds at most this many characters - 1. */
#define FTI_CFG_NAME_SIZE 32
enum fti_world_mode { FTI_WORLD_DYNAMIC, FTI_WORLD_FIXED_WITH_SPARES };
/* FTMPI_HEAL_INSTALL (src/step/step_quorum.c, fti_step_heal) */
enum fti_heal_install { FTI_HEAL_INSTALL_AUTO, FTI_HEAL_INSTALL_STAGED, FTI_HEAL_INSTALL_DIRECT };
/* FTMPI_HEAL_TRANSPORT (src/step/step_heal_rma.c) */
enum fti_heal_transport { FTI_HEAL_TRANSPORT_AUTO, FTI_HEAL_TRANSPORT_TCP, FTI_HEAL_TRANSPORT_UCX };
/* FTMPI_SDC_ON_TIE (src/step/step_sdc.c) */
enum fti_sdc_on_tie { FTI_SDC_TIE_CONTINUE, FTI_SDC_TIE_STOP };

typedef struct fti_config {
    /* strings: a longer value is refused by the parser, never cut */
    char lighthouse[FTI_ADDRESS_SIZE];  /* host:port, "" = none (mode B if group_size > 0) */
    char replica_id[FTI_REPLICA_ID_SIZE]; /* "" = derived from host and pid */
    char bind_host[FTI_HOST_SIZE];      /* address the rank's servers bind */
    int group_size;             /* mode B: ranks per group, 0 = mode A */
    int min_replicas;
    char backend[FTI_CFG_NAME_SIZE]; /* "auto" or a name of comm/comm.h's backend table */
    int world_mode;             /* enum fti_world_mode */
    int timeout_ms;             /* collectives and intra-group waits */
    int quorum_timeout_ms;      /* FT_Quorum's wait for a quorum */
    int connect_timeout_ms;
    int heartbeat_ms;
    int heal_timeout_ms;
    int heal_install;           /* enum fti_heal_install */
    int heal_transport;         /* enum fti_heal_transport */
    int init_sync;              /* bool */
    int log_level;
    char event_log[FTI_PATH_SIZE];      /* JSON event log path, "" = off */
    char token_file[FTI_PATH_SIZE];     /* job secret file, "" = unauthenticated */
    int64_t chunk_bytes;        /* ring pipeline chunk */
    int64_t max_frame_bytes;    /* control-plane frame cap */
    int restart_count;          /* set by ftmpi-run */
    int64_t restart_lost_ms;    /* set by ftmpi-run: wall ms it saw the last run fail, 0 none */
    char agent_dir[FTI_PATH_SIZE]; /* set by ftmpi-run: rank marks, "" = none */
    int lh_join_timeout_ms;     /* mode B: the in-process lighthouse's join timeout */
    int lh_heartbeat_timeout_ms;/* mode B: ... and heartbeat timeout */
    int lh_tick_ms;             /* mode B: ... and quorum tick */
    char ckpt_dir[FTI_PATH_SIZE];  /* durable checkpoints' folder, "" = none */
    int ckpt_every;             /* checkpoint every N committed steps, 0 = only FT_Checkpoint */
    int ckpt_keep;              /* published checkpoints kept */
    char ckpt_load[FTI_PATH_SIZE]; /* auto, never, or a folder */
    int affinity;               /* bool: bind the baby child near its GPU */
    int ucx;                    /* bool: offer ucx to FTMPI_BACKEND=auto's choice */
    char baby_path[FTI_PATH_SIZE];      /* ftmpi-baby, "" = installed one */
    char shim_on_failure[FTI_CFG_NAME_SIZE]; /* a failure mode of the drop-in
                                              * (mpi_shim/shim.h parses it) */
    int shim_rescale;           /* bool: the drop-in's continue scales sums */
    int shim_success_after_loss; /* bool: the drop-in keeps status 0 after a loss */
    int modeb_zero_copy;        /* bool: mode B's MPI writes ftmpi_mem_alloc buffers itself */
    int flight_records;         /* flight recorder entries per rank, 0 = off (flight.h) */
    int modeb_allow_no_recovery; /* bool: mode B starts where a dead rank ends the job */
    int sdc_every;              /* SDC check every N committed steps, 0 = off */
    int sdc_on_tie;             /* enum fti_sdc_on_tie */
    /* ftmpi-lighthouse's election through etcd (lighthouse/leader.h): the
     * defaults of its --etcd* flags; FT_Init reads none of them */
    char lh_etcd[FTI_PATH_SIZE];        /* "URL[,URL...]", "" = no etcd */
    char lh_etcd_prefix[FTI_PATH_SIZE];
    int lh_etcd_ttl_s;
    char lh_etcd_advertise[FTI_ADDRESS_SIZE];
    char lh_etcd_ca[FTI_PATH_SIZE], lh_etcd_cert[FTI_PATH_SIZE], lh_etcd_key[FTI_PATH_SIZE];
    char lh_etcd_user[FTI_HOST_SIZE];
    char lh_etcd_password_file[FTI_PATH_SIZE];
    /* not in the table: the job's key, derived from token_file's secret by
     * fti_config_load (has_key false: none); read it with fti_config_key */
    bool has_key;
    fti_auth_key_t key;
} fti_config_t;

/* The job's key of cfg (NULL: the job is unauthenticated), valid as long
 * as *cfg; what FT_Init's servers, clients, rings and checkpoints get. */
const fti_auth_key_t *fti_config_key(const fti_config_t *cfg);

/* FTI_CFG_NAME: a lower-cased name of letters, digits, '-' and '_' whose
 * meaning the layer that owns the names checks (FTMPI_BACKEND: the backend
 * table of comm/comm.h, when FT_Init resolves it); the settings know none. */
enum fti_config_type { FTI_CFG_STRING, FTI_CFG_INT, FTI_CFG_BYTES, FTI_CFG_BOOL, FTI_CFG_ENUM,
                       FTI_CFG_LOGLEVEL, FTI_CFG_NAME };

typedef struct fti_config_field {
    const char *name;       /* FTMPI_... */
    const char *dflt;       /* default as text */
    const char *doc;        /* one line */
    int type;               /* enum fti_config_type */
    size_t offset;          /* into fti_config_t */
    size_t size;            /* of the member (strings) */
    int64_t min, max;       /* ints */
    const char *const *choices; /* enums, NULL-terminated; value = index */
} fti_config_field_t;

/* The table, terminated by an entry with name == NULL. */
extern const fti_config_field_t fti_config_table[];

/* Fills *cfg from defaults and the environment, then derives the job's key
 * from FTMPI_TOKEN_FILE into cfg (fti_auth_load_key; none when it is
 * empty).  On a bad value or a bad token file returns FT_ERR_CONFIG and
 * writes a message naming the variable (or the file) into err (size
 * errlen); *cfg is then left untouched. */
int fti_config_load(fti_config_t *cfg, char *err, size_t errlen);

/* How many times this process loaded the table from the environment
 * (fti_config_load): one in a process that runs FT_Init or the
 * drop-in (the drop-in hands its table to FT_Init). */
int fti_config_load_count(void);

/* Same, but values come from get(name, arg) instead of getenv (tests). */
int fti_config_load_from(fti_config_t *cfg, const char *(*get)(const char *, void *), void *arg,
                         char *err, size_t errlen);

/* The known name nearest to name (Levenshtein distance over the table's
 * names), for "did you mean" messages. */
const char *fti_config_nearest(const char *name);

/* Whether name (an FTMPI_* variable name, without "=value") is a setting of
 * the table or a name the project's scripts and tests use (FTMPI_BIN,
 * FTMPI_TEST_*, ...). */
bool fti_config_known(const char *name);

/* Warns (FTI_WARN, once per process) about every FTMPI_* variable of the
 * environment that is no known name, with the nearest setting: a
 * misspelled FTMPI_LOG_LEVL or FTMPI_TIMEOUT would otherwise be ignored
 * without a word.  Returns how many it warned about (0 after the first
 * call). */
int fti_config_warn_unknown(void);

/* Formats the current value of field f of cfg into buf. */
void fti_config_format(const fti_config_t *cfg, const fti_config_field_t *f, char *buf,
                       size_t len);

#endif
