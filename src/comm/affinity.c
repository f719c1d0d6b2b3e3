/* affinity.c - GPU, cores and NICs for a rank's baby child (affinity.h). */
#include "comm/affinity.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define MAX_GPUS 64

struct gpu {
    int index, pref; /* pref: 0 cuda, 1 nvml, 2 rsmi */
    hwloc_obj_t dev; /* the PCI device (or the OS device if it has none) */
    const char *name;
};

static int load(const char *xml, hwloc_topology_t *t_p)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0)
        return FT_ERR_SYSTEM;
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if ((xml && hwloc_topology_set_xml(t, xml) != 0) || hwloc_topology_load(t) != 0) {
        FTI_WARN("affinity: cannot load the topology%s%s: %m", xml ? " " : "", xml ? xml : "");
        hwloc_topology_destroy(t);
        return FT_ERR_SYSTEM;
    }
    *t_p = t;
    return FT_SUCCESS;
}

/* "cuda3" -> 3 with pref 0; -1 if the name is not a GPU index we know. */
static int gpu_index(const char *name, int *pref)
{
    static const char *const pfx[] = {"cuda", "nvml", "rsmi"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(pfx[i]);
        char *end;
        if (strncmp(name, pfx[i], n) || name[n] < '0' || name[n] > '9')
            continue;
        long v = strtol(name + n, &end, 10);
        if (*end == '\0' && v < MAX_GPUS) {
            *pref = i;
            return (int)v;
        }
    }
    return -1;
}

/* The GPUs, one per PCI device (cuda0 and nvml0 are the same), by index. */
static int list_gpus(hwloc_topology_t t, struct gpu *g)
{
    int n = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t, o));) {
        int pref, idx;
        if ((o->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU &&
             o->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC) || !o->name ||
            (idx = gpu_index(o->name, &pref)) < 0)
            continue;
        hwloc_obj_t dev = o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent : o;
        int k = 0;
        while (k < n && g[k].dev != dev)
            k++;
        if (k == n && n == MAX_GPUS)
            continue;
        if (k == n || pref < g[k].pref)
            g[k] = (struct gpu){idx, pref, dev, o->name};
        n += k == n;
    }
    for (int i = 1; i < n; i++) /* insertion sort by index */
        for (int j = i; j > 0 && g[j].index < g[j - 1].index; j--) {
            struct gpu x = g[j];
            g[j] = g[j - 1];
            g[j - 1] = x;
        }
    return n;
}

/* The host bridge above an I/O object: the bridge whose parent is not I/O. */
static hwloc_obj_t host_bridge(hwloc_obj_t o)
{
    for (; o && o->parent; o = o->parent)
        if (o->type == HWLOC_OBJ_BRIDGE && !hwloc_obj_type_is_io(o->parent->type))
            return o;
    return NULL;
}

static hwloc_obj_t package_of(hwloc_topology_t t, hwloc_obj_t o)
{
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(t, o);
    while (a && a->type != HWLOC_OBJ_PACKAGE && a->parent)
        a = a->parent;
    return a && a->type == HWLOC_OBJ_PACKAGE ? a : hwloc_get_non_io_ancestor_obj(t, o);
}

/* Edges on the tree path between a and b. */
static int hops(hwloc_obj_t a, hwloc_obj_t b)
{
    int da = 0, db = 0;
    for (hwloc_obj_t x = a; x->parent; x = x->parent)
        da++;
    for (hwloc_obj_t x = b; x->parent; x = x->parent)
        db++;
    int h = 0;
    for (; da > db; da--, h++)
        a = a->parent;
    for (; db > da; db--, h++)
        b = b->parent;
    for (; a != b; h += 2) {
        a = a->parent;
        b = b->parent;
    }
    return h;
}

static int nic_cmp(const void *x, const void *y)
{
    const fti_affinity_nic_t *a = x, *b = y;
    if (a->cls != b->cls)
        return a->cls - b->cls;
    if (a->hops != b->hops)
        return a->hops - b->hops;
    return strcmp(a->busid, b->busid);
}

/* The NICs (one per PCI device), ranked by distance from the GPU dev. */
static void rank_nics(hwloc_topology_t t, hwloc_obj_t dev, fti_affinity_t *a)
{
    hwloc_obj_t pci[FTI_AFFINITY_MAX_NICS];
    a->nnics = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t, o));) {
        int ib = o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
        if ((!ib && o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK) || !o->name)
            continue;
        hwloc_obj_t p = o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent : NULL;
        if (p == NULL)
            continue; /* lo, virtual interfaces: not a NIC near anything */
        int k = 0;
        while (k < a->nnics && pci[k] != p)
            k++;
        if (k == a->nnics) {
            if (k == FTI_AFFINITY_MAX_NICS)
                continue;
            fti_affinity_nic_t *n = &a->nic[a->nnics++];
            memset(n, 0, sizeof(*n));
            pci[k] = p;
            snprintf(n->busid, sizeof(n->busid), "%04x:%02x:%02x.%01x", p->attr->pcidev.domain,
                     p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
            hwloc_obj_t hb = host_bridge(dev);
            n->cls = hb && hb == host_bridge(p)            ? FTI_NIC_HOST_BRIDGE
                     : package_of(t, dev) == package_of(t, p) ? FTI_NIC_PACKAGE
                                                             : FTI_NIC_FAR;
            n->hops = hops(dev, p);
        }
        fti_strlcpy(ib ? a->nic[k].ib : a->nic[k].net, o->name, FTI_AFFINITY_NAME_SIZE);
    }
    qsort(a->nic, (size_t)a->nnics, sizeof(a->nic[0]), nic_cmp);
}

/* The physical index local_rank gets from CUDA_VISIBLE_DEVICES; -1 none
 * visible; why notes a fallback. */
static int visible_index(const char *cv, int local_rank, const struct gpu *g, int n, char *why,
                         size_t wlen)
{
    int ids[MAX_GPUS], nids = 0, ok = cv != NULL;
    for (const char *p = cv; ok && *p && nids < MAX_GPUS;) {
        char *end;
        long v = strtol(p, &end, 10);
        ok = end != p && v >= 0 && (*end == ',' || *end == '\0');
        if (ok)
            ids[nids++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (cv && !ok)
        snprintf(why, wlen, "CUDA_VISIBLE_DEVICES='%.40s' is not a list of indices; ", cv);
    if (!ok)
        for (nids = 0; nids < n; nids++)
            ids[nids] = g[nids].index;
    return nids ? ids[local_rank % nids] : -1;
}

static void describe(const fti_affinity_t *a, const char *cv, int local_rank, const char *anc,
                     char *why, size_t wlen)
{
    size_t l = strlen(why);
    l += (size_t)snprintf(why + l, wlen - l, "local rank %d -> GPU %d (%s%s%s); cores%s of its %s",
                          local_rank, a->gpu, cv ? "CUDA_VISIBLE_DEVICES=" : "all GPUs visible",
                          cv ? cv : "", "", a->numa >= 0 ? " and NUMA node" : "", anc);
    if (l < wlen)
        snprintf(why + l, wlen - l, "; NICs: %s",
                 a->nnics == 0                          ? "none"
                 : a->nic[0].cls == FTI_NIC_HOST_BRIDGE ? "nearest under the same PCI host bridge"
                 : a->nic[0].cls == FTI_NIC_PACKAGE     ? "none under its host bridge, nearest in its package"
                                                        : "none in its package, nearest elsewhere");
}

int fti_affinity_pick(const char *xml, int local_rank, const char *cv, fti_affinity_t *a_p)
{
    fti_affinity_t a;
    struct gpu g[MAX_GPUS];
    hwloc_topology_t t;
    if (local_rank < 0 || a_p == NULL)
        return FT_ERR_ARG;
    int rc = load(xml, &t);
    if (rc != FT_SUCCESS)
        return rc;
    memset(&a, 0, sizeof(a));
    a.gpu = a.numa = -1;
    a.ngpus = list_gpus(t, g);
    int want = visible_index(cv, local_rank, g, a.ngpus, a.why, sizeof(a.why));
    int k = 0;
    while (k < a.ngpus && g[k].index != want)
        k++;
    if (k == a.ngpus) {
        size_t l = strlen(a.why);
        snprintf(a.why + l, sizeof(a.why) - l, a.ngpus == 0 ? "no GPU in the topology"
                 : want < 0 ? "no GPU visible" : "the visible GPU is not in the topology");
        size_t m = strlen(a.why);
        snprintf(a.why + m, sizeof(a.why) - m, ": the rank's binding is kept");
        hwloc_topology_destroy(t);
        *a_p = a;
        return FT_SUCCESS;
    }
    a.gpu = g[k].index;
    fti_strlcpy(a.gpu_name, g[k].name, sizeof(a.gpu_name));
    if (g[k].dev->type == HWLOC_OBJ_PCI_DEVICE)
        snprintf(a.gpu_busid, sizeof(a.gpu_busid), "%04x:%02x:%02x.%01x",
                 g[k].dev->attr->pcidev.domain, g[k].dev->attr->pcidev.bus,
                 g[k].dev->attr->pcidev.dev, g[k].dev->attr->pcidev.func);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, g[k].dev);
    hwloc_bitmap_t cpus = hwloc_bitmap_dup(anc->cpuset);
    hwloc_bitmap_and(cpus, cpus, hwloc_topology_get_allowed_cpuset(t));
    if (!hwloc_bitmap_iszero(cpus))
        hwloc_bitmap_list_snprintf(a.cpus, sizeof(a.cpus), cpus);
    hwloc_bitmap_free(cpus);
    for (hwloc_obj_t n = NULL; a.numa < 0 && (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));)
        if (anc->nodeset && hwloc_bitmap_isset(anc->nodeset, n->os_index))
            a.numa = (int)n->os_index;
    rank_nics(t, g[k].dev, &a);
    char anc_name[64];
    snprintf(anc_name, sizeof(anc_name), "%s %u", hwloc_obj_type_string(anc->type),
             anc->os_index == HWLOC_UNKNOWN_INDEX ? anc->logical_index : anc->os_index);
    describe(&a, cv, local_rank, anc_name, a.why, sizeof(a.why));
    hwloc_topology_destroy(t);
    *a_p = a;
    return FT_SUCCESS;
}

int fti_affinity_env(const fti_affinity_t *a, char env[2][FTI_REASON_SIZE])
{
    int n = 0;
    static const char *const names[2] = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"};
    if (a->gpu < 0 || a->nnics == 0)
        return 0;
    for (int which = 0; which < 2; which++) {
        if (getenv(names[which]))
            continue; /* the user's choice stands */
        /* "=a,b": exact names (NCCL matches prefixes otherwise) */
        size_t l = (size_t)snprintf(env[n], FTI_REASON_SIZE, "%s==", names[which]);
        size_t start = l;
        for (int i = 0; i < a->nnics && l < FTI_REASON_SIZE; i++) {
            const fti_affinity_nic_t *c = &a->nic[i];
            const char *name = which == 0 ? c->ib : c->net;
            if (c->cls != a->nic[0].cls || c->hops != a->nic[0].hops || name[0] == '\0')
                continue; /* the nearest only */
            l += (size_t)snprintf(env[n] + l, FTI_REASON_SIZE - l, "%s%s", l > start ? "," : "",
                                  name);
        }
        if (l > start && l < FTI_REASON_SIZE)
            n++;
    }
    return n;
}

static const char *const cls_name[] = {"same PCI host bridge", "same package", "elsewhere"};

int fti_affinity_report(FILE *out, const char *xml, int nlocal, const char *cv)
{
    for (int r = 0; r < nlocal; r++) {
        fti_affinity_t a;
        char env[2][FTI_REASON_SIZE];
        int rc = fti_affinity_pick(xml, r, cv, &a);
        if (rc != FT_SUCCESS)
            return rc;
        fprintf(out, "local rank %d: GPU %s", r, a.gpu >= 0 ? a.gpu_name : "none");
        if (a.gpu_busid[0])
            fprintf(out, " (%s)", a.gpu_busid);
        fprintf(out, ", cores %s, NUMA node ", a.cpus[0] ? a.cpus : "(inherited)");
        fprintf(out, a.numa >= 0 ? "%d" : "-", a.numa);
        fprintf(out, ", NICs");
        for (int i = 0; i < a.nnics && a.gpu >= 0; i++)
            fprintf(out, "%s %s%s%s (%s, %d hops)", i ? "," : "", a.nic[i].ib,
                     a.nic[i].ib[0] && a.nic[i].net[0] ? "/" : "", a.nic[i].net,
                     cls_name[a.nic[i].cls], a.nic[i].hops);
        if (a.gpu < 0 || a.nnics == 0)
            fprintf(out, " -");
        int ne = fti_affinity_env(&a, env);
        for (int i = 0; i < ne; i++)
            fprintf(out, "%s%s", i ? " " : "; child env ", env[i]);
        fprintf(out, "\n    why: %s\n", a.why);
    }
    return FT_SUCCESS;
}
