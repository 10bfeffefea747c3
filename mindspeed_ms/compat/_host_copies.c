/* Copies over host memory in one pass: the work of MindSpore's MaskedFill kernel for
 * mindspeed_ms.compat.host_arithmetic.masked_fill, and of the int64 -> int32 Cast of embedding indices with their
 * range check for host_arithmetic.narrow_indices.
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

/* out[i] = (int32)source[i] while every source[i] is in [0, rows); 0 at the first one outside (out then partly written) */
static int narrow(Py_ssize_t n, int *restrict out, const long long *restrict source, long long rows) {
    for (Py_ssize_t i = 0; i < n; i++) {
        long long index = source[i];
        if (index < 0 || index >= rows) return 0;
        out[i] = (int)index;
    }
    return 1;
}

static PyObject *narrow_indices(PyObject *self, PyObject *args) {
    PyObject *objects[2];
    long long rows;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOL", &objects[0], &objects[1], &rows)) return NULL;
    Py_buffer out, source;
    if (rows < 0 || rows > 2147483648LL) Py_RETURN_NOTIMPLEMENTED;  /* int32 holds every index below 2**31 */
    if (!contiguous_buffer(objects[0], &out, PyBUF_WRITABLE, "i", 4)) Py_RETURN_NOTIMPLEMENTED;
    if (!contiguous_buffer(objects[1], &source, 0, "l", 8) && !contiguous_buffer(objects[1], &source, 0, "q", 8)) {
        PyBuffer_Release(&out);
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t n = source.len / 8;
    int taken = out.len / 4 == n, inside = 0;
    if (taken) inside = narrow(n, out.buf, source.buf, rows);
    PyBuffer_Release(&source);
    PyBuffer_Release(&out);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    return PyBool_FromLong(inside);
}

static PyMethodDef methods[] = {
    {"masked_fill", masked_fill, METH_VARARGS,
     "masked_fill(out, values, mask, value): out = values, value where mask (the mask repeating along the leading "
     "elements), in one pass (float32 buffers, a bool mask; NotImplemented for anything else)"},
    {"narrow_indices", narrow_indices, METH_VARARGS,
     "narrow_indices(out, source, rows): out = source as int32 in one pass; True when every index is in [0, rows), "
     "False at the first one outside (out then partly written); NotImplemented for anything but a C-contiguous int32 "
     "out and int64 source of one length"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_copies",
    "One-pass copies of mindspeed_ms.compat.host_arithmetic (MaskedFill's work, narrowed indices; the same values as "
    "NumPy's passes).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__host_copies(void) { return PyModule_Create(&module); }
