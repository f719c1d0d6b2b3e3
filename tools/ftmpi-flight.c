/*
 * ftmpi-flight - one job's flight recorders side by side (issue 26; the
 * recorder: src/obs/flight.h).  Reads event logs (FTMPI_EVENT_LOG files, any
 * number, the ranks and groups of a job may share one) and takes every dump
 * in them ("flight" lines of one replica id, group rank and dump number; a
 * restarted process starts its dumps again).
 *
 * Dumps are grouped in rounds by cause (issue 36 item 7): the dumps of one
 * SIGUSR1 (reason "sigusr1") taken within --window ms of the round's first,
 * or the dumps of one failure (reason "error": the first FT_ERR_* of a step,
 * so the same failed step) within the window; one dump per rank in a round.
 * A SIGUSR1 dump of one group is never shown beside a later failure dump of
 * another: each round is its own table, and its header names the ranks of
 * the job that have no dump in it.
 *
 * A round's table: one column per rank, one row per call, rows matched by
 * step and by the call's place in its step.  A cell is "+S ms D ms RESULT":
 * S the call's start after the row's earliest start (a straggler stands
 * out), D how long it took, RESULT ok, an FT_ERR_* name, or RUNNING (still
 * in the call when the dump was taken).  Under it, every rank's place at its
 * dump: in a call ("is in allreduce (step 12, call #40) for 900 ms") or
 * between calls ("is between calls: its last call commit of step 12 ...
 * ended 15 ms before its dump"), or before its first call (a dump of no
 * record: its "flight_dump" header), and the job's ranks without a dump
 * there.
 *
 *   ftmpi-flight [--last] [--window MS] FILE...
 *
 * Exit status: 0 printed, 1 no flight records found, 2 usage or a file
 * that cannot be read.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi_config.h"

#define ID_LEN 128
#define CELL_W 28
#define WINDOW_MS 5000 /* default --window */

typedef struct rec {
    char id[ID_LEN];  /* replica_id/group_rank */
    char op[16], result[40];
    int64_t ts, seq, step, bytes, start, end;
    size_t dump;      /* its dump: index into db.d */
} rec_t;

typedef struct dump {
    char id[ID_LEN];
    char reason[16];
    int64_t number;   /* the process's dump number */
    int64_t ts;       /* when it was written (its lines' earliest ts_ms) */
    int64_t last_seq; /* of its last record read (a dump's seqs grow) */
    int64_t fail_step;/* error dumps: the step of its failed call, else -1 */
    size_t round;
} dump_t;

typedef struct round {
    char reason[16];
    int64_t ts, last_ts, fail_step;
} round_t;

static struct {
    rec_t *r;
    size_t n, cap;
    dump_t *d;
    size_t nd, capd;
    round_t *rd;
    size_t nr;
    char (*ids)[ID_LEN]; /* every rank of the job, in order of appearance */
    size_t nids;
} db;

/* The text of "key": in line (a string's content or a number), or false. */
static bool jfield(const char *line, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (p == NULL)
        return false;
    p += strlen(pat);
    bool str = *p == '"';
    if (str)
        p++;
    size_t k = 0;
    while (*p && k + 1 < len && (str ? *p != '"' : (*p != ',' && *p != '}')))
        out[k++] = *p++;
    out[k] = '\0';
    return true;
}

static int64_t jnum(const char *line, const char *key)
{
    char v[32];
    return jfield(line, key, v, sizeof(v)) ? strtoll(v, NULL, 10) : -1;
}

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(p, c * size);
    if (q == NULL) {
        fprintf(stderr, "ftmpi-flight: out of memory\n");
        exit(2);
    }
    *cap = c;
    return q;
}

/* The rank's last dump read, or NULL. */
static dump_t *last_dump_of(const char *id)
{
    for (size_t i = db.nd; i-- > 0;)
        if (strcmp(db.d[i].id, id) == 0)
            return &db.d[i];
    return NULL;
}

static void note_id(const char *id)
{
    for (size_t i = 0; i < db.nids; i++)
        if (strcmp(db.ids[i], id) == 0)
            return;
    static size_t cap;
    db.ids = grow(db.ids, &cap, db.nids, sizeof(*db.ids));
    snprintf(db.ids[db.nids++], ID_LEN, "%s", id);
}

static dump_t *new_dump(const char *line, const char *id, int64_t number, int64_t ts)
{
    db.d = grow(db.d, &db.capd, db.nd, sizeof(*db.d));
    dump_t *d = &db.d[db.nd++];
    memset(d, 0, sizeof(*d));
    snprintf(d->id, sizeof(d->id), "%s", id);
    if (!jfield(line, "reason", d->reason, sizeof(d->reason)))
        snprintf(d->reason, sizeof(d->reason), "?");
    d->number = number;
    d->ts = ts;
    d->fail_step = -1;
    d->round = SIZE_MAX; /* none yet */
    return d;
}

/* One "flight" line into the records and its dump; a "flight_dump" line
 * (the recorder's header of a dump, src/obs/event_log.h) begins a dump,
 * which may hold no record. */
static void take(const char *line)
{
    char rid[ID_LEN - 16] = "?", gr[16] = "?", id[ID_LEN];
    jfield(line, "replica_id", rid, sizeof(rid));
    jfield(line, "group_rank", gr, sizeof(gr));
    snprintf(id, sizeof(id), "%s/%s", rid, gr);
    note_id(id);
    if (strstr(line, "\"event\":\"flight_dump\"")) {
        new_dump(line, id, jnum(line, "dump"), jnum(line, "ts_ms"));
        return;
    }
    db.r = grow(db.r, &db.cap, db.n, sizeof(*db.r));
    rec_t *r = &db.r[db.n];
    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", id);
    jfield(line, "op", r->op, sizeof(r->op));
    jfield(line, "result", r->result, sizeof(r->result));
    r->ts = jnum(line, "ts_ms");
    r->seq = jnum(line, "seq");
    r->step = jnum(line, "step");
    r->bytes = jnum(line, "bytes");
    r->start = jnum(line, "start_ms");
    r->end = jnum(line, "end_ms");
    int64_t number = jnum(line, "dump");
    dump_t *d = last_dump_of(id);
    /* a new dump of this rank (or of its restarted process) */
    if (d == NULL || number != d->number || r->seq <= d->last_seq)
        d = new_dump(line, id, number, r->ts);
    if (r->ts < d->ts)
        d->ts = r->ts;
    d->last_seq = r->seq;
    if (r->end >= 0 && strcmp(r->result, "FT_SUCCESS") != 0 && strncmp(r->result, "FT_", 3) == 0)
        d->fail_step = r->step;
    r->dump = (size_t)(d - db.d);
    db.n++;
}

static int read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "ftmpi-flight: cannot read %s\n", path);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        if (strstr(line, "\"event\":\"flight\"") || strstr(line, "\"event\":\"flight_dump\""))
            take(line);
    free(line);
    fclose(f);
    return 0;
}

/* Whether round k already holds a dump of id. */
static bool round_has(size_t k, const char *id)
{
    for (size_t i = 0; i < db.nd; i++)
        if (db.d[i].round == k && strcmp(db.d[i].id, id) == 0)
            return true;
    return false;
}

/* Dumps into rounds, in the order they were written: a dump joins the
 * latest round of its cause begun within window ms before it (an error
 * round: of the same failed step) that has no dump of its rank yet. */
static void make_rounds(int64_t window)
{
    size_t *order = malloc(db.nd * sizeof(*order));
    db.rd = calloc(db.nd, sizeof(*db.rd));
    if (order == NULL || db.rd == NULL) {
        fprintf(stderr, "ftmpi-flight: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < db.nd; i++) {
        size_t j = i;
        for (; j > 0 && db.d[order[j - 1]].ts > db.d[i].ts; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (size_t o = 0; o < db.nd; o++) {
        dump_t *d = &db.d[order[o]];
        size_t k = db.nr;
        for (size_t c = db.nr; c-- > 0;) {
            round_t *rd = &db.rd[c];
            if (strcmp(rd->reason, d->reason) == 0 && d->ts - rd->ts <= window &&
                (strcmp(d->reason, "error") != 0 || rd->fail_step == d->fail_step) &&
                !round_has(c, d->id)) {
                k = c;
                break;
            }
        }
        if (k == db.nr) {
            round_t *rd = &db.rd[db.nr++];
            snprintf(rd->reason, sizeof(rd->reason), "%s", d->reason);
            rd->ts = d->ts;
            rd->fail_step = d->fail_step;
        }
        d->round = k;
        if (d->ts > db.rd[k].last_ts)
            db.rd[k].last_ts = d->ts;
    }
    free(order);
}

/* The dump of id in round k, or NULL. */
static const dump_t *dump_in(size_t k, const char *id)
{
    for (size_t i = 0; i < db.nd; i++)
        if (db.d[i].round == k && strcmp(db.d[i].id, id) == 0)
            return &db.d[i];
    return NULL;
}

/* The call's place in its step for each record of round k (the k-th call
 * of step s of its rank), -1 for the records of other rounds. */
static void places(size_t k, int64_t *kk)
{
    for (size_t i = 0; i < db.n; i++) {
        kk[i] = -1;
        if (db.d[db.r[i].dump].round != k)
            continue;
        kk[i] = 0;
        for (size_t j = 0; j < i; j++)
            if (kk[j] >= 0 && db.r[j].dump == db.r[i].dump && db.r[j].step == db.r[i].step)
                kk[i]++;
    }
}

static void cell(const rec_t *r, int64_t row_min)
{
    char buf[64];
    int64_t d = (r->end >= 0 ? r->end : r->ts) - r->start;
    snprintf(buf, sizeof(buf), "+%" PRId64 "ms %" PRId64 "ms %s", r->start - row_min, d,
             r->end < 0 ? "RUNNING" : !strcmp(r->result, "FT_SUCCESS") ? "ok" : r->result);
    printf("  %-*s", CELL_W, buf);
}

/* Prints the row of (step, kk) of round k: one cell per rank of the round. */
static void row(size_t k, const int64_t *kk, int64_t step, int64_t place)
{
    const rec_t *cells[db.nids];
    int64_t mn = INT64_MAX;
    const char *op = "";
    for (size_t c = 0; c < db.nids; c++) {
        cells[c] = NULL;
        for (size_t i = 0; i < db.n; i++)
            if (kk[i] == place && db.r[i].step == step && !strcmp(db.r[i].id, db.ids[c]))
                cells[c] = &db.r[i];
        if (cells[c] && cells[c]->start < mn)
            mn = cells[c]->start;
        if (cells[c])
            op = cells[c]->op;
    }
    printf("%-6" PRId64 " %-10s", step, op);
    for (size_t c = 0; c < db.nids; c++) {
        if (dump_in(k, db.ids[c]) == NULL)
            continue;
        if (cells[c])
            cell(cells[c], mn);
        else
            printf("  %-*s", CELL_W, "-");
    }
    printf("\n");
}

/* Where the rank of dump d was when it dumped: in a call, or between calls
 * after its last one. */
static void print_place(const dump_t *d)
{
    const rec_t *last = NULL, *running = NULL;
    for (size_t i = 0; i < db.n; i++) {
        const rec_t *r = &db.r[i];
        if (&db.d[r->dump] != d)
            continue;
        if (r->end < 0)
            running = r;
        if (last == NULL || r->seq > last->seq)
            last = r;
    }
    if (running != NULL)
        printf("%s is in %s (step %" PRId64 ", call #%" PRId64 ") for %" PRId64
               " ms at its dump\n",
               d->id, running->op, running->step, running->seq, running->ts - running->start);
    else if (last != NULL)
        printf("%s is between calls: its last call, %s of step %" PRId64 " (call #%" PRId64
               ", %s), ended %" PRId64 " ms before its dump\n",
               d->id, last->op, last->step, last->seq,
               !strcmp(last->result, "FT_SUCCESS") ? "ok" : last->result, last->ts - last->end);
    else
        printf("%s had made no call yet at its dump\n", d->id);
}

static void wall(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%H:%M:%S", &tm) == 0)
        snprintf(buf, len, "?");
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, ".%03d UTC", (int)(ms % 1000));
}

static void print_round(size_t k)
{
    const round_t *rd = &db.rd[k];
    char at[40], cause[48];
    wall(rd->ts, at, sizeof(at));
    if (strcmp(rd->reason, "error") == 0)
        snprintf(cause, sizeof(cause), "error dumps (a failed step %" PRId64 ")", rd->fail_step);
    else
        snprintf(cause, sizeof(cause), "%s dumps", rd->reason);
    size_t in = 0;
    for (size_t c = 0; c < db.nids; c++)
        in += dump_in(k, db.ids[c]) != NULL;
    printf("round %zu of %zu: %s, %zu of %zu ranks, from %s over %" PRId64 " ms\n", k + 1, db.nr,
           cause, in, db.nids, at, rd->last_ts - rd->ts);
    int64_t *kk = malloc((db.n ? db.n : 1) * sizeof(*kk));
    if (kk == NULL)
        return;
    places(k, kk);
    printf("%-6s %-10s", "step", "call");
    for (size_t c = 0; c < db.nids; c++)
        if (dump_in(k, db.ids[c]) != NULL)
            printf("  %-*s", CELL_W, db.ids[c]);
    printf("\n");
    /* rows in (step, place) order: repeatedly the smallest pair not printed */
    int64_t ls = INT64_MIN, lk = -1;
    for (;;) {
        int64_t bs = INT64_MAX, bk = INT64_MAX;
        for (size_t i = 0; i < db.n; i++) {
            if (kk[i] < 0)
                continue;
            int64_t s = db.r[i].step;
            bool after = s > ls || (s == ls && kk[i] > lk);
            if (after && (s < bs || (s == bs && kk[i] < bk))) {
                bs = s;
                bk = kk[i];
            }
        }
        if (bs == INT64_MAX)
            break;
        row(k, kk, bs, bk);
        ls = bs;
        lk = bk;
    }
    free(kk);
    for (size_t c = 0; c < db.nids; c++) {
        const dump_t *d = dump_in(k, db.ids[c]);
        if (d != NULL) {
            print_place(d);
            continue;
        }
        printf("%s has no dump in this round (", db.ids[c]);
        const char *sep = "";
        for (size_t i = 0; i < db.nd; i++)
            if (strcmp(db.d[i].id, db.ids[c]) == 0) {
                printf("%sround %zu: %s", sep, db.d[i].round + 1, db.rd[db.d[i].round].reason);
                sep = ", ";
            }
        printf(")\n");
    }
}

static int usage(FILE *out, int rc)
{
    fprintf(out, "Usage: ftmpi-flight [--last] [--window MS] FILE... | --version | --help\n"
                 "  FILE: event logs (FTMPI_EVENT_LOG) holding flight-recorder dumps.\n"
                 "  Prints the dumps in rounds of one cause (one SIGUSR1, one failed step:\n"
                 "  dumps within MS ms of the round's first, default %d), each round's\n"
                 "  ranks side by side and where each rank was; --last: the last round only\n",
            WINDOW_MS);
    return rc;
}

int main(int argc, char **argv)
{
    bool last = false;
    int64_t window = WINDOW_MS;
    int i = 1;
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("ftmpi-flight %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--help"))
        return usage(stdout, 0);
    for (; i < argc && argv[i][0] == '-'; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--last")) {
            last = true;
        } else if (!strcmp(argv[i], "--window") && i + 1 < argc &&
                   (window = strtoll(argv[i + 1], &end, 10)) >= 0 && *argv[i + 1] && !*end) {
            i++;
        } else {
            fprintf(stderr, "ftmpi-flight: bad option %s%s\n", argv[i],
                    !strcmp(argv[i], "--window") ? " (wants a number of ms >= 0)" : "");
            return usage(stderr, 2);
        }
    }
    if (i == argc)
        return usage(stderr, 2);
    for (; i < argc; i++)
        if (read_file(argv[i]) != 0)
            return 2;
    if (db.nd == 0) {
        fprintf(stderr, "ftmpi-flight: no flight records in the files\n");
        return 1;
    }
    make_rounds(window);
    for (size_t k = last ? db.nr - 1 : 0; k < db.nr; k++) {
        if (k > 0 && !last)
            printf("\n");
        print_round(k);
    }
    free(db.r);
    free(db.d);
    free(db.rd);
    free(db.ids);
    return 0;
}
