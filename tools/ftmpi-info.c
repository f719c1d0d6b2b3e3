/*
 * ftmpi-info - what this libftmpi was built with and how the FTMPI_*
 * environment configures it (after ucx_info and ompi_info).
 *
 *     ftmpi-info                 version, build options (prefix, configure
 *                                line, MPI library, backends), the FTMPI_* table with
 *                                the current values; exit 2 on a bad value
 *     ftmpi-info --topology      this node as hwloc sees it: packages, NUMA
 *                                nodes, cores, PUs, this process's binding,
 *                                GPUs and network devices with their locality
 *                                (HWLOC_XMLFILE / HWLOC_SYNTHETIC apply)
 *     ftmpi-info --env-markdown  the page doc/ENVIRONMENT.md holds (generated
 *                                from src/base/settings.c; independent of the
 *                                environment)
 *
 * Everything printed about settings comes from fti_config_table, so the
 * tool, the library and the documentation cannot drift apart.
 */
#include "ftmpi_config.h"

#include <hwloc.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/affinity.h"
#include "comm/comm.h"
#ifdef FTMPI_HAVE_UCX
#include "comm/ucx.h"
#endif
#ifdef FTMPI_HAVE_NCCL
#include "comm/nccl_comm.h"
#endif
#include "ftmpi_errors.h"
#include "base/settings.h"
#include "base/sizes.h"
#include "base/util.h"
#include "base/versions.h"

#define EXIT_USAGE 2

static const char *prog = "ftmpi-info";

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s [--parsable | --topology | --env-markdown | --version | --help]\n"
            "\n"
            "Without options: prints the libftmpi version, how it was built (install\n"
            "prefix, configure arguments, the MPI library, the data-plane backends) and\n"
            "every FTMPI_* environment variable with its default and current value\n"
            "(exits 2, naming the variable, when a value is refused).\n"
            "  --parsable       the build and the settings as key:value lines (as ompi_info\n"
            "                   --parsable): version, git revision, build date, compiler,\n"
            "                   flags, the MPI library and every dependency's version\n"
            "  --topology       print this node as hwloc sees it: packages, NUMA nodes, cores,\n"
            "                   PUs, this process's binding, GPUs and network devices with\n"
            "                   the PUs near them\n"
            "  --env-markdown   print the environment-variable page (doc/ENVIRONMENT.md)\n"
            "  --version        print the version\n",
            prog);
}

/* ---- the current configuration --------------------------------------- */

/* The path of this program (not its symlink), "?" when unknown. */
static void self_path(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        n = (ssize_t)snprintf(buf, len, "?");
    buf[n] = '\0';
}

/* The prefix this program runs from, into dir: <prefix> when it runs as
 * <prefix>/bin/ftmpi-info (`make install prefix=DIR` installs without
 * rebuilding, so the compiled-in prefix may be another).  Returns 0, or -1
 * when it runs from the build tree (dir then holds the configured one). */
static int run_prefix(const char *self, char *dir, size_t len)
{
    char *slash;

    snprintf(dir, len, "%s", self);
    slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    slash = strrchr(dir, '/');
    if (slash == NULL || strcmp(slash, "/bin") != 0) {
        snprintf(dir, len, "%s", FTMPI_PREFIX);
        return -1;
    }
    *slash = '\0';
    return 0;
}

static void print_prefix(const char *self)
{
    char dir[FTI_PATH_SIZE];

    if (run_prefix(self, dir, sizeof(dir)) != 0) {
        printf("  %-14s %s (configured; this program runs from the build tree)\n", "prefix",
               FTMPI_PREFIX);
        return;
    }
    if (strcmp(dir, FTMPI_PREFIX) == 0)
        printf("  %-14s %s\n", "prefix", dir);
    else
        printf("  %-14s %s (installed there; configured for %s)\n", "prefix", dir, FTMPI_PREFIX);
}

/* What configure and make recorded: see configure.ac ("what ftmpi-info
 * reports") and tools/Makefile.inc. */
static void print_build(void)
{
    char self[FTI_PATH_SIZE];

    self_path(self, sizeof(self));
    printf("libftmpi %s\n\n", PACKAGE_VERSION);
    printf("Build options:\n");
    print_prefix(self);
    printf("  %-14s %s\n", "program", self);
    printf("  %-14s %s\n", "configure", FTMPI_CONFIGURE_ARGS[0] ? FTMPI_CONFIGURE_ARGS : "(no arguments)");
    printf("  %-14s %s\n", "MPI compiler", FTMPI_MPICC);
    printf("  %-14s %s (MPI standard %s)\n", "MPI library", FTMPI_MPI_LIBRARY, FTMPI_MPI_STANDARD);
    printf("  %-14s %s\n", "backends", FTMPI_BACKENDS_BUILT);
    printf("  %-14s %s\n", "CUDA", FTMPI_CUDA_SUMMARY);
    printf("  %-14s %s\n", "NCCL", FTMPI_NCCL_SUMMARY);
#ifdef FTMPI_HAVE_NCCL
    int v = fti_nccl_runtime_version();
    printf("  %-14s %d.%d.%d loaded (shrink %s, revoke %s)\n", "NCCL runtime", v / 10000,
           v / 100 % 100, v % 100, fti_nccl_can_shrink() ? "yes" : "no",
           fti_nccl_can_revoke() ? "yes" : "no");
#endif
    printf("  %-14s %s\n", "UCX", FTMPI_UCX_SUMMARY);
    printf("  %-14s %s\n", "etcd", FTMPI_ETCD_SUMMARY); /* ftmpi-lighthouse --etcd */
#ifdef FTMPI_HAVE_UCX
    char ver[256], tls[1024];
    if (fti_ucx_describe(ver, sizeof(ver), tls, sizeof(tls)) == FT_SUCCESS)
        printf("  %-14s %s loaded, transports %s\n", "UCX runtime", ver, tls);
    else
        printf("  %-14s not loaded: %s\n", "UCX runtime", ver);
#endif
}

/* --parsable: one "key:value" line each, for scripts and bug reports. */
static int print_parsable(void)
{
    fti_config_t cfg;
    char err[512], self[FTI_PATH_SIZE];
    if (fti_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return EXIT_USAGE;
    }
    self_path(self, sizeof(self));
    char dir[FTI_PATH_SIZE];
    (void)run_prefix(self, dir, sizeof(dir)); /* the build tree: the configured one */
    printf("package:version:%s\n", PACKAGE_VERSION);
    printf("package:git_revision:%s\n", FTMPI_GIT_REV);
    printf("package:build_date:%s %s\n", __DATE__, __TIME__);
    printf("build:prefix:%s\n", dir);
    printf("build:configured_prefix:%s\n", FTMPI_PREFIX);
    printf("build:program:%s\n", self);
    printf("build:configure:%s\n", FTMPI_CONFIGURE_ARGS);
    printf("build:compiler:%s\n", FTMPI_CC);
#ifdef __VERSION__
    printf("build:compiler_version:%s\n", __VERSION__);
#endif
    printf("build:cflags:%s\n", FTMPI_CFLAGS);
    printf("build:mpicc:%s\n", FTMPI_MPICC);
    printf("build:backends:%s\n", FTMPI_BACKENDS_BUILT);
    printf("dep:mpi:%s (MPI standard %s)\n", FTMPI_MPI_LIBRARY, FTMPI_MPI_STANDARD);
    printf("dep:cuda:%s\n", FTMPI_CUDA_SUMMARY);
    printf("dep:nccl:%s\n", FTMPI_NCCL_SUMMARY);
    printf("dep:ucx:%s\n", FTMPI_UCX_SUMMARY);
    printf("dep:etcd:%s\n", FTMPI_ETCD_SUMMARY);
#ifdef FTMPI_HAVE_UCX
    char uver[256], utls[1024];
    if (fti_ucx_describe(uver, sizeof(uver), utls, sizeof(utls)) == FT_SUCCESS) {
        printf("dep:ucx_runtime:%s\n", uver);
        printf("dep:ucx_transports:%s\n", utls);
    }
#endif
    char lev[128], ssl[128], xxh[128];
    fti_base_versions(lev, ssl, xxh, sizeof(lev));
    printf("dep:libevent:%s\n", lev);
    printf("dep:openssl:%s\n", ssl);
    printf("dep:xxhash:%s\n", xxh);
    /* the release built against (HWLOC_VERSION); the API version of the
     * library loaded is another number (2.9.0's is 2.8.0) */
    unsigned hv = hwloc_get_api_version();
    printf("dep:hwloc:%s (API %u.%u.%u loaded)\n", HWLOC_VERSION, hv >> 16, (hv >> 8) & 0xff,
           hv & 0xff);
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        char raw[280];
        fti_config_format(&cfg, f, raw, sizeof(raw));
        printf("env:%s:%s\n", f->name, raw);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Text of a value for the table: strings quoted so that empty shows. */
static void shown(const fti_config_field_t *f, const char *v, char *buf, size_t len)
{
    if (f->type == FTI_CFG_STRING)
        snprintf(buf, len, "\"%s\"", v);
    else
        snprintf(buf, len, "%s", v);
}

/* "`tcp`, `mpi`, ..." (quote = "`") or "tcp mpi ..." (quote = "", sep = " "):
 * the names of the build's backend table. */
static void backend_names(char *buf, size_t len, const char *quote, const char *sep)
{
    char name[FTI_CFG_NAME_SIZE];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; fti_comm_backend_name_at(i, name, sizeof(name)) && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", i ? sep : "", quote, name, quote);
}

/* FTMPI_BACKEND names a backend of the table (or auto); the settings check
 * only that it is a name.  EXIT_USAGE with a message otherwise. */
static int check_backend(const fti_config_t *cfg)
{
    if (strcmp(cfg->backend, "auto") == 0 || fti_comm_backend_known(cfg->backend))
        return 0;
    char known[256];
    backend_names(known, sizeof(known), "", " ");
    fprintf(stderr, "%s: FTMPI_BACKEND='%s': no such backend in this build (auto or one of: %s)\n",
            prog, cfg->backend, known);
    return EXIT_USAGE;
}

static int print_config(void)
{
    fti_config_t cfg;
    char err[512];
    size_t wname = strlen("NAME"), wdflt = strlen("DEFAULT"), wval = strlen("VALUE");
    char val[300], dflt[300];

    if (fti_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return EXIT_USAGE;
    }
    if (check_backend(&cfg) != 0)
        return EXIT_USAGE;

    /* column widths from the rows themselves */
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        char raw[280];
        fti_config_format(&cfg, f, raw, sizeof(raw));
        shown(f, raw, val, sizeof(val));
        shown(f, f->dflt, dflt, sizeof(dflt));
        wname = FTI_MAX(wname, strlen(f->name));
        wdflt = FTI_MAX(wdflt, strlen(dflt));
        wval = FTI_MAX(wval, strlen(val) + 1);
    }

    print_build();
    printf("\nEnvironment (VALUE is what FT_Init would use; * = set in the environment):\n");
    printf("  %-*s  %-*s  %-*s  %s\n", (int)wname, "NAME", (int)wdflt, "DEFAULT", (int)wval,
           "VALUE", "MEANING");
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        char raw[280];
        fti_config_format(&cfg, f, raw, sizeof(raw));
        shown(f, raw, val, sizeof(val) - 1);
        if (getenv(f->name) != NULL)
            strcat(val, "*");
        shown(f, f->dflt, dflt, sizeof(dflt));
        printf("  %-*s  %-*s  %-*s  %s\n", (int)wname, f->name, (int)wdflt, dflt, (int)wval, val,
               f->doc);
    }
    return 0;
}

/* ---- the node's topology (hwloc) -------------------------------------- */

/* Kind of an OS device in words; NULL for the kinds not shown. */
static const char *osdev_kind(hwloc_obj_t dev)
{
    switch (dev->attr->osdev.type) {
    case HWLOC_OBJ_OSDEV_GPU:
        return "GPU";
    case HWLOC_OBJ_OSDEV_COPROC:
        return "GPU (compute)";
    case HWLOC_OBJ_OSDEV_NETWORK:
        return "NIC";
    case HWLOC_OBJ_OSDEV_OPENFABRICS:
        return "NIC (verbs)";
    default:
        return NULL;
    }
}

/* Prints "  LABEL  TEXT PUs LIST" for a cpuset (list form, e.g. 0-7,16-23). */
static void print_cpuset(const char *label, const char *text, hwloc_const_bitmap_t set)
{
    char *list = NULL;

    if (set == NULL || hwloc_bitmap_list_asprintf(&list, set) < 0) {
        printf("  %-14s %s(unknown PUs)\n", label, text);
        return;
    }
    printf("  %-14s %sPUs %s\n", label, text, list);
    free(list);
}

/* GPUs and network devices, each with the PUs of its first non-I/O
 * ancestor (where a rank using it would best run). */
static void print_osdevs(hwloc_topology_t topo)
{
    int n = 0;

    for (hwloc_obj_t d = hwloc_get_next_osdev(topo, NULL); d; d = hwloc_get_next_osdev(topo, d)) {
        const char *kind = osdev_kind(d);
        hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, d);
        const char *sub = d->subtype ? d->subtype : "";
        char text[FTI_HOST_SIZE + 32];

        if (kind == NULL)
            continue;
        snprintf(text, sizeof(text), "%s%s%s%s, near ", d->name ? d->name : "?", sub[0] ? " (" : "",
                 sub, sub[0] ? ")" : "");
        print_cpuset(kind, text, near ? near->cpuset : NULL);
        n++;
    }
    if (n == 0)
        printf("  %-14s %s\n", "devices", "no GPU or network device found");
}

static int print_topology(void)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t bound;
    unsigned v = hwloc_get_api_version();

    if (hwloc_topology_init(&topo) != 0) {
        fprintf(stderr, "%s: hwloc_topology_init: %m\n", prog);
        return 1;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        fprintf(stderr, "%s: hwloc_topology_load: %m\n", prog);
        hwloc_topology_destroy(topo);
        return 1;
    }
    printf("Topology (hwloc API %u.%u):\n", v >> 16, (v >> 8) & 0xff);
    printf("  %-14s %d packages, %d NUMA nodes, %d cores, %d PUs\n", "machine",
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE),
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE),
           hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
    bound = hwloc_bitmap_alloc();
    if (bound != NULL && hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0)
        print_cpuset("bound to", "", bound);
    else
        printf("  %-14s %s\n", "bound to", "(unknown)");
    hwloc_bitmap_free(bound);
    print_osdevs(topo);
    /* the choice of the baby child's placement, per local rank: one rank per
     * GPU, or one when there is none (src/comm/affinity.c) */
    int nlocal = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(topo, o)) != NULL;)
        nlocal += o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
                  o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
    hwloc_topology_destroy(topo);
    printf("Placement of each local rank's ftmpi-baby child (FTMPI_AFFINITY):\n");
    fflush(stdout);
    if (fti_affinity_report(stdout, NULL, nlocal > 0 ? nlocal : 1,
                            getenv("CUDA_VISIBLE_DEVICES")) != FT_SUCCESS)
        fprintf(stderr, "%s: the placement report failed\n", prog);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- the generated page ------------------------------------------------ */

/* Prints s with the characters markdown tables treat specially escaped
 * (not '_': GitHub's markdown leaves it alone inside words). */
static void md_text(const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '\\' || *s == '`' || *s == '*' || *s == '<')
            putchar('\\');
        putchar(*s);
    }
}

/* What a field accepts, in words. */
static void md_accepts(const fti_config_field_t *f)
{
    switch (f->type) {
    case FTI_CFG_STRING:
        printf("text, at most %zu characters", f->size - 1);
        break;
    case FTI_CFG_INT:
        printf("integer, %" PRId64 " to %" PRId64, f->min, f->max);
        break;
    case FTI_CFG_BYTES:
        printf("bytes, %" PRId64 " to %" PRId64 "; suffix k, m or g (powers of 1024)", f->min,
               f->max);
        break;
    case FTI_CFG_BOOL:
        printf("0 or 1 (also true/false, yes/no, on/off)");
        break;
    case FTI_CFG_ENUM:
        for (int i = 0; f->choices[i]; i++)
            printf("%s`%s`", i ? ", " : "one of ", f->choices[i]);
        break;
    case FTI_CFG_LOGLEVEL:
        printf("`none`, `error`, `warn`, `info`, `debug`, `trace`, or 0 to 5");
        break;
    case FTI_CFG_NAME:
        if (strcmp(f->name, "FTMPI_BACKEND") == 0) {
            char names[256];
            backend_names(names, sizeof(names), "`", ", ");
            printf("one of `auto`, %s (the backend table of this build)", names);
        } else {
            printf("a name: letters, digits, `-`, `_`; at most %zu", f->size - 1);
        }
        break;
    default:
        printf("?");
    }
}

static void print_markdown(void)
{
    printf("# Environment variables\n"
           "\n"
           "<!-- Generated by `ftmpi-info --env-markdown` from the table in src/base/settings.c.\n"
           "     Do not edit; regenerate with: ftmpi-info --env-markdown > doc/ENVIRONMENT.md -->\n"
           "\n"
           "libftmpi reads every `FTMPI_*` variable once, in `FT_Init`, from one table\n"
           "(`src/base/settings.c`).  A value that does not parse or is out of range makes\n"
           "`FT_Init` fail with `FT_ERR_CONFIG` and a message that names the variable and\n"
           "the value.  `ftmpi-info` prints the value each variable would take in the\n"
           "current environment, and checks them the same way (exit status 2 on a bad\n"
           "value).  `ftmpi-run` sets `FTMPI_REPLICA_ID` and `FTMPI_RESTART_COUNT` for the\n"
           "command it runs and checks the other variables before the first start.\n"
           "\n"
           "| Variable | Default | Accepts | Meaning |\n"
           "|---|---|---|---|\n");
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        printf("| `%s` | ", f->name);
        if (f->dflt[0] == '\0')
            printf("(empty)");
        else
            printf("`%s`", f->dflt);
        printf(" | ");
        md_accepts(f);
        printf(" | ");
        md_text(f->doc);
        printf(" |\n");
    }
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return print_config();
    if (argc == 2 && strcmp(argv[1], "--env-markdown") == 0) {
        print_markdown();
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (argc == 2 && strcmp(argv[1], "--parsable") == 0)
        return print_parsable();
    if (argc == 2 && strcmp(argv[1], "--topology") == 0)
        return print_topology();
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("%s (libftmpi) %s\n", prog, PACKAGE_VERSION);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "%s: unknown argument '%s'\nTry '%s --help'.\n", prog, argv[1], prog);
    return EXIT_USAGE;
}
