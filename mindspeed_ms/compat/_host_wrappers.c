/* The per-call tests of the hot wrappers in one C call each, no Python frame: host_layer_norm's layer_norm wrapper,
 * host_bda's bias-dropout-add wrapper (the tiny example calls them ten and four times a training step; their Python
 * tests and frames were ~0.7% of its step, ~8% of our own code's samples) and host_linear's wrapper of megatron's
 * linear function (in _host_linear.c until round 22).
 *
 *   LayerNorm(op, function, float32, min_elements)(input, normalized_shape, weight=None, bias=None, eps=1e-5)
 *     host_layer_norm.python_layer_norm_wrapper's function: the tests of host_layer_norm._size in the same order
 *     (input._shape a sequence of ints whose product is at least min_elements, input._dtype is float32, eps an int
 *     or float but not a bool, normalized_shape an int or an iterable of ints, not empty, at most as long as the
 *     shape and equal to its tail; weight and bias None or of that shape and float32), then
 *     function().apply(input, weight, bias, n, float(eps)) (`function` called at the first such call);
 *     anything else (more arguments, other keywords, a test failing) goes
 *     to op as the call came.
 *
 *   BiasDropoutAdd(op, function, float32, contiguous)(x_with_bias, residual, prob, training)
 *     host_bda.python_bias_dropout_add_wrapper's function: a 2-tuple (x, bias) and host_bda.plain's tests in the
 *     same order, then function().apply(x, residual, bias); anything else to op(x_with_bias, residual, prob,
 *     training) (a call that does not bind: to op as it came, which raises its own TypeError).
 *
 *   Linear(op, apply, float32, contiguous, autocast)(input, weight, bias, gradient_accumulation_fusion, allreduce_dgrad,
 *          sequence_parallel, grad_output_buffer=None, wgrad_deferral_limit=0, async_grad_allreduce=None)
 *     host_linear.python_linear_wrapper's function: megatron's parameters bound, the plain case (the flags off, no
 *     deferral buffer, host_linear._is_plain's tensor tests, autocast("cuda") false) to apply(input, weight, bias),
 *     anything else to op with every argument by keyword (a call that does not bind: to op as it came).
 *
 * `contiguous` is MindSpore's reader (a builtin): called with the profiler's events (_profile_events.h) as when
 * Python calls it. tests/test_compat_host_wrappers.py runs both forms of each over the same calls.
 *
 * Optional (setup.py): without it the Python functions run. Reference counting only; the free-threaded build is
 * refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>

#include "../_profile_events.h"

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.compat._host_wrappers assumes the GIL; the Python functions are used"
#endif

/* What this module offers, as mindspeed_ms/compat/host_extensions.py expects it (its HOST_WRAPPERS_ABI). */
#define HOST_WRAPPERS_ABI 2

static PyObject *s_shape, *s_dtype;

/* the objects a wrapper is made with: the wrapped function, the Function's maker (called once, at the first call taken:
 * the Function is built then, as the Python wrappers build it; a Linear's is its apply), float32, a fourth
 * (min_elements or MindSpore's contiguity reader), a fifth (a Linear's autocast reader; NULL for the others) */
enum { OP, FUNCTION, FLOAT32, FOURTH, FIFTH, SLOTS };

typedef struct {
    PyObject_HEAD
    PyObject *slots[SLOTS];
    PyObject *apply; /* function().apply: NULL until the first call taken (a Linear's: given) */
    vectorcallfunc vectorcall;
    PyObject *dict;
} Wrapper;

/* apply(*args) of the Function the maker returns (made at the first call) */
static PyObject *apply(Wrapper *self, PyObject *const *args, Py_ssize_t nargs) {
    if (self->apply == NULL) {
        PyObject *function = PyObject_CallNoArgs(self->slots[FUNCTION]);
        if (function == NULL) return NULL;
        PyObject *bound = PyObject_GetAttrString(function, "apply");
        Py_DECREF(function);
        if (bound == NULL) return NULL;
        if (self->apply == NULL) {
            self->apply = bound;
        } else {
            Py_DECREF(bound);
        }
    }
    return PyObject_Vectorcall(self->apply, args, nargs, NULL);
}

/* obj.name into *value (a new reference): 1; 0 with *value NULL where it is missing (AttributeError); -1 on other
 * errors */
static int get_optional(PyObject *obj, PyObject *name, PyObject **value) {
    *value = PyObject_GetAttr(obj, name);
    if (*value != NULL) return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
}

/* getattr(obj, name, None) as a new reference (NULL with an exception only for errors other than AttributeError) */
static PyObject *optional_attr(PyObject *obj, PyObject *name) {
    PyObject *value;
    if (get_optional(obj, name, &value) < 0) return NULL;
    return value == NULL ? Py_NewRef(Py_None) : value;
}

/* bind `args`/`kwnames` to `n` parameters named `names` (`values` holds the defaults, NULL for required ones);
 * 1 when bound, 0 when not (too many, an unknown or repeated keyword, a required one missing), -1 on error */
static int bind(PyObject *const *args, size_t nargsf, PyObject *kwnames, const char *const *names, Py_ssize_t n,
                PyObject **values, Py_ssize_t required) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs > n) return 0;
    for (Py_ssize_t i = 0; i < nargs; i++) values[i] = args[i];
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (name == NULL) return -1;
        Py_ssize_t i = 0;
        while (i < n && strcmp(name, names[i]) != 0) i++;
        if (i == n || i < nargs) return 0;  /* unknown, or given positionally too */
        values[i] = args[nargs + k];
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {  /* a keyword given twice */
        for (Py_ssize_t j = k + 1; j < nkw; j++) {
            int same = PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, k), PyTuple_GET_ITEM(kwnames, j));
            if (same == -1 && PyErr_Occurred()) return -1;
            if (same == 0) return 0;
        }
    }
    for (Py_ssize_t i = 0; i < required; i++) {
        if (values[i] == NULL) return 0;
    }
    return 1;
}

/* the product of the ints of the sequence `seq` into *product; 1 when every entry is an int (bool included, as
 * isinstance(d, int)), 0 when one is not, -1 on error */
static int int_product(PyObject *seq, Py_ssize_t *product) {
    PyObject *fast = PySequence_Fast(seq, "not a sequence");
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), value = 1;
    int ints = 1;
    for (Py_ssize_t i = 0; ints && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyLong_Check(item)) {
            ints = 0;
            break;
        }
        Py_ssize_t d = PyLong_AsSsize_t(item);
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        value *= d;
    }
    Py_DECREF(fast);
    *product = value;
    return ints;
}

/* -- LayerNorm ---------------------------------------------------------------------------------------------------- */

static const char *const layer_norm_names[] = {"input", "normalized_shape", "weight", "bias", "eps"};

/* whether the parameter `p` (None, or a tensor) passes: None, or `_shape` equal to `normalized` and `_dtype` float32;
 * 1/0, -1 on error */
static int parameter_fits(PyObject *p, PyObject *normalized, PyObject *float32) {
    if (p == Py_None) return 1;
    PyObject *shape = optional_attr(p, s_shape);
    if (shape == NULL) return -1;
    if (shape == Py_None) {
        Py_DECREF(shape);
        return 0;
    }
    PyObject *dtype = optional_attr(p, s_dtype);
    if (dtype == NULL) {
        Py_DECREF(shape);
        return -1;
    }
    int fits = dtype == float32;
    Py_DECREF(dtype);
    if (fits) {
        PyObject *as_tuple = PySequence_Tuple(shape);
        if (as_tuple == NULL) {
            Py_DECREF(shape);
            return -1;
        }
        fits = PyObject_RichCompareBool(as_tuple, normalized, Py_EQ);
        Py_DECREF(as_tuple);
    }
    Py_DECREF(shape);
    return fits;
}

/* host_layer_norm._size: the normalized elements per row as a new int, Py_None (a new reference) when the call is not
 * taken here, NULL on error */
static PyObject *layer_norm_size(Wrapper *self, PyObject *input, PyObject *normalized_shape, PyObject *weight,
                                 PyObject *bias, PyObject *eps) {
    PyObject *shape = NULL, *dtype = NULL, *normalized = NULL, *tail = NULL, *result = NULL;
    Py_ssize_t elements, n;
    if ((shape = optional_attr(input, s_shape)) == NULL) return NULL;
    if (shape == Py_None) goto not_taken;
    if ((dtype = optional_attr(input, s_dtype)) == NULL) goto end;
    if (dtype != self->slots[FLOAT32]) goto not_taken;
    int ints = int_product(shape, &elements);
    if (ints < 0) goto end;
    Py_ssize_t minimum = PyLong_AsSsize_t(self->slots[FOURTH]);
    if (minimum == -1 && PyErr_Occurred()) goto end;
    if (!ints || elements < minimum) goto not_taken;
    if (PyBool_Check(eps) || !(PyLong_Check(eps) || PyFloat_Check(eps))) goto not_taken;
    if (PyLong_Check(normalized_shape)) {
        normalized = PyTuple_Pack(1, normalized_shape);
    } else {
        normalized = PySequence_Tuple(normalized_shape);
        if (normalized == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {  /* not iterable: megatron's error */
            PyErr_Clear();
            goto not_taken;
        }
    }
    if (normalized == NULL) goto end;
    Py_ssize_t rank = PySequence_Length(shape), length = PyTuple_GET_SIZE(normalized);
    if (rank < 0) goto end;
    if (length == 0 || length > rank) goto not_taken;
    if ((ints = int_product(normalized, &n)) < 0) goto end;
    if (!ints) goto not_taken;
    if ((tail = PySequence_GetSlice(shape, rank - length, rank)) == NULL) goto end;
    PyObject *tail_tuple = PySequence_Tuple(tail);
    if (tail_tuple == NULL) goto end;
    int same = PyObject_RichCompareBool(tail_tuple, normalized, Py_EQ);
    Py_DECREF(tail_tuple);
    if (same < 0) goto end;
    if (!same) goto not_taken;
    int fits = parameter_fits(weight, normalized, self->slots[FLOAT32]);
    if (fits == 1) fits = parameter_fits(bias, normalized, self->slots[FLOAT32]);
    if (fits < 0) goto end;
    if (!fits) goto not_taken;
    result = PyLong_FromSsize_t(n);
    goto end;
not_taken:
    result = Py_NewRef(Py_None);
end:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(normalized);
    Py_XDECREF(tail);
    return result;
}

static PyObject *layer_norm_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Wrapper *self = (Wrapper *)op;
    PyObject *values[5] = {NULL, NULL, Py_None, Py_None, NULL};
    int bound = bind(args, nargsf, kwnames, layer_norm_names, 5, values, 2);
    if (bound < 0) return NULL;
    PyObject *default_eps = NULL;
    if (bound && values[4] == NULL) {
        if ((default_eps = PyFloat_FromDouble(1e-5)) == NULL) return NULL;
        values[4] = default_eps;
    }
    PyObject *size = bound ? layer_norm_size(self, values[0], values[1], values[2], values[3], values[4])
                           : Py_NewRef(Py_None);
    PyObject *result = NULL;
    if (size == NULL) goto end;
    if (size == Py_None) {
        result = PyObject_Vectorcall(self->slots[OP], args, nargsf, kwnames);
        goto end;
    }
    PyObject *eps = PyNumber_Float(values[4]);
    if (eps == NULL) goto end;
    PyObject *applied[5] = {values[0], values[2], values[3], size, eps};
    result = apply(self, applied, 5);
    Py_DECREF(eps);
end:
    Py_XDECREF(size);
    Py_XDECREF(default_eps);
    return result;
}

/* -- BiasDropoutAdd ----------------------------------------------------------------------------------------------- */

static const char *const bda_names[] = {"x_with_bias", "residual", "prob", "training"};

/* contiguous(tensor) as a truth value: 1/0, -1 on error */
static int contiguous(Wrapper *self, PyObject *tensor) {
    PyObject *got = call_traced(self->slots[FOURTH], tensor);
    if (got == NULL) return -1;
    int truth = PyObject_IsTrue(got);
    Py_DECREF(got);
    return truth;
}

/* `_shape` and `_dtype` of `tensor` (new references) into *shape / *dtype: 1; 0 (nothing set) when one is missing
 * (AttributeError); -1 on other errors */
static int shape_and_dtype(PyObject *tensor, PyObject **shape, PyObject **dtype) {
    *shape = *dtype = NULL;
    int got = get_optional(tensor, s_shape, shape);
    if (got <= 0) return got;
    if ((got = get_optional(tensor, s_dtype, dtype)) <= 0) Py_CLEAR(*shape);
    return got;
}

/* host_bda.plain: 1/0, -1 on error */
static int bda_plain(Wrapper *self, PyObject *x, PyObject *bias, PyObject *residual, PyObject *prob,
                     PyObject *training) {
    PyObject *float32 = self->slots[FLOAT32];
    int training_on = PyObject_IsTrue(training);
    if (training_on < 0) return -1;
    if (training_on) {
        PyObject *zero = PyLong_FromLong(0);
        if (zero == NULL) return -1;
        int dropping = PyObject_RichCompareBool(prob, zero, Py_NE);
        Py_DECREF(zero);
        if (dropping) return dropping < 0 ? -1 : 0;
    }
    PyObject *shape = NULL, *dtype = NULL, *residual_shape = NULL, *residual_dtype = NULL, *bias_shape = NULL;
    PyObject *bias_dtype = NULL, *last = NULL, *bias_length = NULL;
    int plain = 0, got = shape_and_dtype(x, &shape, &dtype);
    if (got <= 0) return got;
    if (dtype != float32) goto done;
    if ((got = shape_and_dtype(residual, &residual_shape, &residual_dtype)) <= 0) {
        plain = got;
        goto done;
    }
    if (residual_dtype != float32) goto done;
    int differs = PyObject_RichCompareBool(residual_shape, shape, Py_NE);
    if (differs) {
        plain = differs < 0 ? -1 : 0;
        goto done;
    }
    Py_ssize_t elements, rank = PySequence_Length(shape);
    if (rank < 0) {
        plain = -1;
        goto done;
    }
    if (rank == 0) goto done;
    int ints = int_product(shape, &elements);
    if (ints < 0) {
        plain = -1;
        goto done;
    }
    if (!ints || elements == 0) goto done;  /* a shape of other numbers (never MindSpore's): megatron's function */
    int checks = contiguous(self, x);
    if (checks == 1) checks = contiguous(self, residual);
    if (checks <= 0) {
        plain = checks;
        goto done;
    }
    if (bias == Py_None) {
        plain = 1;
        goto done;
    }
    if ((bias_shape = optional_attr(bias, s_shape)) == NULL) {
        plain = -1;
        goto done;
    }
    if (bias_shape == Py_None || PySequence_Length(bias_shape) != 1) {
        plain = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((bias_length = PySequence_GetItem(bias_shape, 0)) == NULL
        || (last = PySequence_GetItem(shape, rank - 1)) == NULL) {
        plain = -1;
        goto done;
    }
    int same = PyObject_RichCompareBool(bias_length, last, Py_EQ);
    if (same <= 0) {
        plain = same;
        goto done;
    }
    if ((bias_dtype = PyObject_GetAttr(bias, s_dtype)) == NULL) {  /* Python's AttributeError, as in host_bda.plain */
        plain = -1;
        goto done;
    }
    plain = bias_dtype == float32 ? contiguous(self, bias) : 0;
done:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(residual_shape);
    Py_XDECREF(residual_dtype);
    Py_XDECREF(bias_shape);
    Py_XDECREF(bias_dtype);
    Py_XDECREF(last);
    Py_XDECREF(bias_length);
    return plain;
}

static PyObject *bda_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Wrapper *self = (Wrapper *)op;
    PyObject *values[4] = {NULL, NULL, NULL, NULL};
    int bound = bind(args, nargsf, kwnames, bda_names, 4, values, 4);
    if (bound < 0) return NULL;
    if (!bound) return PyObject_Vectorcall(self->slots[OP], args, nargsf, kwnames);  /* megatron's TypeError */
    PyObject *pair = values[0];
    if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
        PyObject *x = PyTuple_GET_ITEM(pair, 0), *bias = PyTuple_GET_ITEM(pair, 1);
        int plain = bda_plain(self, x, bias, values[1], values[2], values[3]);
        if (plain < 0) return NULL;
        if (plain) {
            PyObject *applied[3] = {x, values[1], bias};
            return apply(self, applied, 3);
        }
    }
    return PyObject_Vectorcall(self->slots[OP], values, 4, NULL);
}

/* -- Linear: linear_with_grad_accumulation_and_async_allreduce's plain case to the Function ---------------------- */

/* megatron's parameters, in order; the first six have no default */
static const char *const linear_names[] = {"input", "weight", "bias", "gradient_accumulation_fusion",
                                           "allreduce_dgrad", "sequence_parallel", "grad_output_buffer",
                                           "wgrad_deferral_limit", "async_grad_allreduce"};
#define LINEAR_PARAMETERS 9
#define LINEAR_REQUIRED 6
static PyObject *linear_kwnames, *s_cuda, *zero;

/* the sequence `shape`'s length, or -1 (no exception) where it is not a sequence */
static Py_ssize_t length_of(PyObject *shape) {
    Py_ssize_t n = PySequence_Check(shape) ? PySequence_Size(shape) : -1;
    if (n < 0) PyErr_Clear();
    return n;
}

/* whether `shape` holds a 0 (1/0, -1 with an exception) */
static int has_zero(PyObject *shape) {
    return PySequence_Contains(shape, zero);
}

/* host_linear._is_plain: 1 when the tensors are the plain case, 0 when not, -1 with an exception */
static int plain_tensors(Wrapper *self, PyObject *input, PyObject *weight, PyObject *bias) {
    PyObject *float32 = self->slots[FLOAT32];
    PyObject *shape = NULL, *dtype = NULL, *weight_shape = NULL, *weight_dtype = NULL, *last = NULL, *columns = NULL;
    PyObject *bias_shape = NULL, *bias_dtype = NULL, *bias_length = NULL, *rows = NULL;
    int plain = 0, got = shape_and_dtype(input, &shape, &dtype);
    if (got <= 0) return got;
    if ((got = shape_and_dtype(weight, &weight_shape, &weight_dtype)) <= 0) {
        plain = got;
        goto done;
    }
    Py_ssize_t ndim = length_of(shape), weight_ndim = length_of(weight_shape);
    if (dtype != float32 || weight_dtype != float32 || weight_ndim != 2 || ndim < 2) goto done;
    if ((last = PySequence_GetItem(shape, ndim - 1)) == NULL
        || (columns = PySequence_GetItem(weight_shape, 1)) == NULL) {
        plain = -1;
        goto done;
    }
    int checks[5];
    checks[0] = PyObject_RichCompareBool(last, columns, Py_EQ);
    checks[1] = checks[0] == 1 ? has_zero(shape) : 1;
    checks[2] = checks[1] == 0 ? has_zero(weight_shape) : 1;
    checks[3] = checks[2] == 0 ? contiguous(self, input) : 0;
    checks[4] = checks[3] == 1 ? contiguous(self, weight) : 0;
    if (checks[0] < 0 || checks[1] < 0 || checks[2] < 0 || checks[3] < 0 || checks[4] < 0) {
        plain = -1;
        goto done;
    }
    if (checks[0] != 1 || checks[1] || checks[2] || !checks[3] || !checks[4]) goto done;
    if (bias == Py_None) {
        plain = 1;
        goto done;
    }
    /* bias: getattr(bias, "_shape", None) of one entry, weight_shape[0] long, float32, contiguous */
    if (get_optional(bias, s_shape, &bias_shape) < 0) {
        plain = -1;
        goto done;
    }
    if (bias_shape == NULL || bias_shape == Py_None || length_of(bias_shape) != 1) goto done;
    if ((bias_length = PySequence_GetItem(bias_shape, 0)) == NULL || (rows = PySequence_GetItem(weight_shape, 0)) == NULL
        || (bias_dtype = PyObject_GetAttr(bias, s_dtype)) == NULL) {
        plain = -1;
        goto done;
    }
    int same = PyObject_RichCompareBool(bias_length, rows, Py_EQ);
    if (same < 0) {
        plain = -1;
        goto done;
    }
    plain = same && bias_dtype == float32 ? contiguous(self, bias) : 0;
done:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(weight_shape);
    Py_XDECREF(weight_dtype);
    Py_XDECREF(last);
    Py_XDECREF(columns);
    Py_XDECREF(bias_shape);
    Py_XDECREF(bias_dtype);
    Py_XDECREF(bias_length);
    Py_XDECREF(rows);
    return plain;
}

static PyObject *linear_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Wrapper *self = (Wrapper *)op;
    PyObject *values[LINEAR_PARAMETERS] = {NULL, NULL, NULL, NULL, NULL, NULL, Py_None, zero, Py_None};
    int bound = bind(args, nargsf, kwnames, linear_names, LINEAR_PARAMETERS, values, LINEAR_REQUIRED);
    if (bound < 0) return NULL;
    if (!bound) {  /* megatron's function raises its own TypeError */
        return PyObject_Vectorcall(self->slots[OP], args, nargsf, kwnames);
    }
    int plain = values[6] == Py_None && values[8] == Py_None;
    for (int i = 3; plain && i < 6; i++) {
        plain = PyObject_IsTrue(values[i]);
        if (plain < 0) return NULL;
        plain = !plain;
    }
    if (plain) plain = plain_tensors(self, values[0], values[1], values[2]);
    if (plain > 0) {
        PyObject *enabled = call_traced(self->slots[FIFTH], s_cuda);
        if (enabled == NULL) return NULL;
        plain = PyObject_IsTrue(enabled);
        Py_DECREF(enabled);
        if (plain < 0) return NULL;
        plain = !plain;
    }
    if (plain < 0) return NULL;
    if (plain) return PyObject_Vectorcall(self->apply, values, 3, NULL);
    return PyObject_Vectorcall(self->slots[OP], values, 0, linear_kwnames);  /* every argument by keyword */
}

/* -- the type ----------------------------------------------------------------------------------------------------- */

static PyObject *wrapper_new(PyTypeObject *type, PyObject *args, PyObject *kwargs, const char *format, char **names,
                             vectorcallfunc call, int fourth_callable, int count) {
    PyObject *given[SLOTS] = {NULL, NULL, NULL, NULL, NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, names, &given[0], &given[1], &given[2], &given[3],
                                     &given[4])) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {  /* every argument a callable but float32, and min_elements an int */
        int callable = i != FLOAT32 && (i != FOURTH || fourth_callable);
        if (callable ? !PyCallable_Check(given[i]) : i == FOURTH && !PyLong_Check(given[i])) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be %s, not %R", type->tp_name, names[i],
                         callable ? "callable" : "an int", given[i]);
            return NULL;
        }
    }
    Wrapper *self = (Wrapper *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    for (int i = 0; i < count; i++) self->slots[i] = Py_NewRef(given[i]);
    self->vectorcall = call;
    return (PyObject *)self;
}

static PyObject *layer_norm_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"op", "function", "float32", "min_elements", NULL};
    return wrapper_new(type, args, kwargs, "OOOO:LayerNorm", names, layer_norm_call, 0, 4);
}

static PyObject *bda_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"op", "function", "float32", "contiguous", NULL};
    return wrapper_new(type, args, kwargs, "OOOO:BiasDropoutAdd", names, bda_call, 1, 4);
}

static PyObject *linear_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"op", "apply", "float32", "contiguous", "autocast", NULL};
    Wrapper *self = (Wrapper *)wrapper_new(type, args, kwargs, "OOOOO:Linear", names, linear_call, 1, 5);
    if (self != NULL) self->apply = Py_NewRef(self->slots[FUNCTION]);  /* the Function's apply, given */
    return (PyObject *)self;
}

static int wrapper_traverse(Wrapper *self, visitproc visit, void *arg) {
    for (int i = 0; i < SLOTS; i++) Py_VISIT(self->slots[i]);
    Py_VISIT(self->apply);
    Py_VISIT(self->dict);
    return 0;
}

static int wrapper_clear(Wrapper *self) {
    for (int i = 0; i < SLOTS; i++) Py_CLEAR(self->slots[i]);
    Py_CLEAR(self->apply);
    Py_CLEAR(self->dict);
    return 0;
}

static void wrapper_dealloc(Wrapper *self) {
    PyObject_GC_UnTrack(self);
    wrapper_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* functools.update_wrapper sets __name__, __doc__, __wrapped__ and more: a __dict__ holds them */
static PyGetSetDef wrapper_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define WRAPPER_TYPE(variable, name, new_function, doc)                                                               \
    static PyTypeObject variable = {                                                                                  \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                                \
        .tp_name = "mindspeed_ms.compat._host_wrappers." name,                                                       \
        .tp_doc = PyDoc_STR(doc),                                                                                     \
        .tp_basicsize = sizeof(Wrapper),                                                                              \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,                             \
        .tp_vectorcall_offset = offsetof(Wrapper, vectorcall),                                                        \
        .tp_dictoffset = offsetof(Wrapper, dict),                                                                     \
        .tp_call = PyVectorcall_Call,                                                                                 \
        .tp_new = new_function,                                                                                       \
        .tp_traverse = (traverseproc)wrapper_traverse,                                                                \
        .tp_clear = (inquiry)wrapper_clear,                                                                           \
        .tp_dealloc = (destructor)wrapper_dealloc,                                                                    \
        .tp_getset = wrapper_getset,                                                                                  \
        .tp_descr_get = NULL,                                                                                         \
    }

WRAPPER_TYPE(LayerNormType, "LayerNorm", layer_norm_new,
             "LayerNorm(op, function, float32, min_elements)(input, normalized_shape, weight=None, bias=None, "
             "eps=1e-5): host_layer_norm's wrapper in one C call");
WRAPPER_TYPE(BiasDropoutAddType, "BiasDropoutAdd", bda_new,
             "BiasDropoutAdd(op, function, float32, contiguous)(x_with_bias, residual, prob, training): host_bda's "
             "wrapper in one C call");
WRAPPER_TYPE(LinearType, "Linear", linear_new,
             "Linear(op, apply, float32, contiguous, autocast): megatron's linear function, its plain case through "
             "apply(input, weight, bias) (host_linear's wrapper in one C call)");

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mindspeed_ms.compat._host_wrappers",
    .m_doc = PyDoc_STR("host_layer_norm's, host_bda's and host_linear's wrappers in one C call each"),
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__host_wrappers(void) {
    if ((s_shape = PyUnicode_InternFromString("_shape")) == NULL
        || (s_dtype = PyUnicode_InternFromString("_dtype")) == NULL
        || (s_cuda = PyUnicode_InternFromString("cuda")) == NULL || (zero = PyLong_FromLong(0)) == NULL
        || (linear_kwnames = PyTuple_New(LINEAR_PARAMETERS)) == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < LINEAR_PARAMETERS; i++) {
        PyObject *name = PyUnicode_InternFromString(linear_names[i]);
        if (name == NULL) return NULL;
        PyTuple_SET_ITEM(linear_kwnames, i, name);
    }
    if (PyType_Ready(&LayerNormType) < 0 || PyType_Ready(&BiasDropoutAddType) < 0 || PyType_Ready(&LinearType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", HOST_WRAPPERS_ABI) < 0
        || PyModule_AddObjectRef(m, "LayerNorm", (PyObject *)&LayerNormType) < 0
        || PyModule_AddObjectRef(m, "BiasDropoutAdd", (PyObject *)&BiasDropoutAddType) < 0
        || PyModule_AddObjectRef(m, "Linear", (PyObject *)&LinearType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
