/* The alias pass's filter in C: which module namespaces bind one of a few objects, by identity.
 *
 * mindspeed_ms.engine.aliases rebinds `from owner import f` copies of every patched target. Finding
 * them means looking at every module-level binding of every imported module (~175k in a large
 * training process) and asking "is this value one of the originals?". In Python that costs an `id()`
 * (an int allocated per binding) or a hash (which runs the binding's own __hash__/__eq__); here it
 * is a pointer looked up in a small open-addressing table: no allocation, no reference counting, no
 * code of any binding run, no attribute read (a module's __getattr__ is never called).
 *
 * GIL and borrowed references: the scan holds the GIL throughout and runs no Python code (no call,
 * no allocation of Python objects that could start a collection and its finalizers, no DECREF that
 * could free anything), so no other thread and no callback can change sys.modules or a namespace
 * while PyDict_Next walks them: the borrowed module, namespace, key and value pointers stay valid.
 * A hit's name and module are INCREF'd into a plain C array at once; the result list is built only
 * after the scan, when Python code may run again.
 *
 * The free-threaded build (Py_GIL_DISABLED) gives no such guarantee: the extension refuses to build
 * there and the pure-Python pass runs instead.
 */
#define PY_SSIZE_T_CLEAN
#include <patchlevel.h>
/* CPython 3.11: the namespaces' entries are read straight from the dict's table (its layout from
 * CPython's own internal header, as the interpreter compiling this was built with): PyDict_Next's
 * checks cost 4/5 of the scan. Other versions, and split tables, go through PyDict_Next. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#  define Py_BUILD_CORE_MODULE 1
#  define SCAN_TABLES 1
#endif
#include <Python.h>
#include <stdint.h>
#ifdef SCAN_TABLES
#  include "internal/pycore_dict.h"
#endif

#ifdef Py_GIL_DISABLED
#error "mindspeed_ms.engine._identity relies on the GIL (see the comment above); the pure-Python pass is used"
#endif

/* An open-addressing set of pointers, each mapped to its index in the originals. */
typedef struct {
    PyObject **keys;
    Py_ssize_t *index;
    size_t mask;
} PointerTable;

static size_t
pointer_hash(const void *pointer)
{
    /* objects are at least 16-byte aligned: drop the zero bits, then spread (Fibonacci hashing) */
    uint64_t bits = (uint64_t)(uintptr_t)pointer >> 4;
    return (size_t)(bits * UINT64_C(0x9E3779B97F4A7C15) >> 17);
}

static int
table_init(PointerTable *table, PyObject **items, Py_ssize_t count)
{
    size_t size = 8;
    while (size < (size_t)count * 4) {
        size <<= 1;
    }
    table->keys = PyMem_Calloc(size, sizeof(PyObject *));
    table->index = PyMem_Malloc(size * sizeof(Py_ssize_t));
    table->mask = size - 1;
    if (table->keys == NULL || table->index == NULL) {
        PyMem_Free(table->keys);
        PyMem_Free(table->index);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        size_t slot = pointer_hash(items[i]) & table->mask;
        while (table->keys[slot] != NULL && table->keys[slot] != items[i]) {
            slot = (slot + 1) & table->mask;
        }
        if (table->keys[slot] == NULL) { /* the first of repeated originals keeps its index */
            table->keys[slot] = items[i];
            table->index[slot] = i;
        }
    }
    return 0;
}

static Py_ssize_t
table_find(const PointerTable *table, const PyObject *pointer)
{
    size_t slot = pointer_hash(pointer) & table->mask;
    while (table->keys[slot] != NULL) {
        if (table->keys[slot] == pointer) {
            return table->index[slot];
        }
        slot = (slot + 1) & table->mask;
    }
    return -1;
}

/* One binding found: the module's name in sys.modules, the module, the binding's name, the original. */
typedef struct {
    PyObject *module_name;
    PyObject *module;
    PyObject *key;
    Py_ssize_t original;
} Hit;

typedef struct {
    Hit *items;
    Py_ssize_t count;
    Py_ssize_t capacity;
} Hits;

static int
hits_add(Hits *hits, PyObject *module_name, PyObject *module, PyObject *key, Py_ssize_t original)
{
    if (hits->count == hits->capacity) {
        Py_ssize_t capacity = hits->capacity ? hits->capacity * 2 : 64;
        /* plain memory: allocating it never starts a garbage collection (only new Python objects do) */
        Hit *items = PyMem_Realloc(hits->items, (size_t)capacity * sizeof(Hit));
        if (items == NULL) {
            return -1;
        }
        hits->items = items;
        hits->capacity = capacity;
    }
    Py_INCREF(module_name);
    Py_INCREF(module);
    Py_INCREF(key);
    hits->items[hits->count++] = (Hit){module_name, module, key, original};
    return 0;
}

static void
hits_clear(Hits *hits)
{
    for (Py_ssize_t i = 0; i < hits->count; i++) {
        Py_DECREF(hits->items[i].module_name);
        Py_DECREF(hits->items[i].module);
        Py_DECREF(hits->items[i].key);
    }
    PyMem_Free(hits->items);
}

/* Add the bindings of ``namespace`` (a dict) holding an original to ``hits``; -1 when out of memory. */
static int
scan_namespace(PyObject *namespace, const PointerTable *table, Hits *hits, PyObject *module_name, PyObject *module)
{
#ifdef SCAN_TABLES
    PyDictObject *dict = (PyDictObject *)namespace;
    if (dict->ma_values == NULL) { /* a combined table (module namespaces always are): entries hold the values */
        PyDictKeysObject *keys = dict->ma_keys;
        Py_ssize_t count = keys->dk_nentries;
        if (DK_IS_UNICODE(keys)) {
            PyDictUnicodeEntry *entries = DK_UNICODE_ENTRIES(keys);
            for (Py_ssize_t i = 0; i < count; i++) {
                PyObject *value = entries[i].me_value; /* NULL: a deleted entry */
                Py_ssize_t original = value == NULL ? -1 : table_find(table, value);
                if (original >= 0 && PyUnicode_CheckExact(entries[i].me_key)
                        && hits_add(hits, module_name, module, entries[i].me_key, original) < 0) {
                    return -1;
                }
            }
        }
        else {
            PyDictKeyEntry *entries = DK_ENTRIES(keys);
            for (Py_ssize_t i = 0; i < count; i++) {
                PyObject *value = entries[i].me_value;
                Py_ssize_t original = value == NULL ? -1 : table_find(table, value);
                if (original >= 0 && PyUnicode_CheckExact(entries[i].me_key)
                        && hits_add(hits, module_name, module, entries[i].me_key, original) < 0) {
                    return -1;
                }
            }
        }
        return 0;
    }
#endif
    Py_ssize_t position = 0;
    PyObject *key, *value;
    while (PyDict_Next(namespace, &position, &key, &value)) {
        Py_ssize_t original = table_find(table, value);
        if (original >= 0 && PyUnicode_CheckExact(key) && hits_add(hits, module_name, module, key, original) < 0) {
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(find_bindings_doc,
"find_bindings(modules, originals, /)\n--\n\n"
"Return the module-level bindings that hold one of ``originals``, by identity.\n\n"
"``modules`` is a dict such as ``sys.modules``: each value that is a module (a ``ModuleType``, its\n"
"subclasses included) has its namespace (the module's own dict, read without any attribute lookup)\n"
"scanned. Returns a list of ``(module name, module, binding name, index in originals)``, one per\n"
"binding whose name is exactly a ``str`` (the caller compares names without running a\n"
"subclass's ``__eq__``) and whose value is one of ``originals`` (the first index where an\n"
"object is repeated), in the order of ``modules`` and of each namespace. No code of any binding, key\n"
"or module runs: values are compared by address only.");

static PyObject *
find_bindings(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "find_bindings() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *modules = args[0];
    if (!PyDict_Check(modules)) {
        PyErr_Format(PyExc_TypeError, "find_bindings() needs a dict of modules, got %.100s",
                     Py_TYPE(modules)->tp_name);
        return NULL;
    }
    /* a list or tuple is used as is; anything else is copied first (its iteration may run code) */
    PyObject *originals = PySequence_Fast(args[1], "find_bindings() needs a sequence of originals");
    if (originals == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    Hits hits = {NULL, 0, 0};
    PointerTable table;
    if (table_init(&table, PySequence_Fast_ITEMS(originals), PySequence_Fast_GET_SIZE(originals)) < 0) {
        Py_DECREF(originals);
        return NULL;
    }

    /* The scan: no Python code runs from here to its end (see the comment at the top). */
    Py_ssize_t position = 0;
    PyObject *module_name, *module;
    int failed = 0;
    while (!failed && PyDict_Next(modules, &position, &module_name, &module)) {
        if (!PyModule_Check(module)) {
            continue;
        }
        PyObject *namespace = PyModule_GetDict(module);
        if (namespace == NULL || !PyDict_Check(namespace)) {
            continue;
        }
        failed = scan_namespace(namespace, &table, &hits, module_name, module) < 0;
    }
    PyMem_Free(table.keys);
    PyMem_Free(table.index);
    /* The scan is over: Python objects may be allocated again. */
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyList_New(hits.count);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < hits.count; i++) {
        Hit *hit = &hits.items[i];
        PyObject *item = Py_BuildValue("(OOOn)", hit->module_name, hit->module, hit->key, hit->original);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    hits_clear(&hits);
    Py_DECREF(originals);
    return result;
}

static PyMethodDef identity_methods[] = {
    {"find_bindings", (PyCFunction)(void (*)(void))find_bindings, METH_FASTCALL, find_bindings_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef identity_module = {
    PyModuleDef_HEAD_INIT,
    "mindspeed_ms.engine._identity",
    "The alias pass's filter in C: module-level bindings holding given objects, found by identity.",
    0,
    identity_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__identity(void)
{
    return PyModule_Create(&identity_module);
}
