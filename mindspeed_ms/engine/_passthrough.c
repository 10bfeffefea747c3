/* Pass-through wrappers in C: the thin wrappers a patch puts around a hot op, without a Python frame.
 *
 * Most of mindspeed_ms's wraps of MindSpore/MSAdapter ops do nothing on a call that succeeds: they call the
 * op and only look at what it raised (compat/refusals.py: PyTorch's exception class for a refusal), or they
 * check one flag first (compat/msadapter.py: MindSpore's grad flag, switched back on when an error cleared
 * it). A Python closure costs a frame per call, hundreds of calls a training step. The objects here do the
 * same in C (mindspeed_ms/engine/passthrough.py builds them, or the equivalent Python closures where this
 * extension is not built):
 *
 *   Guard(func, catch, on_error, check, fix): calls `fix()` when `check()` is false (both optional), then
 *       `func(*args, **kwargs)`; when that raises an instance of `catch` (a class or tuple of classes), the
 *       result is `on_error(error)`, called while `error` is the exception being handled (as in an `except`
 *       block: what it raises gets `error` as __context__). It binds as a method (a function's __get__) and
 *       carries a __dict__ (functools.update_wrapper gives it the op's name, doc and __wrapped__).
 *   GradRead(value, leaf, requires, retained, warn): `obj.<value>`, after calling `warn(0)` when
 *       `not obj.<leaf> and obj.<requires> and not getattr(obj, <retained>, False)` (Tensor.grad's getter).
 *   AttrWrite(name): `setattr(obj, name, value)` called as `(obj, value)` (a property's setter).
 *   Fork(func, slow, attr, slow_when, cls, unless): `func(*args, **kwargs)` on the common case, told by one
 *       attribute (a tensor's dtype), else `slow(*args, **kwargs)` (the Python wrapper that handles every case):
 *       without `cls`, the common case is `getattr(args[0], attr, None) is not slow_when`; with it, two
 *       positional arguments, both instances of `cls`, whose `attr` is the same object and not `unless`; with
 *       `test` instead of `attr`, a first positional argument for which `test(args[0])` is true.
 *       It binds and carries a __dict__ as Guard does.
 *   Mark(func, name, value): `func(*args, **kwargs)`'s result with `setattr(result, name, value)` (Tensor.data's
 *       and detach()'s alias flag); Mark(func, name, shape=attr, ndim=n): with the first positional argument as
 *       the value, set only when the result is another object and `len(args[0].<attr>) == n` (Tensor.t's view
 *       naming the matrix it transposes). It binds and carries a __dict__ as Guard does.
 *
 * Under a profiler the builtins they call raise the events the interpreter raises when Python code calls them
 * (call_as_python), so a profile books MindSpore's kernels to them as before, not to the caller of a wrapper.
 * Every call of one of these objects adds one to its type's counter (`calls()`): the benchmark counts what they cost
 * (they are invisible to cProfile, their time lands in the caller's).
 *
 * Reference counting only; no borrowed reference is kept across a call into Python code. The free-threaded
 * build is refused (the counter and the objects' fields assume the GIL): the Python closures run there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../_profile_events.h"

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.engine._passthrough assumes the GIL; the pure-Python wrappers are used"
#endif
#if PY_VERSION_HEX < 0x030B0000
#error "mindspeed_ms.engine._passthrough needs CPython 3.11 (PyErr_GetHandledException); the Python wrappers are used"
#endif

/* What this module offers, as mindspeed_ms/engine/passthrough.py expects it (its _ABI): a build older than its
 * source (an in-place build in a development tree, not rebuilt after a pull) is not used. Raise it with any
 * change of the types, their arguments or their behaviour. */
#define PASSTHROUGH_ABI 3

/* calls taken by each type: Guard, GradRead, AttrWrite, Fork, Mark */
static unsigned long long call_count[5] = {0, 0, 0, 0, 0};

/* ---------------------------------------------------------------- calls as a profiler sees them */

/* The wrapped functions are called as Python code calling them would be: call_traced_vector
 * (mindspeed_ms/_profile_events.h) raises a profiler's C_CALL/C_RETURN events around a builtin function or method
 * descriptor, so its time is booked to it (MindSpore's kernels: theirs), not to the Python code that called this
 * wrapper. Without a profiler: one pointer test. */

/* ---------------------------------------------------------------- Guard */

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *catch_;    /* a class or a tuple of classes, or NULL */
    PyObject *on_error;  /* NULL when catch_ is NULL */
    PyObject *check;     /* NULL: nothing checked */
    PyObject *fix;
    PyObject *dict;
    vectorcallfunc vectorcall;
} Guard;

static PyObject *
guard_handle(Guard *self)
{
    /* func raised: hand an exception of the classes asked for to on_error, as an `except` block would */
    if (self->catch_ == NULL || !PyErr_ExceptionMatches(self->catch_)) {
        return NULL;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject *previous = PyErr_GetHandledException();
    PyErr_SetHandledException(value);
    PyObject *result = PyObject_CallOneArg(self->on_error, value);
    PyErr_SetHandledException(previous);
    Py_XDECREF(previous);
    Py_DECREF(value);
    return result;
}

static PyObject *
guard_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Guard *self = (Guard *)op;
    call_count[0]++;
    if (self->check != NULL) {
        PyObject *flag = call_traced_vector(self->check, NULL, 0, NULL);
        if (flag == NULL) {
            return NULL;
        }
        int truth = PyObject_IsTrue(flag);
        Py_DECREF(flag);
        if (truth < 0) {
            return NULL;
        }
        if (!truth) {
            PyObject *fixed = call_traced_vector(self->fix, NULL, 0, NULL);
            if (fixed == NULL) {
                return NULL;
            }
            Py_DECREF(fixed);
        }
    }
    PyObject *result = call_traced_vector(self->func, args, nargsf, kwnames);
    if (result == NULL) {
        return guard_handle(self);
    }
    return result;
}

static PyObject *
guard_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"func", "catch", "on_error", "check", "fix", NULL};
    PyObject *func, *catch_ = Py_None, *on_error = Py_None, *check = Py_None, *fix = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO:Guard", names, &func, &catch_, &on_error, &check,
                                     &fix)) {
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "Guard: func must be callable");
        return NULL;
    }
    if ((catch_ == Py_None) != (on_error == Py_None) || (check == Py_None) != (fix == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "Guard: catch and on_error go together, and so do check and fix");
        return NULL;
    }
    if (on_error != Py_None && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "Guard: on_error must be callable");
        return NULL;
    }
    if (check != Py_None && (!PyCallable_Check(check) || !PyCallable_Check(fix))) {
        PyErr_SetString(PyExc_TypeError, "Guard: check and fix must be callable");
        return NULL;
    }
    Guard *self = (Guard *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->func = Py_NewRef(func);
    self->catch_ = catch_ == Py_None ? NULL : Py_NewRef(catch_);
    self->on_error = on_error == Py_None ? NULL : Py_NewRef(on_error);
    self->check = check == Py_None ? NULL : Py_NewRef(check);
    self->fix = fix == Py_None ? NULL : Py_NewRef(fix);
    self->dict = NULL;
    self->vectorcall = guard_vectorcall;
    return (PyObject *)self;
}

static int
guard_traverse(Guard *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->catch_);
    Py_VISIT(self->on_error);
    Py_VISIT(self->check);
    Py_VISIT(self->fix);
    Py_VISIT(self->dict);
    return 0;
}

static int
guard_clear(Guard *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->catch_);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->check);
    Py_CLEAR(self->fix);
    Py_CLEAR(self->dict);
    return 0;
}

static void
guard_dealloc(Guard *self)
{
    PyObject_GC_UnTrack(self);
    guard_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
guard_get(PyObject *self, PyObject *obj, PyObject *type)
{
    /* a function's binding: looked up on an instance, a bound method; on the class, itself */
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

static PyObject *
guard_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    /* pickled as a function is: by its qualified name, found again in its module */
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyObject *
guard_repr(PyObject *self)
{
    PyObject *name = PyObject_GetAttrString(self, "__qualname__");
    if (name == NULL) {
        PyErr_Clear();
        return PyUnicode_FromFormat("<guard of %R>", ((Guard *)self)->func);
    }
    PyObject *text = PyUnicode_FromFormat("<guard %U at %p>", name, self);
    Py_DECREF(name);
    return text;
}

static PyMemberDef guard_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(Guard, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Guard, vectorcall), READONLY, NULL},
    {"func", T_OBJECT, offsetof(Guard, func), READONLY, "the wrapped callable"},
    {NULL},
};

static PyMethodDef guard_methods[] = {
    {"__reduce__", guard_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef guard_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyTypeObject GuardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.engine._passthrough.Guard",
    .tp_basicsize = sizeof(Guard),
    .tp_dealloc = (destructor)guard_dealloc,
    .tp_vectorcall_offset = offsetof(Guard, vectorcall),
    .tp_repr = guard_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Guard(func, catch=None, on_error=None, check=None, fix=None): func called, fix() first when "
              "check() is false, on_error(error) for an exception of the classes catch",
    .tp_traverse = (traverseproc)guard_traverse,
    .tp_clear = (inquiry)guard_clear,
    .tp_methods = guard_methods,
    .tp_members = guard_members,
    .tp_getset = guard_getset,
    .tp_descr_get = guard_get,
    .tp_dictoffset = offsetof(Guard, dict),
    .tp_new = guard_new,
};

/* ---------------------------------------------------------------- Fork */

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *slow;
    PyObject *attr;
    PyObject *slow_when;  /* without cls: the attribute value that goes the slow way */
    PyObject *cls;        /* NULL: the one-argument test */
    PyObject *unless;     /* with cls: the shared value that still goes the slow way (NULL: none) */
    PyObject *test;       /* NULL, or the test instead of attr: common when test(args[0]) is true */
    PyObject *dict;
    vectorcallfunc vectorcall;
} Fork;

/* 1: the common case (func), 0: slow, -1: an error raised */
static int
fork_common(Fork *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        return 0;
    }
    if (self->test != NULL) {
        PyObject *passed = call_traced_vector(self->test, args, 1, NULL);
        if (passed == NULL) {
            return -1;
        }
        int truth = PyObject_IsTrue(passed);
        Py_DECREF(passed);
        return truth;
    }
    if (self->cls == NULL) {
        PyObject *value = PyObject_GetAttr(args[0], self->attr);
        if (value == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                return -1;
            }
            PyErr_Clear();
            return self->slow_when != Py_None;  /* getattr(..., None) */
        }
        int common = value != self->slow_when;
        Py_DECREF(value);
        return common;
    }
    if (nargs < 2) {
        return 0;
    }
    int is = PyObject_IsInstance(args[0], self->cls);
    if (is <= 0) {
        return is;
    }
    is = PyObject_IsInstance(args[1], self->cls);
    if (is <= 0) {
        return is;
    }
    PyObject *first = PyObject_GetAttr(args[0], self->attr);
    if (first == NULL) {
        return -1;
    }
    PyObject *second = PyObject_GetAttr(args[1], self->attr);
    if (second == NULL) {
        Py_DECREF(first);
        return -1;
    }
    int common = first == second && first != self->unless;
    Py_DECREF(first);
    Py_DECREF(second);
    return common;
}

static PyObject *
fork_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Fork *self = (Fork *)op;
    call_count[3]++;
    int common = fork_common(self, args, PyVectorcall_NARGS(nargsf));
    if (common < 0) {
        return NULL;
    }
    return call_traced_vector(common ? self->func : self->slow, args, nargsf, kwnames);
}

static PyObject *
fork_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"func", "slow", "attr", "slow_when", "cls", "unless", "test", NULL};
    PyObject *func, *slow, *attr = Py_None, *slow_when = Py_None, *cls = Py_None, *unless = Py_None, *test = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OOOOO:Fork", names, &func, &slow, &attr, &slow_when, &cls,
                                     &unless, &test)) {
        return NULL;
    }
    if (!PyCallable_Check(func) || !PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "Fork: func and slow must be callable");
        return NULL;
    }
    if ((test == Py_None) == (attr == Py_None) || (attr != Py_None && !PyUnicode_Check(attr)) ||
        (test != Py_None && !PyCallable_Check(test))) {
        PyErr_SetString(PyExc_TypeError, "Fork: either attr (a str) or test (a callable)");
        return NULL;
    }
    Fork *self = (Fork *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->func = Py_NewRef(func);
    self->slow = Py_NewRef(slow);
    self->attr = Py_NewRef(attr);
    self->slow_when = Py_NewRef(slow_when);
    self->cls = cls == Py_None ? NULL : Py_NewRef(cls);
    self->unless = unless == Py_None ? NULL : Py_NewRef(unless);
    self->test = test == Py_None ? NULL : Py_NewRef(test);
    self->dict = NULL;
    self->vectorcall = fork_vectorcall;
    return (PyObject *)self;
}

static int
fork_traverse(Fork *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->slow);
    Py_VISIT(self->slow_when);
    Py_VISIT(self->cls);
    Py_VISIT(self->unless);
    Py_VISIT(self->test);
    Py_VISIT(self->dict);
    return 0;
}

static int
fork_clear(Fork *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->attr);
    Py_CLEAR(self->slow_when);
    Py_CLEAR(self->cls);
    Py_CLEAR(self->unless);
    Py_CLEAR(self->test);
    Py_CLEAR(self->dict);
    return 0;
}

static void
fork_dealloc(Fork *self)
{
    PyObject_GC_UnTrack(self);
    fork_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef fork_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(Fork, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Fork, vectorcall), READONLY, NULL},
    {"func", T_OBJECT, offsetof(Fork, func), READONLY, "the op called on the common case"},
    {"slow", T_OBJECT, offsetof(Fork, slow), READONLY, "the wrapper called otherwise"},
    {"attr", T_OBJECT, offsetof(Fork, attr), READONLY, "the attribute the common case is told by (None: test)"},
    {"slow_when", T_OBJECT, offsetof(Fork, slow_when), READONLY, "without cls: the value that goes the slow way"},
    {"cls", T_OBJECT, offsetof(Fork, cls), READONLY, "None, or the class of the two-argument test"},
    {"test", T_OBJECT, offsetof(Fork, test), READONLY, "None, or the one-argument test instead of attr"},
    {NULL},
};

static PyTypeObject ForkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.engine._passthrough.Fork",
    .tp_basicsize = sizeof(Fork),
    .tp_dealloc = (destructor)fork_dealloc,
    .tp_vectorcall_offset = offsetof(Fork, vectorcall),
    .tp_repr = guard_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Fork(func, slow, attr=None, slow_when=None, cls=None, unless=None, test=None): func on the common case "
              "told by one attribute (or test(args[0])), else slow",
    .tp_traverse = (traverseproc)fork_traverse,
    .tp_clear = (inquiry)fork_clear,
    .tp_methods = guard_methods,
    .tp_members = fork_members,
    .tp_getset = guard_getset,
    .tp_descr_get = guard_get,
    .tp_dictoffset = offsetof(Fork, dict),
    .tp_new = fork_new,
};

/* ---------------------------------------------------------------- GradRead */

typedef struct {
    PyObject_HEAD
    PyObject *value;     /* attribute names */
    PyObject *leaf;
    PyObject *requires;
    PyObject *retained;
    PyObject *warn;
    vectorcallfunc vectorcall;
} GradRead;

static PyObject *
grad_read_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    GradRead *self = (GradRead *)op;
    call_count[1]++;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "GradRead takes exactly one positional argument");
        return NULL;
    }
    PyObject *obj = args[0];
    PyObject *attribute = PyObject_GetAttr(obj, self->leaf);
    if (attribute == NULL) {
        return NULL;
    }
    int truth = PyObject_IsTrue(attribute);
    Py_DECREF(attribute);
    if (truth < 0) {
        return NULL;
    }
    if (!truth) {
        attribute = PyObject_GetAttr(obj, self->requires);
        if (attribute == NULL) {
            return NULL;
        }
        truth = PyObject_IsTrue(attribute);
        Py_DECREF(attribute);
        if (truth < 0) {
            return NULL;
        }
        if (truth) {
            attribute = PyObject_GetAttr(obj, self->retained);  /* getattr(obj, retained, False) */
            if (attribute == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                    return NULL;
                }
                PyErr_Clear();
                truth = 0;
            }
            else {
                truth = PyObject_IsTrue(attribute);
                Py_DECREF(attribute);
                if (truth < 0) {
                    return NULL;
                }
            }
            if (!truth) {
                PyObject *frames = PyLong_FromLong(0);  /* no Python frame of ours in between */
                if (frames == NULL) {
                    return NULL;
                }
                PyObject *warned = PyObject_CallOneArg(self->warn, frames);
                Py_DECREF(frames);
                if (warned == NULL) {
                    return NULL;
                }
                Py_DECREF(warned);
            }
        }
    }
    return PyObject_GetAttr(obj, self->value);
}

static PyObject *
grad_read_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"value", "leaf", "requires", "retained", "warn", NULL};
    PyObject *value, *leaf, *requires, *retained, *warn;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UUUUO:GradRead", names, &value, &leaf, &requires, &retained,
                                     &warn)) {
        return NULL;
    }
    if (!PyCallable_Check(warn)) {
        PyErr_SetString(PyExc_TypeError, "GradRead: warn must be callable");
        return NULL;
    }
    GradRead *self = (GradRead *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->value = Py_NewRef(value);
    self->leaf = Py_NewRef(leaf);
    self->requires = Py_NewRef(requires);
    self->retained = Py_NewRef(retained);
    self->warn = Py_NewRef(warn);
    self->vectorcall = grad_read_vectorcall;
    return (PyObject *)self;
}

static int
grad_read_traverse(GradRead *self, visitproc visit, void *arg)
{
    Py_VISIT(self->warn);
    return 0;
}

static int
grad_read_clear(GradRead *self)
{
    Py_CLEAR(self->value);
    Py_CLEAR(self->leaf);
    Py_CLEAR(self->requires);
    Py_CLEAR(self->retained);
    Py_CLEAR(self->warn);
    return 0;
}

static void
grad_read_dealloc(GradRead *self)
{
    PyObject_GC_UnTrack(self);
    grad_read_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef grad_read_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(GradRead, vectorcall), READONLY, NULL},
    {NULL},
};

static PyTypeObject GradReadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.engine._passthrough.GradRead",
    .tp_basicsize = sizeof(GradRead),
    .tp_dealloc = (destructor)grad_read_dealloc,
    .tp_vectorcall_offset = offsetof(GradRead, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "GradRead(value, leaf, requires, retained, warn)(obj): obj.<value>, warn(0) called first when not "
              "obj.<leaf> and obj.<requires> and not getattr(obj, <retained>, False)",
    .tp_traverse = (traverseproc)grad_read_traverse,
    .tp_clear = (inquiry)grad_read_clear,
    .tp_members = grad_read_members,
    .tp_new = grad_read_new,
};

/* ---------------------------------------------------------------- AttrWrite */

typedef struct {
    PyObject_HEAD
    PyObject *name;
    vectorcallfunc vectorcall;
} AttrWrite;

static PyObject *
attr_write_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    call_count[2]++;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "AttrWrite takes exactly two positional arguments");
        return NULL;
    }
    if (PyObject_SetAttr(args[0], ((AttrWrite *)op)->name, args[1]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
attr_write_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U:AttrWrite", names, &name)) {
        return NULL;
    }
    AttrWrite *self = (AttrWrite *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->name = Py_NewRef(name);
    self->vectorcall = attr_write_vectorcall;
    return (PyObject *)self;
}

static void
attr_write_dealloc(AttrWrite *self)
{
    Py_CLEAR(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef attr_write_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(AttrWrite, vectorcall), READONLY, NULL},
    {NULL},
};

static PyTypeObject AttrWriteType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.engine._passthrough.AttrWrite",
    .tp_basicsize = sizeof(AttrWrite),
    .tp_dealloc = (destructor)attr_write_dealloc,
    .tp_vectorcall_offset = offsetof(AttrWrite, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "AttrWrite(name)(obj, value): setattr(obj, name, value)",
    .tp_members = attr_write_members,
    .tp_new = attr_write_new,
};

/* ---------------------------------------------------------------- Mark */

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *name;
    PyObject *value;       /* NULL: the first positional argument (with shape and ndim) */
    PyObject *shape;       /* with value NULL: the first argument's attribute whose length is ndim */
    Py_ssize_t ndim;
    PyObject *dict;
    vectorcallfunc vectorcall;
} Mark;

static PyObject *
mark_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Mark *self = (Mark *)op;
    call_count[4]++;
    PyObject *result = call_traced_vector(self->func, args, nargsf, kwnames);
    if (result == NULL) {
        return NULL;
    }
    PyObject *value = self->value;
    if (value == NULL) {
        /* the first argument, when the result is another object and the argument's shape has ndim entries */
        if (PyVectorcall_NARGS(nargsf) < 1 || result == args[0]) {
            return result;
        }
        PyObject *shape = PyObject_GetAttr(args[0], self->shape);
        if (shape == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        Py_ssize_t length = PyObject_Length(shape);
        Py_DECREF(shape);
        if (length < 0) {
            Py_DECREF(result);
            return NULL;
        }
        if (length != self->ndim) {
            return result;
        }
        value = args[0];
    }
    if (PyObject_SetAttr(result, self->name, value) < 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

static PyObject *
mark_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"func", "name", "value", "shape", "ndim", NULL};
    PyObject *func, *name, *value = NULL, *shape = NULL;
    Py_ssize_t ndim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OU|O$Un:Mark", names, &func, &name, &value, &shape, &ndim)) {
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "Mark: func must be callable");
        return NULL;
    }
    if ((value == NULL) == (shape == NULL) || (shape != NULL && ndim < 0)) {
        PyErr_SetString(PyExc_TypeError, "Mark: either value, or shape (a str) and ndim (>= 0) for the first argument");
        return NULL;
    }
    Mark *self = (Mark *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->func = Py_NewRef(func);
    self->name = Py_NewRef(name);
    self->value = Py_XNewRef(value);
    self->shape = Py_XNewRef(shape);
    self->ndim = ndim;
    self->dict = NULL;
    self->vectorcall = mark_vectorcall;
    return (PyObject *)self;
}

static int
mark_traverse(Mark *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->value);
    Py_VISIT(self->dict);
    return 0;
}

static int
mark_clear(Mark *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->name);
    Py_CLEAR(self->value);
    Py_CLEAR(self->shape);
    Py_CLEAR(self->dict);
    return 0;
}

static void
mark_dealloc(Mark *self)
{
    PyObject_GC_UnTrack(self);
    mark_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef mark_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(Mark, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Mark, vectorcall), READONLY, NULL},
    {"func", T_OBJECT, offsetof(Mark, func), READONLY, "the op whose result is marked"},
    {NULL},
};

static PyTypeObject MarkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.engine._passthrough.Mark",
    .tp_basicsize = sizeof(Mark),
    .tp_dealloc = (destructor)mark_dealloc,
    .tp_vectorcall_offset = offsetof(Mark, vectorcall),
    .tp_repr = guard_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Mark(func, name, value) or Mark(func, name, shape=..., ndim=...): func's result with the attribute "
              "name set to value (or to the first argument)",
    .tp_traverse = (traverseproc)mark_traverse,
    .tp_clear = (inquiry)mark_clear,
    .tp_methods = guard_methods,
    .tp_members = mark_members,
    .tp_getset = guard_getset,
    .tp_descr_get = guard_get,
    .tp_dictoffset = offsetof(Mark, dict),
    .tp_new = mark_new,
};

/* ---------------------------------------------------------------- module */

static PyObject *
calls(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{sKsKsKsKsK}", "Guard", call_count[0], "GradRead", call_count[1], "AttrWrite",
                         call_count[2], "Fork", call_count[3], "Mark", call_count[4]);
}

static PyMethodDef module_methods[] = {
    {"calls", calls, METH_NOARGS, "How many calls the objects of each type have taken: {type name: count}."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mindspeed_ms.engine._passthrough",
    .m_doc = "Pass-through wrappers in C (see mindspeed_ms/engine/passthrough.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__passthrough(void)
{
    if (PyType_Ready(&GuardType) < 0 || PyType_Ready(&ForkType) < 0 || PyType_Ready(&GradReadType) < 0 ||
        PyType_Ready(&AttrWriteType) < 0 || PyType_Ready(&MarkType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Guard", (PyObject *)&GuardType) < 0 ||
        PyModule_AddObjectRef(module, "GradRead", (PyObject *)&GradReadType) < 0 ||
        PyModule_AddObjectRef(module, "AttrWrite", (PyObject *)&AttrWriteType) < 0 ||
        PyModule_AddObjectRef(module, "Fork", (PyObject *)&ForkType) < 0 ||
        PyModule_AddObjectRef(module, "Mark", (PyObject *)&MarkType) < 0 ||
        PyModule_AddIntConstant(module, "ABI", PASSTHROUGH_ABI) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
