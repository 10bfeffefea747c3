/* Calls from mindspeed_ms's C extensions as a profiler sees them (included by engine/_passthrough.c,
 * compat/_view_add.c, compat/_host_dispatch.c, compat/_host_bodies.c and compat/_host_wrappers.c; not a module of its
 * own).
 *
 * When Python code calls a builtin or a method descriptor, the interpreter raises the profiler's C_CALL and
 * C_RETURN (or C_EXCEPTION) events around it, so cProfile books the builtin's time to the builtin. A C extension
 * calling the same function raises none: its time would land in whichever Python function called the extension.
 * These helpers raise the interpreter's events (a method descriptor's bound to its first argument, a bound method of
 * a builtin named by the builtin) when a profiler is on; without one they cost one pointer test. MindSpore's ops
 * and readers called from our C objects are thereby booked to MindSpore, as when Python called them. */
#ifndef MINDSPEED_MS_PROFILE_EVENTS_H
#define MINDSPEED_MS_PROFILE_EVENTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

static inline int profile_event(PyThreadState *tstate, int what, PyObject *event) {
    PyThreadState_EnterTracing(tstate);
    int failed = tstate->c_profilefunc(tstate->c_profileobj, PyEval_GetFrame(), what, event);
    PyThreadState_LeaveTracing(tstate);
    return failed;
}

/* `func(*args, **kwnames)` between the C_CALL and C_RETURN (or C_EXCEPTION) events naming `event` */
static inline PyObject *call_with_events(PyThreadState *tstate, PyObject *func, PyObject *event,
                                         PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (profile_event(tstate, PyTrace_C_CALL, event)) return NULL;
    PyObject *result = PyObject_Vectorcall(func, args, nargsf, kwnames);
    if (result == NULL) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (profile_event(tstate, PyTrace_C_EXCEPTION, event)) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
        } else {
            PyErr_Restore(type, value, traceback);
        }
    } else if (profile_event(tstate, PyTrace_C_RETURN, event)) {
        Py_CLEAR(result);
    }
    return result;
}

/* `func(*args, **kwnames)` with the events where a profiler is on and `func` is a builtin, a bound method of one
 * (the events name the builtin) or a method descriptor with a first argument (the events name it bound to that) */
static inline PyObject *call_traced_vector(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyThreadState *tstate = PyThreadState_Get();
    PyObject *named = PyMethod_Check(func) ? PyMethod_GET_FUNCTION(func) : func;
    int descriptor = Py_IS_TYPE(func, &PyMethodDescr_Type) && PyVectorcall_NARGS(nargsf) >= 1;
    if (tstate->c_profilefunc == NULL || tstate->tracing || !(PyCFunction_Check(named) || descriptor)) {
        return PyObject_Vectorcall(func, args, nargsf, kwnames);
    }
    if (!descriptor) {
        return call_with_events(tstate, func, named, args, nargsf, kwnames);
    }
    PyObject *bound = Py_TYPE(func)->tp_descr_get(func, args[0], (PyObject *)Py_TYPE(args[0]));
    if (bound == NULL) {
        PyErr_Clear();
        return PyObject_Vectorcall(func, args, nargsf, kwnames);
    }
    PyObject *result = call_with_events(tstate, func, bound, args, nargsf, kwnames);
    Py_DECREF(bound);
    return result;
}

/* `func(arg)`, or `func()` where `arg` is NULL, with the events as call_traced_vector */
static inline PyObject *call_traced(PyObject *func, PyObject *arg) {
    return call_traced_vector(func, &arg, arg == NULL ? 0 : 1, NULL);
}

#endif
