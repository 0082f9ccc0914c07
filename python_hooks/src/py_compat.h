/*
 * py_compat.h - the few C-API calls the module uses that are newer than the
 * oldest CPython it builds for (3.8, requires-python in pyproject.toml).
 *
 * Each shim is the spelling CPython itself added later, defined only below
 * the version that added it, so the code reads as modern C-API everywhere
 * and the shims vanish on new interpreters.  The semantics follow
 * pythoncapi-compat (python/pythoncapi-compat), the project CPython keeps
 * for exactly this; we carry five functions, not its 2000 lines.
 *
 * Frame offsets matter for SITE records (site.c): PyFrame_GetLasti()
 * returns a byte offset into co_code on every version, the unit dis uses
 * for Instruction.offset, which anchor/_sites.py matches it against.
 * 3.8/3.9 store f_lasti in bytes; 3.10 stores it in 2-byte code units
 * (bpo-27129, "wordcode"); 3.11 added PyFrame_GetLasti() itself.
 */
#ifndef PY_COMPAT_H
#define PY_COMPAT_H

#include <Python.h>
#include <frameobject.h> /* PyFrameObject's fields before 3.11 */
#include <string.h>

#if PY_VERSION_HEX < 0x03090000
/* 3.8's PyMODINIT_FUNC lacks the visibility attribute (3.9 added
 * Py_EXPORTED_SYMBOL to it): under -fvisibility=hidden the import would
 * not find PyInit__anchor. */
#undef PyMODINIT_FUNC
#define PyMODINIT_FUNC __attribute__((visibility("default"))) PyObject *

/* 3.9 added it; f_code is the frame's code object (borrowed: return new). */
static inline PyCodeObject *PyFrame_GetCode(PyFrameObject *frame)
{
	Py_INCREF(frame->f_code);
	return frame->f_code;
}

/* 3.9 added it too: the calling frame, a new reference (NULL at the top). */
static inline PyFrameObject *PyFrame_GetBack(PyFrameObject *frame)
{
	Py_XINCREF(frame->f_back);
	return frame->f_back;
}

static inline PyObject *PyObject_CallOneArg(PyObject *fn, PyObject *arg)
{
	return PyObject_CallFunctionObjArgs(fn, arg, NULL);
}

static inline PyObject *PyObject_CallNoArgs(PyObject *fn)
{
	return PyObject_CallObject(fn, NULL);
}

/* 3.9's PyModule_AddType: the attribute is the name after the last dot. */
static inline int PyModule_AddType(PyObject *module, PyTypeObject *type)
{
	const char *dot = strrchr(type->tp_name, '.');

	if (PyType_Ready(type) < 0)
		return -1;
	Py_INCREF(type);
	if (PyModule_AddObject(module, dot ? dot + 1 : type->tp_name, (PyObject *)type) < 0) {
		Py_DECREF(type);
		return -1;
	}
	return 0;
}
#endif

#if PY_VERSION_HEX < 0x030B00B1
/* Byte offset of the instruction running in frame, -1 before the first. */
static inline int PyFrame_GetLasti(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030A00A7
	return frame->f_lasti < 0 ? -1 : frame->f_lasti * 2; /* code units */
#else
	return frame->f_lasti; /* bytes */
#endif
}
#endif

#endif /* PY_COMPAT_H */
