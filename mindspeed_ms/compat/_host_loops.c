/* Element loops over float32 host memory: the arithmetic of mindspeed_ms.compat.host_kernels in one pass.
 *
 * NumPy runs one ufunc pass per operation (Adam's moments: ten passes over a chunk, its update four); here each
 * element goes through the same float32 operations in the same order in registers. Every operation is an IEEE
 * single-precision operation rounded on its own (-ffp-contract=off: no fused multiply-add; no -ffast-math;
 * subnormals kept), so each element gets the bits NumPy's passes give it (tests/test_compat_host_loops.py
 * compares both paths bit for bit). Optional, as the alias pass's accelerator: without it the NumPy passes run.
 *
 * Each function takes writable contiguous float32 buffers (NumPy arrays) of one length and Python numbers for
 * the scalars (already float32 values); it returns NotImplemented for anything else, and the caller then runs
 * the NumPy passes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* Fill `view` with a writable C-contiguous float32 buffer of `object`; 0 when it is not one (nothing held). */
static int float32_buffer(PyObject *object, Py_buffer *view) {
    if (PyObject_GetBuffer(object, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "f") != 0) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* Take `count` buffers (None entries allowed where `optional`); all of `length` elements. 0: release all. */
static int take(PyObject **objects, Py_buffer *views, int count, const int *optional, Py_ssize_t *length) {
    Py_ssize_t elements = -1;
    for (int i = 0; i < count; i++) {
        views[i].obj = NULL;
        views[i].buf = NULL;
    }
    for (int i = 0; i < count; i++) {
        if (optional[i] && objects[i] == Py_None) continue;
        if (!float32_buffer(objects[i], &views[i])) {
            views[i].obj = NULL;
            views[i].buf = NULL;
            goto fail;
        }
        Py_ssize_t n = views[i].len / 4;
        if (elements >= 0 && n != elements) goto fail;
        elements = n;
    }
    *length = elements < 0 ? 0 : elements;
    return 1;
fail:
    for (int i = 0; i < count; i++) if (views[i].buf != NULL) PyBuffer_Release(&views[i]);
    return 0;
}

static void release(Py_buffer *views, int count) {
    for (int i = 0; i < count; i++) if (views[i].buf != NULL) PyBuffer_Release(&views[i]);
}

VECTOR_CLONES
static void moments(Py_ssize_t n, const float *restrict grad, float *restrict first, float *restrict second,
                    float *restrict tmp, float weight, float keep, float scale, float root, float epsilon) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float g = grad[i];
        float m = first[i];
        float d = g - m;
        d = d * weight;
        first[i] = m + d;
        float v = second[i] * keep;
        float s = g * scale;
        s = s * g;
        v = v + s;
        second[i] = v;
        float t = sqrtf(v);
        t = t / root;
        tmp[i] = t + epsilon;
    }
}

VECTOR_CLONES
static void moments_maximum(Py_ssize_t n, const float *restrict grad, float *restrict first,
                            float *restrict second, float *restrict maximum, float *restrict tmp, float weight,
                            float keep, float scale, float root, float epsilon) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float g = grad[i];
        float m = first[i];
        float d = g - m;
        d = d * weight;
        first[i] = m + d;
        float v = second[i] * keep;
        float s = g * scale;
        s = s * g;
        v = v + s;
        second[i] = v;
        float a = maximum[i];
        /* numpy.maximum(maximum, second): NaN if either is NaN, else the larger */
        float larger = (a != a) ? a : ((v != v) ? v : (a >= v ? a : v));
        maximum[i] = larger;
        float t = sqrtf(larger);
        t = t / root;
        tmp[i] = t + epsilon;
    }
}

static void negate(Py_ssize_t n, const float *restrict grad, float *restrict negated) {
    for (Py_ssize_t i = 0; i < n; i++) negated[i] = -grad[i];
}

/* adam_moments(grad, first, second, maximum or None, tmp, negated or None, weight, keep, scale, root, epsilon) */
static PyObject *adam_moments(PyObject *self, PyObject *args) {
    PyObject *objects[6];
    float weight, keep, scale, root, epsilon;
    if (!PyArg_ParseTuple(args, "OOOOOOfffff", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4],
                          &objects[5], &weight, &keep, &scale, &root, &epsilon))
        return NULL;
    static const int optional[6] = {0, 0, 0, 1, 0, 1};
    Py_buffer views[6];
    Py_ssize_t n;
    if (!take(objects, views, 6, optional, &n)) Py_RETURN_NOTIMPLEMENTED;
    const float *grad = views[0].buf;
    Py_BEGIN_ALLOW_THREADS
    if (views[5].buf != NULL) {
        negate(n, grad, views[5].buf);
        grad = views[5].buf;
    }
    if (views[3].buf != NULL)
        moments_maximum(n, grad, views[1].buf, views[2].buf, views[3].buf, views[4].buf, weight, keep, scale,
                        root, epsilon);
    else
        moments(n, grad, views[1].buf, views[2].buf, views[4].buf, weight, keep, scale, root, epsilon);
    Py_END_ALLOW_THREADS
    release(views, 6);
    Py_RETURN_NONE;
}

VECTOR_CLONES
static void apply(Py_ssize_t n, const float *restrict first, const float *restrict denominator, float step_size,
                  float *restrict update, float *restrict target) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float u = first[i] * step_size;
        u = u / denominator[i];
        update[i] = u;
        target[i] = target[i] + u;
    }
}

VECTOR_CLONES
static void apply_decay(Py_ssize_t n, const float *restrict first, const float *restrict denominator,
                        float step_size, float *restrict update, float *restrict target, float decay) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float u = first[i] * step_size;
        u = u / denominator[i];
        update[i] = u;
        float p = target[i] * decay;
        target[i] = p + u;
    }
}

/* adam_apply(first, denominator, step_size, update, target, decay or None) */
static PyObject *adam_apply(PyObject *self, PyObject *args) {
    PyObject *objects[4], *decay_object;
    float step_size, decay = 1.0f;
    if (!PyArg_ParseTuple(args, "OOfOOO", &objects[0], &objects[1], &step_size, &objects[2], &objects[3],
                          &decay_object))
        return NULL;
    int decayed = decay_object != Py_None;
    if (decayed) {
        double value = PyFloat_AsDouble(decay_object);
        if (value == -1.0 && PyErr_Occurred()) return NULL;
        decay = (float)value;
    }
    static const int optional[4] = {0, 0, 0, 0};
    Py_buffer views[4];
    Py_ssize_t n;
    if (!take(objects, views, 4, optional, &n)) Py_RETURN_NOTIMPLEMENTED;
    Py_BEGIN_ALLOW_THREADS
    if (decayed)
        apply_decay(n, views[0].buf, views[1].buf, step_size, views[2].buf, views[3].buf, decay);
    else
        apply(n, views[0].buf, views[1].buf, step_size, views[2].buf, views[3].buf);
    Py_END_ALLOW_THREADS
    release(views, 4);
    Py_RETURN_NONE;
}

/* A float32 scalar of a Python number (NumPy's float32 included), as PyArg's "f" reads it; -1 with an error set. */
static int float_of(PyObject *object, float *out) {
    double value = PyFloat_AsDouble(object);
    if (value == -1.0 && PyErr_Occurred()) return -1;
    *out = (float)value;
    return 0;
}

/* adam_bucket(grad, first, second, maximum or None, tmp, update, maximize, weight, keep, scale, root, epsilon,
 *             targets, offsets, factors, chunk): mindspeed_ms.compat.flat_adam's loop over a DDP bucket in one call.
 * For each chunk of `chunk` elements: the moments (adam_moments, the gradient negated into `update` first when
 * `maximize`), then adam_apply over every target's part in the chunk with its (step_size, decay or None) of `factors`.
 * `targets` are the parameters' flat float32 buffers in buffer order, starting at `offsets` (consecutive, covering
 * the bucket); `tmp` and `update` hold a chunk. The same operations per element as the per-chunk calls, so the
 * same bits. NotImplemented (nothing done) for anything else: the caller runs its per-chunk loop. */
static PyObject *adam_bucket(PyObject *self, PyObject *args) {
    PyObject *objects[6], *targets, *offsets, *factors;
    int maximize;
    float weight, keep, scale, root, epsilon;
    Py_ssize_t chunk;
    if (!PyArg_ParseTuple(args, "OOOOOOpfffffO!O!O!n", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &maximize, &weight, &keep, &scale, &root, &epsilon, &PyList_Type,
                          &targets, &PyList_Type, &offsets, &PyList_Type, &factors, &chunk))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(targets);
    if (chunk <= 0 || PyList_GET_SIZE(offsets) != count || PyList_GET_SIZE(factors) != count)
        Py_RETURN_NOTIMPLEMENTED;
    Py_buffer views[6], *parts = NULL;
    float *steps = NULL, *decays = NULL;
    int *decayed = NULL;
    Py_ssize_t n, n_work, taken = 0;
    PyObject *result = NULL;
    static const int optional[3] = {0, 0, 0};
    /* the bucket's arrays (grad, first, second; maximum) of one length, the work arrays (tmp, update) of another */
    static const int optional_bucket[4] = {0, 0, 0, 1};
    if (!take(objects, views, 4, optional_bucket, &n)) Py_RETURN_NOTIMPLEMENTED;
    if (!take(objects + 4, views + 4, 2, optional, &n_work)) {
        release(views, 4);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (n_work < (n < chunk ? n : chunk)) goto not_implemented;
    parts = PyMem_Calloc(count ? count : 1, sizeof(Py_buffer));
    steps = PyMem_Calloc(count ? count : 1, sizeof(float));
    decays = PyMem_Calloc(count ? count : 1, sizeof(float));
    decayed = PyMem_Calloc(count ? count : 1, sizeof(int));
    if (parts == NULL || steps == NULL || decays == NULL || decayed == NULL) {
        PyErr_NoMemory();
        goto end;
    }
    Py_ssize_t expected = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t offset = PyLong_AsSsize_t(PyList_GET_ITEM(offsets, i));
        if (offset == -1 && PyErr_Occurred()) goto end;
        PyObject *factor = PyList_GET_ITEM(factors, i);
        if (!PyTuple_Check(factor) || PyTuple_GET_SIZE(factor) != 2 || offset != expected) goto not_implemented;
        if (float_of(PyTuple_GET_ITEM(factor, 0), &steps[i]) < 0) goto end;
        decayed[i] = PyTuple_GET_ITEM(factor, 1) != Py_None;
        if (decayed[i] && float_of(PyTuple_GET_ITEM(factor, 1), &decays[i]) < 0) goto end;
        if (!float32_buffer(PyList_GET_ITEM(targets, i), &parts[i])) goto not_implemented;
        taken = i + 1;
        expected += parts[i].len / 4;
    }
    if (expected != n) goto not_implemented;
    const float *grad = views[0].buf;
    float *first = views[1].buf, *second = views[2].buf, *maximum = views[3].buf, *tmp = views[4].buf;
    float *update = views[5].buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t index = 0, begin = 0;  /* the first target not done yet and where it starts */
    for (Py_ssize_t start = 0; start < n; start += chunk) {
        Py_ssize_t stop = start + chunk < n ? start + chunk : n, length = stop - start;
        const float *used = grad + start;
        if (maximize) {
            negate(length, used, update);
            used = update;
        }
        if (maximum != NULL)
            moments_maximum(length, used, first + start, second + start, maximum + start, tmp, weight, keep, scale,
                            root, epsilon);
        else
            moments(length, used, first + start, second + start, tmp, weight, keep, scale, root, epsilon);
        while (index < count) {
            Py_ssize_t size = parts[index].len / 4;
            Py_ssize_t low = begin > start ? begin : start, high = begin + size < stop ? begin + size : stop;
            float *target = (float *)parts[index].buf + (low - begin);
            if (decayed[index])
                apply_decay(high - low, first + low, tmp + (low - start), steps[index], update + (low - start),
                            target, decays[index]);
            else
                apply(high - low, first + low, tmp + (low - start), steps[index], update + (low - start), target);
            if (begin + size > stop) break;  /* the parameter goes on in the next chunk */
            begin += size;
            index++;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
    goto end;
not_implemented:
    result = Py_NewRef(Py_NotImplemented);
end:
    for (Py_ssize_t i = 0; i < taken; i++) PyBuffer_Release(&parts[i]);
    PyMem_Free(parts);
    PyMem_Free(steps);
    PyMem_Free(decays);
    PyMem_Free(decayed);
    release(views, 6);
    return result;
}

static PyMethodDef methods[] = {
    {"adam_moments", adam_moments, METH_VARARGS,
     "adam_moments(grad, first, second, maximum, tmp, negated, weight, keep, scale, root, epsilon): Adam's "
     "moments and denominator of one chunk in one pass (float32 buffers; NotImplemented for anything else)"},
    {"adam_apply", adam_apply, METH_VARARGS,
     "adam_apply(first, denominator, step_size, update, target, decay): target = target * decay + "
     "(first * step_size) / denominator in one pass (float32 buffers; NotImplemented for anything else)"},
    {"adam_bucket", adam_bucket, METH_VARARGS,
     "adam_bucket(grad, first, second, maximum, tmp, update, maximize, weight, keep, scale, root, epsilon, targets, "
     "offsets, factors, chunk): adam_moments then adam_apply on each parameter's part, chunk by chunk, over a whole "
     "bucket in one call (float32 buffers; NotImplemented for anything else)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_loops",
    "One-pass float32 loops of mindspeed_ms.compat.host_kernels (same operations, same order, same bits).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__host_loops(void) { return PyModule_Create(&module); }
