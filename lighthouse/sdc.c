/* lighthouse/sdc.c - the silent data corruption check's rules and its
 * table of waiting fingerprints (see sdc.h). */
#include "lighthouse/sdc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

/* ---- the comparison ----------------------------------------------------- */

static int key_cmp(const fti_sdc_print_t *a, const fti_sdc_print_t *b)
{
    if (a->group_rank != b->group_rank)
        return a->group_rank < b->group_rank ? -1 : 1;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    return 0;
}

static int print_cmp(const void *a, const void *b)
{
    return key_cmp(a, b);
}

/* The first entry where a and b differ (an entry one of them lacks, or
 * the same key with another name or sum) into *d; false when they agree. */
static bool first_difference(const fti_sdc_group_t *a, const fti_sdc_group_t *b,
                             fti_sdc_print_t *d)
{
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        const fti_sdc_print_t *pa = i < a->n ? &a->prints[i] : NULL;
        const fti_sdc_print_t *pb = j < b->n ? &b->prints[j] : NULL;
        int c = pa == NULL ? 1 : pb == NULL ? -1 : key_cmp(pa, pb);
        if (c != 0) {
            *d = c < 0 ? *pa : *pb; /* the one the other lacks */
            return true;
        }
        if (pa->sum != pb->sum || strcmp(pa->buffer, pb->buffer) != 0) {
            *d = *pa;
            return true;
        }
        i++;
        j++;
    }
    return false;
}

static void set_finding(fti_sdc_finding_t *f, int verdict, int agree, int of,
                        const fti_sdc_group_t *self, const fti_sdc_group_t *other)
{
    fti_sdc_print_t d;
    memset(f, 0, sizeof(*f));
    f->verdict = verdict;
    f->agree = agree;
    f->of = of;
    f->group_rank = -1;
    if (other == NULL)
        return;
    fti_strlcpy(f->other, other->replica_id, sizeof(f->other));
    if (first_difference(self, other, &d)) {
        f->group_rank = d.group_rank;
        fti_strlcpy(f->buffer, d.buffer, sizeof(f->buffer));
    }
}

void fti_sdc_compare(const fti_sdc_group_t *g, size_t n, fti_sdc_finding_t *out)
{
    /* cls[i]: the first group equal to group i; size[c]: its class's size */
    size_t *cls = calloc(n ? n : 1, sizeof(*cls)), *size = calloc(n ? n : 1, sizeof(*size));
    size_t classes = 0, major = SIZE_MAX;
    fti_sdc_print_t d;
    for (size_t i = 0; i < n; i++)
        set_finding(&out[i], FTI_SDC_AGREE, (int)n, (int)n, &g[i], NULL);
    if (cls == NULL || size == NULL || n < 2) {
        free(cls);
        free(size);
        return; /* out of memory: nothing is judged (agree) */
    }
    for (size_t i = 0; i < n; i++) {
        cls[i] = i;
        for (size_t j = 0; j < i; j++) {
            if (cls[j] == j && !first_difference(&g[i], &g[j], &d)) {
                cls[i] = j;
                break;
            }
        }
        if (cls[i] == i)
            classes++;
        size[cls[i]]++;
    }
    for (size_t c = 0; c < n; c++)
        if (2 * size[c] > n)
            major = c;
    if (classes > 1) {
        for (size_t i = 0; i < n; i++) {
            int agree = (int)size[cls[i]];
            if (major != SIZE_MAX && cls[i] == major) {
                out[i].agree = agree;
                continue;
            }
            size_t other = major;
            if (other == SIZE_MAX) /* rule 3: the first group of another class */
                for (other = 0; cls[other] == cls[i]; other++)
                    ;
            set_finding(&out[i], major != SIZE_MAX ? FTI_SDC_MINORITY : FTI_SDC_TIE, agree,
                        (int)n, &g[i], &g[other]);
            out[i].others = (int)size[cls[other]];
        }
    }
    free(cls);
    free(size);
}

void fti_sdc_describe(const fti_sdc_finding_t *f, char *buf, size_t len)
{
    char what[FTI_SDC_NAME_SIZE + 64] = "the fingerprints";
    char held[64];
    if (f->group_rank >= 0)
        snprintf(what, sizeof(what), "group rank %d, buffer '%s'", (int)f->group_rank,
                 f->buffer);
    if (f->verdict == FTI_SDC_MINORITY)
        snprintf(held, sizeof(held), "the majority's: %d of %d groups", f->others, f->of);
    else
        snprintf(held, sizeof(held), "no majority among %d groups", f->of);
    snprintf(buf, len, "step %" PRId64 ": %s differs from %s's (%s)", f->step, what,
             f->other[0] ? f->other : "the others", held);
}

/* ---- the table ---------------------------------------------------------- */

struct entry {
    char id[FTI_REPLICA_ID_SIZE];
    bool has;              /* prints of `step` wait */
    int64_t step;
    fti_sdc_print_t *p;
    size_t n;
    int64_t suspect_step;  /* a minority at this step (rule 2), -1 none */
    fti_sdc_finding_t suspect;
    bool restored;         /* a former leader's verdict not yet asked about */
};

struct fti_sdc_state {
    struct entry **e; /* sorted by id */
    size_t n, cap;
    uint64_t checks;
    fti_sdc_report_t reports[FTI_SDC_REPORTS];
    size_t r_next, n_reports;
};

int fti_sdc_create(fti_sdc_h *h_p)
{
    struct fti_sdc_state *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return FT_ERR_NO_MEMORY;
    *h_p = h;
    return FT_SUCCESS;
}

static void entry_free(struct entry *e)
{
    if (e) {
        free(e->p);
        free(e);
    }
}

void fti_sdc_destroy(fti_sdc_h h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n; i++)
        entry_free(h->e[i]);
    free(h->e);
    free(h);
}

static const char *entry_key(const void *arr, size_t i)
{
    return ((struct entry *const *)arr)[i]->id;
}

static struct entry *find(fti_sdc_h h, const char *id, size_t *at_p)
{
    bool found = false;
    size_t at = fti_bsearch_str(h->e, h->n, entry_key, id, &found);
    if (at_p)
        *at_p = at;
    return found ? h->e[at] : NULL;
}

static void remove_at(fti_sdc_h h, size_t at)
{
    entry_free(h->e[at]);
    memmove(&h->e[at], &h->e[at + 1], (h->n - at - 1) * sizeof(*h->e));
    h->n--;
}

/* replica_id's entry, made when absent; NULL: no memory (or too many). */
static struct entry *entry_get(fti_sdc_h h, const char *replica_id)
{
    size_t at;
    struct entry *e = find(h, replica_id, &at);
    if (e != NULL)
        return e;
    if (h->n >= FTI_SDC_MAX_GROUPS)
        return NULL;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        struct entry **ne = realloc(h->e, cap * sizeof(*ne));
        if (ne == NULL)
            return NULL;
        h->e = ne;
        h->cap = cap;
    }
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return NULL;
    fti_strlcpy(e->id, replica_id, sizeof(e->id));
    e->suspect_step = -1;
    memmove(&h->e[at + 1], &h->e[at], (h->n - at) * sizeof(*h->e));
    h->e[at] = e;
    h->n++;
    return e;
}

int fti_sdc_note(fti_sdc_h h, const char *replica_id, int64_t step, const fti_sdc_print_t *p,
                 size_t n)
{
    if (h == NULL || replica_id == NULL || replica_id[0] == '\0' ||
        strlen(replica_id) >= FTI_REPLICA_ID_SIZE || n > FTI_SDC_MAX_PRINTS || (n && p == NULL))
        return FT_ERR_ARG;
    fti_sdc_print_t *copy = malloc((n ? n : 1) * sizeof(*copy));
    if (copy == NULL)
        return FT_ERR_NO_MEMORY;
    if (n)
        memcpy(copy, p, n * sizeof(*copy));
    for (size_t i = 0; i < n; i++)
        copy[i].buffer[FTI_SDC_NAME_SIZE - 1] = '\0';
    qsort(copy, n, sizeof(*copy), print_cmp);
    struct entry *e = entry_get(h, replica_id);
    if (e == NULL) {
        free(copy);
        return FT_ERR_NO_MEMORY;
    }
    free(e->p);
    e->p = copy;
    e->n = n;
    e->step = step;
    e->has = true;
    return FT_SUCCESS;
}

void fti_sdc_forget(fti_sdc_h h, const char *replica_id)
{
    size_t at;
    if (h && replica_id && find(h, replica_id, &at))
        remove_at(h, at);
}

size_t fti_sdc_expire(fti_sdc_h h, bool (*known)(const char *replica_id, void *arg), void *arg)
{
    size_t n = 0;
    for (size_t at = h ? h->n : 0; at-- > 0;) {
        if (!h->e[at]->restored && !known(h->e[at]->id, arg)) {
            remove_at(h, at);
            n++;
        }
    }
    return n;
}

size_t fti_sdc_groups(fti_sdc_h h)
{
    return h ? h->n : 0;
}

static void report(fti_sdc_h h, const char *id, const fti_sdc_finding_t *f, int64_t wall_ms)
{
    fti_sdc_report_t *r = &h->reports[h->r_next];
    r->wall_ms = wall_ms;
    fti_strlcpy(r->replica_id, id, sizeof(r->replica_id));
    r->f = *f;
    h->r_next = (h->r_next + 1) % FTI_SDC_REPORTS;
    if (h->n_reports < FTI_SDC_REPORTS)
        h->n_reports++;
}

/* Members with fresh prints, ordered by step (then by index). */
struct cand {
    size_t i;
    int64_t step;
    struct entry *e;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Rules 1-3 over the bucket c[0..k) of one step. */
static int judge_bucket(fti_sdc_h h, const struct cand *c, size_t k, const char *const *ids,
                        int64_t wall_ms, fti_sdc_finding_t *out)
{
    fti_sdc_group_t *g = calloc(k, sizeof(*g));
    fti_sdc_finding_t *f = calloc(k, sizeof(*f));
    if (g == NULL || f == NULL) {
        free(g);
        free(f);
        return FT_ERR_NO_MEMORY;
    }
    for (size_t j = 0; j < k; j++)
        g[j] = (fti_sdc_group_t){ids[c[j].i], c[j].e->p, c[j].e->n};
    fti_sdc_compare(g, k, f);
    for (size_t j = 0; j < k; j++) {
        f[j].step = c[j].step;
        f[j].fresh = f[j].verdict != FTI_SDC_AGREE;
        out[c[j].i] = f[j];
        c[j].e->suspect_step = f[j].verdict == FTI_SDC_MINORITY ? c[j].step : -1;
        c[j].e->suspect = f[j];
        if (f[j].fresh)
            report(h, ids[c[j].i], &f[j], wall_ms);
    }
    free(g);
    free(f);
    h->checks++;
    return FT_SUCCESS;
}

int fti_sdc_judge(fti_sdc_h h, const char *const *ids, const int64_t *steps, size_t n,
                  int64_t wall_ms, fti_sdc_finding_t *out)
{
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].group_rank = -1;
        out[i].step = steps[i];
    }
    if (h == NULL || h->n == 0)
        return 0;
    struct cand *c = calloc(n ? n : 1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct entry *e = find(h, ids[i], NULL);
        if (e == NULL)
            continue;
        e->restored = false;
        /* rule 2, sticky: still at the step it was a minority at */
        if (e->suspect_step >= 0 && e->suspect_step != steps[i])
            e->suspect_step = -1;
        if (e->suspect_step >= 0) {
            out[i] = e->suspect;
            out[i].fresh = false;
        }
        if (e->has && e->step == steps[i])
            c[k++] = (struct cand){i, steps[i], e};
    }
    qsort(c, k, sizeof(*c), cand_cmp);
    int checks = 0, rc = FT_SUCCESS;
    for (size_t a = 0; a < k && rc == FT_SUCCESS;) {
        size_t b = a + 1;
        while (b < k && c[b].step == c[a].step)
            b++;
        if (b - a >= 2) {
            rc = judge_bucket(h, &c[a], b - a, ids, wall_ms, out);
            checks += rc == FT_SUCCESS;
        }
        a = b;
    }
    /* rule 4: every member's prints are consumed (also those of another
     * step: stale); entries with nothing left go */
    for (size_t i = 0; i < n; i++) {
        struct entry *e = find(h, ids[i], NULL);
        if (e)
            e->has = false;
    }
    for (size_t at = h->n; at-- > 0;)
        if (!h->e[at]->has && h->e[at]->suspect_step < 0)
            remove_at(h, at);
    free(c);
    if (rc != FT_SUCCESS) {
        for (size_t i = 0; i < n; i++)
            out[i].verdict = FTI_SDC_AGREE;
        return rc;
    }
    return checks;
}

size_t fti_sdc_open(fti_sdc_h h, fti_sdc_report_t *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; h != NULL && i < h->n; i++) {
        const struct entry *e = h->e[i];
        if (e->suspect_step < 0)
            continue;
        if (k < max) {
            memset(&out[k], 0, sizeof(out[k]));
            fti_strlcpy(out[k].replica_id, e->id, sizeof(out[k].replica_id));
            out[k].f = e->suspect;
            out[k].f.step = e->suspect_step;
        }
        k++;
    }
    return k;
}

int fti_sdc_restore(fti_sdc_h h, const char *replica_id, const fti_sdc_finding_t *f)
{
    if (h == NULL || replica_id == NULL || replica_id[0] == '\0' ||
        strlen(replica_id) >= FTI_REPLICA_ID_SIZE || f == NULL ||
        f->verdict != FTI_SDC_MINORITY || f->step < 0)
        return FT_ERR_ARG;
    struct entry *e = entry_get(h, replica_id);
    if (e == NULL)
        return FT_ERR_NO_MEMORY;
    e->suspect = *f;
    e->suspect.fresh = false;
    e->suspect.buffer[FTI_SDC_NAME_SIZE - 1] = '\0';
    e->suspect.other[FTI_REPLICA_ID_SIZE - 1] = '\0';
    e->suspect_step = f->step;
    e->restored = true;
    return FT_SUCCESS;
}

uint64_t fti_sdc_checks(fti_sdc_h h)
{
    return h ? h->checks : 0;
}

size_t fti_sdc_reports(fti_sdc_h h, fti_sdc_report_t *out, size_t max)
{
    if (h == NULL)
        return 0;
    size_t n = FTI_MIN(max, h->n_reports);
    size_t first = (h->r_next + FTI_SDC_REPORTS - h->n_reports) % FTI_SDC_REPORTS;
    /* the newest n, oldest first */
    size_t skip = h->n_reports - n;
    for (size_t j = 0; j < n; j++)
        out[j] = h->reports[(first + skip + j) % FTI_SDC_REPORTS];
    return n;
}
