/* The host Functions' bodies in one C call each: megatron's linear layer (mindspeed_ms.compat.host_linear's
 * HostLinear), bias-dropout-add (mindspeed_ms.compat.host_bda's HostBiasDropoutAdd), MLP block
 * (mindspeed_ms.compat.host_mlp's HostMLP), layer norm (mindspeed_ms.compat.host_layer_norm's HostLayerNorm) and core
 * attention (mindspeed_ms.compat.host_attention's HostAttention and HostAttentionQKV). The wrappers that choose these
 * Functions are _host_wrappers.c's; this file was _host_linear.c until round 22.
 *
 * A Function's forward and backward run several times each a training step of the tiny example; their Python bodies
 * are short but each line costs a few microseconds on the shared CPUs (the attribute reads, the tuples, the calls).
 * Each object makes the same calls in the same order, with the callables its Python module hands it:
 *
 *   Linear(host_array, new_float32, matmul, bias_add, column_sum, refuse)
 *   .forward(ctx, input, weight, bias):
 *     values = host_array(input); matrix = host_array(weight, sync=False)
 *     result, out = new_float32(values.shape[:-1] + (matrix.shape[0],)); matmul(values, matrix.T, out)
 *     bias_add(out, host_array(bias, sync=False), out) unless bias is None
 *     ctx.kept = (input, weight, input._version, weight._version, bias is not None); return result
 *   .backward(ctx, grad):
 *     input, weight, input_version, weight_version, has_bias = ctx.kept; del ctx.kept
 *     refuse() (it raises) where either version moved; needs = ctx.needs_input_grad
 *     gradient = host_array(grad); matrix = host_array(weight, sync=False)
 *     needs[0]: grad_input, out = new_float32(tuple(input._shape)); matmul(gradient, matrix, out)
 *     needs[1] or (has_bias and needs[2]): rows = gradient.reshape(-1, gradient.shape[-1])
 *       needs[1]: values = host_array(input, sync=False); grad_weight, out = new_float32(matrix.shape)
 *                 matmul(rows.T, values.reshape(-1, values.shape[-1]), out)
 *       has_bias and needs[2]: grad_bias, out = new_float32((rows.shape[1],)); column_sum(rows, out)
 *     return (grad_input, grad_weight, grad_bias)
 *
 *   BiasDropoutAdd(host_array, new_float32, bias_add, add, copy_into, column_sum)
 *   .forward(ctx, x, residual, bias):
 *     values = host_array(x); result, out = new_float32(values.shape)
 *     bias_add(values, host_array(bias, sync=False), out) where a bias, else copy_into(values, out)
 *     add(out, host_array(residual, sync=False)); ctx.has_bias = bias is not None; return result
 *   .backward(ctx, grad):
 *     needs = ctx.needs_input_grad; gradient = host_array(grad)
 *     for x and residual where needed: grad_i, out_i = new_float32(gradient.shape)
 *     copy_into(gradient, *outs)
 *     ctx.has_bias and needs[2]: grad_bias, out = new_float32((gradient.shape[-1],))
 *                                column_sum(gradient.reshape(-1, gradient.shape[-1]), out)
 *     return (grad_x, grad_residual, grad_bias)
 *
 *   MLP(host_array, new_float32, matmul, bias_add, column_sum, refuse, take, give, gelu_forward, gelu_backward,
 *       kernel_refused): host_mlp.python_forward and python_backward, the same calls in the same order
 *
 *   LayerNorm(host_array, new_float32, layer_norm_forward, layer_norm_backward, copy_rows, contiguous):
 *     host_layer_norm.python_forward and python_backward, the same calls in the same order
 *
 *   Attention(host_array, new_float32, forward_in_halves, backward_in_halves, one_blas_thread, refuse,
 *             rope_backward, empty): host_attention's python_forward/python_backward (HostAttention) and
 *             python_qkv_forward/python_qkv_backward (HostAttentionQKV), the same calls in the same order
 *
 * The arithmetic stays in the callables (host_kernels.matmul, host_arithmetic.bias_add and column_sum): the same
 * bits as the Python bodies, which run where this module is not built (tests/test_compat_host_*.py run both).
 * ndarray.reshape is called through its method descriptor with the profiler's events, as when Python calls it.
 *
 * Optional (setup.py). Reference counting only; the free-threaded build is refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include "../_profile_events.h"

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.compat._host_bodies assumes the GIL; the Python bodies are used"
#endif
#if PY_VERSION_HEX < 0x030B0000
#error "mindspeed_ms.compat._host_bodies needs CPython 3.11 (PyThreadState_EnterTracing); the Python bodies run"
#endif

/* What this module offers, as mindspeed_ms/compat/host_extensions.py expects it (its HOST_BODIES_ABI). */
#define HOST_BODIES_ABI 1

static PyObject *s_shape, *s_T, *s_version, *s_shape_private, *s_kept, *s_needs, *s_reshape, *sync_kwnames;
static PyObject *s_has_bias, *s_flags, *s_c_contiguous, *s_base, *s_storage_offset, *s_saved;
static PyObject *s_shapes, *s_rope, *s_mask, *s_tensor, *s_pieces, *s_versions, *s_alpha, *s_copy;
static PyObject *minus_one;

/* Every type holds its objects in one array (constructor arguments first), so that one set of helpers builds,
 * visits and clears them. */
enum { HOST_ARRAY, NEW_FLOAT32, MATMUL, BIAS_ADD, COLUMN_SUM, REFUSE, RESHAPE, LINEAR_SLOTS };
/* a BiasDropoutAdd's slots: the same object layout as a Linear's (host_array, new_float32 and reshape where a
 * Linear has them, so that the helpers below serve both) */
enum { BDA_BIAS_ADD = MATMUL, BDA_ADD = BIAS_ADD, BDA_COPY_INTO = COLUMN_SUM, BDA_COLUMN_SUM = REFUSE };
/* a LayerNorm's slots: a Linear's layout (host_array, new_float32 and reshape in their places) */
enum { LN_FORWARD = MATMUL, LN_BACKWARD = BIAS_ADD, LN_COPY_ROWS = COLUMN_SUM, LN_CONTIGUOUS = REFUSE };
/* an MLP's slots: a Linear's, then the pool's take and give, gelu's kernels and what raises when one refuses */
enum { TAKE = LINEAR_SLOTS, GIVE, GELU_FORWARD, GELU_BACKWARD, KERNEL_REFUSED, MLP_SLOTS };
/* an Attention's slots: host_array, new_float32 and reshape where a Linear has them, then its own */
enum { AT_FORWARD = MATMUL, AT_BACKWARD = BIAS_ADD, AT_ONE_THREAD = COLUMN_SUM, AT_REFUSE = REFUSE,
       AT_ROPE_BACKWARD = LINEAR_SLOTS, AT_EMPTY, ATTENTION_SLOTS };

/* what both types start with */
typedef struct {
    PyObject_HEAD
    PyObject *slots[];
} Slotted;

typedef struct {
    PyObject_HEAD
    PyObject *slots[LINEAR_SLOTS]; /* the six callables given; RESHAPE: ndarray.reshape, found at the first call */
} Linear;

/* the objects `names` of a constructor's arguments into `slots` (new references; those with callable[i] must be
 * callable); `format` is "O" per name, then ":TypeName"; 0, or -1 with an exception */
static int take_slots(PyObject *args, PyObject *kwargs, const char *format, char **names, const int *callable,
                      int n, PyObject **slots) {
    PyObject *got[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (n > 6 || !PyArg_ParseTupleAndKeywords(args, kwargs, format, names, &got[0], &got[1], &got[2], &got[3],
                                              &got[4], &got[5])) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (callable[i] && !PyCallable_Check(got[i])) {
            PyErr_Format(PyExc_TypeError, "%s must be callable, not %R", names[i], got[i]);
            return -1;
        }
    }
    for (int i = 0; i < n; i++) slots[i] = Py_NewRef(got[i]);
    return 0;
}

static PyTypeObject LinearType, BiasDropoutAddType, MLPType, LayerNormType, AttentionType;

/* the objects a body type holds (its slots array, right after the object's head) */
static PyObject **slots_of(PyObject *self, int *n) {
    PyTypeObject *type = Py_TYPE(self);
    *n = type == &MLPType ? MLP_SLOTS : type == &AttentionType ? ATTENTION_SLOTS : LINEAR_SLOTS;
    return ((Slotted *)self)->slots;
}

/* a new object of `type` holding the constructor's arguments (take_slots) */
static PyObject *slotted_new(PyTypeObject *type, PyObject *args, PyObject *kwargs, const char *format, char **names,
                             const int *callable, int n) {
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    int count;
    if (take_slots(args, kwargs, format, names, callable, n, slots_of(self, &count)) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

static int slotted_traverse(PyObject *self, visitproc visit, void *arg) {
    int n;
    PyObject **slots = slots_of(self, &n);
    for (int i = 0; i < n; i++) Py_VISIT(slots[i]);
    return 0;
}

static int slotted_clear(PyObject *self) {
    int n;
    PyObject **slots = slots_of(self, &n);
    for (int i = 0; i < n; i++) Py_CLEAR(slots[i]);
    return 0;
}

static void slotted_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    slotted_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* The method table and type of an object holding a Function's two bodies: `prefix`_forward and `prefix`_backward
 * (METH_FASTCALL), made by `prefix`_new; `size` is its struct's size (its slots array: slots_of) */
#define BODIES_TYPE(Type, prefix, size, name, forward_doc, backward_doc, doc)                                     \
    static PyMethodDef prefix##_methods[] = {                                                                   \
        {"forward", (PyCFunction)(void (*)(void))prefix##_forward, METH_FASTCALL, forward_doc},                 \
        {"backward", (PyCFunction)(void (*)(void))prefix##_backward, METH_FASTCALL, backward_doc},              \
        {NULL, NULL, 0, NULL},                                                                                  \
    };                                                                                                          \
    static PyTypeObject Type = {                                                                                \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                          \
        .tp_name = "mindspeed_ms.compat._host_bodies." name,                                                    \
        .tp_basicsize = size,                                                                                   \
        .tp_dealloc = slotted_dealloc,                                                                          \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,                                                    \
        .tp_doc = doc,                                                                                          \
        .tp_traverse = slotted_traverse,                                                                        \
        .tp_clear = slotted_clear,                                                                              \
        .tp_methods = prefix##_methods,                                                                         \
        .tp_new = prefix##_new,                                                                                 \
    }

/* host_array(tensor) or host_array(tensor, sync=False) */
static PyObject *host(Linear *self, PyObject *tensor, int sync) {
    PyObject *args[2] = {tensor, Py_False};
    return PyObject_Vectorcall(self->slots[HOST_ARRAY], args, 1, sync ? NULL : sync_kwnames);
}

/* new_float32(shape) unpacked into (*result, *out), new references; -1 with an exception */
static int new_output(Linear *self, PyObject *shape, PyObject **result, PyObject **out) {
    PyObject *pair = PyObject_Vectorcall(self->slots[NEW_FLOAT32], &shape, 1, NULL);
    if (pair == NULL) return -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: new_float32 must return (tensor, array), not %R", pair);
        Py_DECREF(pair);
        return -1;
    }
    *result = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
    *out = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    return 0;
}

/* func(a, b, c), the result dropped; -1 with an exception */
static int call3(PyObject *func, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *args[3] = {a, b, c};
    PyObject *got = PyObject_Vectorcall(func, args, 3, NULL);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return 0;
}

/* the array's shape as a tuple (new reference) */
static PyObject *shape_of(PyObject *array) {
    PyObject *shape = PyObject_GetAttr(array, s_shape);
    if (shape != NULL && !PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: an array's shape must be a tuple, not %R", shape);
        Py_CLEAR(shape);
    }
    return shape;
}

/* array.reshape(-1, array.shape[-1]) (new reference) */
static PyObject *as_rows(Linear *self, PyObject *array) {
    if (self->slots[RESHAPE] == NULL) {
        self->slots[RESHAPE] = PyObject_GetAttr((PyObject *)Py_TYPE(array), s_reshape);
        if (self->slots[RESHAPE] == NULL) return NULL;
    }
    PyObject *shape = shape_of(array);
    if (shape == NULL) return NULL;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim < 1) {
        Py_DECREF(shape);
        PyErr_SetString(PyExc_ValueError, "_host_bodies: a 0-d array has no rows");
        return NULL;
    }
    PyObject *args[3] = {array, minus_one, PyTuple_GET_ITEM(shape, ndim - 1)};
    PyObject *rows = call_traced_vector(self->slots[RESHAPE], args, 3, NULL);
    Py_DECREF(shape);
    return rows;
}

/* 0 when a body got the `wanted` arguments of `signature`, else -1 with a TypeError */
static int argument_count(Py_ssize_t nargs, Py_ssize_t wanted, const char *signature) {
    if (nargs == wanted) return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", signature, wanted, nargs);
    return -1;
}

static PyObject *linear_forward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 4, "forward(ctx, input, weight, bias)") < 0) return NULL;
    PyObject *ctx = args[0], *input = args[1], *weight = args[2], *bias = args[3];
    PyObject *values = NULL, *matrix = NULL, *values_shape = NULL, *matrix_shape = NULL, *out_shape = NULL;
    PyObject *result = NULL, *out = NULL, *transposed = NULL, *bias_values = NULL, *kept = NULL;
    PyObject *input_version = NULL, *weight_version = NULL, *done = NULL;
    if ((values = host(self, input, 1)) == NULL || (matrix = host(self, weight, 0)) == NULL) goto fail;
    if ((values_shape = shape_of(values)) == NULL || (matrix_shape = shape_of(matrix)) == NULL) goto fail;
    Py_ssize_t ndim = PyTuple_GET_SIZE(values_shape);
    if (ndim < 1 || PyTuple_GET_SIZE(matrix_shape) != 2) {
        PyErr_SetString(PyExc_ValueError, "_host_bodies: the input needs a dimension and the weight two");
        goto fail;
    }
    if ((out_shape = PyTuple_New(ndim)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < ndim - 1; i++) {
        PyTuple_SET_ITEM(out_shape, i, Py_NewRef(PyTuple_GET_ITEM(values_shape, i)));
    }
    PyTuple_SET_ITEM(out_shape, ndim - 1, Py_NewRef(PyTuple_GET_ITEM(matrix_shape, 0)));
    if (new_output(self, out_shape, &result, &out) < 0) goto fail;
    if ((transposed = PyObject_GetAttr(matrix, s_T)) == NULL) goto fail;
    if (call3(self->slots[MATMUL], values, transposed, out) < 0) goto fail;
    if (bias != Py_None) {
        if ((bias_values = host(self, bias, 0)) == NULL) goto fail;
        if (call3(self->slots[BIAS_ADD], out, bias_values, out) < 0) goto fail;
    }
    if ((input_version = PyObject_GetAttr(input, s_version)) == NULL) goto fail;
    if ((weight_version = PyObject_GetAttr(weight, s_version)) == NULL) goto fail;
    kept = PyTuple_Pack(5, input, weight, input_version, weight_version, bias != Py_None ? Py_True : Py_False);
    if (kept == NULL || PyObject_SetAttr(ctx, s_kept, kept) < 0) goto fail;
    done = result;
    result = NULL;
fail:
    Py_XDECREF(values);
    Py_XDECREF(matrix);
    Py_XDECREF(values_shape);
    Py_XDECREF(matrix_shape);
    Py_XDECREF(out_shape);
    Py_XDECREF(result);
    Py_XDECREF(out);
    Py_XDECREF(transposed);
    Py_XDECREF(bias_values);
    Py_XDECREF(input_version);
    Py_XDECREF(weight_version);
    Py_XDECREF(kept);
    return done;
}

/* whether tensor._version still is `version`: 1, 0, or -1 with an exception */
static int same_version(PyObject *tensor, PyObject *version) {
    PyObject *now = PyObject_GetAttr(tensor, s_version);
    if (now == NULL) return -1;
    int same = PyObject_RichCompareBool(now, version, Py_EQ);
    Py_DECREF(now);
    return same;
}

/* needs[index] as 1/0, -1 with an exception */
static int needed(PyObject *needs, Py_ssize_t index) {
    PyObject *flag = PySequence_GetItem(needs, index);
    if (flag == NULL) return -1;
    int truth = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return truth;
}

static PyObject *linear_backward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "backward(ctx, grad)") < 0) return NULL;
    PyObject *ctx = args[0], *grad = args[1];
    PyObject *kept = PyObject_GetAttr(ctx, s_kept);
    if (kept == NULL) return NULL;
    if (!PyTuple_Check(kept) || PyTuple_GET_SIZE(kept) != 5) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.kept must be the forward's 5-tuple, not %R", kept);
        Py_DECREF(kept);
        return NULL;
    }
    if (PyObject_DelAttr(ctx, s_kept) < 0) {
        Py_DECREF(kept);
        return NULL;
    }
    PyObject *input = PyTuple_GET_ITEM(kept, 0), *weight = PyTuple_GET_ITEM(kept, 1);
    int has_bias = PyTuple_GET_ITEM(kept, 4) == Py_True;
    PyObject *needs = NULL, *gradient = NULL, *matrix = NULL, *rows = NULL, *values = NULL, *shape = NULL;
    PyObject *out = NULL, *flat_values = NULL, *rows_t = NULL, *rows_shape = NULL, *grads = NULL;
    PyObject *grad_input = Py_NewRef(Py_None), *grad_weight = Py_NewRef(Py_None), *grad_bias = Py_NewRef(Py_None);
    int same = same_version(input, PyTuple_GET_ITEM(kept, 2));
    if (same == 1) same = same_version(weight, PyTuple_GET_ITEM(kept, 3));
    if (same < 0) goto fail;
    if (same == 0) {
        PyObject *raised = PyObject_CallNoArgs(self->slots[REFUSE]);
        if (raised != NULL) {  /* refuse() must raise */
            Py_DECREF(raised);
            PyErr_SetString(PyExc_RuntimeError, "_host_bodies: refuse() returned instead of raising");
        }
        goto fail;
    }
    if ((needs = PyObject_GetAttr(ctx, s_needs)) == NULL) goto fail;
    int need_input = needed(needs, 0), need_weight = needed(needs, 1), need_bias = has_bias ? needed(needs, 2) : 0;
    if (need_input < 0 || need_weight < 0 || need_bias < 0) goto fail;
    if ((gradient = host(self, grad, 1)) == NULL || (matrix = host(self, weight, 0)) == NULL) goto fail;
    if (need_input) {
        PyObject *private_shape = PyObject_GetAttr(input, s_shape_private);
        if (private_shape == NULL) goto fail;
        shape = PySequence_Tuple(private_shape);
        Py_DECREF(private_shape);
        if (shape == NULL) goto fail;
        Py_CLEAR(grad_input);
        if (new_output(self, shape, &grad_input, &out) < 0) goto fail;
        if (call3(self->slots[MATMUL], gradient, matrix, out) < 0) goto fail;
        Py_CLEAR(shape);
        Py_CLEAR(out);
    }
    if (need_weight || need_bias) {
        if ((rows = as_rows(self, gradient)) == NULL) goto fail;  /* a copy where not contiguous, as .contiguous() */
        if (need_weight) {
            if ((values = host(self, input, 0)) == NULL) goto fail;
            if ((shape = shape_of(matrix)) == NULL) goto fail;
            Py_CLEAR(grad_weight);
            if (new_output(self, shape, &grad_weight, &out) < 0) goto fail;
            if ((rows_t = PyObject_GetAttr(rows, s_T)) == NULL || (flat_values = as_rows(self, values)) == NULL) {
                goto fail;
            }
            if (call3(self->slots[MATMUL], rows_t, flat_values, out) < 0) goto fail;
            Py_CLEAR(shape);
            Py_CLEAR(out);
        }
        if (need_bias) {
            if ((rows_shape = shape_of(rows)) == NULL) goto fail;
            if (PyTuple_GET_SIZE(rows_shape) != 2) {
                PyErr_SetString(PyExc_ValueError, "_host_bodies: the gradient's rows must be 2-D");
                goto fail;
            }
            if ((shape = PyTuple_Pack(1, PyTuple_GET_ITEM(rows_shape, 1))) == NULL) goto fail;
            Py_CLEAR(grad_bias);
            if (new_output(self, shape, &grad_bias, &out) < 0) goto fail;
            PyObject *sum_args[2] = {rows, out};
            PyObject *summed = PyObject_Vectorcall(self->slots[COLUMN_SUM], sum_args, 2, NULL);
            if (summed == NULL) goto fail;
            Py_DECREF(summed);
        }
    }
    grads = PyTuple_Pack(3, grad_input, grad_weight, grad_bias);
fail:
    Py_XDECREF(grad_input);
    Py_XDECREF(grad_weight);
    Py_XDECREF(grad_bias);
    Py_DECREF(kept);
    Py_XDECREF(needs);
    Py_XDECREF(gradient);
    Py_XDECREF(matrix);
    Py_XDECREF(rows);
    Py_XDECREF(values);
    Py_XDECREF(shape);
    Py_XDECREF(out);
    Py_XDECREF(flat_values);
    Py_XDECREF(rows_t);
    Py_XDECREF(rows_shape);
    return grads;
}

static PyObject *linear_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"host_array", "new_float32", "matmul", "bias_add", "column_sum", "refuse", NULL};
    static const int callable[6] = {1, 1, 1, 1, 1, 1};
    return slotted_new(type, args, kwargs, "OOOOOO:Linear", names, callable, 6);
}

BODIES_TYPE(LinearType, linear, sizeof(Linear), "Linear",
            "forward(ctx, input, weight, bias): input @ weight.T + bias on the host; the inputs kept for backward",
            "backward(ctx, grad): (grad_input, grad_weight, grad_bias), None where not needed",
            "Linear(host_array, new_float32, matmul, bias_add, column_sum, refuse): HostLinear's bodies");


/* -- BiasDropoutAdd: host_bda's Function bodies (a Linear's layout, other callables) ------------------------------ */

/* func(a, b), the result dropped; -1 with an exception */
static int call2(PyObject *func, PyObject *a, PyObject *b) {
    PyObject *args[2] = {a, b};
    PyObject *got = PyObject_Vectorcall(func, args, 2, NULL);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return 0;
}

static PyObject *bda_forward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 4, "forward(ctx, x, residual, bias)") < 0) return NULL;
    PyObject *ctx = args[0], *x = args[1], *residual = args[2], *bias = args[3];
    PyObject *values = NULL, *shape = NULL, *result = NULL, *out = NULL, *bias_values = NULL, *others = NULL;
    PyObject *done = NULL;
    if ((values = host(self, x, 1)) == NULL || (shape = shape_of(values)) == NULL) goto fail;
    if (new_output(self, shape, &result, &out) < 0) goto fail;
    if (bias != Py_None) {
        if ((bias_values = host(self, bias, 0)) == NULL) goto fail;
        if (call3(self->slots[BDA_BIAS_ADD], values, bias_values, out) < 0) goto fail;
    } else if (call2(self->slots[BDA_COPY_INTO], values, out) < 0) {
        goto fail;
    }
    if ((others = host(self, residual, 0)) == NULL) goto fail;
    if (call2(self->slots[BDA_ADD], out, others) < 0) goto fail;
    if (PyObject_SetAttr(ctx, s_has_bias, bias != Py_None ? Py_True : Py_False) < 0) goto fail;
    done = result;
    result = NULL;
fail:
    Py_XDECREF(values);
    Py_XDECREF(shape);
    Py_XDECREF(result);
    Py_XDECREF(out);
    Py_XDECREF(bias_values);
    Py_XDECREF(others);
    return done;
}

static PyObject *bda_backward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "backward(ctx, grad)") < 0) return NULL;
    PyObject *ctx = args[0], *grad = args[1];
    PyObject *needs = NULL, *gradient = NULL, *shape = NULL, *has_bias = NULL, *rows = NULL, *bias_shape = NULL;
    PyObject *grads[3] = {Py_NewRef(Py_None), Py_NewRef(Py_None), Py_NewRef(Py_None)};
    PyObject *outs[3] = {NULL, NULL, NULL}; /* outs[0] is the gradient, then the arrays of x's and residual's */
    PyObject *bias_out = NULL, *done = NULL;
    Py_ssize_t count = 1;
    if ((needs = PyObject_GetAttr(ctx, s_needs)) == NULL) goto fail;
    if ((gradient = host(self, grad, 1)) == NULL || (shape = shape_of(gradient)) == NULL) goto fail;
    for (Py_ssize_t index = 0; index < 2; index++) {  /* x and residual: each a copy of its own */
        int need = needed(needs, index);
        if (need < 0) goto fail;
        if (need) {
            Py_CLEAR(grads[index]);
            if (new_output(self, shape, &grads[index], &outs[count]) < 0) goto fail;
            count++;
        }
    }
    outs[0] = gradient;
    PyObject *copied = PyObject_Vectorcall(self->slots[BDA_COPY_INTO], outs, count, NULL);
    outs[0] = NULL;
    if (copied == NULL) goto fail;
    Py_DECREF(copied);
    if ((has_bias = PyObject_GetAttr(ctx, s_has_bias)) == NULL) goto fail;
    int bias_needed = PyObject_IsTrue(has_bias);
    if (bias_needed > 0) bias_needed = needed(needs, 2);
    if (bias_needed < 0) goto fail;
    if (bias_needed) {
        Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
        if (ndim < 1) {
            PyErr_SetString(PyExc_ValueError, "_host_bodies: a bias gradient needs a gradient of a dimension or more");
            goto fail;
        }
        if ((bias_shape = PyTuple_Pack(1, PyTuple_GET_ITEM(shape, ndim - 1))) == NULL) goto fail;
        Py_CLEAR(grads[2]);
        if (new_output(self, bias_shape, &grads[2], &bias_out) < 0) goto fail;
        if ((rows = as_rows(self, gradient)) == NULL) goto fail;
        if (call2(self->slots[BDA_COLUMN_SUM], rows, bias_out) < 0) goto fail;
    }
    done = PyTuple_Pack(3, grads[0], grads[1], grads[2]);
fail:
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(grads[i]);
        Py_XDECREF(outs[i]);
    }
    Py_XDECREF(needs);
    Py_XDECREF(gradient);
    Py_XDECREF(shape);
    Py_XDECREF(has_bias);
    Py_XDECREF(rows);
    Py_XDECREF(bias_shape);
    Py_XDECREF(bias_out);
    return done;
}

static PyObject *bda_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"host_array", "new_float32", "bias_add", "add", "copy_into", "column_sum", NULL};
    static const int callable[6] = {1, 1, 1, 1, 1, 1};
    return slotted_new(type, args, kwargs, "OOOOOO:BiasDropoutAdd", names, callable, 6);
}

BODIES_TYPE(BiasDropoutAddType, bda, sizeof(Linear), "BiasDropoutAdd",
            "forward(ctx, x, residual, bias): residual + (x + bias) on the host (residual + x without a bias)",
            "backward(ctx, grad): (grad_x, grad_residual, grad_bias), None where not needed",
            "BiasDropoutAdd(host_array, new_float32, bias_add, add, copy_into, column_sum): "
              "HostBiasDropoutAdd's bodies");


/* -- MLP: host_mlp's Function bodies (a Linear's layout and more slots) ------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *slots[MLP_SLOTS];
} MLP;

/* shape[:-1] + (last,) (new reference) */
static PyObject *with_last(PyObject *shape, PyObject *last) {
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim < 1) {
        PyErr_SetString(PyExc_ValueError, "_host_bodies: the MLP's input needs a dimension");
        return NULL;
    }
    PyObject *made = PyTuple_New(ndim);
    if (made == NULL) return NULL;
    for (Py_ssize_t i = 0; i < ndim - 1; i++) PyTuple_SET_ITEM(made, i, Py_NewRef(PyTuple_GET_ITEM(shape, i)));
    PyTuple_SET_ITEM(made, ndim - 1, Py_NewRef(last));
    return made;
}

/* shape[index] of a 2-D array's shape tuple (borrowed), NULL with an exception where it is not 2-D */
static PyObject *dim_of(PyObject *shape, Py_ssize_t index) {
    if (PyTuple_GET_SIZE(shape) != 2) {
        PyErr_SetString(PyExc_ValueError, "_host_bodies: the MLP's weights must be 2-D");
        return NULL;
    }
    return PyTuple_GET_ITEM(shape, index);
}

/* take(count, shape) unpacked into `arrays` (new references); the taken tuple itself in *block (new reference) */
static int take_block(MLP *self, long count, PyObject *shape, PyObject **block, PyObject **arrays) {
    PyObject *n = PyLong_FromLong(count);
    if (n == NULL) return -1;
    PyObject *args[2] = {n, shape};
    *block = PyObject_Vectorcall(self->slots[TAKE], args, 2, NULL);
    Py_DECREF(n);
    if (*block == NULL) return -1;
    if (!PyTuple_Check(*block) || PyTuple_GET_SIZE(*block) != count) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: take must return a tuple of %ld arrays, not %R", count, *block);
        Py_CLEAR(*block);
        return -1;
    }
    for (long i = 0; i < count; i++) arrays[i] = Py_NewRef(PyTuple_GET_ITEM(*block, i));
    return 0;
}

/* a gelu kernel's call; NotImplemented (it refused the buffers) calls kernel_refused(), which raises: -1 */
static int gelu_call(MLP *self, int slot, PyObject *a, PyObject *b, PyObject *c, PyObject *d) {
    PyObject *args[4] = {a, b, c, d};
    PyObject *got = PyObject_Vectorcall(self->slots[slot], args, 4, NULL);
    if (got == NULL) return -1;
    int refused = got == Py_NotImplemented;
    Py_DECREF(got);
    if (!refused) return 0;
    PyObject *raised = PyObject_CallNoArgs(self->slots[KERNEL_REFUSED]);
    if (raised != NULL) {
        Py_DECREF(raised);
        PyErr_SetString(PyExc_RuntimeError, "_host_bodies: kernel_refused() returned instead of raising");
    }
    return -1;
}

static PyObject *mlp_forward(MLP *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 5, "forward(ctx, input, fc1, bias, fc2)") < 0) return NULL;
    PyObject *ctx = args[0], *input = args[1], *fc1 = args[2], *bias = args[3], *fc2 = args[4];
    Linear *linear = (Linear *)self;  /* the helpers' slots: the same places */
    PyObject *values = NULL, *first = NULL, *second = NULL, *values_shape = NULL, *first_shape = NULL;
    PyObject *second_shape = NULL, *shape = NULL, *block = NULL, *arrays[3] = {NULL, NULL, NULL};
    PyObject *transposed = NULL, *bias_values = NULL, *out_shape = NULL, *result = NULL, *out = NULL;
    PyObject *versions[3] = {NULL, NULL, NULL}, *kept = NULL, *done = NULL;
    if ((values = host(linear, input, 1)) == NULL || (first = host(linear, fc1, 0)) == NULL ||
        (second = host(linear, fc2, 0)) == NULL) {
        goto fail;
    }
    if ((values_shape = shape_of(values)) == NULL || (first_shape = shape_of(first)) == NULL ||
        (second_shape = shape_of(second)) == NULL) {
        goto fail;
    }
    PyObject *hidden_size = dim_of(first_shape, 0), *output_size = dim_of(second_shape, 0);
    if (hidden_size == NULL || output_size == NULL) goto fail;
    if ((shape = with_last(values_shape, hidden_size)) == NULL) goto fail;
    if (take_block(self, 3, shape, &block, arrays) < 0) goto fail;
    if ((transposed = PyObject_GetAttr(first, s_T)) == NULL) goto fail;
    if (call3(self->slots[MATMUL], values, transposed, arrays[0]) < 0) goto fail;
    Py_CLEAR(transposed);
    if (bias != Py_None) {
        if ((bias_values = host(linear, bias, 0)) == NULL) goto fail;
        if (call3(self->slots[BIAS_ADD], arrays[0], bias_values, arrays[0]) < 0) goto fail;
    }
    if (gelu_call(self, GELU_FORWARD, arrays[0], arrays[1], arrays[2], Py_True) < 0) goto fail;
    if ((out_shape = with_last(values_shape, output_size)) == NULL) goto fail;
    if (new_output(linear, out_shape, &result, &out) < 0) goto fail;
    if ((transposed = PyObject_GetAttr(second, s_T)) == NULL) goto fail;
    if (call3(self->slots[MATMUL], arrays[1], transposed, out) < 0) goto fail;
    if ((versions[0] = PyObject_GetAttr(input, s_version)) == NULL ||
        (versions[1] = PyObject_GetAttr(fc1, s_version)) == NULL ||
        (versions[2] = PyObject_GetAttr(fc2, s_version)) == NULL) {
        goto fail;
    }
    kept = PyTuple_Pack(8, input, fc1, fc2, versions[0], versions[1], versions[2], block,
                        bias != Py_None ? Py_True : Py_False);
    if (kept == NULL || PyObject_SetAttr(ctx, s_kept, kept) < 0) goto fail;
    done = result;
    result = NULL;
fail:
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(arrays[i]);
        Py_XDECREF(versions[i]);
    }
    Py_XDECREF(values);
    Py_XDECREF(first);
    Py_XDECREF(second);
    Py_XDECREF(values_shape);
    Py_XDECREF(first_shape);
    Py_XDECREF(second_shape);
    Py_XDECREF(shape);
    Py_XDECREF(block);
    Py_XDECREF(transposed);
    Py_XDECREF(bias_values);
    Py_XDECREF(out_shape);
    Py_XDECREF(result);
    Py_XDECREF(out);
    Py_XDECREF(kept);
    return done;
}

/* a tensor's shape as a tuple (tuple(tensor._shape), new reference) */
static PyObject *tensor_shape(PyObject *tensor) {
    PyObject *private_shape = PyObject_GetAttr(tensor, s_shape_private);
    if (private_shape == NULL) return NULL;
    PyObject *shape = PySequence_Tuple(private_shape);
    Py_DECREF(private_shape);
    return shape;
}

/* func(arg) with the result dropped; -1 with an exception */
static int call1(PyObject *func, PyObject *arg) {
    PyObject *got = PyObject_Vectorcall(func, &arg, 1, NULL);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return 0;
}

static PyObject *mlp_backward(MLP *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "backward(ctx, grad)") < 0) return NULL;
    PyObject *ctx = args[0], *grad = args[1];
    Linear *linear = (Linear *)self;
    PyObject *kept = PyObject_GetAttr(ctx, s_kept);
    if (kept == NULL) return NULL;
    if (!PyTuple_Check(kept) || PyTuple_GET_SIZE(kept) != 8 || !PyTuple_Check(PyTuple_GET_ITEM(kept, 6)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(kept, 6)) != 3) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.kept must be the MLP forward's 8-tuple, not %R", kept);
        Py_DECREF(kept);
        return NULL;
    }
    if (PyObject_DelAttr(ctx, s_kept) < 0) {
        Py_DECREF(kept);
        return NULL;
    }
    PyObject *input = PyTuple_GET_ITEM(kept, 0), *fc1 = PyTuple_GET_ITEM(kept, 1), *fc2 = PyTuple_GET_ITEM(kept, 2);
    PyObject *block = PyTuple_GET_ITEM(kept, 6);
    PyObject *hidden = PyTuple_GET_ITEM(block, 0), *activation = PyTuple_GET_ITEM(block, 1);
    PyObject *one_plus_erf = PyTuple_GET_ITEM(block, 2);
    int has_bias = PyTuple_GET_ITEM(kept, 7) == Py_True;
    PyObject *grads[4] = {Py_NewRef(Py_None), Py_NewRef(Py_None), Py_NewRef(Py_None), Py_NewRef(Py_None)};
    PyObject *needs = NULL, *gradient = NULL, *rows = NULL, *shape = NULL, *out = NULL, *rows_t = NULL;
    PyObject *flat = NULL, *second = NULL, *scratch = NULL, *pair[2] = {NULL, NULL}, *hidden_shape = NULL;
    PyObject *hidden_rows = NULL, *rows_shape = NULL, *first = NULL, *values = NULL, *done = NULL;
    int same = 1;
    for (int i = 0; i < 3 && same == 1; i++) same = same_version(PyTuple_GET_ITEM(kept, i), PyTuple_GET_ITEM(kept, 3 + i));
    if (same < 0) goto fail;
    if (same == 0) {
        PyObject *raised = PyObject_CallNoArgs(self->slots[REFUSE]);
        if (raised != NULL) {  /* refuse() must raise */
            Py_DECREF(raised);
            PyErr_SetString(PyExc_RuntimeError, "_host_bodies: refuse() returned instead of raising");
        }
        goto fail;
    }
    if ((needs = PyObject_GetAttr(ctx, s_needs)) == NULL) goto fail;
    int need[4];
    for (int i = 0; i < 4; i++) {
        if ((need[i] = needed(needs, i)) < 0) goto fail;
    }
    if ((gradient = host(linear, grad, 1)) == NULL) goto fail;
    if ((rows = as_rows(linear, gradient)) == NULL) goto fail;  /* a copy where not contiguous, as .contiguous() */
    if (need[3]) {  /* fc2's weight: grad_output.t() @ gelu's output */
        if ((shape = tensor_shape(fc2)) == NULL) goto fail;
        Py_CLEAR(grads[3]);
        if (new_output(linear, shape, &grads[3], &out) < 0) goto fail;
        if ((rows_t = PyObject_GetAttr(rows, s_T)) == NULL || (flat = as_rows(linear, activation)) == NULL) goto fail;
        if (call3(self->slots[MATMUL], rows_t, flat, out) < 0) goto fail;
        Py_CLEAR(shape);
        Py_CLEAR(out);
        Py_CLEAR(rows_t);
        Py_CLEAR(flat);
    }
    if (need[0] || need[1] || (has_bias && need[2])) {
        if ((second = host(linear, fc2, 0)) == NULL) goto fail;
        if ((hidden_shape = shape_of(hidden)) == NULL) goto fail;
        if (take_block(self, 2, hidden_shape, &scratch, pair) < 0) goto fail;
        if (call3(self->slots[MATMUL], gradient, second, pair[0]) < 0) goto fail;  /* fc2's input gradient */
        if (gelu_call(self, GELU_BACKWARD, pair[0], hidden, one_plus_erf, pair[1]) < 0) goto fail;
        if ((hidden_rows = as_rows(linear, pair[1])) == NULL) goto fail;
        if (has_bias && need[2]) {
            if ((rows_shape = shape_of(hidden_rows)) == NULL) goto fail;
            PyObject *columns = dim_of(rows_shape, 1);
            if (columns == NULL || (shape = PyTuple_Pack(1, columns)) == NULL) goto fail;
            Py_CLEAR(grads[2]);
            if (new_output(linear, shape, &grads[2], &out) < 0) goto fail;
            PyObject *sum_args[2] = {hidden_rows, out};
            PyObject *summed = PyObject_Vectorcall(self->slots[COLUMN_SUM], sum_args, 2, NULL);
            if (summed == NULL) goto fail;
            Py_DECREF(summed);
            Py_CLEAR(shape);
            Py_CLEAR(out);
        }
        if ((first = host(linear, fc1, 0)) == NULL) goto fail;
        if (need[1]) {
            if ((values = host(linear, input, 0)) == NULL || (shape = shape_of(first)) == NULL) goto fail;
            Py_CLEAR(grads[1]);
            if (new_output(linear, shape, &grads[1], &out) < 0) goto fail;
            if ((rows_t = PyObject_GetAttr(hidden_rows, s_T)) == NULL || (flat = as_rows(linear, values)) == NULL) {
                goto fail;
            }
            if (call3(self->slots[MATMUL], rows_t, flat, out) < 0) goto fail;
            Py_CLEAR(shape);
            Py_CLEAR(out);
        }
        if (need[0]) {
            if ((shape = tensor_shape(input)) == NULL) goto fail;
            Py_CLEAR(grads[0]);
            if (new_output(linear, shape, &grads[0], &out) < 0) goto fail;
            if (call3(self->slots[MATMUL], pair[1], first, out) < 0) goto fail;
        }
        if (call1(self->slots[GIVE], scratch) < 0) goto fail;
    }
    if (call1(self->slots[GIVE], block) < 0) goto fail;
    done = PyTuple_Pack(4, grads[0], grads[1], grads[2], grads[3]);
fail:
    for (int i = 0; i < 4; i++) Py_XDECREF(grads[i]);
    Py_XDECREF(pair[0]);
    Py_XDECREF(pair[1]);
    Py_DECREF(kept);
    Py_XDECREF(needs);
    Py_XDECREF(gradient);
    Py_XDECREF(rows);
    Py_XDECREF(shape);
    Py_XDECREF(out);
    Py_XDECREF(rows_t);
    Py_XDECREF(flat);
    Py_XDECREF(second);
    Py_XDECREF(scratch);
    Py_XDECREF(hidden_shape);
    Py_XDECREF(hidden_rows);
    Py_XDECREF(rows_shape);
    Py_XDECREF(first);
    Py_XDECREF(values);
    return done;
}

static PyObject *mlp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"host_array", "new_float32", "matmul", "bias_add", "column_sum", "refuse", "take", "give",
                            "gelu_forward", "gelu_backward", "kernel_refused", NULL};
    /* the argument at i goes to slot i (a Linear's first six), then from TAKE on (RESHAPE: found at first use) */
    PyObject *got[11];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOO:MLP", names, &got[0], &got[1], &got[2], &got[3],
                                     &got[4], &got[5], &got[6], &got[7], &got[8], &got[9], &got[10])) {
        return NULL;
    }
    for (int i = 0; i < 11; i++) {
        if (!PyCallable_Check(got[i])) {
            PyErr_Format(PyExc_TypeError, "%s must be callable, not %R", names[i], got[i]);
            return NULL;
        }
    }
    MLP *self = (MLP *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    for (int i = 0; i < 6; i++) self->slots[i] = Py_NewRef(got[i]);
    for (int i = 6; i < 11; i++) self->slots[TAKE + i - 6] = Py_NewRef(got[i]);
    return (PyObject *)self;
}

BODIES_TYPE(MLPType, mlp, sizeof(MLP), "MLP",
            "forward(ctx, input, fc1, bias, fc2): gelu(input @ fc1.T + bias) @ fc2.T on the host; the block kept for backward",
            "backward(ctx, grad): (grad_input, grad_fc1, grad_bias, grad_fc2), None where not needed",
            "MLP(host_array, new_float32, matmul, bias_add, column_sum, refuse, take, give, gelu_forward, "
              "gelu_backward, kernel_refused): HostMLP's bodies");


/* -- LayerNorm: host_layer_norm's Function bodies (a Linear's layout, other callables) --------------------------- */

/* ndarray.reshape(array, a) or ndarray.reshape(array, a, b) (b NULL: one argument), new reference */
static PyObject *reshaped(Linear *self, PyObject *array, PyObject *a, PyObject *b) {
    if (self->slots[RESHAPE] == NULL) {
        self->slots[RESHAPE] = PyObject_GetAttr((PyObject *)Py_TYPE(array), s_reshape);
        if (self->slots[RESHAPE] == NULL) return NULL;
    }
    PyObject *args[3] = {array, a, b};
    return call_traced_vector(self->slots[RESHAPE], args, b == NULL ? 2 : 3, NULL);
}

/* getattr(obj, name, None) (new reference: None where missing) */
static PyObject *attr_or_none(PyObject *obj, PyObject *name) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return value;
    PyErr_Clear();
    return Py_NewRef(Py_None);
}

/* host_layer_norm's kept_rows(tensor, n): the rows of the tensor's own memory where it owns it (C-contiguous, no
 * _base, storage offset 0), else of a copy (copy_rows(values)); new reference */
static PyObject *kept_rows(Linear *self, PyObject *tensor, PyObject *n) {
    PyObject *values = NULL, *offset = NULL, *flags = NULL, *flag = NULL, *base = NULL, *at = NULL, *copy = NULL;
    PyObject *rows = NULL;
    if ((values = host(self, tensor, 1)) == NULL || (offset = attr_or_none(tensor, s_storage_offset)) == NULL) goto done;
    if ((flags = PyObject_GetAttr(values, s_flags)) == NULL || (flag = PyObject_GetAttr(flags, s_c_contiguous)) == NULL) {
        goto done;
    }
    int owned = PyObject_IsTrue(flag);
    if (owned > 0) {
        if ((base = attr_or_none(tensor, s_base)) == NULL) goto done;
        owned = base == Py_None && offset != Py_None;
    }
    if (owned > 0) {
        PyObject *origin = PyLong_FromLong(0);
        if (origin == NULL || (at = PyObject_CallNoArgs(offset)) == NULL) {
            Py_XDECREF(origin);
            goto done;
        }
        owned = PyObject_RichCompareBool(at, origin, Py_EQ);
        Py_DECREF(origin);
    }
    if (owned < 0) goto done;
    if (owned) {
        rows = reshaped(self, values, minus_one, n);
    } else if ((copy = PyObject_Vectorcall(self->slots[LN_COPY_ROWS], &values, 1, NULL)) != NULL) {
        rows = reshaped(self, copy, minus_one, n);
    }
done:
    Py_XDECREF(values);
    Py_XDECREF(offset);
    Py_XDECREF(flags);
    Py_XDECREF(flag);
    Py_XDECREF(base);
    Py_XDECREF(at);
    Py_XDECREF(copy);
    return rows;
}

/* host_array(tensor, sync=False).reshape(n), or None for None; new reference */
static PyObject *parameter_row(Linear *self, PyObject *tensor, PyObject *n) {
    if (tensor == Py_None) return Py_NewRef(Py_None);
    PyObject *values = host(self, tensor, 0);
    if (values == NULL) return NULL;
    PyObject *row = reshaped(self, values, n, NULL);
    Py_DECREF(values);
    return row;
}

static PyObject *ln_forward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 6, "forward(ctx, input, weight, bias, n, eps)") < 0) return NULL;
    PyObject *ctx = args[0], *input = args[1], *weight = args[2], *bias = args[3], *n = args[4], *eps = args[5];
    PyObject *x = NULL, *w = NULL, *b = NULL, *shape = NULL, *result = NULL, *out = NULL, *x_shape = NULL;
    PyObject *out_rows = NULL, *moments = NULL, *parameter_shape = NULL, *saved = NULL, *kept = NULL, *done = NULL;
    if ((x = kept_rows(self, input, n)) == NULL) goto fail;
    if ((w = parameter_row(self, weight, n)) == NULL || (b = parameter_row(self, bias, n)) == NULL) goto fail;
    if ((shape = tensor_shape(input)) == NULL) goto fail;
    if (new_output(self, shape, &result, &out) < 0) goto fail;
    if ((x_shape = shape_of(x)) == NULL || (out_rows = reshaped(self, out, x_shape, NULL)) == NULL) goto fail;
    PyObject *call[5] = {x, w, b, eps, out_rows};
    if ((moments = PyObject_Vectorcall(self->slots[LN_FORWARD], call, 5, NULL)) == NULL) goto fail;
    if (!PyTuple_Check(moments) || PyTuple_GET_SIZE(moments) != 3) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: layer_norm_forward must return (y, mean, rstd), not %R", moments);
        goto fail;
    }
    if (weight == Py_None && bias == Py_None) {
        parameter_shape = Py_NewRef(Py_None);
    } else if ((parameter_shape = tensor_shape(bias == Py_None ? weight : bias)) == NULL) {
        goto fail;
    }
    saved = PyTuple_Pack(8, x, PyTuple_GET_ITEM(moments, 1), PyTuple_GET_ITEM(moments, 2), w,
                         weight != Py_None ? Py_True : Py_False, bias != Py_None ? Py_True : Py_False, shape,
                         parameter_shape);
    if (saved == NULL || PyObject_SetAttr(ctx, s_saved, saved) < 0) goto fail;
    if ((kept = PyTuple_Pack(2, input, weight)) == NULL || PyObject_SetAttr(ctx, s_kept, kept) < 0) goto fail;
    done = result;
    result = NULL;
fail:
    Py_XDECREF(x);
    Py_XDECREF(w);
    Py_XDECREF(b);
    Py_XDECREF(shape);
    Py_XDECREF(result);
    Py_XDECREF(out);
    Py_XDECREF(x_shape);
    Py_XDECREF(out_rows);
    Py_XDECREF(moments);
    Py_XDECREF(parameter_shape);
    Py_XDECREF(saved);
    Py_XDECREF(kept);
    return done;
}

static PyObject *ln_backward(Linear *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "backward(ctx, grad)") < 0) return NULL;
    PyObject *ctx = args[0], *grad = args[1];
    PyObject *saved = PyObject_GetAttr(ctx, s_saved);
    if (saved == NULL) return NULL;
    if (!PyTuple_Check(saved) || PyTuple_GET_SIZE(saved) != 8) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.saved must be the layer norm forward's 8-tuple, not %R", saved);
        Py_DECREF(saved);
        return NULL;
    }
    PyObject *x = PyTuple_GET_ITEM(saved, 0), *has_weight = PyTuple_GET_ITEM(saved, 4);
    PyObject *has_bias = PyTuple_GET_ITEM(saved, 5), *parameter_shape = PyTuple_GET_ITEM(saved, 7);
    PyObject *result = NULL, *out = NULL, *grads[2] = {Py_NewRef(Py_None), Py_NewRef(Py_None)};
    PyObject *outs[2] = {Py_NewRef(Py_None), Py_NewRef(Py_None)}, *flats[2] = {NULL, NULL};
    PyObject *x_shape = NULL, *values = NULL, *contiguous = NULL, *rows = NULL, *out_rows = NULL, *done = NULL;
    if (new_output(self, PyTuple_GET_ITEM(saved, 6), &result, &out) < 0) goto fail;
    PyObject *flags[2] = {has_weight, has_bias};
    for (int i = 0; i < 2; i++) {
        if (flags[i] != Py_True) continue;
        Py_CLEAR(grads[i]);
        Py_CLEAR(outs[i]);
        if (new_output(self, parameter_shape, &grads[i], &outs[i]) < 0) goto fail;
    }
    if ((x_shape = shape_of(x)) == NULL) goto fail;
    if (PyTuple_GET_SIZE(x_shape) != 2) {
        PyErr_SetString(PyExc_ValueError, "_host_bodies: the layer norm's saved rows must be 2-D");
        goto fail;
    }
    if ((values = host(self, grad, 1)) == NULL) goto fail;
    if ((contiguous = PyObject_Vectorcall(self->slots[LN_CONTIGUOUS], &values, 1, NULL)) == NULL) goto fail;
    if ((rows = reshaped(self, contiguous, minus_one, PyTuple_GET_ITEM(x_shape, 1))) == NULL) goto fail;
    if ((out_rows = reshaped(self, out, x_shape, NULL)) == NULL) goto fail;
    for (int i = 0; i < 2; i++) {
        flats[i] = outs[i] == Py_None ? Py_NewRef(Py_None) : reshaped(self, outs[i], minus_one, NULL);
        if (flats[i] == NULL) goto fail;
    }
    PyObject *call[10] = {rows, x, PyTuple_GET_ITEM(saved, 1), PyTuple_GET_ITEM(saved, 2), PyTuple_GET_ITEM(saved, 3),
                          has_weight, has_bias, out_rows, flats[0], flats[1]};
    PyObject *got = PyObject_Vectorcall(self->slots[LN_BACKWARD], call, 10, NULL);
    if (got == NULL) goto fail;
    Py_DECREF(got);
    if (PyObject_DelAttr(ctx, s_saved) < 0 || PyObject_DelAttr(ctx, s_kept) < 0) goto fail;
    done = PyTuple_Pack(5, result, grads[0], grads[1], Py_None, Py_None);
fail:
    for (int i = 0; i < 2; i++) {
        Py_XDECREF(grads[i]);
        Py_XDECREF(outs[i]);
        Py_XDECREF(flats[i]);
    }
    Py_DECREF(saved);
    Py_XDECREF(result);
    Py_XDECREF(out);
    Py_XDECREF(x_shape);
    Py_XDECREF(values);
    Py_XDECREF(contiguous);
    Py_XDECREF(rows);
    Py_XDECREF(out_rows);
    return done;
}

static PyObject *ln_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"host_array", "new_float32", "layer_norm_forward", "layer_norm_backward", "copy_rows",
                            "contiguous", NULL};
    static const int callable[6] = {1, 1, 1, 1, 1, 1};
    return slotted_new(type, args, kwargs, "OOOOOO:LayerNorm", names, callable, 6);
}

BODIES_TYPE(LayerNormType, ln, sizeof(Linear), "LayerNorm",
            "forward(ctx, input, weight, bias, n, eps): layer_norm over the last n elements on the host",
            "backward(ctx, grad): (grad_input, grad_weight, grad_bias, None, None), None where there is no parameter",
            "LayerNorm(host_array, new_float32, layer_norm_forward, layer_norm_backward, copy_rows, contiguous): "
              "HostLayerNorm's bodies");


/* -- Attention: host_attention's Function bodies ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *slots[ATTENTION_SLOTS];
} Attention;

/* one_blas_thread() (its result dropped); -1 with an exception */
static int one_thread(Attention *self) {
    PyObject *got = PyObject_CallNoArgs(self->slots[AT_ONE_THREAD]);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return 0;
}

/* array.copy() (new reference) */
static PyObject *copied(PyObject *array) {
    return PyObject_CallMethodNoArgs(array, s_copy);
}

/* host_attention's attend(ctx, query, key, value, plan): the context into a new tensor, ctx.saved for the backward */
static PyObject *attend(Attention *self, PyObject *ctx, PyObject *query, PyObject *key, PyObject *value,
                        PyObject *plan) {
    Linear *linear = (Linear *)self;
    PyObject *shape = NULL, *out_shape = NULL, *result = NULL, *memory = NULL, *mask = NULL, *tensor = NULL;
    PyObject *inputs[3] = {NULL, NULL, NULL}, *pieces = NULL, *kept = NULL, *four = NULL, *context = NULL;
    PyObject *alpha = NULL, *probs = NULL, *versions = NULL, *saved = NULL, *done = NULL, *heads_size = NULL;
    if (one_thread(self) < 0) return NULL;
    if ((shape = tensor_shape(query)) == NULL) goto fail;
    if (PyTuple_GET_SIZE(shape) != 4) {
        PyErr_SetString(PyExc_ValueError, "_host_bodies: the attention's query must be [sq, b, np, hn]");
        goto fail;
    }
    if ((heads_size = PyNumber_Multiply(PyTuple_GET_ITEM(shape, 2), PyTuple_GET_ITEM(shape, 3))) == NULL) goto fail;
    out_shape = PyTuple_Pack(3, PyTuple_GET_ITEM(shape, 0), PyTuple_GET_ITEM(shape, 1), heads_size);
    if (out_shape == NULL || new_output(linear, out_shape, &result, &memory) < 0) goto fail;
    if ((mask = PyObject_GetAttr(plan, s_mask)) == NULL || (tensor = PyObject_GetAttr(plan, s_tensor)) == NULL) goto fail;
    if (tensor != Py_None) {  /* the mask tensor's memory, copied for the backward */
        PyObject *values = host(linear, tensor, 1);
        if (values == NULL) goto fail;
        Py_SETREF(mask, copied(values));
        Py_DECREF(values);
        if (mask == NULL) goto fail;
    }
    if ((inputs[0] = host(linear, query, 1)) == NULL || (inputs[1] = host(linear, key, 0)) == NULL ||
        (inputs[2] = host(linear, value, 0)) == NULL) {
        goto fail;
    }
    if ((pieces = PyObject_GetAttr(plan, s_pieces)) == NULL) goto fail;
    if (pieces == Py_None) {  /* the backward's own copies (never arrays over a view's memory) */
        for (int i = 0; i < 3; i++) {
            Py_SETREF(inputs[i], copied(inputs[i]));
            if (inputs[i] == NULL) goto fail;
        }
        kept = PyTuple_Pack(3, inputs[0], inputs[1], inputs[2]);
    } else {  /* the split's pieces: tensors of their own memory, kept alive (their versions checked) */
        kept = Py_NewRef(pieces);
    }
    if (kept == NULL || (alpha = PyObject_GetAttr(plan, s_alpha)) == NULL) goto fail;
    four = PyTuple_Pack(4, PyTuple_GET_ITEM(shape, 0), PyTuple_GET_ITEM(shape, 1), PyTuple_GET_ITEM(shape, 2),
                        PyTuple_GET_ITEM(shape, 3));
    if (four == NULL || (context = reshaped(linear, memory, four, NULL)) == NULL) goto fail;
    PyObject *call[6] = {inputs[0], inputs[1], inputs[2], mask, alpha, context};
    if ((probs = PyObject_Vectorcall(self->slots[AT_FORWARD], call, 6, NULL)) == NULL) goto fail;
    if ((versions = PyObject_GetAttr(plan, s_versions)) == NULL) goto fail;
    saved = PyTuple_Pack(5, kept, versions, probs, mask, alpha);
    if (saved == NULL || PyObject_SetAttr(ctx, s_saved, saved) < 0) goto fail;
    done = result;
    result = NULL;
fail:
    for (int i = 0; i < 3; i++) Py_XDECREF(inputs[i]);
    Py_XDECREF(shape);
    Py_XDECREF(heads_size);
    Py_XDECREF(out_shape);
    Py_XDECREF(result);
    Py_XDECREF(memory);
    Py_XDECREF(mask);
    Py_XDECREF(tensor);
    Py_XDECREF(pieces);
    Py_XDECREF(kept);
    Py_XDECREF(four);
    Py_XDECREF(context);
    Py_XDECREF(alpha);
    Py_XDECREF(probs);
    Py_XDECREF(versions);
    Py_XDECREF(saved);
    return done;
}

/* host_attention's gradients(ctx, grad, grad_query, grad_key, grad_value): into the three arrays; -1 with an
 * exception */
static int attention_gradients(Attention *self, PyObject *ctx, PyObject *grad, PyObject *grad_query,
                               PyObject *grad_key, PyObject *grad_value) {
    Linear *linear = (Linear *)self;
    PyObject *saved = PyObject_GetAttr(ctx, s_saved);
    if (saved == NULL) return -1;
    if (!PyTuple_Check(saved) || PyTuple_GET_SIZE(saved) != 5) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.saved must be the attention forward's 5-tuple, not %R", saved);
        Py_DECREF(saved);
        return -1;
    }
    int status = -1;
    PyObject *kept = Py_NewRef(PyTuple_GET_ITEM(saved, 0)), *versions = PyTuple_GET_ITEM(saved, 1);
    PyObject *now = NULL, *arrays[3] = {NULL, NULL, NULL}, *values = NULL, *query_shape = NULL, *rows = NULL;
    if (PyObject_DelAttr(ctx, s_saved) < 0) goto done;
    if (versions != Py_None) {
        if (!PyTuple_Check(kept) || PyTuple_GET_SIZE(kept) != 3) {
            PyErr_SetString(PyExc_TypeError, "_host_bodies: the attention's kept pieces must be a 3-tuple");
            goto done;
        }
        if ((now = PyTuple_New(3)) == NULL) goto done;
        for (int i = 0; i < 3; i++) {
            PyObject *version = PyObject_GetAttr(PyTuple_GET_ITEM(kept, i), s_version);
            if (version == NULL) goto done;
            PyTuple_SET_ITEM(now, i, version);
        }
        int same = PyObject_RichCompareBool(now, versions, Py_EQ);
        if (same < 0) goto done;
        if (!same) {
            PyObject *raised = PyObject_CallNoArgs(self->slots[AT_REFUSE]);
            if (raised != NULL) {  /* refuse() must raise */
                Py_DECREF(raised);
                PyErr_SetString(PyExc_RuntimeError, "_host_bodies: refuse() returned instead of raising");
            }
            goto done;
        }
        for (int i = 0; i < 3; i++) {
            if ((arrays[i] = host(linear, PyTuple_GET_ITEM(kept, i), 0)) == NULL) goto done;
        }
        Py_SETREF(kept, PyTuple_Pack(3, arrays[0], arrays[1], arrays[2]));
        if (kept == NULL) goto done;
    }
    if (one_thread(self) < 0) goto done;
    if ((values = host(linear, grad, 1)) == NULL || (query_shape = shape_of(grad_query)) == NULL) goto done;
    if ((rows = reshaped(linear, values, query_shape, NULL)) == NULL) goto done;
    PyObject *call[8] = {rows, kept, PyTuple_GET_ITEM(saved, 2), PyTuple_GET_ITEM(saved, 3), PyTuple_GET_ITEM(saved, 4),
                         grad_query, grad_key, grad_value};
    PyObject *got = PyObject_Vectorcall(self->slots[AT_BACKWARD], call, 8, NULL);
    if (got == NULL) goto done;
    Py_DECREF(got);
    status = 0;
done:
    for (int i = 0; i < 3; i++) Py_XDECREF(arrays[i]);
    Py_DECREF(saved);
    Py_XDECREF(kept);
    Py_XDECREF(now);
    Py_XDECREF(values);
    Py_XDECREF(query_shape);
    Py_XDECREF(rows);
    return status;
}

static PyObject *attention_forward(Attention *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 5, "forward(ctx, query, key, value, plan)") < 0) return NULL;
    PyObject *ctx = args[0], *query = args[1], *key = args[2];
    PyObject *query_shape = tensor_shape(query), *key_shape = NULL, *shapes = NULL, *done = NULL;
    if (query_shape == NULL || (key_shape = tensor_shape(key)) == NULL) goto fail;
    if ((shapes = PyTuple_Pack(2, query_shape, key_shape)) == NULL || PyObject_SetAttr(ctx, s_shapes, shapes) < 0) {
        goto fail;
    }
    done = attend(self, ctx, query, key, args[3], args[4]);
fail:
    Py_XDECREF(query_shape);
    Py_XDECREF(key_shape);
    Py_XDECREF(shapes);
    return done;
}

static PyObject *attention_backward(Attention *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "backward(ctx, grad)") < 0) return NULL;
    Linear *linear = (Linear *)self;
    PyObject *shapes = PyObject_GetAttr(args[0], s_shapes);
    if (shapes == NULL) return NULL;
    if (!PyTuple_Check(shapes) || PyTuple_GET_SIZE(shapes) != 2) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.shapes must be (query shape, key shape), not %R", shapes);
        Py_DECREF(shapes);
        return NULL;
    }
    PyObject *grads[3] = {NULL, NULL, NULL}, *outs[3] = {NULL, NULL, NULL}, *done = NULL;
    for (int i = 0; i < 3; i++) {
        if (new_output(linear, PyTuple_GET_ITEM(shapes, i == 0 ? 0 : 1), &grads[i], &outs[i]) < 0) goto fail;
    }
    if (attention_gradients(self, args[0], args[1], outs[0], outs[1], outs[2]) < 0) goto fail;
    done = PyTuple_Pack(4, grads[0], grads[1], grads[2], Py_None);
fail:
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(grads[i]);
        Py_XDECREF(outs[i]);
    }
    Py_DECREF(shapes);
    return done;
}

static PyObject *attention_qkv_forward(Attention *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 3, "qkv_forward(ctx, qkv, plan)") < 0) return NULL;
    PyObject *ctx = args[0], *plan = args[2];
    PyObject *shape = tensor_shape(args[1]), *rope = NULL, *pieces = NULL, *done = NULL;
    if (shape == NULL || PyObject_SetAttr(ctx, s_shape, shape) < 0) goto fail;
    if ((rope = PyObject_GetAttr(plan, s_rope)) == NULL || PyObject_SetAttr(ctx, s_rope, rope) < 0) goto fail;
    if ((pieces = PyObject_GetAttr(plan, s_pieces)) == NULL) goto fail;
    if (!PyTuple_Check(pieces) || PyTuple_GET_SIZE(pieces) != 3) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: plan.pieces must be (query, key, value), not %R", pieces);
        goto fail;
    }
    done = attend(self, ctx, PyTuple_GET_ITEM(pieces, 0), PyTuple_GET_ITEM(pieces, 1), PyTuple_GET_ITEM(pieces, 2),
                  plan);
fail:
    Py_XDECREF(shape);
    Py_XDECREF(rope);
    Py_XDECREF(pieces);
    return done;
}

/* memory[..., start:stop] (new reference) */
static PyObject *last_part(PyObject *memory, Py_ssize_t start, Py_ssize_t stop, int open_end) {
    PyObject *low = PyLong_FromSsize_t(start), *high = open_end ? Py_NewRef(Py_None) : PyLong_FromSsize_t(stop);
    PyObject *cut = NULL, *index = NULL, *part = NULL;
    if (low != NULL && high != NULL && (cut = PySlice_New(low, high, NULL)) != NULL &&
        (index = PyTuple_Pack(2, Py_Ellipsis, cut)) != NULL) {
        part = PyObject_GetItem(memory, index);
    }
    Py_XDECREF(low);
    Py_XDECREF(high);
    Py_XDECREF(cut);
    Py_XDECREF(index);
    return part;
}

static PyObject *attention_qkv_backward(Attention *self, PyObject *const *args, Py_ssize_t nargs) {
    if (argument_count(nargs, 2, "qkv_backward(ctx, grad)") < 0) return NULL;
    Linear *linear = (Linear *)self;
    PyObject *ctx = args[0], *grad = args[1];
    PyObject *shape = NULL, *rope = NULL, *result = NULL, *memory = NULL, *parts[3] = {NULL, NULL, NULL};
    PyObject *rotated[2] = {NULL, NULL}, *done = NULL;
    if ((shape = PyObject_GetAttr(ctx, s_shape)) == NULL || (rope = PyObject_GetAttr(ctx, s_rope)) == NULL) goto fail;
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != 4) {
        PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.shape must be the QKV shape [sq, b, np, 3 * hn], not %R", shape);
        goto fail;
    }
    Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 3));
    if (size == -1 && PyErr_Occurred()) goto fail;
    size /= 3;  /* shape[3] // 3 (non-negative) */
    if (new_output(linear, shape, &result, &memory) < 0) goto fail;
    if ((parts[0] = last_part(memory, 0, size, 0)) == NULL || (parts[1] = last_part(memory, size, 2 * size, 0)) == NULL ||
        (parts[2] = last_part(memory, 2 * size, 0, 1)) == NULL) {
        goto fail;
    }
    if (rope == Py_None) {
        if (attention_gradients(self, ctx, grad, parts[0], parts[1], parts[2]) < 0) goto fail;
    } else {  /* q and k went through megatron's rotary embedding: its backward into the QKV gradient */
        if (!PyTuple_Check(rope) || PyTuple_GET_SIZE(rope) != 2) {
            PyErr_Format(PyExc_TypeError, "_host_bodies: ctx.rope must be the rotary embeddings of q and k, not %R", rope);
            goto fail;
        }
        for (int i = 0; i < 2; i++) {
            PyObject *part_shape = shape_of(parts[i]);
            if (part_shape == NULL) goto fail;
            rotated[i] = PyObject_Vectorcall(self->slots[AT_EMPTY], &part_shape, 1, NULL);
            Py_DECREF(part_shape);
            if (rotated[i] == NULL) goto fail;
        }
        if (attention_gradients(self, ctx, grad, rotated[0], rotated[1], parts[2]) < 0) goto fail;
        for (int i = 0; i < 2; i++) {
            if (call3(self->slots[AT_ROPE_BACKWARD], rotated[i], PyTuple_GET_ITEM(rope, i), parts[i]) < 0) goto fail;
        }
    }
    done = PyTuple_Pack(2, result, Py_None);
fail:
    for (int i = 0; i < 3; i++) Py_XDECREF(parts[i]);
    for (int i = 0; i < 2; i++) Py_XDECREF(rotated[i]);
    Py_XDECREF(shape);
    Py_XDECREF(rope);
    Py_XDECREF(result);
    Py_XDECREF(memory);
    return done;
}

static PyObject *attention_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"host_array", "new_float32", "forward_in_halves", "backward_in_halves", "one_blas_thread",
                            "refuse", "rope_backward", "empty", NULL};
    PyObject *got[8];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOO:Attention", names, &got[0], &got[1], &got[2], &got[3],
                                     &got[4], &got[5], &got[6], &got[7])) {
        return NULL;
    }
    for (int i = 0; i < 8; i++) {
        if (!PyCallable_Check(got[i])) {
            PyErr_Format(PyExc_TypeError, "%s must be callable, not %R", names[i], got[i]);
            return NULL;
        }
    }
    Attention *self = (Attention *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    for (int i = 0; i < 6; i++) self->slots[i] = Py_NewRef(got[i]);  /* RESHAPE (6): found at first use */
    self->slots[AT_ROPE_BACKWARD] = Py_NewRef(got[6]);
    self->slots[AT_EMPTY] = Py_NewRef(got[7]);
    return (PyObject *)self;
}

static PyMethodDef attention_methods[] = {
    {"forward", (PyCFunction)(void (*)(void))attention_forward, METH_FASTCALL,
     "forward(ctx, query, key, value, plan): HostAttention's forward, the context [sq, b, np * hn]"},
    {"backward", (PyCFunction)(void (*)(void))attention_backward, METH_FASTCALL,
     "backward(ctx, grad): (grad_query, grad_key, grad_value, None)"},
    {"qkv_forward", (PyCFunction)(void (*)(void))attention_qkv_forward, METH_FASTCALL,
     "qkv_forward(ctx, qkv, plan): HostAttentionQKV's forward from the split's pieces in plan.pieces"},
    {"qkv_backward", (PyCFunction)(void (*)(void))attention_qkv_backward, METH_FASTCALL,
     "qkv_backward(ctx, grad): (grad_qkv, None), the rotary embedding's backward where plan.rope was set"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AttentionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mindspeed_ms.compat._host_bodies.Attention",
    .tp_basicsize = sizeof(Attention),
    .tp_dealloc = slotted_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Attention(host_array, new_float32, forward_in_halves, backward_in_halves, one_blas_thread, refuse, "
              "rope_backward, empty): HostAttention's and HostAttentionQKV's bodies",
    .tp_traverse = slotted_traverse,
    .tp_clear = slotted_clear,
    .tp_methods = attention_methods,
    .tp_new = attention_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_bodies",
    "the host Functions' bodies in C (mindspeed_ms.compat.host_linear, host_bda, host_mlp, host_layer_norm, "
    "host_attention)", -1, NULL,
};

PyMODINIT_FUNC PyInit__host_bodies(void) {
    if (PyType_Ready(&LinearType) < 0 || PyType_Ready(&BiasDropoutAddType) < 0 ||
        PyType_Ready(&MLPType) < 0 || PyType_Ready(&LayerNormType) < 0 ||
        PyType_Ready(&AttentionType) < 0) {
        return NULL;
    }
    s_shape = PyUnicode_InternFromString("shape");
    s_T = PyUnicode_InternFromString("T");
    s_version = PyUnicode_InternFromString("_version");
    s_shape_private = PyUnicode_InternFromString("_shape");
    s_kept = PyUnicode_InternFromString("kept");
    s_needs = PyUnicode_InternFromString("needs_input_grad");
    s_reshape = PyUnicode_InternFromString("reshape");
    s_has_bias = PyUnicode_InternFromString("has_bias");
    s_flags = PyUnicode_InternFromString("flags");
    s_c_contiguous = PyUnicode_InternFromString("c_contiguous");
    s_base = PyUnicode_InternFromString("_base");
    s_storage_offset = PyUnicode_InternFromString("storage_offset");
    s_saved = PyUnicode_InternFromString("saved");
    s_shapes = PyUnicode_InternFromString("shapes");
    s_rope = PyUnicode_InternFromString("rope");
    s_mask = PyUnicode_InternFromString("mask");
    s_tensor = PyUnicode_InternFromString("tensor");
    s_pieces = PyUnicode_InternFromString("pieces");
    s_versions = PyUnicode_InternFromString("versions");
    s_alpha = PyUnicode_InternFromString("alpha");
    s_copy = PyUnicode_InternFromString("copy");
    minus_one = PyLong_FromLong(-1);
    sync_kwnames = Py_BuildValue("(s)", "sync");
    if (!s_shape || !s_T || !s_version || !s_shape_private || !s_kept || !s_needs || !s_reshape || !s_has_bias || !s_flags ||
        !s_c_contiguous || !s_base || !s_storage_offset || !s_saved ||
        !s_shapes || !s_rope || !s_mask || !s_tensor || !s_pieces || !s_versions || !s_alpha || !s_copy ||
        !minus_one ||
        !sync_kwnames) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", HOST_BODIES_ABI) < 0 ||
        PyModule_AddObjectRef(m, "Linear", (PyObject *)&LinearType) < 0 ||
        PyModule_AddObjectRef(m, "BiasDropoutAdd", (PyObject *)&BiasDropoutAddType) < 0 ||
        PyModule_AddObjectRef(m, "MLP", (PyObject *)&MLPType) < 0 ||
        PyModule_AddObjectRef(m, "LayerNorm", (PyObject *)&LayerNormType) < 0 ||
        PyModule_AddObjectRef(m, "Attention", (PyObject *)&AttentionType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
