/*
 * path.c - ANCHOR_FILE templates (%r, %h, %p), the same code libanchor.so
 * uses; included like writer.c so make and setup.py build one file list.
 */
#include "ring_path.c"
