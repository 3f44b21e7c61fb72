/*
** sim/commands.h: the entry points of ksim's subcommands. sim/main.c parses
** the first word and hands the rest over (its command table). Each returns
** the process exit code (SPEC 1: 0 ok, 1 an expectation failed, 2 bad input,
** 3 internal error) and answers `--help` with its usage on stdout, exit 0.
** argv[0] is the subcommand's name ("dump-log"), as for main().
*/
#pragma once

int ks_dumplog_main(int argc, char **argv);  /* sim/dumplog.c */
int ks_sweep_main(int argc, char **argv);    /* sim/sweep.c */
int ks_explore_main(int argc, char **argv);  /* sim/explore.c */
int ks_merge_main(int argc, char **argv);    /* sim/merge.c */
int ks_plot_main(int argc, char **argv);     /* sim/plot.c */
int ks_describe_main(int argc, char **argv); /* sim/describe.c */
int ks_list_main(int argc, char **argv);     /* sim/inspect.c */
int ks_compare_main(int argc, char **argv);  /* sim/inspect.c */
int ks_report_main(int argc, char **argv);   /* sim/report.c */
