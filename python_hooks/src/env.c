/*
 * env.c - the writers' environment table (anchors/ring_env.c), the same
 * code libanchor.so uses; included like writer.c so make and setup.py
 * build one file list.
 */
#include "ring_env.c"
