/*
 * file_ids.h - the files this run reads and writes, by identity (device
 * and inode when the file exists) and by canonical path: no output may
 * replace an input (outfile.c asks before it creates one), and no input
 * may be a file an output already targets (input_file.c asks before it
 * reads one).  Below both the readers and the writers, so neither needs
 * the other.  Thread-safe (mring loads rings on worker threads).
 */
#ifndef ANCHORPOST_FILE_IDS_H
#define ANCHORPOST_FILE_IDS_H

#include <sys/stat.h>

/* Remember an input (st: its stat).  0, -EEXIST when it is an output
 * target of this run (nothing remembered), or -ENOMEM. */
int file_ids_note_input(const char *path, const struct stat *st);

/* The remembered input that is the same file as st (st may be NULL when
 * the output does not exist yet) or the same canonical path as path, or
 * NULL.  Used by outfile_open. */
const char *file_ids_same_input(const char *path, const struct stat *st);

/* Remember an output target (st NULL when it does not exist yet), so an
 * input opened later that is the same file is refused. */
void file_ids_note_output(const char *path, const struct stat *st);

/* Forget an output target again (committed or aborted). */
void file_ids_forget_output(const char *path);

#endif
