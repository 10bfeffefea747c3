/* Copies over float32 host memory in one pass: the work of MindSpore's MaskedFill kernel for
 * mindspeed_ms.compat.host_arithmetic.masked_fill.
 *
 * NumPy fills a masked copy in two passes (copyto of the values, then copyto of the value where the mask is set, a
 * pass that tests every element of a broadcast mask: ~1 ms for megatron's [4, 8, 128, 128] attention scores). Here
 * each element is copied or replaced in one pass. Nothing is computed: the result holds the same bits as NumPy's
 * (NaN payloads and signed zeros included; tests/test_compat_host_copies.py compares both paths bit for bit).
 * Optional: without it NumPy's two passes run.
 *
 * masked_fill takes a writable C-contiguous float32 buffer, a C-contiguous float32 buffer of the same length and
 * a C-contiguous bool buffer whose length divides theirs (the mask repeats along the leading dimensions: the caller
 * checks that its shape is their trailing shape); it returns NotImplemented for anything else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* Fill `view` with a C-contiguous buffer of `object` of 1-char format `format` and `itemsize`; 0 if not one. */
static int contiguous_buffer(PyObject *object, Py_buffer *view, int flags, const char *format, Py_ssize_t itemsize) {
    if (PyObject_GetBuffer(object, view, flags | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->itemsize != itemsize || view->format == NULL || strcmp(view->format, format) != 0) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

VECTOR_CLONES
static void fill(Py_ssize_t blocks, Py_ssize_t period, float *restrict out, const float *restrict values,
                 const unsigned char *restrict mask, float value) {
    for (Py_ssize_t block = 0; block < blocks; block++) {
        float *o = out + block * period;
        const float *v = values + block * period;
        for (Py_ssize_t i = 0; i < period; i++) o[i] = mask[i] ? value : v[i];
    }
}

static PyObject *masked_fill(PyObject *self, PyObject *args) {
    PyObject *objects[3];
    double value;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOd", &objects[0], &objects[1], &objects[2], &value)) return NULL;
    Py_buffer out, values, mask;
    if (!contiguous_buffer(objects[0], &out, PyBUF_WRITABLE, "f", 4)) Py_RETURN_NOTIMPLEMENTED;
    if (!contiguous_buffer(objects[1], &values, 0, "f", 4)) {
        PyBuffer_Release(&out);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!contiguous_buffer(objects[2], &mask, 0, "?", 1)) {
        PyBuffer_Release(&values);
        PyBuffer_Release(&out);
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t n = out.len / 4, period = mask.len;
    int taken = values.len == out.len && period > 0 && n % period == 0
                && ((const char *)values.buf + values.len <= (const char *)out.buf
                    || (const char *)out.buf + out.len <= (const char *)values.buf);  /* not overlapping */
    if (taken) {
        Py_BEGIN_ALLOW_THREADS
        fill(n / period, period, out.buf, values.buf, mask.buf, (float)value);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&mask);
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"masked_fill", masked_fill, METH_VARARGS,
     "masked_fill(out, values, mask, value): out = values, value where mask (the mask repeating along the leading "
     "elements), in one pass (float32 buffers, a bool mask; NotImplemented for anything else)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_copies",
    "One-pass copies of mindspeed_ms.compat.host_arithmetic (MaskedFill's work; the same bits as NumPy's passes).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__host_copies(void) { return PyModule_Create(&module); }
