/* Row loops over float32 host memory for mindspeed_ms.compat.host_arithmetic: layer norm forward and backward,
 * the bias add and its column sums, the gradient norm's sum of squares and the clipping's scale.
 *
 * One pass per row where NumPy made several, straight into the caller's arrays. On request (set_threads(2)) the rows
 * (or the columns, or fixed blocks of elements) of a large call are shared with a second thread. Every element and
 * every sum is computed the same way whatever the thread count: rows are independent, column sums run down whole
 * columns in row order, and the sum of squares adds fixed blocks in their order; so one thread and two give the same
 * bits (tests/test_compat_host_rows.py).
 *
 * The arithmetic (host_arithmetic's docstrings say whose it is):
 * - layer norm forward: per row the mean and the population variance accumulated in double (8 lanes, combined in a
 *   fixed order) and rounded once to float32; then in float32 as PyTorch's CPU kernel: rstd = 1 / sqrt(var + eps),
 *   y = (x * rstd + (-rstd * mean)) [* weight] [+ bias];
 * - layer norm backward: per row db = sum(dy [* weight]) and ds = sum(dy [* weight] * x) in double, rounded once;
 *   then PyTorch's float32 formula b = (db * mean - ds) * rstd^3 / n, c = -b * mean - db * rstd / n,
 *   dx = (rstd * dy) [* weight] + b * x + c; dweight = sum over rows of dy * (x * rstd + (-rstd * mean)) and
 *   dbias = sum over rows of dy, in double down each column, rounded once;
 * - column sums (the bias gradient): in double down each column in row order, rounded once (NumPy's
 *   add.reduce(axis=0, dtype=float64) order: the same bits);
 * - bias add (out = x + bias) and scale (x *= factor): one float32 operation per element (NumPy's bits);
 * - sum of squares: the squares in double (exact), 8 lanes per block of BLOCK elements, the blocks added in order.
 * -ffp-contract=off: no fused multiply-add. Every function returns NotImplemented for buffers it does not take
 * (not C-contiguous float32 of the lengths it needs) and the caller runs NumPy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* from this many elements a call shares its work between two threads */
#define PARALLEL_ELEMENTS 65536
/* elements per block of the sum of squares (the blocks are added in order) */
#define SQUARES_BLOCK 65536
#define LANES 8

/* the hot loops in AVX-512, AVX2 and baseline variants chosen at load time (the same operations: no contraction) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* the threads a large call uses (1 or 2): one unless set_threads says otherwise (host_arithmetic.set_row_threads
 * says why) */
static int threads = 1;

static int thread_count(void) { return threads; }

typedef void (*range_fn)(void *context, Py_ssize_t start, Py_ssize_t end);

/* the pieces a shared call is cut into: the two threads take them in turn */
#define PIECES 16

/* A call's work shared by the calling thread and a helper thread: each takes the next piece until none is left. The
 * caller never waits for a helper that has not started (a loaded machine, MindSpore's pool threads spinning on both
 * cores): it takes every piece left, and waits only for a piece the helper is computing. The helper may start after
 * the call has returned: it then finds no piece and only drops its reference (the state is on the heap; `context`,
 * on the caller's stack, is read only for a piece taken, which the caller waits for). */
struct shared {
    range_fn fn;
    void *context;
    Py_ssize_t units, step, pieces;
    _Atomic Py_ssize_t next, done;
    _Atomic int references;
};

static void take_pieces(struct shared *shared) {
    for (;;) {
        Py_ssize_t piece = atomic_fetch_add(&shared->next, 1);
        if (piece >= shared->pieces) return;
        Py_ssize_t start = piece * shared->step;
        Py_ssize_t end = start + shared->step < shared->units ? start + shared->step : shared->units;
        shared->fn(shared->context, start, end);
        atomic_fetch_add(&shared->done, 1);
    }
}

static void drop(struct shared *shared) {
    if (atomic_fetch_sub(&shared->references, 1) == 1) free(shared);
}

static void *helper(void *argument) {
    take_pieces(argument);
    drop(argument);
    return NULL;
}

/* fn(context, start, end) over [0, units) in pieces, shared with a helper thread when `elements` is large enough;
 * every unit is computed by one call of fn whoever runs it. */
static void split(range_fn fn, void *context, Py_ssize_t units, Py_ssize_t elements) {
    struct shared *shared = NULL;
    if (units >= 2 && elements >= PARALLEL_ELEMENTS && thread_count() >= 2)
        shared = malloc(sizeof *shared);
    if (shared == NULL) {
        fn(context, 0, units);
        return;
    }
    shared->fn = fn;
    shared->context = context;
    shared->units = units;
    shared->step = (units + PIECES - 1) / PIECES;
    shared->pieces = (units + shared->step - 1) / shared->step;
    atomic_init(&shared->next, 0);
    atomic_init(&shared->done, 0);
    atomic_init(&shared->references, 2);
    pthread_attr_t attributes;
    pthread_t thread;
    int started = pthread_attr_init(&attributes) == 0;
    if (started) {
        started = pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED) == 0
                  && pthread_create(&thread, &attributes, helper, shared) == 0;
        pthread_attr_destroy(&attributes);
    }
    if (!started) atomic_store(&shared->references, 1);
    take_pieces(shared);
    while (atomic_load(&shared->done) < shared->pieces) sched_yield();  /* a piece the helper is computing */
    drop(shared);
}

static double lanes_total(const double *lanes) {
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

/* ---- layer norm ------------------------------------------------------------------------------------------ */

struct norm_forward {
    const float *x, *weight, *bias;
    float *y, *mean, *rstd;
    Py_ssize_t n;
    float eps;
};

VECTOR_CLONES
static void norm_forward_rows(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct norm_forward *c = context;
    Py_ssize_t n = c->n, whole = n - n % LANES;
    for (Py_ssize_t row = start; row < end; row++) {
        const float *x = c->x + row * n;
        double lanes[LANES] = {0};
        for (Py_ssize_t j = 0; j < whole; j += LANES)
            for (int l = 0; l < LANES; l++) lanes[l] += (double)x[j + l];
        double total = lanes_total(lanes);
        for (Py_ssize_t j = whole; j < n; j++) total += (double)x[j];
        double mean = total / (double)n;
        double squares[LANES] = {0};
        for (Py_ssize_t j = 0; j < whole; j += LANES)
            for (int l = 0; l < LANES; l++) {
                double d = (double)x[j + l] - mean;
                squares[l] += d * d;
            }
        double sum = lanes_total(squares);
        for (Py_ssize_t j = whole; j < n; j++) {
            double d = (double)x[j] - mean;
            sum += d * d;
        }
        float mean_f = (float)mean, variance = (float)(sum / (double)n);
        float rstd = 1.0f / sqrtf(variance + c->eps);
        float shift = -rstd * mean_f;
        c->mean[row] = mean_f;
        c->rstd[row] = rstd;
        float *y = c->y + row * n;
        const float *w = c->weight, *b = c->bias;
        if (w != NULL && b != NULL) {
            for (Py_ssize_t j = 0; j < n; j++) y[j] = (x[j] * rstd + shift) * w[j] + b[j];
        } else if (w != NULL) {
            for (Py_ssize_t j = 0; j < n; j++) y[j] = (x[j] * rstd + shift) * w[j];
        } else if (b != NULL) {
            for (Py_ssize_t j = 0; j < n; j++) y[j] = (x[j] * rstd + shift) + b[j];
        } else {
            for (Py_ssize_t j = 0; j < n; j++) y[j] = x[j] * rstd + shift;
        }
    }
}

struct norm_backward {
    const float *grad, *x, *mean, *rstd, *weight;
    float *dx, *dweight, *dbias;
    Py_ssize_t rows, n;
    double *weight_sums, *bias_sums; /* n each, work memory of the column sums */
};

VECTOR_CLONES
static void norm_backward_rows(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct norm_backward *c = context;
    Py_ssize_t n = c->n, whole = n - n % LANES;
    const float *w = c->weight;
    const float scale = 1.0f / (float)n;
    for (Py_ssize_t row = start; row < end; row++) {
        const float *dy = c->grad + row * n, *x = c->x + row * n;
        double sums[LANES] = {0}, products[LANES] = {0};
        for (Py_ssize_t j = 0; j < whole; j += LANES)
            for (int l = 0; l < LANES; l++) {
                float g = w != NULL ? dy[j + l] * w[j + l] : dy[j + l];
                sums[l] += (double)g;
                products[l] += (double)g * (double)x[j + l];
            }
        double db_d = lanes_total(sums), ds_d = lanes_total(products);
        for (Py_ssize_t j = whole; j < n; j++) {
            float g = w != NULL ? dy[j] * w[j] : dy[j];
            db_d += (double)g;
            ds_d += (double)g * (double)x[j];
        }
        float db = (float)db_d, ds = (float)ds_d, mean = c->mean[row], a = c->rstd[row];
        float b = (db * mean - ds) * a * a * a * scale;
        float offset = -b * mean - db * a * scale;
        float *dx = c->dx + row * n;
        if (w != NULL) {
            for (Py_ssize_t j = 0; j < n; j++) dx[j] = (a * dy[j]) * w[j] + b * x[j] + offset;
        } else {
            for (Py_ssize_t j = 0; j < n; j++) dx[j] = a * dy[j] + b * x[j] + offset;
        }
    }
}

/* dweight and dbias of the columns [start, end), each summed down the rows in order */
VECTOR_CLONES
static void norm_backward_columns(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct norm_backward *c = context;
    Py_ssize_t n = c->n, width = end - start;
    if (width <= 0) return;
    double *weight_sums = c->dweight != NULL ? c->weight_sums + start : NULL;
    double *bias_sums = c->dbias != NULL ? c->bias_sums + start : NULL;
    for (Py_ssize_t j = 0; j < width; j++) {
        if (weight_sums != NULL) weight_sums[j] = 0.0;
        if (bias_sums != NULL) bias_sums[j] = 0.0;
    }
    for (Py_ssize_t row = 0; row < c->rows; row++) {
        const float *dy = c->grad + row * n + start, *x = c->x + row * n + start;
        if (weight_sums != NULL) {
            float a = c->rstd[row], shift = -a * c->mean[row];
            for (Py_ssize_t j = 0; j < width; j++) weight_sums[j] += (double)dy[j] * (double)(x[j] * a + shift);
        }
        if (bias_sums != NULL)
            for (Py_ssize_t j = 0; j < width; j++) bias_sums[j] += (double)dy[j];
    }
    for (Py_ssize_t j = 0; j < width; j++) {
        if (weight_sums != NULL) c->dweight[start + j] = (float)weight_sums[j];
        if (bias_sums != NULL) c->dbias[start + j] = (float)bias_sums[j];
    }
}

/* ---- column sums, bias add, scale, sum of squares ----------------------------------------------------------- */

struct columns {
    const float *values;
    float *out;
    Py_ssize_t rows, n;
    double *sums;
};

VECTOR_CLONES
static void column_sum_range(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct columns *c = context;
    double *sums = c->sums + start;
    Py_ssize_t width = end - start;
    for (Py_ssize_t j = 0; j < width; j++) sums[j] = 0.0;
    for (Py_ssize_t row = 0; row < c->rows; row++) {
        const float *v = c->values + row * c->n + start;
        for (Py_ssize_t j = 0; j < width; j++) sums[j] += (double)v[j];
    }
    for (Py_ssize_t j = 0; j < width; j++) c->out[start + j] = (float)sums[j];
}

struct bias_add {
    const float *values, *bias;
    float *out;
    Py_ssize_t n;
};

VECTOR_CLONES
static void bias_add_rows(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct bias_add *c = context;
    Py_ssize_t n = c->n;
    for (Py_ssize_t row = start; row < end; row++) {
        const float *v = c->values + row * n;
        float *o = c->out + row * n;
        for (Py_ssize_t j = 0; j < n; j++) o[j] = v[j] + c->bias[j];
    }
}

struct scale {
    float *values;
    Py_ssize_t length;
    float factor;
};

#define SCALE_CHUNK 16384

VECTOR_CLONES
static void scale_chunks(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct scale *c = context;
    Py_ssize_t first = start * SCALE_CHUNK, last = end * SCALE_CHUNK < c->length ? end * SCALE_CHUNK : c->length;
    float *v = c->values;
    for (Py_ssize_t i = first; i < last; i++) v[i] = v[i] * c->factor;
}

struct squares {
    const float *values;
    Py_ssize_t length;
    double *blocks;
};

VECTOR_CLONES
static void squares_blocks(void *context, Py_ssize_t start, Py_ssize_t end) {
    const struct squares *c = context;
    for (Py_ssize_t block = start; block < end; block++) {
        Py_ssize_t first = block * SQUARES_BLOCK;
        Py_ssize_t last = first + SQUARES_BLOCK < c->length ? first + SQUARES_BLOCK : c->length;
        Py_ssize_t whole = first + (last - first) - (last - first) % LANES;
        const float *v = c->values;
        double lanes[LANES] = {0};
        for (Py_ssize_t i = first; i < whole; i += LANES)
            for (int l = 0; l < LANES; l++) lanes[l] += (double)v[i + l] * (double)v[i + l];
        double total = lanes_total(lanes);
        for (Py_ssize_t i = whole; i < last; i++) total += (double)v[i] * (double)v[i];
        c->blocks[block] = total;
    }
}

/* ---- buffers ------------------------------------------------------------------------------------------------ */

/* A C-contiguous float32 buffer of `object` (None: view->buf NULL when `optional`); 0 and nothing held if not. */
static int float32_buffer(PyObject *object, Py_buffer *view, int writable, int optional) {
    if (optional && object == Py_None) {
        memset(view, 0, sizeof *view);
        return 1;
    }
    if (PyObject_GetBuffer(object, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->itemsize != 4 || view->format == NULL || strcmp(view->format, "f") != 0) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

static void release(Py_buffer *views, int count) {
    for (int i = 0; i < count; i++)
        if (views[i].obj != NULL) PyBuffer_Release(&views[i]);
}

/* Take `count` buffers (writable where `writable[i]`, None allowed where `optional[i]`); 0 and nothing held if not. */
static int take(PyObject **objects, Py_buffer *views, int count, const int *writable, const int *optional) {
    for (int i = 0; i < count; i++) {
        if (!float32_buffer(objects[i], &views[i], writable[i], optional[i])) {
            release(views, i);
            return 0;
        }
    }
    return 1;
}

static Py_ssize_t floats(const Py_buffer *view) { return view->buf == NULL ? -1 : view->len / 4; }

/* Whether the written buffer `out` overlaps none of `inputs` (read while it is written). */
static int apart(const Py_buffer *out, const Py_buffer *inputs, int count) {
    const char *start = out->buf, *end = start + out->len;
    for (int i = 0; i < count; i++) {
        const char *other = inputs[i].buf;
        if (other != NULL && other < end && start < other + inputs[i].len) return 0;
    }
    return 1;
}

/* layer_norm_forward(x, weight, bias, eps, y, mean, rstd) */
static PyObject *layer_norm_forward(PyObject *self, PyObject *args) {
    PyObject *objects[6];
    double eps;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOdOOO", &objects[0], &objects[1], &objects[2], &eps, &objects[3], &objects[4],
                          &objects[5]))
        return NULL;
    static const int writable[6] = {0, 0, 0, 1, 1, 1}, optional[6] = {0, 1, 1, 0, 0, 0};
    Py_buffer views[6];
    if (!take(objects, views, 6, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]), rows = floats(&views[4]);
    Py_ssize_t n = rows > 0 ? length / rows : 0;
    int taken = rows > 0 && n > 0 && n * rows == length && floats(&views[3]) == length && floats(&views[5]) == rows
                && (views[1].buf == NULL || floats(&views[1]) == n) && (views[2].buf == NULL || floats(&views[2]) == n)
                && apart(&views[3], views, 3) && apart(&views[4], views, 4) && apart(&views[5], views, 5);
    if (taken) {
        struct norm_forward context = {views[0].buf, views[1].buf, views[2].buf, views[3].buf, views[4].buf,
                                       views[5].buf, n, (float)eps};
        Py_BEGIN_ALLOW_THREADS
        split(norm_forward_rows, &context, rows, length);
        Py_END_ALLOW_THREADS
    }
    release(views, 6);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

/* layer_norm_backward(grad, x, mean, rstd, weight, dx, dweight, dbias) */
static PyObject *layer_norm_backward(PyObject *self, PyObject *args) {
    PyObject *objects[8];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4],
                          &objects[5], &objects[6], &objects[7]))
        return NULL;
    static const int writable[8] = {0, 0, 0, 0, 0, 1, 1, 1}, optional[8] = {0, 0, 0, 0, 1, 0, 1, 1};
    Py_buffer views[8];
    if (!take(objects, views, 8, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]), rows = floats(&views[2]);
    Py_ssize_t n = rows > 0 ? length / rows : 0;
    int taken = rows > 0 && n > 0 && n * rows == length && floats(&views[1]) == length && floats(&views[3]) == rows
                && floats(&views[5]) == length && (views[4].buf == NULL || floats(&views[4]) == n)
                && (views[6].buf == NULL || floats(&views[6]) == n) && (views[7].buf == NULL || floats(&views[7]) == n)
                && apart(&views[5], views, 5) && (views[6].buf == NULL || apart(&views[6], views, 6))
                && (views[7].buf == NULL || apart(&views[7], views, 7));
    double *sums = NULL;
    if (taken && (sums = malloc(2 * (size_t)n * sizeof(double))) == NULL) taken = 0;
    if (taken) {
        struct norm_backward context = {views[0].buf, views[1].buf, views[2].buf, views[3].buf, views[4].buf,
                                        views[5].buf, views[6].buf, views[7].buf, rows, n, sums, sums + n};
        Py_BEGIN_ALLOW_THREADS
        split(norm_backward_rows, &context, rows, length);
        if (context.dweight != NULL || context.dbias != NULL) split(norm_backward_columns, &context, n, length);
        Py_END_ALLOW_THREADS
    }
    free(sums);
    release(views, 8);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

/* column_sum(values, out) */
static PyObject *column_sum(PyObject *self, PyObject *args) {
    PyObject *objects[2];
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &objects[0], &objects[1])) return NULL;
    static const int writable[2] = {0, 1}, optional[2] = {0, 0};
    Py_buffer views[2];
    if (!take(objects, views, 2, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]), n = floats(&views[1]);
    Py_ssize_t rows = n > 0 ? length / n : 0;
    double *sums = NULL;
    int taken = n > 0 && rows * n == length && apart(&views[1], views, 1)
                && (sums = malloc((size_t)n * sizeof(double))) != NULL;
    if (taken) {
        struct columns context = {views[0].buf, views[1].buf, rows, n, sums};
        Py_BEGIN_ALLOW_THREADS
        split(column_sum_range, &context, n, length);
        Py_END_ALLOW_THREADS
    }
    free(sums);
    release(views, 2);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

/* bias_add(values, bias, out) */
static PyObject *bias_add(PyObject *self, PyObject *args) {
    PyObject *objects[3];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &objects[0], &objects[1], &objects[2])) return NULL;
    static const int writable[3] = {0, 0, 1}, optional[3] = {0, 0, 0};
    Py_buffer views[3];
    if (!take(objects, views, 3, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]), n = floats(&views[1]);
    Py_ssize_t rows = n > 0 ? length / n : 0;
    int taken = n > 0 && rows * n == length && floats(&views[2]) == length && apart(&views[2], views + 1, 1)
                && (views[0].buf == views[2].buf || apart(&views[2], views, 1));
    if (taken) {
        struct bias_add context = {views[0].buf, views[1].buf, views[2].buf, n};
        Py_BEGIN_ALLOW_THREADS
        split(bias_add_rows, &context, rows, length);
        Py_END_ALLOW_THREADS
    }
    release(views, 3);
    if (!taken) Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

/* scale(values, factor) */
static PyObject *scale(PyObject *self, PyObject *args) {
    PyObject *objects[1];
    double factor;
    (void)self;
    if (!PyArg_ParseTuple(args, "Od", &objects[0], &factor)) return NULL;
    static const int writable[1] = {1}, optional[1] = {0};
    Py_buffer views[1];
    if (!take(objects, views, 1, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]);
    struct scale context = {views[0].buf, length, (float)factor};
    Py_BEGIN_ALLOW_THREADS
    split(scale_chunks, &context, (length + SCALE_CHUNK - 1) / SCALE_CHUNK, length);
    Py_END_ALLOW_THREADS
    release(views, 1);
    Py_RETURN_NONE;
}

/* sum_of_squares(values) */
static PyObject *sum_of_squares(PyObject *self, PyObject *args) {
    PyObject *objects[1];
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &objects[0])) return NULL;
    static const int writable[1] = {0}, optional[1] = {0};
    Py_buffer views[1];
    if (!take(objects, views, 1, writable, optional)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t length = floats(&views[0]), blocks = (length + SQUARES_BLOCK - 1) / SQUARES_BLOCK;
    double *sums = malloc((size_t)(blocks > 0 ? blocks : 1) * sizeof(double));
    if (sums == NULL) {
        release(views, 1);
        Py_RETURN_NOTIMPLEMENTED;
    }
    struct squares context = {views[0].buf, length, sums};
    double total = 0.0;
    Py_BEGIN_ALLOW_THREADS
    split(squares_blocks, &context, blocks, length);
    for (Py_ssize_t block = 0; block < blocks; block++) total += sums[block];
    Py_END_ALLOW_THREADS
    free(sums);
    release(views, 1);
    return PyFloat_FromDouble(total);
}

/* set_threads(count): the threads large calls use from now on (1 or 2); returns the previous count */
static PyObject *set_threads(PyObject *self, PyObject *args) {
    int count;
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &count)) return NULL;
    if (count != 1 && count != 2) {
        PyErr_Format(PyExc_ValueError, "set_threads takes 1 or 2 threads, not %d", count);
        return NULL;
    }
    int previous = thread_count();
    threads = count;
    return PyLong_FromLong(previous);
}

static PyMethodDef methods[] = {
    {"set_threads", set_threads, METH_VARARGS,
     "set_threads(count): large calls use `count` threads (1 or 2) from now on; returns the previous count"},
    {"layer_norm_forward", layer_norm_forward, METH_VARARGS,
     "layer_norm_forward(x, weight, bias, eps, y, mean, rstd): PyTorch's layer norm of the rows of x (len(mean) "
     "rows) into y, mean and rstd (float32 buffers; weight/bias None or one row long; NotImplemented otherwise)"},
    {"layer_norm_backward", layer_norm_backward, METH_VARARGS,
     "layer_norm_backward(grad, x, mean, rstd, weight, dx, dweight, dbias): PyTorch's layer-norm gradients "
     "(float32 buffers; weight, dweight, dbias None or one row long; NotImplemented otherwise)"},
    {"column_sum", column_sum, METH_VARARGS,
     "column_sum(values, out): out = the column sums of values viewed as rows of len(out), in double, rounded once"},
    {"bias_add", bias_add, METH_VARARGS, "bias_add(values, bias, out): out = values + bias along the rows"},
    {"scale", scale, METH_VARARGS, "scale(values, factor): values *= factor (float32) in place"},
    {"sum_of_squares", sum_of_squares, METH_VARARGS,
     "sum_of_squares(values): the sum of the squares of a float32 buffer, in double (a float)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_host_rows",
    "Row loops of mindspeed_ms.compat.host_arithmetic over float32 host memory (layer norm, bias add, column sums, "
    "scale, sum of squares), shared between two threads where large.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__host_rows(void) { return PyModule_Create(&module); }
