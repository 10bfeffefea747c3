/* gelu (the erf form) over float32 host memory with glibc's vector erff and expf (libmvec, AVX2 variants).
 *
 * The same float32 operations, in the same order, as mindspeed_ms.compat.gelu's path through MindSpore's
 * kernels: forward ``t = x * 0.70710677f; e = erff(t); p = e + 1 [+ (x - x)]; y = (x * 0.5f) * p``, backward
 * ``a = (x * x) * -0.5f; q = expf(a); q = q * beta; dx = dy * ((p * 0.5f) + (x * q))``. Only the erf and exp
 * implementations differ: libmvec's AVX2 erff is within 7.5e-8 of the true erf (measured over every 97th float32
 * in [0, 6]; MindSpore's Erf kernel: 5e-8); its AVX2 expf is within one unit in the last place, as PyTorch's
 * (Sleef's) float exp is, where the kernels' path rounds a float64 Exp to float32 (MindSpore's float32 Exp
 * kernel is off by up to ~40 units): over [-8, 8] the gradient is within 1.6e-7 of the exact one with expf,
 * 1.4e-7 with the rounded double exp, 2.5e-7 for PyTorch's, at a quarter of the double exp's time (8 floats a
 * call instead of 4 doubles and the conversions: ~2.2 vs ~9 ms for megatron's 512 x 2048 activations under
 * load). The AVX-512 erff variant (2.4e-7) is not used. -ffp-contract=off: no fused multiply-add. Optional:
 * built only where glibc's libmvec links; at run time without AVX2 every call returns NotImplemented and
 * MindSpore's kernels run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <immintrin.h>
#include <math.h>

__m256 _ZGVdN8v_erff(__m256);
__m256 _ZGVdN8v_expf(__m256);

#define BLOCK 1024

static const float SQRT1_2 = 0.7071067811865476f;
static const float BETA = 0.3989422804014327f; /* 1 / sqrt(2 pi) */

__attribute__((target("avx2")))
static void erf_block(float *values, Py_ssize_t n) {  /* n a multiple of 8 */
    for (Py_ssize_t i = 0; i < n; i += 8) _mm256_storeu_ps(values + i, _ZGVdN8v_erff(_mm256_loadu_ps(values + i)));
}

__attribute__((target("avx2")))
static void exp_block(const float *arguments, float *values, Py_ssize_t n) {  /* n a multiple of 8 */
    for (Py_ssize_t i = 0; i < n; i += 8) _mm256_storeu_ps(values + i, _ZGVdN8v_expf(_mm256_loadu_ps(arguments + i)));
}

static void forward(Py_ssize_t n, const float *restrict x, float *restrict y, float *restrict one_plus_erf,
                    int nan_at_infinity) {
    float buffer[BLOCK];
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = n - start < BLOCK ? n - start : BLOCK;
        Py_ssize_t padded = (count + 7) & ~(Py_ssize_t)7;
        const float *xs = x + start;
        for (Py_ssize_t i = 0; i < count; i++) buffer[i] = xs[i] * SQRT1_2;
        for (Py_ssize_t i = count; i < padded; i++) buffer[i] = 0.0f;
        erf_block(buffer, padded);
        float *ys = y + start, *ps = one_plus_erf + start;
        if (nan_at_infinity) {
            for (Py_ssize_t i = 0; i < count; i++) {
                float p = buffer[i] + 1.0f;
                p = p + (xs[i] - xs[i]);
                ps[i] = p;
                ys[i] = (xs[i] * 0.5f) * p;
            }
        } else {
            for (Py_ssize_t i = 0; i < count; i++) {
                float p = buffer[i] + 1.0f;
                ps[i] = p;
                ys[i] = (xs[i] * 0.5f) * p;
            }
        }
    }
}

static void backward(Py_ssize_t n, const float *restrict grad, const float *restrict x,
                     const float *restrict one_plus_erf, float *restrict out) {
    float arguments[BLOCK], values[BLOCK];
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = n - start < BLOCK ? n - start : BLOCK;
        Py_ssize_t padded = (count + 7) & ~(Py_ssize_t)7;
        const float *xs = x + start;
        for (Py_ssize_t i = 0; i < count; i++) {
            float a = xs[i] * xs[i];
            arguments[i] = a * -0.5f;
        }
        for (Py_ssize_t i = count; i < padded; i++) arguments[i] = 0.0f;
        exp_block(arguments, values, padded);
        const float *gs = grad + start, *ps = one_plus_erf + start;
        float *os = out + start;
        for (Py_ssize_t i = 0; i < count; i++) {
            float q = values[i] * BETA;
            float half = ps[i] * 0.5f;
            float slope = xs[i] * q;
            os[i] = gs[i] * (half + slope);
        }
    }
}

static int float32_buffer(PyObject *object, Py_buffer *view, int writable) {
    if (PyObject_GetBuffer(object, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
        != 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "f") != 0) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* Take 4 float32 buffers of one length (the first `readonly` read-only); 0 and nothing held otherwise. */
static int take(PyObject **objects, Py_buffer *views, int readonly, Py_ssize_t *length) {
    if (!__builtin_cpu_supports("avx2")) return 0;
    for (int i = 0; i < 4; i++) {
        if (!float32_buffer(objects[i], &views[i], i >= readonly)) {
            for (int j = 0; j < i; j++) PyBuffer_Release(&views[j]);
            return 0;
        }
        if (i > 0 && views[i].len != views[0].len) {
            for (int j = 0; j <= i; j++) PyBuffer_Release(&views[j]);
            return 0;
        }
    }
    *length = views[0].len / 4;
    return 1;
}

/* gelu_forward(x, y, one_plus_erf, unused, nan_at_infinity) */
static PyObject *gelu_forward(PyObject *self, PyObject *args) {
    PyObject *objects[4];
    int nan_at_infinity;
    if (!PyArg_ParseTuple(args, "OOOp", &objects[0], &objects[1], &objects[2], &nan_at_infinity)) return NULL;
    objects[3] = objects[2];
    Py_buffer views[4];
    Py_ssize_t n;
    if (!take(objects, views, 1, &n)) Py_RETURN_NOTIMPLEMENTED;
    Py_BEGIN_ALLOW_THREADS
    forward(n, views[0].buf, views[1].buf, views[2].buf, nan_at_infinity);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 4; i++) PyBuffer_Release(&views[i]);
    Py_RETURN_NONE;
}

/* gelu_backward(grad, x, one_plus_erf, out) */
static PyObject *gelu_backward(PyObject *self, PyObject *args) {
    PyObject *objects[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objects[0], &objects[1], &objects[2], &objects[3])) return NULL;
    Py_buffer views[4];
    Py_ssize_t n;
    if (!take(objects, views, 3, &n)) Py_RETURN_NOTIMPLEMENTED;
    Py_BEGIN_ALLOW_THREADS
    backward(n, views[0].buf, views[1].buf, views[2].buf, views[3].buf);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 4; i++) PyBuffer_Release(&views[i]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"gelu_forward", gelu_forward, METH_VARARGS,
     "gelu_forward(x, y, one_plus_erf, nan_at_infinity): y = gelu(x), one_plus_erf = 1 + erf(x / sqrt 2) "
     "(float32 buffers of one length; NotImplemented for anything else or without AVX2)"},
    {"gelu_backward", gelu_backward, METH_VARARGS,
     "gelu_backward(grad, x, one_plus_erf, out): out = grad * gelu'(x), PyTorch's formula "
     "(float32 buffers of one length; NotImplemented for anything else or without AVX2)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_gelu",
    "gelu (erf form) forward and backward over float32 host memory with glibc's vector erff and expf.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__host_gelu(void) { return PyModule_Create(&module); }
