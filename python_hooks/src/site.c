/*
 * site.c - where in the source each `with anchor.phase(...)` and each
 * anchor.mark() runs (issue 12 point 3): a SITE record per call site
 * (ring_format.h), so anchorpost can tell from a py-spy stack alone,
 * without trusting its times, which phase a sample was taken in.
 *
 * The C side only finds the call site (the caller's code object and the
 * offset of its BEFORE_WITH, or of its call of mark()) and remembers which
 * sites it has handed over; the Python hook (anchor/_sites.py) works out
 * the lines from the bytecode and writes the record through _site_emit().
 * Steady state: one counter test per `with` or mark (sites are looked up
 * during the first SITE_EAGER entries, then on every SITE_EVERY-th only, so
 * the hot path does not slow down; a site first used late is still found,
 * later).
 *
 * A site is a call path, not one frame: a helper (a context-manager class
 * whose __enter__ opens the phase, a @contextmanager generator, one
 * `with anchor.phase(name)` in a function every phase goes through) opens
 * every phase from the same frame and line, and only its callers say
 * which `with` runs the body (anchor/_body_sites.py finds it).  So the key
 * holds the code and offset of SITE_CHAIN frames above as well, and every
 * name seen at a path is handed over once (a path used with several names
 * labels its samples with the set of them).
 */
#include "pyanchor.h"

#define SITE_SLOTS 1024u /* power of two */
#define SITE_EAGER 4096u
#define SITE_EVERY 256u
#define SITE_CHAIN 4u /* frames above: a @contextmanager's with is 3 up */

PyObject *pya_site_hook;
unsigned long pya_site_calls;

struct site_key {
	PyObject *code; /* strong reference: an address never names two sites */
	int lasti;
	uintptr_t chain; /* the callers' code and offsets, hashed (chain_hash) */
	PyObject *name;  /* the phase name (strong) */
};

static struct site_key table[SITE_SLOTS];
static unsigned used;

static void hand_over(PyObject *name, PyObject *code, int lasti, int is_mark)
{
	PyObject *r = PyObject_CallFunction(pya_site_hook, "OOii", name, code, lasti, is_mark);
	if (r)
		Py_DECREF(r);
	else
		PyErr_WriteUnraisable(pya_site_hook); /* never break the user's block */
}

/* The code objects and offsets of the SITE_CHAIN frames above f.  Only
 * compared, never dereferenced: a code object freed and its address
 * reused can at worst hide one site (left unlabelled). */
static uintptr_t chain_hash(PyFrameObject *f)
{
	uintptr_t h = 0;
	PyFrameObject *b = PyFrame_GetBack(f);
	for (unsigned n = 0; b && n < SITE_CHAIN; n++) {
		PyCodeObject *c = PyFrame_GetCode(b);
		PyFrameObject *up = PyFrame_GetBack(b);
		h = (h * 0x100000001b3ull) ^ ((uintptr_t)c >> 4) ^ ((uintptr_t)PyFrame_GetLasti(b) << 40);
		Py_DECREF(c);
		Py_DECREF(b);
		b = up;
	}
	Py_XDECREF(b);
	return h;
}

/* Seen (code, lasti, chain) with this name before?  Else remember it.
 * 1: new. */
static int site_new(PyObject *code, int lasti, uintptr_t chain, PyObject *name)
{
	size_t h = (((uintptr_t)code >> 4) ^ ((size_t)lasti * 0x9e3779b1u) ^ chain ^ (chain >> 29)) & (SITE_SLOTS - 1);
	for (unsigned n = 0; n < SITE_SLOTS; n++, h = (h + 1) & (SITE_SLOTS - 1)) {
		struct site_key *k = &table[h];
		if (!k->code) {
			if (used >= SITE_SLOTS * 3 / 4)
				return 0; /* full: later sites stay unlabelled */
			Py_INCREF(code);
			Py_INCREF(name);
			*k = (struct site_key){code, lasti, chain, name};
			used++;
			return 1;
		}
		if (k->code != code || k->lasti != lasti || k->chain != chain)
			continue;
		if (k->name == name)
			return 0;
		int same = PyUnicode_Compare(k->name, name) == 0;
		PyErr_Clear();
		if (same)
			return 0;
	}
	return 0;
}

void pya_site_check(PyObject *name, int is_mark)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	if (!f)
		return;
	PyCodeObject *code = PyFrame_GetCode(f);
	int lasti = PyFrame_GetLasti(f);
	if (site_new((PyObject *)code, lasti, chain_hash(f), name))
		hand_over(name, (PyObject *)code, lasti, is_mark);
	Py_DECREF(code);
}

PyObject *pya_set_site_hook(PyObject *self, PyObject *fn)
{
	if (fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "_set_site_hook(fn) takes a callable or None");
		return NULL;
	}
	Py_XINCREF(fn == Py_None ? NULL : fn);
	Py_XSETREF(pya_site_hook, fn == Py_None ? NULL : fn);
	Py_RETURN_NONE;
}

/* _site_emit(text: bytes): one SITE record with that text. */
PyObject *pya_site_emit(PyObject *self, PyObject *arg)
{
	if (!PyBytes_Check(arg)) {
		PyErr_SetString(PyExc_TypeError, "_site_emit(text) takes bytes");
		return NULL;
	}
	pya.event(ANCHOR_KIND_SITE, PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg), 0, 0);
	Py_RETURN_NONE;
}
