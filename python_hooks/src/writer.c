/*
 * writer.c - the module's own copy of THE ring writer.
 *
 * Included rather than listed as a second source so that `make` and
 * `pip install ./python_hooks` (setup.py) compile the same file list:
 * every .c file in python_hooks/src with -I../anchors.  Its symbols stay hidden
 * (-fvisibility=hidden), so they never clash with libanchor.so's copy.
 */
#include "ring_writer.c"
