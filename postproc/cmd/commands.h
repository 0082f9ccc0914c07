/*
 * commands.h - the anchorpost subcommands, one file each (cmd_<name>.c).
 * Each takes argc/argv starting at the subcommand name and returns the
 * process exit status; errors go through diag_fatal().
 */
#ifndef ANCHORPOST_COMMANDS_H
#define ANCHORPOST_COMMANDS_H

int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_sensors(int argc, char **argv);
int cmd_perun(int argc, char **argv);

int cmd_phases(int argc, char **argv);
int cmd_samples(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_functions(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* `anchorpost` with no arguments (cmd_phases.c): the run in the current
 * directory; -1 when there is none (the caller prints the usage). */
int cmd_here(void);

/* cmd_mpi.c: several rings (ranks, hosts).  `phases` hands over to
 * cmd_phases_mpi when phases_wants_mpi() says its options ask for it. */
int cmd_phases_mpi(int argc, char **argv);
int cmd_stragglers(int argc, char **argv);
int phases_wants_mpi(int argc, char **argv);

#endif
