/*
 * ft_sgd.c - fault-tolerant data-parallel training of a logistic regression
 * with libftmpi (the step protocol of doc/USER_GUIDE.md, section 1).
 *
 * Mode A: every replica group is its own `mpirun -np R ./ft_sgd ...`, each
 * under `ftmpi-run`, all talking to one `ftmpi-lighthouse`.  A group that
 * dies is restarted by its agent, heals its parameters from a live group in
 * FT_Quorum and takes part again; the others go on without it meanwhile.
 *
 * Mode B: one `mpirun --enable-recovery -np 9 -x FTMPI_GROUP_SIZE=2
 * ./ft_sgd ...` runs 4 groups of 2 ranks and the lighthouse on world rank
 * 8 (FT_Init never returns there).  A group that loses a rank is gone: its
 * other ranks print "group lost" and leave (exit status 4); the others go
 * on without it.  With FTMPI_WORLD_SIZE_MODE=fixed_with_spares and
 * FTMPI_MIN_REPLICAS=2 only two groups contribute data; the others are
 * spares that keep in sync and step in when a participant is lost.
 *
 * Data: a seeded, generated data set of --samples points in --features
 * dimensions drawn from two Gaussian blobs (label 0 around -c, label 1
 * around +c, |c| = 2, unit noise per coordinate).  The noise comes from a
 * table of Gaussian numbers indexed by a per-sample offset, so a sample of a
 * million features costs a table walk, not a million random draws, and
 * every process generates exactly the same data from --seed.
 *
 * Who trains on what: at step s the quorum has P groups; the group with
 * replica rank r takes the --batch samples starting at (s * P + r) * batch
 * (mod --samples), so every group of a step sees different data and the
 * step's global batch is P * batch samples.  Inside a group of R ranks,
 * group rank g takes its contiguous part of the group's batch.
 *
 * Step size: --lr, capped at 1/L where L bounds the curvature of a batch's
 * loss, so that training is stable for any --features.  The logistic loss
 * has sigma' <= 1/4, so L <= lambda_max(S) / 4 with S the batch's second
 * moment (1/b) sum x x^T.  For this data S is the class means' c c^T
 * (|c|^2 = 4) plus the noise's Wishart matrix, whose largest eigenvalue is
 * about (sqrt(F) + sqrt(b))^2 / b (Bai-Yin): about 1 when F << b, about F/b
 * when F >> b, where each sample's own direction dominates (|x|^2 is about
 * F).  The example takes b = --batch, one group's batch: the fewest samples
 * a step averages over whatever the number of participants, so the step
 * size does not depend on the quorum.  At 64 features the cap is 0.41 (the
 * default --lr 0.5 barely changes); at 262,143 features it is 4.8e-4, where
 * lr 0.5 moved each sample's logit by thousands per step and the loss
 * oscillated.  The initial loss line prints the step size used.
 *
 * Inside a group (R > 1) the parameters are replicated: every rank holds
 * and registers the whole parameter vector, the group's gradient is summed
 * on the group's own communicator (ftmpi_group_comm: mode A a duplicate of
 * MPI_COMM_WORLD, mode B the group's part of it) with MPI_Iallreduce polled
 * against --group-timeout-ms (in mode B a dead rank of the group would
 * leave a blocking MPI_Allreduce waiting forever; when the deadline passes
 * the group is lost and this rank leaves), and then every rank averages
 * that same group gradient across the groups with FT_Allreduce on its
 * slice (FT_COMM_REPLICAS: the ranks with the same group rank in every
 * group).  The R slices thus carry identical data; this keeps the example
 * short and lets healing copy whole parameter vectors rank by rank.  A code
 * with large models would shard instead: reduce-scatter inside the group,
 * FT_Allreduce 1/R of the gradient per slice, all-gather inside the group.
 *
 * One step (train_step):
 *     FT_Quorum(0)                       quorum, new slice, heal if behind
 *     gradient of the local samples
 *     MPI_Iallreduce(SUM) in the group   the group's gradient and loss
 *     FT_Allreduce(FT_AVG) across groups  averaged over the participants
 *     FT_Commit(&committed)              every collective of the step ok?
 *     if committed: w -= step size * gradient
 * Any FT_ error just means the step did not commit: the loop goes on with
 * the next FT_Quorum (that is the point of the library), except
 * FT_ERR_GROUP_LOST (mode B: this group lost a rank) and FT_ERR_KILLED (an
 * operator killed the group from the lighthouse), which end the loop.
 * A spare group (FT_Comm_rank >= FT_Comm_size) computes no gradient: the
 * library contributes nothing for it anyway.  Every rank runs
 * the same sequence of calls whatever happened, so the group's MPI
 * collectives always match.  The loop stops after --steps committed steps
 * (FT_Step() counts them, healed steps included) or --max-attempts steps.
 *
 * Output (group rank 0, stdout, line-buffered):
 *     initial loss X replica ID ranks R init-seed S lr L   (L: the step size used)
 *     step N loss X quorum Q participants P    every --print-every steps
 *     step N failed: ERROR (where)         a step that did not commit
 *     group lost at step N: WHY            mode B: this group lost a rank
 *     killed at step N: WHY                the lighthouse killed the group
 *     final loss X
 *     steps committed N (here H, attempts A)
 *     failures survived K
 *     state checksum 0x0123456789abcdef    FNV-1a 64 of the parameter bytes
 *     checkpoint loaded at step N          FT_Quorum loaded a durable checkpoint
 *                                          (printed when it happens)
 * and last, on every rank that did not lose its group:
 *     final replica=ID rank=G step=N checksum=0x0123456789abcdef
 * (G the group rank), so a test can check that every rank of every group
 * ends at the same step with the same registered bytes.
 * "loss" of a step line is the batch loss averaged over the participants;
 * initial and final losses are measured on the same fixed evaluation set
 * (the first --eval samples) in every group.
 *
 * --shard 1 registers each rank's block of the parameters with
 * FT_State_register_shard instead of the whole vector with
 * FT_State_register: durable checkpoints (FTMPI_CKPT_DIR) store the blocks
 * and load them resharded into a group of another size; after FT_Quorum
 * replaced the state (FT_Heal_count moved: a load or a heal, the SDC
 * check's at the same step included, replaced only this rank's block) the
 * group all-gathers the blocks (step_regather).
 *
 * --localsgd H / --diloco H (ft_sgd_outer.c): the groups train alone and
 * sync every H inner steps through FT_Outer_* (LocalSGD averages the
 * parameters, DiLoCo applies an outer Nesterov step to the averaged
 * pseudo-gradient); --steps counts inner steps, step lines count syncs.
 *
 * --dump FILE writes the raw parameter bytes at the end (rank 0 to FILE,
 * group rank g > 0 to FILE.g; in mode B FILE.<replica id> and
 * FILE.<replica id>.g), so tests can compare groups with cmp.
 *
 * Initial parameters come from --init-seed (default: a hash of the replica
 * id, so groups start different and FTMPI_INIT_SYNC=1, the default, makes
 * them equal at step 0).  With FTMPI_INIT_SYNC=0 every group must be given
 * the same --init-seed.
 *
 * Exit status: 0 after --steps committed steps; 2 when FT_Init (or a bad
 * flag) fails; 3 when --max-attempts ran out first; 4 when the group was
 * lost (mode B); 5 when the lighthouse killed the group; 6 when the SDC
 * check stopped it (FT_ERR_SDC).  Note that mpirun --enable-recovery (Open MPI 4.1) exits
 * 0 whatever its ranks' statuses: read the output.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "ftmpi.h"
#include "ft_sgd_outer.h"

#define NOISE_TABLE 65521  /* prime: per-sample windows wrap at different places */
#define CENTER_NORM2 4.0   /* |c|^2: the class means are +-c */
#define REPLICA_ID_LEN 128 /* room for any FTMPI_REPLICA_ID */
#define PATH_LEN 4096

struct opts {
    long steps;
    long features;
    long batch;
    long samples;
    long eval;
    long print_every;
    long sleep_ms;
    long max_attempts;
    long group_timeout_ms;
    long die_at_step;
    long die_rank;
    long shard; /* --shard 1: each rank registers its block of the parameters */
    long ftmpi_mem; /* --ftmpi-mem 1: the gradient lives in ftmpi_mem_alloc memory */
    int die_in_commit;
    const char *die_where; /* as given: compute, commit, inner (--localsgd/--diloco) */
    long localsgd, diloco; /* H of --localsgd / --diloco, 0 off */
    long flip_at_step; /* test hooks only: --flip-at-step (-1 off) */
    long flip_rank;    /* test hooks only: --flip-rank, the group rank that flips */
    long flip_index;   /* test hooks only: --flip-index, the parameter it flips */
    double outer_lr, outer_momentum;
    double lr;
    uint64_t seed;
    uint64_t init_seed;
    int init_seed_set;
    const char *dump;
    const char *pace_file; /* --pace-file: a test holds every rank before a step's allreduce */
};

struct data {
    long features;
    long samples;
    uint64_t seed;
    float *center; /* unit direction times 2: label 1 is around +center, label 0 around -center */
    float *noise;  /* NOISE_TABLE standard normal numbers */
};

/* Everything the steps of one process share. */
struct app {
    struct opts o;
    struct data d;
    MPI_Comm group;   /* the group's own communicator (ftmpi_group_comm) */
    int rank, nranks; /* in the group */
    int world_rank, mode_b;
    char replica_id[REPLICA_ID_LEN];
    long F;           /* features */
    int n;            /* elements of g: weights, bias, loss */
    float *w;         /* F + 1 parameters, registered with the library */
    float *g;         /* gradient of a step, and its loss in g[F + 1] */
    double step_size; /* min(--lr, 1 / L) */
    double initial;   /* eval loss of the initial parameters */
    long attempts, commits_here, quorum_failures;
    int lost;   /* the group lost a rank: leave */
    int64_t outer_target; /* --localsgd / --diloco: FT_Step() at the end */
    int64_t heals;        /* FT_Heal_count when step_regather last looked */
    int killed; /* FT_ERR_KILLED: the lighthouse killed the group; leave */
    int sdc_stop; /* FT_ERR_SDC: the groups' states differ with no majority; leave */
    int g_busy; /* g belongs to an abandoned MPI request: never free it */
    FT_Outer outer; /* --localsgd / --diloco (ft_sgd_outer.c) */
};

/* What one step did (train_step's parts fill it). */
struct step {
    int64_t step; /* FT_Step() after the quorum: the step being trained */
    int participants, replica_rank;
    int qrc, arc, crc; /* FT_Quorum, FT_Allreduce, FT_Commit */
    int committed;
    const char *where; /* the call that failed */
};

/* ---- deterministic random numbers ------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t hash2(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b * UINT64_C(0xd6e8feb86659fd93));
    return splitmix64(&s);
}

/* uniform in (0, 1) */
static double uniform01(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal(uint64_t *s)
{
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static uint64_t fnv1a64(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* ---- the data set ----------------------------------------------------- */

static int data_init(struct data *d, long features, long samples, uint64_t seed)
{
    uint64_t s = seed ^ UINT64_C(0x5eed0000da7a5e7);
    double scale = 2.0 / sqrt((double)features);

    d->features = features;
    d->samples = samples;
    d->seed = seed;
    d->center = malloc((size_t)features * sizeof(float));
    d->noise = malloc(NOISE_TABLE * sizeof(float));
    if (d->center == NULL || d->noise == NULL)
        return -1;
    for (long j = 0; j < features; j++)
        d->center[j] = (float)((splitmix64(&s) & 1 ? scale : -scale));
    for (long i = 0; i < NOISE_TABLE; i++)
        d->noise[i] = (float)normal(&s);
    return 0;
}

static void data_free(struct data *d)
{
    free(d->center);
    free(d->noise);
}

/* Label (0/1) and noise offset of sample k. */
static void data_sample(const struct data *d, long k, int *y_p, long *off_p)
{
    uint64_t h = hash2(d->seed, (uint64_t)k);
    *y_p = (int)(h & 1);
    *off_p = (long)((h >> 1) % NOISE_TABLE);
}

/* w . x_k + b, with x_k[j] = (2y - 1) * center[j] + noise[(off + j) mod table]. */
static double sample_logit(const struct data *d, const float *w, long k, int *y_p)
{
    long off, F = d->features;
    int y;
    data_sample(d, k, &y, &off);
    float sign = y ? 1.0f : -1.0f;
    double z = w[F];
    long j = 0, t = off;
    while (j < F) {
        long run = NOISE_TABLE - t;
        if (run > F - j)
            run = F - j;
        float acc = 0.0f;
        for (long i = 0; i < run; i++)
            acc += w[j + i] * (sign * d->center[j + i] + d->noise[t + i]);
        z += acc;
        j += run;
        t = 0;
    }
    *y_p = y;
    return z;
}

/* g += coef * x_k (weights), g[F] += coef (bias). */
static void sample_axpy(const struct data *d, float *g, long k, float coef)
{
    long off, F = d->features;
    int y;
    data_sample(d, k, &y, &off);
    float sign = y ? 1.0f : -1.0f;
    long j = 0, t = off;
    while (j < F) {
        long run = NOISE_TABLE - t;
        if (run > F - j)
            run = F - j;
        for (long i = 0; i < run; i++)
            g[j + i] += coef * (sign * d->center[j + i] + d->noise[t + i]);
        j += run;
        t = 0;
    }
    g[F] += coef;
}

/* log(1 + e^-|z|) + max(z, 0) - y z: the logistic loss, stable for any z. */
static double logistic_loss(double z, int y)
{
    return log1p(exp(-fabs(z))) + (z > 0 ? z : 0) - (y ? z : 0);
}

static double sigmoid(double z)
{
    return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
}

/* Mean loss over the evaluation set (samples 0..eval-1): the same for
 * every group, so equal parameters give equal losses. */
static double eval_loss(const struct data *d, const float *w, long eval)
{
    double sum = 0.0;
    for (long k = 0; k < eval; k++) {
        int y;
        double z = sample_logit(d, w, k % d->samples, &y);
        sum += logistic_loss(z, y);
    }
    return eval > 0 ? sum / (double)eval : 0.0;
}

/* The step size (see the top of the file): --lr, capped at 1 / L with
 * L = (lambda_max of a batch's second moment) / 4 for b = --batch. */
static double stable_step(double lr, long features, long batch)
{
    double rf = sqrt((double)features), rb = sqrt((double)batch);
    double lipschitz = ((rf + rb) * (rf + rb) / (double)batch + CENTER_NORM2) / 4.0;
    return lr < 1.0 / lipschitz ? lr : 1.0 / lipschitz;
}

/* ---- command line ----------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ft_sgd [options]\n"
            "  mode A: each replica group is its own mpirun -np R ft_sgd ... (FTMPI_LIGHTHOUSE)\n"
            "  mode B: mpirun --enable-recovery -np k*R+1 -x FTMPI_GROUP_SIZE=R ft_sgd ...\n"
            "  --steps N          committed steps to train (default 100)\n"
            "  --features F       input dimension (default 64); the state is F+1 floats\n"
            "  --batch B          samples per group and step (default 32)\n"
            "  --samples N        size of the generated data set (default 8192)\n"
            "  --eval N           evaluation samples for the initial/final loss (default 256)\n"
            "  --lr X             learning rate (default 0.5), capped at the stable step\n"
            "                     1/L of the problem (see ft_sgd.c; printed at the start)\n"
            "  --seed S           data set seed (default 42)\n"
            "  --init-seed S      initial parameters (default: hash of the replica id)\n"
            "  --sleep-ms MS      extra time per step, between compute and allreduce (default 0)\n"
            "  --print-every K    print a step line every K steps (default 10)\n"
            "  --max-attempts N   give up after N steps tried (default 10 * steps + 100)\n"
            "  --group-timeout-ms MS  deadline of the in-group gradient sum; past it the\n"
            "                     group is lost and this rank leaves (default: FTMPI_TIMEOUT_MS,\n"
            "                     or 10000; allow for the ranks' heal times to differ)\n"
            "  --die-at-step N    fault injection: the rank of world rank --die-rank (default\n"
            "                     0) sends itself SIGKILL at step N, after its compute, while\n"
            "                     the others wait for it in the step's allreduce\n"
            "  --die-rank W       see --die-at-step\n"
            "  --die-where W      compute (default) or commit: die after the step's\n"
            "                     FT_Allreduce instead, while the group votes\n"
            "  --dump FILE        write the parameter bytes at the end (rank g>0: FILE.g)\n"
            "  --pace-file FILE   for tests: before step N's allreduce wait until FILE holds\n"
            "                     a number > N (a test kills a rank before the run can end)\n"
            "  --shard 1          each rank registers only its block of the parameters\n"
            "                     (FT_State_register_shard: durable checkpoints store blocks\n"
            "                     and reshard them for another group size); after a heal\n"
            "                     or a load the group all-gathers the blocks\n"
            "  --ftmpi-mem 1      the gradient in ftmpi_mem_alloc memory, replaced after a\n"
            "                     failed FT_Allreduce (what FTMPI_MODEB_ZERO_COPY=1 asks)\n"
            "  --localsgd H       LocalSGD: groups train alone, their parameters are averaged\n"
            "                     every H inner steps (FT_Outer_*; --steps counts inner steps,\n"
            "                     --die-at-step counts syncs, --die-where also takes inner)\n"
            "  --diloco H         DiLoCo: every H inner steps the pseudo-gradients are\n"
            "                     averaged and an outer Nesterov step updates the parameters\n"
            "  --outer-lr X       DiLoCo's outer learning rate (default 1.0)\n"
            "  --outer-momentum X DiLoCo's outer Nesterov momentum (default 0.5)\n");
}

static int parse_long(const char *name, const char *s, long min, long *v_p)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < min) {
        fprintf(stderr, "ft_sgd: %s '%s': expected an integer >= %ld\n", name, s, min);
        return -1;
    }
    *v_p = v;
    return 0;
}

/* The integer flags: name, field of struct opts, smallest value. */
static const struct long_flag {
    const char *name;
    size_t offset;
    long min;
} long_flags[] = {
    {"--steps", offsetof(struct opts, steps), 0},
    {"--features", offsetof(struct opts, features), 1},
    {"--batch", offsetof(struct opts, batch), 1},
    {"--samples", offsetof(struct opts, samples), 1},
    {"--eval", offsetof(struct opts, eval), 0},
    {"--print-every", offsetof(struct opts, print_every), 1},
    {"--sleep-ms", offsetof(struct opts, sleep_ms), 0},
    {"--max-attempts", offsetof(struct opts, max_attempts), 1},
    {"--die-at-step", offsetof(struct opts, die_at_step), 0},
    {"--die-rank", offsetof(struct opts, die_rank), 0},
    {"--group-timeout-ms", offsetof(struct opts, group_timeout_ms), 1},
    {"--shard", offsetof(struct opts, shard), 0},
    {"--ftmpi-mem", offsetof(struct opts, ftmpi_mem), 0},
    {"--localsgd", offsetof(struct opts, localsgd), 1},
    {"--diloco", offsetof(struct opts, diloco), 1},
#ifdef FT_SGD_TEST_HOOKS
    {"--flip-at-step", offsetof(struct opts, flip_at_step), 1},
    {"--flip-rank", offsetof(struct opts, flip_rank), 0},
    {"--flip-index", offsetof(struct opts, flip_index), 0},
#endif
};

static void opts_default(struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->steps = 100;
    o->features = 64;
    o->batch = 32;
    o->samples = 8192;
    o->eval = 256;
    o->print_every = 10;
    o->max_attempts = -1;
    /* the library's deadline by default (an example may read it) */
    const char *t = getenv("FTMPI_TIMEOUT_MS");
    o->group_timeout_ms = t != NULL && atol(t) > 0 ? atol(t) : 10000;
    o->die_at_step = -1;
    o->flip_at_step = -1;
    o->flip_index = 1;
    o->lr = 0.5;
    o->seed = 42;
    o->die_where = "compute";
    o->outer_lr = 1.0;
    o->outer_momentum = 0.5;
}

/* One flag A with its value VAL: 0, or -1 after a message. */
static int parse_flag(struct opts *o, const char *a, const char *val)
{
    long v;
    for (size_t i = 0; i < sizeof(long_flags) / sizeof(long_flags[0]); i++)
        if (!strcmp(a, long_flags[i].name))
            return parse_long(a, val, long_flags[i].min,
                              (long *)((char *)o + long_flags[i].offset));
    if (!strcmp(a, "--die-where")) {
        if (strcmp(val, "compute") != 0 && strcmp(val, "commit") != 0 &&
            strcmp(val, "inner") != 0) {
            fprintf(stderr, "ft_sgd: --die-where '%s': expected compute, commit or inner\n", val);
            return -1;
        }
        o->die_in_commit = !strcmp(val, "commit");
        o->die_where = val;
    } else if (!strcmp(a, "--outer-lr") || !strcmp(a, "--outer-momentum")) {
        char *end;
        double x = strtod(val, &end);
        if (end == val || *end != '\0' || !(x >= 0)) {
            fprintf(stderr, "ft_sgd: %s '%s': expected a number >= 0\n", a, val);
            return -1;
        }
        *(!strcmp(a, "--outer-lr") ? &o->outer_lr : &o->outer_momentum) = x;
    } else if (!strcmp(a, "--seed") || !strcmp(a, "--init-seed")) {
        if (parse_long(a, val, 0, &v))
            return -1;
        if (!strcmp(a, "--seed")) {
            o->seed = (uint64_t)v;
        } else {
            o->init_seed = (uint64_t)v;
            o->init_seed_set = 1;
        }
    } else if (!strcmp(a, "--lr")) {
        char *end;
        o->lr = strtod(val, &end);
        if (end == val || *end != '\0' || !(o->lr > 0)) {
            fprintf(stderr, "ft_sgd: --lr '%s': expected a positive number\n", val);
            return -1;
        }
    } else if (!strcmp(a, "--dump")) {
        o->dump = val;
    } else if (!strcmp(a, "--pace-file")) {
        o->pace_file = val;
    } else {
        fprintf(stderr, "ft_sgd: unknown flag: %s\n", a);
        usage(stderr);
        return -1;
    }
    return 0;
}

/* 0 to run, 1 after --help, -1 after a message about a bad flag. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    opts_default(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "ft_sgd: unknown flag or missing value: %s\n", a);
            usage(stderr);
            return -1;
        }
        if (parse_flag(o, a, argv[++i]) != 0)
            return -1;
    }
    if (o->max_attempts < 0)
        o->max_attempts = 10 * o->steps + 100;
    if (o->localsgd && o->diloco) {
        fprintf(stderr, "ft_sgd: --localsgd and --diloco: choose one\n");
        return -1;
    }
    if ((o->localsgd || o->diloco) && o->shard) {
        fprintf(stderr, "ft_sgd: --shard does not go with --localsgd or --diloco\n");
        return -1;
    }
    if (!(o->localsgd || o->diloco) && !strcmp(o->die_where, "inner")) {
        fprintf(stderr, "ft_sgd: --die-where inner needs --localsgd or --diloco\n");
        return -1;
    }
    if ((size_t)o->features + 2 > (size_t)INT32_MAX) {
        fprintf(stderr, "ft_sgd: --features too large for one allreduce\n");
        return -1;
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Writes the parameter bytes to path through a temporary name and rename,
 * so a reader never sees a partial file. */
static int dump_state(const char *path, const void *buf, size_t bytes)
{
    char tmp[4096];
    int len = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof(tmp)) {
        fprintf(stderr, "ft_sgd: --dump %s: path too long\n", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        fprintf(stderr, "ft_sgd: --dump %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    size_t w = fwrite(buf, 1, bytes, f);
    if (fclose(f) != 0 || w != bytes || rename(tmp, path) != 0) {
        fprintf(stderr, "ft_sgd: --dump %s: %s\n", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

/* ---- training --------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sums g over the group's ranks: MPI_Iallreduce on the group's own
 * communicator, polled until timeout_ms.  Returns 0, or -1 when MPI failed
 * or the deadline passed: a rank of the group is dead or hopelessly late,
 * the group is lost, and g stays MPI's (the caller must never free it). */
static int group_sum(MPI_Comm comm, float *g, int n, long timeout_ms)
{
    MPI_Request req;
    int done = 0, spins = 0;
    if (MPI_Iallreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, comm, &req) != MPI_SUCCESS)
        return -1;
    int64_t deadline = now_ms() + timeout_ms;
    while (!done) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            break;
        if (now_ms() >= deadline)
            return -1;
        if (++spins > 100) {
            struct timespec ts = {0, 200000}; /* leave the cores to the others */
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* --pace-file: wait until the file holds a number greater than step (a
 * test bounds how far the run gets until it has done its part). */
static void pace_wait(const char *file, int64_t step)
{
    for (;;) {
        long long limit = -1;
        FILE *f = fopen(file, "r");
        if (f != NULL) {
            if (fscanf(f, "%lld", &limit) != 1)
                limit = -1;
            fclose(f);
        }
        if (limit > step)
            return;
        sleep_ms(5);
    }
}

/* --die-at-step: a node failure, as seen from the other ranks. */
static void die_now(int world_rank, int64_t step, const char *where)
{
    fprintf(stderr, "ft_sgd: world rank %d: SIGKILL to myself at step %" PRId64 " (%s)\n",
            world_rank, step, where);
    fflush(NULL);
    raise(SIGKILL);
}

/* The rank's part [lo, hi) of a group batch of b samples over r ranks. */
static void my_part(long b, int r, int g, long *lo_p, long *hi_p)
{
    *lo_p = b * g / r;
    *hi_p = b * (g + 1) / r;
}

/* --shard: every rank's block of w to every rank of the group (after a
 * heal or a checkpoint load replaced only this rank's block), polled
 * against timeout_ms like group_sum.  0 or -1. */
static int group_allgather(MPI_Comm comm, float *w, long total, int nranks, long timeout_ms)
{
    int *counts = malloc((size_t)nranks * sizeof(int)), *displs = malloc((size_t)nranks * sizeof(int));
    MPI_Request req;
    int done = 0, rc = -1;
    for (int g = 0; counts && displs && g < nranks; g++) {
        long lo, hi;
        my_part(total, nranks, g, &lo, &hi);
        counts[g] = (int)(hi - lo);
        displs[g] = (int)lo;
    }
    if (counts && displs &&
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w, counts, displs, MPI_FLOAT, comm,
                        &req) == MPI_SUCCESS) {
        int64_t deadline = now_ms() + timeout_ms;
        while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
               now_ms() < deadline) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
        rc = done ? 0 : -1;
    }
    if (rc == 0 || counts == NULL || displs == NULL) {
        free(counts);
        free(displs);
    } /* else MPI may still read them */
    return rc;
}

/* --shard: after FT_Quorum replaced the registered blocks (FT_Heal_count
 * moved: a heal, also the SDC check's, which keeps the step, or a
 * checkpoint load), the blocks of the group make the whole vector again,
 * whatever FT_Quorum returned (the group installs on every rank or none,
 * so every rank sees the count move).  1 when the group is lost. */
static int step_regather(struct app *a, const struct step *s, int64_t before)
{
    ftmpi_checkpoint_stats_t cs;
    int64_t heals = a->heals;
    if (FT_Heal_count(&heals) != FT_SUCCESS || heals == a->heals)
        return 0;
    a->heals = heals;
    if (a->rank == 0 && s->step != before && ftmpi_checkpoint_stats(&cs) == FT_SUCCESS &&
        cs.loaded_step == s->step && before == 0)
        printf("checkpoint loaded at step %" PRId64 "\n", s->step);
    if (!a->o.shard || a->nranks == 1)
        return 0;
    if (group_allgather(a->group, a->w, a->F + 1, a->nranks, a->o.group_timeout_ms) != 0) {
        printf("group lost at step %" PRId64 ": the in-group all-gather did not complete in "
               "%ld ms (rank %d)\n", s->step, a->o.group_timeout_ms, a->rank);
        return 1;
    }
    return 0;
}

/* ---- one process ------------------------------------------------------- */

/* MPI_Init, the flags, FT_Init and the group's communicator.  Returns -1
 * when this process goes on to train, else its exit status (MPI is then
 * finalized).  In mode B FT_Init does not return on the lighthouse rank. */
static int app_start(struct app *a, int *argc, char ***argv)
{
    int world_size = 1;
    memset(a, 0, sizeof(*a));
    a->group = MPI_COMM_NULL;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &a->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    /* stdout line-buffered in a buffer of its own: one write per line.  A
     * NULL buffer is not enough: under MPICH's hydra MPI_Init has made
     * stdout unbuffered (setbuf), glibc then keeps its 1-byte buffer and
     * every piece of a printf becomes a write of its own, which hydra
     * forwards as it comes, mixing two ranks' pieces within one line. */
    static char out_buf[BUFSIZ];
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));

    int rc = parse_args(*argc, *argv, &a->o);
    if (rc != 0) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    rc = FT_Init(argc, argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ft_sgd: FT_Init failed: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 2;
    }
    /* from here on, ranks are the group's */
    if (ftmpi_group_comm(&a->group) != FT_SUCCESS) {
        fprintf(stderr, "ft_sgd: ftmpi_group_comm failed\n");
        FT_Finalize();
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_rank(a->group, &a->rank);
    MPI_Comm_size(a->group, &a->nranks);
    a->mode_b = a->nranks < world_size;
    snprintf(a->replica_id, sizeof(a->replica_id), "?");
    ftmpi_replica_id(a->replica_id, sizeof(a->replica_id));
    return -1;
}

/* The data set, the parameters (small random weights, registered with the
 * library), the gradient buffer and the step size; prints the initial
 * loss.  0, or -1 after a message. */
static int model_init(struct app *a)
{
    const struct opts *o = &a->o;
    a->F = o->features;
    a->n = (int)(a->F + 2); /* weights, bias, loss */
    a->w = calloc((size_t)a->F + 1, sizeof(float));
    a->g = NULL;
    if (o->ftmpi_mem)
        (void)ftmpi_mem_alloc((size_t)a->n * sizeof(float), (void **)&a->g); /* zeroed */
    else
        a->g = calloc((size_t)a->n, sizeof(float));
    if (a->w == NULL || a->g == NULL || data_init(&a->d, a->F, o->samples, o->seed) != 0) {
        fprintf(stderr, "ft_sgd: out of memory for %ld features\n", a->F);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!o->init_seed_set)
        a->o.init_seed = fnv1a64(a->replica_id, strlen(a->replica_id));
    /* scaled so that the initial logits stay O(1) whatever the dimension
     * (+-0.1 per weight at 64 features) */
    uint64_t s = o->init_seed;
    double init_scale = 1.6 / sqrt((double)a->F);
    for (long j = 0; j <= a->F; j++)
        a->w[j] = (float)((uniform01(&s) - 0.5) * init_scale);

    int rc;
    if (o->localsgd || o->diloco) {
        rc = FT_SUCCESS; /* w is the local inner state: FT_Outer registers the global copy */
    } else if (o->shard) {
        long lo, hi;
        my_part(a->F + 1, a->nranks, a->rank, &lo, &hi);
        rc = FT_State_register_shard("weights", a->w + lo, MPI_FLOAT, a->F + 1, lo, hi - lo);
    } else {
        rc = FT_State_register("weights", a->w, ((size_t)a->F + 1) * sizeof(float));
    }
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ft_sgd: FT_State_register: %s\n", FT_Error_string(rc));
        return -1;
    }
    a->step_size = stable_step(o->lr, a->F, o->batch);
    a->initial = eval_loss(&a->d, a->w, o->eval);
    if (a->rank == 0)
        printf("initial loss %.6f replica %s ranks %d init-seed %" PRIu64 " lr %.6g\n", a->initial,
               a->replica_id, a->nranks, o->init_seed, a->step_size);
    return 0;
}

/* FT_Quorum and this group's place in it.  1 when the group is lost. */
static int step_quorum(struct app *a, struct step *s)
{
    memset(s, 0, sizeof(*s));
    s->participants = 1;
    s->where = "quorum";
    s->qrc = FT_Quorum(0);
    if (s->qrc == FT_SUCCESS) {
        a->quorum_failures = 0;
        if (FT_Comm_size(FT_COMM_REPLICAS, &s->participants) != FT_SUCCESS || s->participants < 1)
            s->participants = 1;
        if (FT_Comm_rank(FT_COMM_REPLICAS, &s->replica_rank) != FT_SUCCESS || s->replica_rank < 0)
            s->replica_rank = 0;
    }
    s->step = FT_Step();
    if (s->qrc == FT_ERR_GROUP_LOST) {
        printf("group lost at step %" PRId64 ": %s (quorum)\n", s->step, FT_Error_string(s->qrc));
        return 1;
    }
    if (s->qrc == FT_ERR_KILLED) {
        printf("killed at step %" PRId64 ": %s\n", s->step, FT_Error_string(s->qrc));
        a->killed = 1;
        return 1;
    }
    if (s->qrc == FT_ERR_SDC) { /* FTMPI_SDC_ON_TIE=stop */
        printf("stopped at step %" PRId64 ": %s\n", s->step, FT_Error_string(s->qrc));
        a->sdc_stop = 1;
        return 1;
    }
    return 0;
}

/* The mean gradient and loss of this rank's samples of the group's batch,
 * in a->g (a spare computes none: its contribution does not count). */
static void compute_gradient(struct app *a, const struct step *s)
{
    const long F = a->F, batch = a->o.batch;
    long lo, hi;
    my_part(batch, a->nranks, a->rank, &lo, &hi);
    if (s->replica_rank >= s->participants)
        hi = lo;
    long base = (long)((s->step * s->participants + s->replica_rank) % a->o.samples) * batch;
    memset(a->g, 0, (size_t)a->n * sizeof(float));
    for (long i = lo; i < hi; i++) {
        long k = (base + i) % a->o.samples;
        int y;
        double z = sample_logit(&a->d, a->w, k, &y);
        sample_axpy(&a->d, a->g, k, (float)((sigmoid(z) - y) / (double)batch));
        a->g[F + 1] += (float)(logistic_loss(z, y) / (double)batch);
    }
}

/* The gradient summed in the group (on its own communicator), then
 * averaged across the groups (may fail: then the step does not commit).
 * 1 when the group is lost. */
static int step_reduce(struct app *a, struct step *s)
{
    if (a->o.sleep_ms > 0)
        sleep_ms(a->o.sleep_ms);
    if (a->o.pace_file != NULL)
        pace_wait(a->o.pace_file, s->step);
    if (s->step == a->o.die_at_step && a->world_rank == a->o.die_rank && !a->o.die_in_commit)
        die_now(a->world_rank, s->step, "compute");
    if (a->nranks > 1 && group_sum(a->group, a->g, a->n, a->o.group_timeout_ms) != 0) {
        printf("group lost at step %" PRId64 ": the in-group sum did not complete in "
               "%ld ms (rank %d)\n",
               s->step, a->o.group_timeout_ms, a->rank);
        a->g_busy = 1;
        return 1;
    }
    s->arc = FT_Allreduce(MPI_IN_PLACE, a->g, a->n, MPI_FLOAT, FT_AVG, FT_COMM_REPLICAS);
    if (s->qrc == FT_SUCCESS && s->arc != FT_SUCCESS)
        s->where = "allreduce";
    if (s->arc != FT_SUCCESS && s->arc != FT_ERR_GROUP_LOST && a->o.ftmpi_mem) {
        /* with FTMPI_MODEB_ZERO_COPY, MPI may still write a buffer whose
         * reduction failed: a new one for the next step (the old one stays
         * MPI's; ftmpi_mem_free leaves it mapped) */
        float *g = NULL;
        if (ftmpi_mem_alloc((size_t)a->n * sizeof(float), (void **)&g) != FT_SUCCESS) {
            fprintf(stderr, "ft_sgd: out of memory for a new gradient buffer\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        ftmpi_mem_free(a->g);
        a->g = g;
    }
    return 0;
}

/* The group's vote.  1 when the group is lost. */
static int step_commit(struct app *a, struct step *s)
{
    if (s->step == a->o.die_at_step && a->world_rank == a->o.die_rank && a->o.die_in_commit)
        die_now(a->world_rank, s->step, "commit");
    s->crc = FT_Commit(&s->committed);
    if (s->arc == FT_ERR_GROUP_LOST || s->crc == FT_ERR_GROUP_LOST) {
        printf("group lost at step %" PRId64 ": %s (%s)\n", s->step,
               FT_Error_string(FT_ERR_GROUP_LOST),
               s->arc == FT_ERR_GROUP_LOST ? "allreduce" : "commit");
        return 1;
    }
    if (s->crc != FT_SUCCESS) {
        s->committed = 0;
        if (s->qrc == FT_SUCCESS && s->arc == FT_SUCCESS)
            s->where = "commit";
    }
    return 0;
}

/* --flip-at-step N (builds configured with --enable-test-hooks only): a
 * silent data corruption.  Right after step N committed and its update
 * was applied, outside any FT_ call, group rank --flip-rank (default 0;
 * mode B: the world rank)
 * flips one bit (the top mantissa bit of parameter --flip-index, default
 * 1; with --shard 1 choose one of its own block) of its own registered
 * state, once; nothing tells the library. */
static void flip_hook(struct app *a, int64_t now)
{
#ifdef FT_SGD_TEST_HOOKS
    static int flipped;
    int who = a->mode_b ? a->world_rank : a->rank; /* mode B: every group runs this */
    if (flipped || a->o.flip_at_step < 0 || now != a->o.flip_at_step ||
        who != a->o.flip_rank || a->o.flip_index > a->F)
        return;
    flipped = 1;
    uint32_t bits;
    float *p = &a->w[a->o.flip_index];
    memcpy(&bits, p, sizeof(bits));
    bits ^= UINT32_C(1) << 22;
    memcpy(p, &bits, sizeof(bits));
    fprintf(stderr, "ft_sgd: test hook: group %s rank %d flipped bit 22 of weights[%ld] after "
            "step %" PRId64 "\n", a->replica_id, a->rank, a->o.flip_index, now);
#else
    (void)a;
    (void)now;
#endif
}

/* A committed step updates the parameters and may print its line; a
 * failed one is reported (and a failed quorum backs off). */
static void step_finish(struct app *a, const struct step *s)
{
    if (s->committed) {
        for (long j = 0; j <= a->F; j++)
            a->w[j] -= (float)a->step_size * a->g[j];
        a->commits_here++;
        int64_t now = FT_Step();
        flip_hook(a, now);
        if (a->rank == 0 && (now % a->o.print_every == 0 || now == a->o.steps))
            printf("step %" PRId64 " loss %.6f quorum %" PRId64 " participants %d\n", now,
                   (double)a->g[a->F + 1], ftmpi_quorum_id(), s->participants);
        return;
    }
    int err = s->qrc != FT_SUCCESS ? s->qrc : s->arc != FT_SUCCESS ? s->arc : s->crc;
    if (a->rank == 0)
        printf("step %" PRId64 " failed: %s (%s)\n", s->step,
               err != FT_SUCCESS ? FT_Error_string(err) : "not committed", s->where);
    /* a quorum that fails at once (lighthouse down) must not spin */
    if (s->qrc != FT_SUCCESS) {
        a->quorum_failures++;
        sleep_ms(a->quorum_failures < 10 ? 50 * a->quorum_failures : 500);
    }
}

/* One attempt at a step.  0, or 1 when the group lost a rank (leave). */
static int train_step(struct app *a)
{
    struct step s;
    int64_t before = FT_Step();
    a->attempts++;
    if (step_quorum(a, &s) != 0 || step_regather(a, &s, before) != 0)
        return 1;
    compute_gradient(a, &s);
    if (step_reduce(a, &s) != 0 || step_commit(a, &s) != 0)
        return 1;
    step_finish(a, &s);
    return 0;
}

/* --localsgd / --diloco: one inner step (ft_sgd_outer.h): the gradient of
 * this rank's part of the group's batch at index, summed in the group,
 * then an SGD step on the local parameters.  No FT_ call. */
static int outer_inner(void *ctx, int64_t index, int participants, int replica_rank,
                       float *loss_p)
{
    struct app *a = ctx;
    struct step s = {.step = index, .participants = participants, .replica_rank = replica_rank};
    compute_gradient(a, &s);
    if (a->o.sleep_ms > 0)
        sleep_ms(a->o.sleep_ms);
    if (a->nranks > 1 && group_sum(a->group, a->g, a->n, a->o.group_timeout_ms) != 0) {
        printf("group lost at step %" PRId64 ": the in-group sum did not complete in "
               "%ld ms (rank %d)\n", FT_Step(), a->o.group_timeout_ms, a->rank);
        a->g_busy = 1;
        return 1;
    }
    for (long j = 0; j <= a->F; j++)
        a->w[j] -= (float)a->step_size * a->g[j];
    *loss_p = a->g[a->F + 1];
    return 0;
}

/* --localsgd / --diloco: the whole run.  1 when the group is lost or
 * killed (a->killed: exit status 5, as the per-step loop). */
static int outer_run(struct app *a)
{
    const struct opts *o = &a->o;
    struct sgd_outer_cfg c = {
        .diloco = o->diloco > 0, .sync_every = o->diloco > 0 ? o->diloco : o->localsgd,
        .lr = o->outer_lr, .mu = o->outer_momentum, .inner_steps = o->steps,
        .max_attempts = o->max_attempts, .print_every = o->print_every, .rank = a->rank,
        .die_me = a->world_rank == o->die_rank, .die_at_sync = o->die_at_step,
        .die_where = o->die_where};
    int lost = sgd_outer_train(&c, a->w, a->F + 1, outer_inner, a, &a->outer, &a->attempts);
    if (lost == 2) {
        a->killed = 1;
        lost = 1;
    }
    ftmpi_outer_stats_t st;
    if (a->outer != NULL && ftmpi_outer_stats(a->outer, &st) == FT_SUCCESS)
        a->commits_here = st.committed;
    a->outer_target = 1 + (o->steps + c.sync_every - 1) / c.sync_every;
    return lost;
}

/* The summary (group rank 0) and, on every rank of a group still in the
 * job, the "final replica=..." line. */
static void report(const struct app *a)
{
    size_t bytes = ((size_t)a->F + 1) * sizeof(float);
    uint64_t sum = fnv1a64(a->w, bytes);
    if (a->rank == 0) {
        printf("final loss %.6f\n", eval_loss(&a->d, a->w, a->o.eval));
        printf("steps committed %" PRId64 " (here %ld, attempts %ld)\n", FT_Step(), a->commits_here,
               a->attempts);
        printf("failures survived %d\n", ftmpi_failures_survived());
        printf("state checksum 0x%016" PRIx64 "\n", sum);
    }
    if (!a->lost)
        printf("final replica=%s rank=%d step=%" PRId64 " checksum=0x%016" PRIx64 "\n",
               a->replica_id, a->rank, FT_Step(), sum);
}

/* --dump: FILE (FILE.<replica id> in mode B), ".g" added for group rank
 * g > 0.  0 or -1. */
static int dump(const struct app *a)
{
    char path[PATH_LEN];
    const char *file = a->o.dump, *id = a->replica_id;
    int len;
    if (a->mode_b)
        len = a->rank == 0 ? snprintf(path, sizeof(path), "%s.%s", file, id)
                           : snprintf(path, sizeof(path), "%s.%s.%d", file, id, a->rank);
    else
        len = a->rank == 0 ? snprintf(path, sizeof(path), "%s", file)
                           : snprintf(path, sizeof(path), "%s.%d", file, a->rank);
    if (len < 0 || (size_t)len >= sizeof(path))
        return -1;
    return dump_state(path, a->w, ((size_t)a->F + 1) * sizeof(float));
}

/* The exit status (see the top of the file); writes --dump. */
static int finish(const struct app *a)
{
    int exit_code = 0;
    if (a->killed) {
        fprintf(stderr, "ft_sgd: rank %d of group %s leaves: the lighthouse killed the group\n",
                a->rank, a->replica_id);
        exit_code = 5;
    } else if (a->sdc_stop) {
        fprintf(stderr, "ft_sgd: rank %d of group %s leaves: silent data corruption with no "
                "majority (FTMPI_SDC_ON_TIE=stop)\n", a->rank, a->replica_id);
        exit_code = 6;
    } else if (a->lost) {
        fprintf(stderr, "ft_sgd: rank %d of group %s leaves: the group lost a rank\n", a->rank,
                a->replica_id);
        exit_code = 4;
    } else if (FT_Step() < (a->outer_target > 0 ? a->outer_target : a->o.steps)) {
        fprintf(stderr, "ft_sgd: rank %d gave up after %ld attempts at step %" PRId64 "\n", a->rank,
                a->attempts, FT_Step());
        exit_code = 3;
    }
    if (a->o.dump != NULL && !a->lost && dump(a) != 0)
        exit_code = 1;
    return exit_code;
}

/* Also after a lost group: FT_Finalize makes no MPI call on it, and
 * MPI_Finalize returns once the other ranks finalize too. */
static void app_end(struct app *a)
{
    FT_Finalize();
    FT_Outer_free(&a->outer); /* after FT_Finalize: its buffers were registered */
    data_free(&a->d);
    free(a->w);
    if (a->o.ftmpi_mem)
        ftmpi_mem_free(a->g); /* one MPI may still write stays mapped */
    else if (!a->g_busy)
        free(a->g); /* else MPI may still write it */
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    struct app a;
    int rc = app_start(&a, &argc, &argv);
    if (rc >= 0)
        return rc;
    if (model_init(&a) != 0) {
        app_end(&a);
        return 2;
    }
    if (a.o.localsgd || a.o.diloco)
        a.lost = outer_run(&a);
    while (!a.o.localsgd && !a.o.diloco && FT_Step() < a.o.steps &&
           a.attempts < a.o.max_attempts && !a.lost)
        a.lost = train_step(&a);
    report(&a);
    rc = finish(&a);
    app_end(&a);
    return rc;
}
