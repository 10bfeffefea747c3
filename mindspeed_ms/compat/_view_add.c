/* DDP's `main_grad.add_(grad)` in one C call: mindspeed_ms.compat.inplace.add_through_view without its Python.
 *
 * A ViewAdd object is built once per process with what the Python function reads (MindSpore's float32 and
 * float64 dtypes, the executor's sync, MindSpore's readers of an address and strides, inplace_checks'
 * records_grad). Called as `adder(tensor, other)`, it makes the same tests in the same order, reading the same
 * attributes (an AttributeError on any of them: False, the general path), and where they pass it adds `other`'s
 * elements to `tensor`'s host memory (`t[i] = t[i] + s[i]`: one IEEE addition per element, as NumPy's add and
 * MindSpore's CPU kernel round it; no fused operations, subnormals kept) and returns True; otherwise False,
 * nothing done. tests/test_compat_inplace.py runs both paths over the same cases and compares them bit for bit.
 *
 * Under a profiler, MindSpore's readers it calls (builtins) raise the C_CALL/C_RETURN events the interpreter raises
 * when Python code calls them, as in mindspeed_ms/engine/_passthrough.c: a profile books their time to them
 * (MindSpore's), as it did when the Python function called them, not to the caller. The sum itself raises the events
 * of this module's `host_add` (the same loop over two buffers): a profile books it to that builtin, with the other C
 * loops that stand in for MindSpore's kernels (benchmarks/bench_train.py counts those as host kernels, not as ours).
 * The rest of its time is its caller's (mindspeed_ms.compat.inplace_ops.add_): ours.
 *
 * InplaceAdd(adder, slow, dtype) is `Tensor.add_` in front of its Python wrappers (mindspeed_ms.compat.inplace.
 * view_adder_front): called as `tensor.add_(other)` (two positional arguments, no keyword) of a `tensor` whose `_dtype`
 * is `dtype`, it asks `adder` (a ViewAdd) first and returns
 * `tensor` where the sum was made; any other call, and a call the ViewAdd declines, is `slow(*args, **kwargs)`, the
 * Python wrapper that handles every case (and that would have asked the same ViewAdd first). It binds as a method
 * (a function's __get__) and carries a __dict__ (functools.update_wrapper gives it the wrapper's name and doc).
 *
 * Optional (setup.py): without it mindspeed_ms.compat.inplace uses the Python function. Reference counting only;
 * the free-threaded build is refused (the Python function runs there).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../_profile_events.h"

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.compat._view_add assumes the GIL; the Python function is used"
#endif
#if PY_VERSION_HEX < 0x030B0000
#error "mindspeed_ms.compat._view_add needs CPython 3.11 (PyThreadState_EnterTracing); the Python function is used"
#endif

/* What this module offers, as mindspeed_ms/compat/inplace.py expects it (its VIEW_ADD_ABI). */
#define VIEW_ADD_ABI 2
#define MAX_DIMS 64

typedef struct {
    PyObject_HEAD
    PyObject *float32, *float64, *sync, *address, *stride, *records_grad;
    vectorcallfunc vectorcall;
} ViewAdd;

static PyObject *s_dtype, *s_base, *s_storage_offset, *s_requires_grad, *s_shape;
static PyObject *host_add_function;  /* the module's `host_add`: what a profile books the sum to */

/* 1: `error` is an AttributeError (cleared), 0: another error (kept) */
static int attribute_error(void) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* `tensor.<name>` or NULL (error set) */
#define GET(target, obj, name) do { (target) = PyObject_GetAttr((obj), (name)); if ((target) == NULL) goto fail; } \
    while (0)

/* A sequence of ints into `out` (at most MAX_DIMS); -1 with an error set, else the length. */
static Py_ssize_t ints(PyObject *sequence, Py_ssize_t *out) {
    PyObject *fast = PySequence_Fast(sequence, "expected a sequence of ints");
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_DIMS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "more dimensions than the view add takes");
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsSsize_t(items[i]);
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return n;
}

/* NumPy's C-contiguity flag of an array of this shape and element strides (dimensions of one element take any
 * stride; an empty array is contiguous). */
static int c_contiguous(const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t n) {
    Py_ssize_t expected = 1;
    int contiguous = 1;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        if (shape[i] == 0) return 1;
        if (shape[i] != 1) {
            if (strides[i] != expected) contiguous = 0;
            expected *= shape[i];
        }
    }
    return contiguous;
}

/* Whether `tensor` takes part in autograd here: `tensor.requires_grad and records_grad(tensor)`; -1: error. */
static int recorded(ViewAdd *self, PyObject *tensor) {
    PyObject *requires = PyObject_GetAttr(tensor, s_requires_grad);
    if (requires == NULL) return -1;
    int truth = PyObject_IsTrue(requires);
    Py_DECREF(requires);
    if (truth <= 0) return truth;
    PyObject *records = PyObject_CallOneArg(self->records_grad, tensor);
    if (records == NULL) return -1;
    truth = PyObject_IsTrue(records);
    Py_DECREF(records);
    return truth;
}

static void add_float(float *target, const float *source, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) target[i] = target[i] + source[i];
}

static void add_double(double *target, const double *source, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) target[i] = target[i] + source[i];
}

static void add_memory(void *target, const void *source, Py_ssize_t n, Py_ssize_t itemsize) {
    if (itemsize == 4) add_float((float *)target, (const float *)source, n);
    else add_double((double *)target, (const double *)source, n);
}

/* host_add(target, source): target[i] = target[i] + source[i] over two C-contiguous buffers of float32 ("f") or float64
 * ("d") of the same size (NumPy arrays, memoryviews); the loop ViewAdd sums with. */
static PyObject *host_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "host_add takes two buffers (target, source)");
        return NULL;
    }
    Py_buffer target, source;
    if (PyObject_GetBuffer(args[0], &target, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &source, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&target);
        return NULL;
    }
    PyObject *result = NULL;
    const char *format = target.format == NULL ? "B" : target.format;
    const char *other_format = source.format == NULL ? "B" : source.format;
    Py_ssize_t itemsize = strcmp(format, "f") == 0 ? 4 : strcmp(format, "d") == 0 ? 8 : 0;
    if (itemsize == 0 || strcmp(format, other_format) != 0 || target.itemsize != itemsize ||
        source.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "host_add adds float32 or float64 buffers of one type, not '%s' and '%s'",
                     format, other_format);
    } else if (target.len != source.len) {
        PyErr_Format(PyExc_ValueError, "host_add: the buffers differ in size (%zd and %zd bytes)", target.len,
                     source.len);
    } else if ((const char *)target.buf < (const char *)source.buf + source.len &&
               (const char *)source.buf < (const char *)target.buf + target.len && target.buf != source.buf) {
        PyErr_SetString(PyExc_ValueError, "host_add: the buffers overlap (other than being the same memory)");
    } else {
        add_memory(target.buf, source.buf, target.len / itemsize, itemsize);
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&source);
    PyBuffer_Release(&target);
    return result;
}

static PyMethodDef module_functions[] = {
    {"host_add", (PyCFunction)(void (*)(void))host_add, METH_FASTCALL,
     PyDoc_STR("host_add(target, source): target += source, element by element, over C-contiguous float32 or float64 "
               "buffers of one size (the sum ViewAdd makes; a profile books that sum to this function)")},
    {NULL, NULL, 0, NULL},
};

/* The reads and tests of add_through_view; 1: summed, 0: not applicable, -1: error (not an AttributeError). */
static int view_add(ViewAdd *self, PyObject *tensor, PyObject *other) {
    PyObject *dtype = NULL, *tensor_dtype = NULL, *base = NULL, *offset = NULL, *value = NULL;
    PyObject *begin_obj = NULL, *other_begin_obj = NULL, *shape_obj = NULL, *strides_obj = NULL;
    PyObject *other_shape_obj = NULL, *other_strides_obj = NULL;
    Py_ssize_t shape[MAX_DIMS], strides[MAX_DIMS], other_shape[MAX_DIMS], other_strides[MAX_DIMS];
    int result = 0, truth;
    Py_ssize_t itemsize;

    GET(dtype, other, s_dtype);
    GET(tensor_dtype, tensor, s_dtype);
    if (dtype != tensor_dtype) goto done;
    if ((truth = PyObject_RichCompareBool(dtype, self->float32, Py_EQ)) < 0) goto fail;
    if (truth) {
        itemsize = 4;
    } else {
        if ((truth = PyObject_RichCompareBool(dtype, self->float64, Py_EQ)) < 0) goto fail;
        if (!truth) goto done;
        itemsize = 8;
    }
    GET(base, tensor, s_base);
    if (base == Py_None) {  /* _is_view: a tensor that names no base is a view when it starts past its storage's start */
        offset = PyObject_GetAttr(tensor, s_storage_offset);
        if (offset == NULL) {
            if (!attribute_error()) goto fail;
            goto done;  /* no storage_offset: not a view */
        }
        if ((value = PyObject_CallNoArgs(offset)) == NULL) goto fail;
        PyObject *zero = PyLong_FromLong(0);
        if (zero == NULL) goto fail;
        truth = PyObject_RichCompareBool(value, zero, Py_NE);
        Py_DECREF(zero);
        if (truth < 0) goto fail;
        if (!truth) goto done;
    }
    if ((truth = recorded(self, tensor)) < 0) goto fail;
    if (truth) goto done;
    if ((truth = recorded(self, other)) < 0) goto fail;
    if (truth) goto done;
    PyObject *synced = PyObject_CallNoArgs(self->sync);  /* a queued kernel's output has its memory once it ran */
    if (synced == NULL) goto fail;
    Py_DECREF(synced);
    if ((begin_obj = call_traced(self->address, tensor)) == NULL) goto fail;
    if ((other_begin_obj = call_traced(self->address, other)) == NULL) goto fail;
    GET(shape_obj, tensor, s_shape);
    if ((strides_obj = call_traced(self->stride, tensor)) == NULL) goto fail;
    GET(other_shape_obj, other, s_shape);
    if ((other_strides_obj = call_traced(self->stride, other)) == NULL) goto fail;
    uintptr_t begin = (uintptr_t)PyLong_AsVoidPtr(begin_obj);
    if (begin == 0 && PyErr_Occurred()) goto fail;
    uintptr_t other_begin = (uintptr_t)PyLong_AsVoidPtr(other_begin_obj);
    if (other_begin == 0 && PyErr_Occurred()) goto fail;
    Py_ssize_t dims = ints(shape_obj, shape), other_dims = ints(other_shape_obj, other_shape);
    if (dims < 0 || other_dims < 0) goto fail;
    if (ints(strides_obj, strides) != dims || ints(other_strides_obj, other_strides) != other_dims) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a tensor's strides do not match its shape");
        goto fail;
    }
    if (dims != other_dims) goto done;
    Py_ssize_t size = 1;
    for (Py_ssize_t i = 0; i < dims; i++) {
        if (shape[i] != other_shape[i]) goto done;
        size *= shape[i];
    }
    if (!c_contiguous(shape, strides, dims) || !c_contiguous(other_shape, other_strides, dims)) goto done;
    uintptr_t bytes = (uintptr_t)size * (uintptr_t)itemsize;
    if (begin != other_begin && begin < other_begin + bytes && other_begin < begin + bytes) goto done;
    if (size > 0) {
        PyThreadState *tstate = PyThreadState_Get();
        int traced = tstate->c_profilefunc != NULL && !tstate->tracing && host_add_function != NULL;
        if (traced && profile_event(tstate, PyTrace_C_CALL, host_add_function)) goto fail;
        add_memory((void *)begin, (const void *)other_begin, size, itemsize);
        if (traced && profile_event(tstate, PyTrace_C_RETURN, host_add_function)) goto fail;
    }
    result = 1;
    goto done;
fail:
    result = attribute_error() ? 0 : -1;
done:
    Py_XDECREF(dtype);
    Py_XDECREF(tensor_dtype);
    Py_XDECREF(base);
    Py_XDECREF(offset);
    Py_XDECREF(value);
    Py_XDECREF(begin_obj);
    Py_XDECREF(other_begin_obj);
    Py_XDECREF(shape_obj);
    Py_XDECREF(strides_obj);
    Py_XDECREF(other_shape_obj);
    Py_XDECREF(other_strides_obj);
    return result;
}

static PyObject *view_add_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "ViewAdd takes two positional arguments (tensor, other)");
        return NULL;
    }
    int result = view_add((ViewAdd *)callable, args[0], args[1]);
    if (result < 0) return NULL;
    return PyBool_FromLong(result);
}

static PyObject *view_add_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"float32", "float64", "sync", "address", "stride", "records_grad", NULL};
    PyObject *float32, *float64, *sync, *address, *stride, *records_grad;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO:ViewAdd", names, &float32, &float64, &sync, &address,
                                     &stride, &records_grad)) {
        return NULL;
    }
    ViewAdd *self = (ViewAdd *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->float32 = Py_NewRef(float32);
    self->float64 = Py_NewRef(float64);
    self->sync = Py_NewRef(sync);
    self->address = Py_NewRef(address);
    self->stride = Py_NewRef(stride);
    self->records_grad = Py_NewRef(records_grad);
    self->vectorcall = view_add_call;
    return (PyObject *)self;
}

static int view_add_traverse(ViewAdd *self, visitproc visit, void *arg) {
    Py_VISIT(self->float32);
    Py_VISIT(self->float64);
    Py_VISIT(self->sync);
    Py_VISIT(self->address);
    Py_VISIT(self->stride);
    Py_VISIT(self->records_grad);
    return 0;
}

static int view_add_clear(ViewAdd *self) {
    Py_CLEAR(self->float32);
    Py_CLEAR(self->float64);
    Py_CLEAR(self->sync);
    Py_CLEAR(self->address);
    Py_CLEAR(self->stride);
    Py_CLEAR(self->records_grad);
    return 0;
}

static void view_add_dealloc(ViewAdd *self) {
    PyObject_GC_UnTrack(self);
    view_add_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ViewAddType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.compat._view_add.ViewAdd",
    .tp_doc = PyDoc_STR("ViewAdd(float32, float64, sync, address, stride, records_grad): "
                        "(tensor, other) -> whether other was added to tensor's host memory"),
    .tp_basicsize = sizeof(ViewAdd),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ViewAdd, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = view_add_new,
    .tp_traverse = (traverseproc)view_add_traverse,
    .tp_clear = (inquiry)view_add_clear,
    .tp_dealloc = (destructor)view_add_dealloc,
};

/* ---------------------------------------------------------------- InplaceAdd: Tensor.add_'s common case */

typedef struct {
    PyObject_HEAD
    ViewAdd *adder;
    PyObject *slow, *dtype, *dict;
    vectorcallfunc vectorcall;
} InplaceAdd;

static PyObject *inplace_add_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    InplaceAdd *self = (InplaceAdd *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        PyObject *dtype = PyObject_GetAttr(args[0], s_dtype);
        if (dtype == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
            PyErr_Clear();
        } else {
            int same = dtype == self->dtype;
            Py_DECREF(dtype);
            if (same) {
                int done = view_add(self->adder, args[0], args[1]);
                if (done < 0) return NULL;
                if (done) return Py_NewRef(args[0]);
            }
        }
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *inplace_add_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"adder", "slow", "dtype", NULL};
    PyObject *adder, *slow, *dtype;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO:InplaceAdd", names, &ViewAddType, &adder, &slow, &dtype)) {
        return NULL;
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "InplaceAdd: slow must be callable");
        return NULL;
    }
    InplaceAdd *self = (InplaceAdd *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->adder = (ViewAdd *)Py_NewRef(adder);
    self->slow = Py_NewRef(slow);
    self->dtype = Py_NewRef(dtype);
    self->dict = NULL;
    self->vectorcall = inplace_add_call;
    return (PyObject *)self;
}

/* a function's __get__: bound to an instance it is a method, from the class itself */
static PyObject *inplace_add_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int inplace_add_traverse(InplaceAdd *self, visitproc visit, void *arg) {
    Py_VISIT(self->adder);
    Py_VISIT(self->slow);
    Py_VISIT(self->dtype);
    Py_VISIT(self->dict);
    return 0;
}

static int inplace_add_clear(InplaceAdd *self) {
    Py_CLEAR(self->adder);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->dict);
    return 0;
}

static void inplace_add_dealloc(InplaceAdd *self) {
    PyObject_GC_UnTrack(self);
    inplace_add_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef inplace_add_members[] = {
    {"slow", T_OBJECT, offsetof(InplaceAdd, slow), READONLY, "the Python wrapper every other call goes to"},
    {"adder", T_OBJECT, offsetof(InplaceAdd, adder), READONLY, "the ViewAdd asked first"},
    {"dtype", T_OBJECT, offsetof(InplaceAdd, dtype), READONLY, "the dtype of the tensors it is asked for"},
    {NULL},
};

static PyGetSetDef inplace_add_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyTypeObject InplaceAddType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.compat._view_add.InplaceAdd",
    .tp_doc = PyDoc_STR("InplaceAdd(adder, slow, dtype): Tensor.add_(tensor, other) of a dtype tensor through the "
                        "ViewAdd adder where it applies, else slow(*args, **kwargs)"),
    .tp_basicsize = sizeof(InplaceAdd),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(InplaceAdd, vectorcall),
    .tp_dictoffset = offsetof(InplaceAdd, dict),
    .tp_call = PyVectorcall_Call,
    .tp_new = inplace_add_new,
    .tp_descr_get = inplace_add_get,
    .tp_members = inplace_add_members,
    .tp_getset = inplace_add_getset,
    .tp_traverse = (traverseproc)inplace_add_traverse,
    .tp_clear = (inquiry)inplace_add_clear,
    .tp_dealloc = (destructor)inplace_add_dealloc,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_view_add",
    "DDP's main_grad.add_(grad) in one C call (mindspeed_ms.compat.inplace.add_through_view).", -1, module_functions,
};

PyMODINIT_FUNC PyInit__view_add(void) {
    if (PyType_Ready(&ViewAddType) < 0 || PyType_Ready(&InplaceAddType) < 0) return NULL;
    if ((s_dtype = PyUnicode_InternFromString("_dtype")) == NULL ||
        (s_base = PyUnicode_InternFromString("_base")) == NULL ||
        (s_storage_offset = PyUnicode_InternFromString("storage_offset")) == NULL ||
        (s_requires_grad = PyUnicode_InternFromString("requires_grad")) == NULL ||
        (s_shape = PyUnicode_InternFromString("_shape")) == NULL) {
        return NULL;
    }
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    if (PyModule_AddObjectRef(mod, "ViewAdd", (PyObject *)&ViewAddType) < 0 ||
        PyModule_AddObjectRef(mod, "InplaceAdd", (PyObject *)&InplaceAddType) < 0 ||
        PyModule_AddIntConstant(mod, "ABI", VIEW_ADD_ABI) < 0 ||
        (host_add_function = PyObject_GetAttrString(mod, "host_add")) == NULL) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
