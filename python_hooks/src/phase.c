/*
 * phase.c - `anchor.phase(name)`: a context manager and a decorator.
 *
 * `with anchor.phase("fwd"):` writes BEGIN on entry and END on exit (also
 * when the block raises; the exception propagates).  The object holds only
 * the name, so one instance may be entered many times, nested, or from
 * several threads at once.  Construction goes through tp_vectorcall so a
 * `with` block costs one small allocation and two writer calls.
 *
 * As a decorator, phase(name)(func) hands over to a Python helper that
 * anchor/__init__.py registers (it uses functools.wraps and handles
 * coroutine functions); decorating is rare, so Python is fine there.
 *
 * `async with anchor.phase("fetch"):` writes the same BEGIN/END, each with
 * a range id in the value (flag VALUE): the identity of the contextvars
 * Context the code runs in.  asyncio (and trio, and anything built on
 * Context.run) runs every task in its own Context object, and that object
 * stays the same across the task's awaits, so BEGIN and END of one task's
 * range carry the same id while other tasks' ranges on the same thread
 * carry theirs: anchorpost pairs an END that has an id with the open BEGIN
 * of the same name and the same id (ring_format.h), not with whichever
 * BEGIN is innermost.  No state is kept between enter and exit, so one
 * phase object may be shared by any number of concurrent tasks.
 *
 * Optional NVTX: when anchor.nvtx(True) registered push/pop callables, the
 * sync `with` also pushes/pops an NVTX range of the same name (Nsight shows
 * the same phases).  Off, it costs one NULL test.
 */
#include "pyanchor.h"

#include <structmember.h>

PyObject *pya_decorator;
PyObject *pya_nvtx_push, *pya_nvtx_pop;

/* The range id of the running task: its Context object's address, 0 when
 * this thread never entered a Context (then the END pairs by name alone).
 * Addresses are reused only after a Context dies, and a dead task has no
 * open `async with` left (its __aexit__ ran when it finished or was
 * closed). */
static uint64_t context_id(void)
{
	return (uint64_t)(uintptr_t)PyThreadState_Get()->context;
}

/* An awaitable that is already done: `await d` returns d->value at once,
 * without suspending (am_await returns d itself, whose first __next__
 * raises StopIteration(value)).  What __aenter__/__aexit__ hand back. */
typedef struct {
	PyObject_HEAD
	PyObject *value;
} done_object;

static PyObject *done_new(PyObject *value)
{
	done_object *d = PyObject_New(done_object, &pya_done_type);
	if (!d)
		return NULL;
	Py_INCREF(value);
	d->value = value;
	return (PyObject *)d;
}

static void done_dealloc(done_object *d)
{
	Py_XDECREF(d->value);
	PyObject_Free(d);
}

static PyObject *done_self(PyObject *d)
{
	Py_INCREF(d);
	return d;
}

static PyObject *done_next(done_object *d)
{
	/* Wrap the value: a tuple or exception would be taken as args. */
	PyObject *e = PyObject_CallOneArg(PyExc_StopIteration, d->value);
	if (e) {
		PyErr_SetObject(PyExc_StopIteration, e);
		Py_DECREF(e);
	}
	return NULL;
}

static PyAsyncMethods done_async = {
	.am_await = done_self,
};

PyTypeObject pya_done_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "anchor._anchor._done",
	.tp_basicsize = sizeof(done_object),
	.tp_dealloc = (destructor)done_dealloc,
	.tp_as_async = &done_async,
	.tp_iter = done_self,
	.tp_iternext = (iternextfunc)done_next,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An awaitable that is already done (anchor.phase's __aenter__/__aexit__).",
};

/* NVTX push/pop through the registered callables.  An NVTX failure must
 * not break the user's block: the error is dropped (anchor.nvtx() probed
 * the callables once, so this is the unexpected case). */
static void nvtx_call(PyObject *fn, PyObject *arg)
{
	PyObject *r = arg ? PyObject_CallOneArg(fn, arg) : PyObject_CallNoArgs(fn);
	if (r)
		Py_DECREF(r);
	else
		PyErr_Clear();
}
PyObject *pya_device_hook;
int pya_device_all;

typedef struct {
	PyObject_HEAD
	PyObject *name;   /* the str, kept alive for its cached UTF-8 */
	const char *utf8; /* borrowed from name */
	Py_ssize_t len;
	int device;       /* phase(name, device=True) */
} phase_object;

static PyObject *phase_make(PyTypeObject *type, PyObject *name, int device)
{
	phase_object *p;
	const char *s;
	Py_ssize_t n;

	if (pya_name_utf8(name, &s, &n) < 0)
		return NULL;
	p = (phase_object *)type->tp_alloc(type, 0);
	if (!p)
		return NULL;
	Py_INCREF(name);
	p->name = name;
	p->utf8 = s;
	p->len = n;
	p->device = device;
	return (PyObject *)p;
}

static PyObject *phase_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
	int device = 0;

	if (nargs != 1)
		goto usage;
	if (kwnames && PyTuple_GET_SIZE(kwnames)) {
		/* Only device=...: the one keyword, off the common path. */
		if (PyTuple_GET_SIZE(kwnames) != 1 ||
		    PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "device"))
			goto usage;
		if ((device = PyObject_IsTrue(args[1])) < 0)
			return NULL;
	}
	return phase_make((PyTypeObject *)type, args[0], device);
usage:
	PyErr_SetString(PyExc_TypeError, "phase(name, device=False) takes one positional argument");
	return NULL;
}

static PyObject *phase_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"name", "device", NULL};
	PyObject *name;
	int device = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:phase", kw, &name, &device))
		return NULL;
	return phase_make(type, name, device);
}

/* The device edge after the host record.  An error in the hook must not
 * break the user's `with` block: it is reported as unraisable. */
static void device_edge(phase_object *p, int is_end)
{
	PyObject *r = PyObject_CallFunction(pya_device_hook, "Oi", p->name, is_end);
	if (r)
		Py_DECREF(r);
	else
		PyErr_WriteUnraisable(pya_device_hook);
}

static void phase_dealloc(phase_object *p)
{
	Py_XDECREF(p->name);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

PyObject *pya_set_nvtx(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 2 || (args[0] == Py_None) != (args[1] == Py_None) ||
	    (args[0] != Py_None && (!PyCallable_Check(args[0]) || !PyCallable_Check(args[1])))) {
		PyErr_SetString(PyExc_TypeError, "_set_nvtx(push, pop) takes two callables or two Nones");
		return NULL;
	}
	Py_CLEAR(pya_nvtx_push);
	Py_CLEAR(pya_nvtx_pop);
	if (args[0] != Py_None) {
		Py_INCREF(args[0]);
		Py_INCREF(args[1]);
		pya_nvtx_push = args[0];
		pya_nvtx_pop = args[1];
	}
	Py_RETURN_NONE;
}

static PyObject *phase_enter(phase_object *p, PyObject *unused)
{
	pya.event(ANCHOR_KIND_BEGIN, p->utf8, (size_t)p->len, 0, 0);
	if (PYA_SITE_DUE())
		pya_site_check(p->name, 0);
	if (pya_nvtx_push)
		nvtx_call(pya_nvtx_push, p->name);
	if (pya_device_hook && (p->device || pya_device_all))
		device_edge(p, 0);
	Py_INCREF(p);
	return (PyObject *)p;
}

static PyObject *phase_exit(phase_object *p, PyObject *const *args, Py_ssize_t nargs)
{
	if (pya_nvtx_pop)
		nvtx_call(pya_nvtx_pop, NULL);
	pya.event(ANCHOR_KIND_END, p->utf8, (size_t)p->len, 0, 0);
	if (pya_device_hook && (p->device || pya_device_all))
		device_edge(p, 1);
	Py_RETURN_FALSE; /* never swallow the block's exception */
}

static void event_with_id(int kind, phase_object *p)
{
	uint64_t id = context_id();
	pya.event(kind, p->utf8, (size_t)p->len, id ? ANCHOR_FLAG_VALUE : 0, id);
}

static PyObject *phase_aenter(phase_object *p, PyObject *unused)
{
	event_with_id(ANCHOR_KIND_BEGIN, p);
	if (PYA_SITE_DUE())
		pya_site_check(p->name, 0);
	return done_new((PyObject *)p);
}

static PyObject *phase_aexit(phase_object *p, PyObject *const *args, Py_ssize_t nargs)
{
	event_with_id(ANCHOR_KIND_END, p);
	return done_new(Py_False); /* never swallow the block's exception */
}

static PyObject *phase_call(phase_object *p, PyObject *args, PyObject *kwargs)
{
	if (PyTuple_GET_SIZE(args) != 1 || (kwargs && PyDict_GET_SIZE(kwargs)) ||
	    !PyCallable_Check(PyTuple_GET_ITEM(args, 0))) {
		PyErr_SetString(PyExc_TypeError, "phase(name) decorates exactly one callable");
		return NULL;
	}
	if (!pya_decorator) {
		PyErr_SetString(PyExc_RuntimeError, "anchor.phase decorator helper not registered");
		return NULL;
	}
	return PyObject_CallFunctionObjArgs(pya_decorator, (PyObject *)p, PyTuple_GET_ITEM(args, 0), NULL);
}

static PyObject *phase_repr(phase_object *p)
{
	return PyUnicode_FromFormat("anchor.phase(%R)", p->name);
}

static PyMethodDef phase_methods[] = {
	{"__enter__", (PyCFunction)phase_enter, METH_NOARGS, "Write BEGIN; returns the phase."},
	{"__exit__", (PyCFunction)(void (*)(void))phase_exit, METH_FASTCALL,
	 "Write END; never suppresses the exception."},
	{"__aenter__", (PyCFunction)phase_aenter, METH_NOARGS,
	 "Write BEGIN with this task's range id; returns an awaitable giving the phase."},
	{"__aexit__", (PyCFunction)(void (*)(void))phase_aexit, METH_FASTCALL,
	 "Write END with this task's range id; never suppresses the exception."},
	{NULL, NULL, 0, NULL},
};

static PyMemberDef phase_members[] = {
	{"name", T_OBJECT, offsetof(phase_object, name), READONLY, "The phase name (str)."},
	{"device", T_INT, offsetof(phase_object, device), READONLY, "1: also device-side edges."},
	{NULL, 0, 0, 0, NULL},
};

PyTypeObject pya_phase_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "anchor._anchor.phase",
	.tp_basicsize = sizeof(phase_object),
	.tp_dealloc = (destructor)phase_dealloc,
	.tp_repr = (reprfunc)phase_repr,
	.tp_call = (ternaryfunc)phase_call,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "phase(name, device=False)\n--\n\n"
		  "A named range: `with anchor.phase(name):` writes BEGIN on entry and END\n"
		  "on exit (also when the block raises; the exception propagates).\n"
		  "`async with anchor.phase(name):` does the same inside coroutines, tagging\n"
		  "BEGIN/END with the task's range id so concurrent tasks pair correctly.\n"
		  "`@anchor.phase(name)` wraps a function (or coroutine function) so each\n"
		  "call runs inside the range.  The object holds only the name: reuse it,\n"
		  "nest it, share it between threads.  Name rules as for mark().\n"
		  "device=True: each edge also records a device event on the current\n"
		  "stream (anchor.device_edges(); a no-op until that is enabled).",
	.tp_methods = phase_methods,
	.tp_members = phase_members,
	.tp_new = phase_new,
	.tp_vectorcall = phase_vectorcall,
};
