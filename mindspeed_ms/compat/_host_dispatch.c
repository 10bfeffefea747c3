/* The hot host-memory lookups in one C call each: mindspeed_ms.compat.host_memory.host_array and
 * mindspeed_ms.compat.host_outputs.new_float32 without their Python frames.
 *
 * Both look an array up by a key built from a tensor's attributes, and the same keys come back every step (DDP's
 * buckets, parameters, gradients; the blocks MindSpore's pool hands back). The Python functions cost a frame and
 * their bytecode (~5-10 us a call on the shared CPUs, ~150 calls a training step); these objects make the same
 * reads in the same order and build the same key, and hand everything else to Python:
 *
 *   HostArray(setup, arrays, keep, fallback)(tensor, *, sync=True, dtype=None, flat=False)
 *     setup() -> (sync, address, stride), called once at the first call (MindSpore is imported then);
 *     sync() when asked, then tensor._shape (an exact tuple), tensor._dtype when dtype is None (true), address(tensor),
 *     stride(tensor) unless flat; the key (address, shape, strides or None, id(tensor's dtype) or None, dtype) is
 *     looked up in `arrays`; a miss returns keep(key, tensor's dtype or None, dtype), which builds and keeps the
 *     array. Anything else (other arguments, no `_shape`/`_dtype`, a shape that is not a tuple, a falsy dtype):
 *     fallback(tensor, sync=..., dtype=..., flat=...), with sync=False once this call has synced.
 *
 *   NewFloat32(setup, arrays, keep, fallback)(shape)
 *     setup() -> (empty, sync, address); a tuple `shape`: tensor = empty(shape), sync(), the key (address(tensor),
 *     shape) looked up in `arrays` -> (tensor, array); a miss returns keep(tensor, key). Anything else: fallback(shape).
 *     `empty` may be the tuple (op, primitive, type_id, device) of MindSpore's Empty op: then the tensor is
 *     op(primitive, [shape, type_id, device, False]), the call its Python layers (mint.empty, Empty.__call__) make.
 *
 * The objects have no profiler events of their own (as the C pass-through wrappers): a profile books their time to
 * their callers, which are mindspeed_ms's functions (ours). MindSpore's readers they call (builtins and method
 * descriptors) raise the C_CALL/C_RETURN events the interpreter raises when Python calls them, as in _view_add.c, so
 * a profile books those to MindSpore as before. tests/test_compat_host_memory.py and test_compat_host_outputs.py
 * run both paths over the same tensors.
 *
 * Optional (setup.py): without it the Python functions run. Reference counting only; the free-threaded build is
 * refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "../_profile_events.h"

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.compat._host_dispatch assumes the GIL; the Python functions are used"
#endif
#if PY_VERSION_HEX < 0x030B0000
#error "mindspeed_ms.compat._host_dispatch needs CPython 3.11 (PyThreadState_EnterTracing); the Python functions run"
#endif

/* What this module offers, as mindspeed_ms/compat/host_memory.py expects it (its HOST_DISPATCH_ABI). */
#define HOST_DISPATCH_ABI 2

static PyObject *s_shape, *s_dtype, *s_sync, *s_dtype_keyword, *s_flat, *fallback_kwnames;

/* `func(first, second)`, with the profiler's events where `func` is a builtin (MindSpore's `pyboost_empty`) */
static PyObject *call_traced2(PyObject *func, PyObject *first, PyObject *second) {
    PyObject *args[2] = {first, second};
    return call_traced_vector(func, args, 2, NULL);
}

/* `setup()` -> a tuple of `n` callables, stored in the empty `slots` (new references), never replaced afterwards;
 * 0 or -1 with an exception */
static int set_up(PyObject *setup, PyObject **slots, Py_ssize_t n) {
    PyObject *got = PyObject_CallNoArgs(setup);
    if (got == NULL) return -1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != n) {
        PyErr_Format(PyExc_TypeError, "_host_dispatch: setup() must return a tuple of %zd callables, not %R", n, got);
        Py_DECREF(got);
        return -1;
    }
    if (slots[0] == NULL) {  /* set once: another thread may have set them while setup() ran (calls use them) */
        for (Py_ssize_t i = 0; i < n; i++) {
            slots[i] = Py_NewRef(PyTuple_GET_ITEM(got, i));
        }
    }
    Py_DECREF(got);
    return 0;
}

/* the attribute `name` of `obj` (new reference); NULL without an exception when it is missing (AttributeError) */
static PyObject *attribute(PyObject *obj, PyObject *name, int *failed) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        } else {
            *failed = 1;
        }
    }
    return value;
}

/* -- HostArray ------------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *setup, *arrays, *keep, *fallback;
    PyObject *reads[3]; /* sync, address, stride: NULL until the first call */
    vectorcallfunc vectorcall;
} HostArray;

static PyObject *host_array_fallback(HostArray *self, PyObject *tensor, PyObject *sync, PyObject *dtype,
                                     PyObject *flat) {
    PyObject *args[4] = {tensor, sync, dtype, flat};
    return PyObject_Vectorcall(self->fallback, args, 1, fallback_kwnames);
}

static PyObject *host_array_call(HostArray *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *tensor = args[0], *sync = Py_True, *dtype = Py_None, *flat = Py_False;
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            int is_sync = name == s_sync || PyUnicode_Compare(name, s_sync) == 0;
            int is_dtype = !is_sync && (name == s_dtype_keyword || PyUnicode_Compare(name, s_dtype_keyword) == 0);
            int is_flat = !is_sync && !is_dtype && (name == s_flat || PyUnicode_Compare(name, s_flat) == 0);
            if (PyErr_Occurred()) return NULL;
            if (is_sync) {
                sync = args[1 + i];
            } else if (is_dtype) {
                dtype = args[1 + i];
            } else if (is_flat) {
                flat = args[1 + i];
            } else {
                return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);  /* its TypeError */
            }
        }
    }
    if (self->reads[0] == NULL && set_up(self->setup, self->reads, 3) < 0) return NULL;
    int synced = PyObject_IsTrue(sync);
    if (synced < 0) return NULL;
    if (synced) {
        PyObject *done = call_traced(self->reads[0], NULL);
        if (done == NULL) return NULL;
        Py_DECREF(done);
        sync = Py_False;
    }
    int failed = 0, is_flat = PyObject_IsTrue(flat);
    if (is_flat < 0) return NULL;
    PyObject *shape = NULL, *tensor_dtype = NULL, *address = NULL, *strides = NULL, *dtype_id = NULL, *key = NULL;
    PyObject *result = NULL;
    shape = attribute(tensor, s_shape, &failed);
    if (shape == NULL || !PyTuple_CheckExact(shape)) goto general;
    if (dtype == Py_None) {
        tensor_dtype = attribute(tensor, s_dtype, &failed);
        if (tensor_dtype == NULL) goto general;
        int truth = PyObject_IsTrue(tensor_dtype);
        if (truth < 0) goto end;
        if (!truth) goto general;
    }
    if ((address = call_traced(self->reads[1], tensor)) == NULL) goto end;
    if (is_flat) {
        strides = Py_NewRef(Py_None);
    } else {
        PyObject *raw = call_traced(self->reads[2], tensor);
        if (raw == NULL) goto end;
        strides = PyTuple_CheckExact(raw) ? Py_NewRef(raw) : PySequence_Tuple(raw);
        Py_DECREF(raw);
        if (strides == NULL) goto end;
    }
    dtype_id = tensor_dtype == NULL ? Py_NewRef(Py_None) : PyLong_FromVoidPtr(tensor_dtype);
    if (dtype_id == NULL) goto end;
    if ((key = PyTuple_Pack(5, address, shape, strides, dtype_id, dtype)) == NULL) goto end;
    result = PyDict_GetItemWithError(self->arrays, key);
    if (result != NULL) {
        Py_INCREF(result);
    } else if (!PyErr_Occurred()) {
        result = PyObject_CallFunctionObjArgs(self->keep, key, tensor_dtype == NULL ? Py_None : tensor_dtype, dtype,
                                              NULL);
    }
    goto end;
general:
    if (!failed) result = host_array_fallback(self, tensor, sync, dtype, flat);
end:
    Py_XDECREF(shape);
    Py_XDECREF(tensor_dtype);
    Py_XDECREF(address);
    Py_XDECREF(strides);
    Py_XDECREF(dtype_id);
    Py_XDECREF(key);
    return result;
}

static PyObject *host_array_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *setup, *arrays, *keep, *fallback;
    static char *names[] = {"setup", "arrays", "keep", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OO:HostArray", names, &setup, &PyDict_Type, &arrays, &keep,
                                     &fallback)) {
        return NULL;
    }
    HostArray *self = (HostArray *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->setup = Py_NewRef(setup);
    self->arrays = Py_NewRef(arrays);
    self->keep = Py_NewRef(keep);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = (vectorcallfunc)host_array_call;
    return (PyObject *)self;
}

static int host_array_traverse(HostArray *self, visitproc visit, void *arg) {
    Py_VISIT(self->setup);
    Py_VISIT(self->arrays);
    Py_VISIT(self->keep);
    Py_VISIT(self->fallback);
    for (int i = 0; i < 3; i++) Py_VISIT(self->reads[i]);
    return 0;
}

static int host_array_clear(HostArray *self) {
    Py_CLEAR(self->setup);
    Py_CLEAR(self->arrays);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->fallback);
    for (int i = 0; i < 3; i++) Py_CLEAR(self->reads[i]);
    return 0;
}

static void host_array_dealloc(HostArray *self) {
    PyObject_GC_UnTrack(self);
    host_array_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject HostArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.compat._host_dispatch.HostArray",
    .tp_doc = PyDoc_STR("HostArray(setup, arrays, keep, fallback)(tensor, *, sync=True, dtype=None, flat=False): "
                        "mindspeed_ms.compat.host_memory.host_array in one C call"),
    .tp_basicsize = sizeof(HostArray),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(HostArray, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = host_array_new,
    .tp_traverse = (traverseproc)host_array_traverse,
    .tp_clear = (inquiry)host_array_clear,
    .tp_dealloc = (destructor)host_array_dealloc,
};

/* -- NewFloat32 ------------------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *setup, *arrays, *keep, *fallback;
    PyObject *hot[3]; /* empty, sync, address: NULL until the first call */
    vectorcallfunc vectorcall;
} NewFloat32;

static PyObject *new_float32_call(NewFloat32 *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || !PyTuple_CheckExact(args[0])) {
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);  /* a list, a torch.Size: Python */
    }
    PyObject *shape = args[0];
    if (self->hot[0] == NULL && set_up(self->setup, self->hot, 3) < 0) return NULL;
    PyObject *empty = self->hot[0], *tensor, *address = NULL, *key = NULL, *result = NULL;
    if (PyTuple_CheckExact(empty) && PyTuple_GET_SIZE(empty) == 4) {  /* MindSpore's Empty op, its C entry */
        PyObject *arguments = PyList_New(4);
        if (arguments == NULL) return NULL;
        PyList_SET_ITEM(arguments, 0, Py_NewRef(shape));
        PyList_SET_ITEM(arguments, 1, Py_NewRef(PyTuple_GET_ITEM(empty, 2)));
        PyList_SET_ITEM(arguments, 2, Py_NewRef(PyTuple_GET_ITEM(empty, 3)));
        PyList_SET_ITEM(arguments, 3, Py_NewRef(Py_False));
        tensor = call_traced2(PyTuple_GET_ITEM(empty, 0), PyTuple_GET_ITEM(empty, 1), arguments);
        Py_DECREF(arguments);
    } else {
        tensor = PyObject_CallOneArg(empty, shape);
    }
    if (tensor == NULL) return NULL;
    PyObject *done = call_traced(self->hot[1], NULL);  /* the tensor has its memory once the queued kernels ran */
    if (done == NULL) goto end;
    Py_DECREF(done);
    if ((address = call_traced(self->hot[2], tensor)) == NULL) goto end;
    if ((key = PyTuple_Pack(2, address, shape)) == NULL) goto end;
    PyObject *array = PyDict_GetItemWithError(self->arrays, key);
    if (array != NULL) {
        result = PyTuple_Pack(2, tensor, array);
    } else if (!PyErr_Occurred()) {
        result = PyObject_CallFunctionObjArgs(self->keep, tensor, key, NULL);
    }
end:
    Py_DECREF(tensor);
    Py_XDECREF(address);
    Py_XDECREF(key);
    return result;
}

static PyObject *new_float32_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *setup, *arrays, *keep, *fallback;
    static char *names[] = {"setup", "arrays", "keep", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OO:NewFloat32", names, &setup, &PyDict_Type, &arrays, &keep,
                                     &fallback)) {
        return NULL;
    }
    NewFloat32 *self = (NewFloat32 *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->setup = Py_NewRef(setup);
    self->arrays = Py_NewRef(arrays);
    self->keep = Py_NewRef(keep);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = (vectorcallfunc)new_float32_call;
    return (PyObject *)self;
}

static int new_float32_traverse(NewFloat32 *self, visitproc visit, void *arg) {
    Py_VISIT(self->setup);
    Py_VISIT(self->arrays);
    Py_VISIT(self->keep);
    Py_VISIT(self->fallback);
    for (int i = 0; i < 3; i++) Py_VISIT(self->hot[i]);
    return 0;
}

static int new_float32_clear(NewFloat32 *self) {
    Py_CLEAR(self->setup);
    Py_CLEAR(self->arrays);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->fallback);
    for (int i = 0; i < 3; i++) Py_CLEAR(self->hot[i]);
    return 0;
}

static void new_float32_dealloc(NewFloat32 *self) {
    PyObject_GC_UnTrack(self);
    new_float32_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject NewFloat32Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.compat._host_dispatch.NewFloat32",
    .tp_doc = PyDoc_STR("NewFloat32(setup, arrays, keep, fallback)(shape): "
                        "mindspeed_ms.compat.host_outputs.new_float32 in one C call"),
    .tp_basicsize = sizeof(NewFloat32),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(NewFloat32, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = new_float32_new,
    .tp_traverse = (traverseproc)new_float32_traverse,
    .tp_clear = (inquiry)new_float32_clear,
    .tp_dealloc = (destructor)new_float32_dealloc,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_dispatch",
    "host_memory.host_array and host_outputs.new_float32 in one C call each.", -1, NULL,
};

PyMODINIT_FUNC PyInit__host_dispatch(void) {
    if (PyType_Ready(&HostArrayType) < 0 || PyType_Ready(&NewFloat32Type) < 0) return NULL;
    if ((s_shape = PyUnicode_InternFromString("_shape")) == NULL ||
        (s_dtype = PyUnicode_InternFromString("_dtype")) == NULL ||
        (s_sync = PyUnicode_InternFromString("sync")) == NULL ||
        (s_dtype_keyword = PyUnicode_InternFromString("dtype")) == NULL ||
        (s_flat = PyUnicode_InternFromString("flat")) == NULL ||
        (fallback_kwnames = Py_BuildValue("(sss)", "sync", "dtype", "flat")) == NULL) {
        return NULL;
    }
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    if (PyModule_AddObjectRef(mod, "HostArray", (PyObject *)&HostArrayType) < 0 ||
        PyModule_AddObjectRef(mod, "NewFloat32", (PyObject *)&NewFloat32Type) < 0 ||
        PyModule_AddIntConstant(mod, "ABI", HOST_DISPATCH_ABI) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
