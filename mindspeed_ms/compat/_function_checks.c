/* The per-call reads and checks of mindspeed_ms.compat.function_grads (custom torch.autograd.Function as PyTorch runs
 * it) in one C call each, without a Python frame and its bytecode: megatron runs ~20 such Functions a training step
 * (its linear layers, the tensor-parallel mappings, the cross entropy), each with these loops in its forward and
 * backward.
 *
 *   inputs(args, tensor_type) -> list
 *     [(arg._shape, arg._dtype) if isinstance(arg, tensor_type) else None for arg in args] (args: a tuple).
 *   versions(saved) -> tuple
 *     tuple(getattr(t, "_version", None) for t in saved) (saved: any iterable).
 *   unchanged(saved, versions) -> bool
 *     whether every saved tensor whose version is not None is still at it (not tensor._version != version, as the
 *     Python check compares), the two tuples zipped as Python's zip does; False where either is not a tuple or a
 *     read or comparison fails (the Python check then decides, and raises).
 *   passed(inputs, needed, result) -> tuple | None
 *     what function_grads.checked_gradients returns, where it would only pass the gradients on: `result` (a tuple,
 *     or one gradient) holds one entry per input, each None, or a gradient for a tensor input that does not need
 *     one (dropped: None), or one of the input's shape and dtype (passed untouched). None in every other case
 *     (a count to trim or refuse, a gradient for a non-tensor input, one to sum or cast, a failed read): the Python
 *     function then decides, with its errors.
 *
 * The reads are the same attribute reads the Python code makes (MindSpore's getset descriptors, which raise no
 * profiler events either way), in the same order, with the same comparisons (Python's !=; for the dtype,
 * `is not` first, as the Python check: MindSpore's dtypes are one object each, and their != costs ~4 us). Optional
 * (setup.py): without it function_grads runs its Python loops and checks; tests/test_compat_function_checks.py runs
 * both over the same objects. Reference counting only; the free-threaded build is refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.compat._function_checks assumes the GIL; the Python loops are used"
#endif

/* What this module offers, as mindspeed_ms/compat/function_grads.py expects it (its FUNCTION_CHECKS_ABI). */
#define FUNCTION_CHECKS_ABI 1

static PyObject *s_shape, *s_dtype, *s_version;

static PyObject *inputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "inputs(args: tuple, tensor_type: type)");
        return NULL;
    }
    PyObject *items = args[0];
    PyObject *tensor_type = args[1];
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *arg = PyTuple_GET_ITEM(items, i);
        int is_tensor = PyObject_IsInstance(arg, tensor_type);
        if (is_tensor < 0) goto fail;
        if (!is_tensor) {
            PyList_SET_ITEM(out, i, Py_NewRef(Py_None));
            continue;
        }
        PyObject *shape = PyObject_GetAttr(arg, s_shape);
        if (shape == NULL) goto fail;
        PyObject *dtype = PyObject_GetAttr(arg, s_dtype);
        if (dtype == NULL) {
            Py_DECREF(shape);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, shape, dtype);
        Py_DECREF(shape);
        Py_DECREF(dtype);
        if (pair == NULL) goto fail;
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* getattr(object, "_version", None): an AttributeError gives None, any other error propagates. */
static PyObject *version_of(PyObject *object) {
    PyObject *version = PyObject_GetAttr(object, s_version);
    if (version == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    return version;
}

static PyObject *versions(PyObject *self, PyObject *saved) {
    (void)self;
    PyObject *items = PySequence_Tuple(saved); /* the tuple itself (a new reference) or the iterable's items */
    if (items == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    if (out != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *version = version_of(PyTuple_GET_ITEM(items, i));
            if (version == NULL) {
                Py_CLEAR(out);
                break;
            }
            PyTuple_SET_ITEM(out, i, version);
        }
    }
    Py_DECREF(items);
    return out;
}

/* `value != expected` as Python evaluates it (no identity shortcut, the result's truth): 1, 0, or -1 with an error. */
static int python_differs(PyObject *value, PyObject *expected) {
    PyObject *result = PyObject_RichCompare(value, expected, Py_NE);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

static PyObject *unchanged(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "unchanged(saved, versions)");
        return NULL;
    }
    if (!PyTuple_Check(args[0]) || !PyTuple_Check(args[1])) Py_RETURN_FALSE; /* the Python check decides */
    Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
    if (PyTuple_GET_SIZE(args[1]) < n) n = PyTuple_GET_SIZE(args[1]);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *expected = PyTuple_GET_ITEM(args[1], i);
        if (expected == Py_None) continue;
        PyObject *version = PyObject_GetAttr(PyTuple_GET_ITEM(args[0], i), s_version);
        if (version == NULL) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        int differs = python_differs(version, expected);
        Py_DECREF(version);
        if (differs != 0) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

/* `object.<name> != expected` (Python's comparison, as the Python check makes it; where `identical`, first
 * `is not`, as it does for the dtype): 1 or 0, or -1 where the read or the comparison failed (the error cleared). */
static int attribute_differs(PyObject *object, PyObject *name, PyObject *expected, int identical) {
    PyObject *value = PyObject_GetAttr(object, name);
    if (value == NULL) {
        PyErr_Clear();
        return -1;
    }
    int differs = identical && value == expected ? 0 : python_differs(value, expected);
    Py_DECREF(value);
    if (differs < 0) PyErr_Clear();
    return differs;
}

static PyObject *passed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "passed(inputs, needed, result)");
        return NULL;
    }
    PyObject *metas = args[0], *needed = args[1], *result = args[2];
    if (!PyList_Check(metas) || !PyTuple_Check(needed)) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(metas);
    int single = !PyTuple_Check(result);
    if ((single ? 1 : PyTuple_GET_SIZE(result)) != n || PyTuple_GET_SIZE(needed) < n) Py_RETURN_NONE;
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *grad = single ? result : PyTuple_GET_ITEM(result, i);
        PyObject *meta = PyList_GET_ITEM(metas, i);
        if (grad != Py_None) {
            if (meta == Py_None) goto other;
            int need = PyObject_IsTrue(PyTuple_GET_ITEM(needed, i));
            if (need < 0) {
                PyErr_Clear();
                goto other;
            }
            if (!need) {
                grad = Py_None;
            } else if (!PyTuple_Check(meta) || PyTuple_GET_SIZE(meta) != 2
                       || attribute_differs(grad, s_shape, PyTuple_GET_ITEM(meta, 0), 0) != 0
                       || attribute_differs(grad, s_dtype, PyTuple_GET_ITEM(meta, 1), 1) != 0) {
                goto other;
            }
        }
        PyTuple_SET_ITEM(out, i, Py_NewRef(grad));
    }
    return out;
other:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"inputs", (PyCFunction)(void (*)(void))inputs, METH_FASTCALL, "Each input's (shape, dtype), None for a non-tensor."},
    {"versions", versions, METH_O, "Each saved tensor's _version (None where it has none)."},
    {"unchanged", (PyCFunction)(void (*)(void))unchanged, METH_FASTCALL, "Whether no saved tensor changed version."},
    {"passed", (PyCFunction)(void (*)(void))passed, METH_FASTCALL,
     "The gradients as checked_gradients returns them where it passes them on; None otherwise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_function_checks", NULL, -1, methods};

PyMODINIT_FUNC PyInit__function_checks(void) {
    s_shape = PyUnicode_InternFromString("_shape");
    s_dtype = PyUnicode_InternFromString("_dtype");
    s_version = PyUnicode_InternFromString("_version");
    if (s_shape == NULL || s_dtype == NULL || s_version == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", FUNCTION_CHECKS_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
