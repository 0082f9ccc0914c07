/*
 * pyanchor.h - shared by the C files of the `anchor` Python extension.
 *
 * The extension writes through exactly one backend, chosen once at import:
 * libanchor.so's exported C API when the library is preloaded (so Python
 * and C records share one writer, one per-thread chunk and one fork
 * handler), otherwise the module's own compiled-in copy of ring_writer.c.
 */
#ifndef PYANCHOR_H
#define PYANCHOR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "py_compat.h" /* newer C-API spelled on 3.8-3.10 too */
#include <stddef.h>
#include <stdint.h>

#include "ring_format.h"

/* Same signature as anchor_event() in include/anchor.h. */
typedef int (*pya_event_fn)(int kind, const char *name, size_t len, unsigned flags, uint64_t value);

struct pya_backend {
	pya_event_fn event;        /* MARK/BEGIN/END; never NULL after init */
	void (*sync)(void);        /* write a SYNC record */
	int (*enabled)(void);      /* 1 when a ring is attached */
	const char *(*path)(void); /* ring path, "" when none */
	int preloaded;             /* 1: libanchor.so's API, 0: own writer */
};

/* The backend in use (filled by pya_backend_init). */
extern struct pya_backend pya;

/* Choose and start the backend.  Never fails the import: a ring that
 * cannot be attached leaves anchoring disabled with one stderr line. */
void pya_backend_init(void);

/* The own-writer backend's event function (writer.c). */
int pya_own_event(int kind, const char *name, size_t len, unsigned flags, uint64_t value);

/* The own writer found detached (a lost ring): export the run's mark that
 * this process said so (backend.c). */
void pya_own_detached(void);

/* Write PROC_START + SYNC for this process (own-writer backend only). */
void pya_record_start(void);

/* The `phase` type (phase.c), ready for PyModule_AddType. */
extern PyTypeObject pya_phase_type;

/* Device-side edges (anchor/_device_edges.py): when set, phase objects
 * made with device=True (or every phase, when pya_device_all) call
 * hook(name, is_end) at each edge, after the host record. */
extern PyObject *pya_device_hook;
extern int pya_device_all;

/* Called by phase(name)(func): set from Python with _set_decorator(). */
extern PyObject *pya_decorator;

/* The already-done awaitable of phase's __aenter__/__aexit__ (phase.c). */
extern PyTypeObject pya_done_type;

/* NVTX push(name)/pop() called by `with phase`, or NULL (phase.c). */
extern PyObject *pya_nvtx_push, *pya_nvtx_pop;

/* _set_nvtx(push, pop) / _set_nvtx(None, None) (phase.c). */
PyObject *pya_set_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Borrow the UTF-8 bytes of a str name (cached inside the str object, so
 * valid while the str lives).  Raises TypeError for non-str, and
 * UnicodeEncodeError for lone surrogates.  0 or -1. */
int pya_name_utf8(PyObject *name, const char **utf8, Py_ssize_t *len);

/* Call sites of `with phase` and mark() (site.c): the Python hook, set
 * with _set_site_hook(); pya_site_check(name, is_mark) from __enter__ and
 * mark(), gated by pya_site_calls (see PYA_SITE_DUE). */
extern PyObject *pya_site_hook;
extern unsigned long pya_site_calls;
void pya_site_check(PyObject *name, int is_mark);
PyObject *pya_set_site_hook(PyObject *self, PyObject *fn);
PyObject *pya_site_emit(PyObject *self, PyObject *arg);
/* Eager for the first 4096 entries, then every 256th (site.c). */
#define PYA_SITE_DUE() (pya_site_hook && (++pya_site_calls <= 4096u || !(pya_site_calls & 255u)))

#endif /* PYANCHOR_H */
