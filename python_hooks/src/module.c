/*
 * module.c - the `anchor._anchor` extension: mark/begin/end and friends.
 *
 * The hot path is one METH_FASTCALL call: a str check, the str's cached
 * UTF-8 bytes (no copy, no allocation for ASCII names) and one call into
 * the writer.  Nothing here holds per-thread Python state, so marks are
 * safe from any thread and in forked children (the writer re-stamps the
 * pid after fork).  The GIL is not released: a record costs less than
 * releasing and re-taking it would.
 *
 * Ranges are not checked here: begin/end write what happened and
 * anchorpost pairs them by name per thread.  Checking would need
 * per-thread stacks on the hot path and would forbid legitimate
 * cross-thread ranges (DESIGN.md: ranges "may cross threads by id").
 */
#include "pyanchor.h"

#include <string.h>

#include "anchor_version.h"

int pya_name_utf8(PyObject *name, const char **utf8, Py_ssize_t *len)
{
	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "anchor name must be str, not %.100s", Py_TYPE(name)->tp_name);
		return -1;
	}
	*utf8 = PyUnicode_AsUTF8AndSize(name, len);
	if (!*utf8)
		return -1;
	/* The writer cuts long names at ANCHOR_NAME_MAX bytes (flag TRUNC).
	 * When that would split a multi-byte character, cut before it
	 * instead so the ring only ever holds valid UTF-8 (the record then
	 * carries no TRUNC flag: anchor_event has no way to pass one). */
	if (*len > (Py_ssize_t)ANCHOR_NAME_MAX && ((unsigned char)(*utf8)[ANCHOR_NAME_MAX] & 0xc0) == 0x80) {
		Py_ssize_t n = ANCHOR_NAME_MAX;
		while (n > 0 && ((unsigned char)(*utf8)[n] & 0xc0) == 0x80)
			n--;
		*len = n;
	}
	return 0;
}

/* Emit one MARK/BEGIN/END for a name object.  Long names are truncated
 * by the writer (ANCHOR_NAME_MAX bytes, flag TRUNC).  A write that fails
 * (no ring, discard-mode ring full) is not an error for the caller. */
static PyObject *emit_named(int kind, PyObject *name, unsigned flags, uint64_t value)
{
	const char *s;
	Py_ssize_t n;

	if (pya_name_utf8(name, &s, &n) < 0)
		return NULL;
	pya.event(kind, s, (size_t)n, flags, value);
	Py_RETURN_NONE;
}

/* value: int -> int64 (ANCHOR_FLAG_VALUE), float -> double bits (|F64). */
static int parse_value(PyObject *v, unsigned *flags, uint64_t *value)
{
	if (v == Py_None)
		return 0;
	if (PyLong_Check(v)) {
		int overflow = 0;
		long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
		if (overflow) {
			PyErr_SetString(PyExc_OverflowError, "anchor mark value does not fit in int64");
			return -1;
		}
		if (x == -1 && PyErr_Occurred())
			return -1;
		*flags = ANCHOR_FLAG_VALUE;
		*value = (uint64_t)x;
		return 0;
	}
	if (PyFloat_Check(v)) {
		double d = PyFloat_AS_DOUBLE(v);
		memcpy(value, &d, sizeof d);
		*flags = ANCHOR_FLAG_VALUE | ANCHOR_FLAG_F64;
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "anchor mark value must be int, float or None, not %.100s",
		     Py_TYPE(v)->tp_name);
	return -1;
}

static PyObject *py_mark(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *name, *v = Py_None;
	unsigned flags = 0;
	uint64_t value = 0;

	/* Fast path: mark(name) with no keywords. */
	if (nargs == 1 && !kwnames) {
		PyObject *r = emit_named(ANCHOR_KIND_MARK, args[0], 0, 0);
		if (r && PYA_SITE_DUE())
			pya_site_check(args[0], 1);
		return r;
	}
	if (nargs < 1 || nargs > 2)
		goto usage;
	name = args[0];
	if (nargs == 2)
		v = args[1];
	if (kwnames) {
		Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
		for (Py_ssize_t i = 0; i < nk; i++) {
			PyObject *k = PyTuple_GET_ITEM(kwnames, i);
			if (nargs != 1 || !PyUnicode_Check(k) || PyUnicode_CompareWithASCIIString(k, "value"))
				goto usage;
			v = args[nargs + i];
		}
	}
	if (parse_value(v, &flags, &value) < 0)
		return NULL;
	PyObject *r = emit_named(ANCHOR_KIND_MARK, name, flags, value);
	if (r && PYA_SITE_DUE())
		pya_site_check(name, 1);
	return r;
usage:
	PyErr_SetString(PyExc_TypeError, "mark(name, value=None) takes a name and an optional value");
	return NULL;
}

static PyObject *py_begin(PyObject *self, PyObject *name)
{
	PyObject *r = emit_named(ANCHOR_KIND_BEGIN, name, 0, 0);
	/* is_mark 2: a begin, placed only through a helper's `with`
	 * (anchor/_body_sites.py) */
	if (r && PYA_SITE_DUE())
		pya_site_check(name, 2);
	return r;
}

static PyObject *py_end(PyObject *self, PyObject *name)
{
	return emit_named(ANCHOR_KIND_END, name, 0, 0);
}

static PyObject *py_enabled(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(pya.enabled());
}

static PyObject *py_ring_path(PyObject *self, PyObject *unused)
{
	const char *p = pya.enabled() ? pya.path() : "";
	return PyUnicode_DecodeFSDefault(p ? p : "");
}

static PyObject *py_sync(PyObject *self, PyObject *unused)
{
	if (pya.enabled())
		pya.sync();
	Py_RETURN_NONE;
}

static PyObject *py_preloaded(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(pya.preloaded);
}

static PyObject *py_noop(PyObject *self, PyObject *unused)
{
	Py_RETURN_NONE;
}

static PyObject *py_set_decorator(PyObject *self, PyObject *fn)
{
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "_set_decorator needs a callable");
		return NULL;
	}
	Py_INCREF(fn);
	Py_XSETREF(pya_decorator, fn);
	Py_RETURN_NONE;
}

/* _device_event(kind, name, mono_ns): a DEV_BEGIN/DEV_END/DEV_CLOCK
 * record (ring_format.h) from anchor/_device_edges.py's resolver thread. */
static PyObject *py_device_event(PyObject *self, PyObject *args)
{
	int kind;
	PyObject *name;
	unsigned long long v;
	const char *s;
	Py_ssize_t n;

	if (!PyArg_ParseTuple(args, "iOK:_device_event", &kind, &name, &v))
		return NULL;
	if (kind != ANCHOR_KIND_DEV_BEGIN && kind != ANCHOR_KIND_DEV_END && kind != ANCHOR_KIND_DEV_CLOCK) {
		PyErr_SetString(PyExc_ValueError, "_device_event: not a device kind");
		return NULL;
	}
	if (pya_name_utf8(name, &s, &n) < 0)
		return NULL;
	pya.event(kind, s, (size_t)n, ANCHOR_FLAG_VALUE, (uint64_t)v);
	Py_RETURN_NONE;
}

/* _set_device_hook(fn or None, all): see pya_device_hook. */
static PyObject *py_set_device_hook(PyObject *self, PyObject *args)
{
	PyObject *fn;
	int all = 0;

	if (!PyArg_ParseTuple(args, "O|p:_set_device_hook", &fn, &all))
		return NULL;
	if (fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "_set_device_hook needs a callable or None");
		return NULL;
	}
	Py_XINCREF(fn == Py_None ? NULL : fn);
	Py_XSETREF(pya_device_hook, fn == Py_None ? NULL : fn);
	pya_device_all = pya_device_hook ? all : 0;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(mark_doc,
"mark(name, value=None)\n--\n\n"
"Record an instant named `name` (str) now.\n\n"
"value: None, an int (int64; OverflowError beyond) or a float, stored with\n"
"the record.  Names longer than NAME_MAX (79) UTF-8 bytes are truncated at a\n"
"character boundary.  Non-str name: TypeError; a str with lone surrogates:\n"
"UnicodeEncodeError; nothing is written then.  A no-op when not enabled().");

PyDoc_STRVAR(begin_doc,
"begin(name)\n--\n\n"
"Open a range named `name` on this thread (same name rules as mark).\n\n"
"Not checked: the module keeps no range state, so begin/end pairs are\n"
"written exactly as called and anchorpost pairs each END with the innermost\n"
"open BEGIN of the same name on the same thread.");

PyDoc_STRVAR(end_doc,
"end(name)\n--\n\n"
"Close the range named `name` (same name rules as mark).\n\n"
"end() without a matching begin(), or ranges closed out of order\n"
"(begin a, begin b, end a, end b), raise nothing: the END is recorded as\n"
"called; anchorpost, which pairs ranges by name per thread, leaves an END\n"
"it cannot pair unmatched.");

static PyMethodDef methods[] = {
	{"mark", (PyCFunction)(void (*)(void))py_mark, METH_FASTCALL | METH_KEYWORDS, mark_doc},
	{"begin", py_begin, METH_O, begin_doc},
	{"end", py_end, METH_O, end_doc},
	{"enabled", py_enabled, METH_NOARGS,
	 "enabled()\n--\n\nTrue when records reach a ring file (False with ANCHOR_DISABLE=1 or\n"
	 "when attaching failed; every call is then a cheap no-op).  Without\n"
	 "libanchor.so the ring is created at the first write (an event or\n"
	 "sync()); this query creates nothing and answers what that write will do."},
	{"ring_path", py_ring_path, METH_NOARGS, "ring_path()\n--\n\nPath of the ring file, '' when not enabled.  Creates nothing: before\n"
	 "the first write it is the path that write will create."},
	{"sync", py_sync, METH_NOARGS,
	 "sync()\n--\n\nWrite a CLOCK_MONOTONIC/CLOCK_REALTIME SYNC record now (the writer also\n"
	 "writes one lazily about once a second)."},
	{"preloaded", py_preloaded, METH_NOARGS,
	 "preloaded()\n--\n\nTrue when writing through a preloaded libanchor.so, False when\n"
	 "through the module's own copy of the writer."},
	{"_noop", py_noop, METH_NOARGS, "_noop()\n--\n\nDo nothing (benchmark baseline)."},
	{"_set_decorator", py_set_decorator, METH_O, "Internal: phase(name)(func) calls fn(phase, func)."},
	{"_set_nvtx", (PyCFunction)(void (*)(void))pya_set_nvtx, METH_FASTCALL,
	 "Internal: `with phase` also calls push(name)/pop() (None, None: off)."},
	{"_device_event", py_device_event, METH_VARARGS, "Internal: _device_event(kind, name, mono_ns)."},
	{"_set_device_hook", py_set_device_hook, METH_VARARGS, "Internal: _set_device_hook(fn|None, all=False)."},
	{"_set_site_hook", pya_set_site_hook, METH_O, "Internal: `with phase` and mark() call fn(name, code, lasti, is_mark) once per site."},
	{"_site_emit", pya_site_emit, METH_O, "Internal: write one SITE record (bytes)."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT, "anchor._anchor",
	"C core of the anchor module: writes anchors into the run's ring file.", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__anchor(void)
{
	PyObject *m;

	if (PyType_Ready(&pya_phase_type) < 0 || PyType_Ready(&pya_done_type) < 0)
		return NULL;
	m = PyModule_Create(&module_def);
	if (!m)
		return NULL;
	if (PyModule_AddType(m, &pya_phase_type) < 0 ||
	    PyModule_AddIntConstant(m, "NAME_MAX", ANCHOR_NAME_MAX) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", ANCHOR_VERSION) < 0 ||
	    PyModule_AddIntConstant(m, "_KIND_DEV_BEGIN", ANCHOR_KIND_DEV_BEGIN) < 0 ||
	    PyModule_AddIntConstant(m, "_KIND_DEV_END", ANCHOR_KIND_DEV_END) < 0 ||
	    PyModule_AddIntConstant(m, "_KIND_DEV_CLOCK", ANCHOR_KIND_DEV_CLOCK) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	/* Single-phase init and a process-wide writer: a second interpreter
	 * importing us shares the same backend, which is what we want. */
	if (!pya.event)
		pya_backend_init();
	return m;
}
