/*
 * ftmpi-flight - one job's flight recorders side by side (issue 26; the
 * recorder: src/obs/flight.h).  Reads event logs (FTMPI_EVENT_LOG files, any
 * number, the ranks and groups of a job may share one), takes each
 * process's last dump ("flight" lines with the same replica id, group rank
 * and dump number; a restarted process starts its dumps again) and prints
 * one column per rank, one row per call, rows matched by step and by the
 * call's place in its step.  A cell is "+S ms D ms RESULT": S the call's
 * start after the row's earliest start (a straggler stands out), D how long
 * it took, RESULT ok, an FT_ERR_* name, or RUNNING (still in the call when
 * the dump was taken: a hang shows where each rank waits).
 *
 *   ftmpi-flight FILE...
 *
 * Exit status: 0 printed, 1 no flight records found, 2 usage or a file
 * that cannot be read.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h"

#define ID_LEN 128
#define CELL_W 28

typedef struct rec {
    char id[ID_LEN];  /* replica_id/group_rank */
    char op[16], result[40];
    int64_t ts, dump, seq, step, bytes, start, end;
} rec_t;

typedef struct col {
    char id[ID_LEN];
    int64_t dump;     /* the last dump seen of this rank */
    size_t first;     /* its records in the array: index of the dump's first line */
    int64_t last_seq; /* of its last record (a dump's seqs grow) */
} col_t;

static struct {
    rec_t *r;
    size_t n, cap;
    col_t *c;
    size_t nc, capc;
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

static col_t *col_of(const char *id)
{
    for (size_t i = 0; i < db.nc; i++)
        if (strcmp(db.c[i].id, id) == 0)
            return &db.c[i];
    if (db.nc == db.capc) {
        size_t cap = db.capc ? 2 * db.capc : 16;
        col_t *p = realloc(db.c, cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        db.c = p;
        db.capc = cap;
    }
    col_t *c = &db.c[db.nc++];
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->dump = -1;
    return c;
}

/* One "flight" line into the records. */
static void take(const char *line)
{
    char rid[ID_LEN - 16] = "?", gr[16] = "?", id[ID_LEN];
    jfield(line, "replica_id", rid, sizeof(rid));
    jfield(line, "group_rank", gr, sizeof(gr));
    snprintf(id, sizeof(id), "%s/%s", rid, gr);
    if (db.n == db.cap) {
        size_t cap = db.cap ? 2 * db.cap : 256;
        rec_t *p = realloc(db.r, cap * sizeof(*p));
        if (p == NULL)
            return;
        db.r = p;
        db.cap = cap;
    }
    rec_t *r = &db.r[db.n];
    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", id);
    jfield(line, "op", r->op, sizeof(r->op));
    jfield(line, "result", r->result, sizeof(r->result));
    r->ts = jnum(line, "ts_ms");
    r->dump = jnum(line, "dump");
    r->seq = jnum(line, "seq");
    r->step = jnum(line, "step");
    r->bytes = jnum(line, "bytes");
    r->start = jnum(line, "start_ms");
    r->end = jnum(line, "end_ms");
    col_t *c = col_of(id);
    if (c == NULL)
        return;
    /* a new dump of this rank (or of its restarted process) replaces the last */
    if (r->dump != c->dump || r->seq <= c->last_seq) {
        c->dump = r->dump;
        c->first = db.n;
    }
    c->last_seq = r->seq;
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
        if (strstr(line, "\"event\":\"flight\""))
            take(line);
    free(line);
    fclose(f);
    return 0;
}

/* Whether record i belongs to its rank's last dump. */
static bool in_last_dump(size_t i)
{
    col_t *c = col_of(db.r[i].id);
    return c != NULL && i >= c->first && db.r[i].dump == c->dump;
}

/* The call's place in its step for each record (the k-th call of step s). */
static void places(int64_t *k)
{
    for (size_t i = 0; i < db.n; i++) {
        k[i] = -1;
        if (!in_last_dump(i))
            continue;
        k[i] = 0;
        for (size_t j = 0; j < i; j++)
            if (k[j] >= 0 && db.r[j].step == db.r[i].step && !strcmp(db.r[j].id, db.r[i].id))
                k[i]++;
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

/* Prints the row of (step, k): one cell per column. */
static void row(const int64_t *k, int64_t step, int64_t kk)
{
    const rec_t *cells[db.nc];
    int64_t mn = INT64_MAX;
    const char *op = "";
    for (size_t c = 0; c < db.nc; c++) {
        cells[c] = NULL;
        for (size_t i = 0; i < db.n; i++)
            if (k[i] == kk && db.r[i].step == step && !strcmp(db.r[i].id, db.c[c].id))
                cells[c] = &db.r[i];
        if (cells[c] && cells[c]->start < mn)
            mn = cells[c]->start;
        if (cells[c])
            op = cells[c]->op;
    }
    printf("%-6" PRId64 " %-10s", step, op);
    for (size_t c = 0; c < db.nc; c++) {
        if (cells[c])
            cell(cells[c], mn);
        else
            printf("  %-*s", CELL_W, "-");
    }
    printf("\n");
}

static void print_table(void)
{
    int64_t *k = malloc(db.n * sizeof(*k));
    if (k == NULL)
        return;
    places(k);
    printf("%-6s %-10s", "step", "call");
    for (size_t c = 0; c < db.nc; c++)
        printf("  %-*s", CELL_W, db.c[c].id);
    printf("\n");
    /* rows in (step, k) order: repeatedly the smallest pair not printed */
    int64_t ls = INT64_MIN, lk = -1;
    for (;;) {
        int64_t bs = INT64_MAX, bk = INT64_MAX;
        for (size_t i = 0; i < db.n; i++) {
            if (k[i] < 0)
                continue;
            int64_t s = db.r[i].step;
            bool after = s > ls || (s == ls && k[i] > lk);
            if (after && (s < bs || (s == bs && k[i] < bk))) {
                bs = s;
                bk = k[i];
            }
        }
        if (bs == INT64_MAX)
            break;
        row(k, bs, bk);
        ls = bs;
        lk = bk;
    }
    for (size_t i = 0; i < db.n; i++)
        if (k[i] >= 0 && db.r[i].end < 0)
            printf("%s is in %s (step %" PRId64 ", call #%" PRId64 ") for %" PRId64
                   " ms at its dump\n",
                   db.r[i].id, db.r[i].op, db.r[i].step, db.r[i].seq, db.r[i].ts - db.r[i].start);
    free(k);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("ftmpi-flight %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || argv[1][0] == '-') {
        fprintf(argc < 2 || argv[1][0] == '-' ? stderr : stdout,
                "Usage: ftmpi-flight FILE... | --version | --help\n"
                "  FILE: event logs (FTMPI_EVENT_LOG) holding flight-recorder dumps;\n"
                "  prints each rank's last dump side by side\n");
        return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    for (int i = 1; i < argc; i++)
        if (read_file(argv[i]) != 0)
            return 2;
    if (db.n == 0) {
        fprintf(stderr, "ftmpi-flight: no flight records in the files\n");
        return 1;
    }
    print_table();
    free(db.r);
    free(db.c);
    return 0;
}
