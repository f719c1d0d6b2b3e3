/*
 * run_args.h - ftmpi-run's command line (run_args.c): its flags, their
 * defaults and limits, the usage text.
 */
#ifndef FTI_RUN_ARGS_H
#define FTI_RUN_ARGS_H

#define FTI_RUN_PROG "ftmpi-run"
#define EXIT_USAGE 2 /* a bad flag or a bad FTMPI_* value */

struct agent_opts {
    const char *replica_id;
    int max_restarts;
    int backoff_ms;
    int max_backoff_ms;
    int grace_ms;
    int quiet;
    int no_rank_watch;
    const char *events_path;
    char **argv; /* the command, NULL-terminated */
};

/* Fills *o from argv; returns 0, or the exit status (2 after a message, or
 * -1 when --help/--version printed and the agent should exit 0). */
int fti_run_parse_args(int argc, char **argv, struct agent_opts *o);

#endif
