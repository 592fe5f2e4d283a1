/*
 * _gpuplan.c: the C extension behind the `gpuplan` Python package.
 *
 * House style (style.md 9.8): multi-phase init with module state, heap
 * types, exceptions in module state that also inherit the natural builtins,
 * every command run without the GIL under a per-catalog lock, so that "one
 * thread per context" holds from Python.  Every command is the library's job
 * API (gpuplan_job_run); results are lazy views of its documents
 * (gpuplan.Document), converted to Python values on access.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gpuplan.h"
#include "gpuplan/mock.h"
#include <stdlib.h>

typedef struct modstate {
  PyObject *Error, *NotFoundError, *AmbiguousError, *InvalidError, *UnsupportedError,
      *StorageError, *CatalogError, *OutOfMemoryError;
  PyTypeObject *CatalogType, *NodeType;
  PyObject *result_factory; /* gpuplan.Result's plain-value class, for unpickling */
} modstate;

static modstate *state_of_module(PyObject *m) { return (modstate *)PyModule_GetState(m); }
static struct PyModuleDef module_def;

typedef struct CatalogObject {
  PyObject_HEAD
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;   /* reused by every call, under the lock */
  PyThread_type_lock lock;
  PyObject *module; /* strong reference: keeps the module state alive */
} CatalogObject;

/* Raise the exception for a gpuplan status code with the context's message. */
static PyObject *raise_code(modstate *st, int rc, const char *msg) {
  PyObject *type, *exc, *args;
  if (rc == GPUPLAN_ENOMEM) return PyErr_NoMemory();
  switch (rc) {
  case GPUPLAN_ENOTFOUND: type = st->NotFoundError; break;
  case GPUPLAN_EAMBIGUOUS: type = st->AmbiguousError; break;
  case GPUPLAN_EINVAL: type = st->InvalidError; break;
  case GPUPLAN_EUNSUPPORTED: type = st->UnsupportedError; break;
  case GPUPLAN_EIO: type = st->StorageError; break;
  case GPUPLAN_ECATALOG: type = st->CatalogError; break;
  case GPUPLAN_EOOM: type = st->OutOfMemoryError; break;
  default: type = st->Error; break;
  }
  args = Py_BuildValue("(s)", msg ? msg : gpuplan_errstr(rc));
  if (!args) return NULL;
  exc = PyObject_Call(type, args, NULL);
  Py_DECREF(args);
  if (!exc) return NULL;
  {
    PyObject *code = PyLong_FromLong(rc), *name = PyUnicode_FromString(gpuplan_errname(rc));
    if (!code || !name || PyObject_SetAttrString(exc, "gpuplan_errcode", code) < 0 ||
        PyObject_SetAttrString(exc, "gpuplan_errname", name) < 0) {
      Py_XDECREF(code);
      Py_XDECREF(name);
      Py_DECREF(exc);
      return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(name);
  }
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* --- Catalog --------------------------------------------------------------- */

static PyObject *Catalog_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "layer", NULL};
  const char *path = NULL, *layer = NULL;
  CatalogObject *self;
  PyObject *module = PyType_GetModuleByDef(type, &module_def);
  modstate *st = state_of_module(module);
  int rc;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zz:Catalog", kwlist, &path, &layer)) return NULL;
  if (path && layer) {
    PyErr_SetString(st->InvalidError, "Catalog: give path (instead of the built-in catalog) or layer (over it), not both");
    return NULL;
  }
  self = (CatalogObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->module = Py_NewRef(module);
  self->lock = PyThread_allocate_lock();
  if (!self->lock) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  if (gpuplan_ctx_new(&self->ctx, NULL) != GPUPLAN_OK) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  Py_BEGIN_ALLOW_THREADS
  if (path) rc = gpuplan_catalog_open(self->ctx, path, 0, &self->cat);
  else if (layer) rc = gpuplan_catalog_open(self->ctx, layer, GPUPLAN_CATALOG_LAYER, &self->cat);
  else rc = gpuplan_catalog_open_default(self->ctx, &self->cat);
  Py_END_ALLOW_THREADS
  if (!rc) rc = gpuplan_job_new(self->ctx, self->cat, &self->job);
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void Catalog_release(CatalogObject *self) {
  gpuplan_job_free(self->job);
  self->job = NULL;
  gpuplan_catalog_free(self->cat);
  self->cat = NULL;
  gpuplan_ctx_free(self->ctx);
  self->ctx = NULL;
}

static void Catalog_dealloc(CatalogObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  Catalog_release(self); /* free the C objects first, the references after */
  if (self->lock) PyThread_free_lock(self->lock);
  Py_CLEAR(self->module);
  tp->tp_free((PyObject *)self);
  Py_DECREF(tp);
}

static int Catalog_traverse(CatalogObject *self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(self->module);
  return 0;
}

/* close() waits for a command running in another thread, without the GIL
 * (that thread needs the GIL to return). */
static PyObject *Catalog_close(CatalogObject *self, PyObject *unused) {
  (void)unused;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (self->cat) Catalog_release(self);
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject *Catalog_enter(CatalogObject *self, PyObject *unused) { return Py_NewRef(self); }
static PyObject *Catalog_exit(CatalogObject *self, PyObject *args) { return Catalog_close(self, NULL); }

static PyObject *Catalog_reduce_ex(CatalogObject *self, PyObject *proto) {
  PyErr_SetString(PyExc_TypeError, "gpuplan.Catalog is a handle and cannot be pickled; pickle its results");
  return NULL;
}



/* --- result documents: lazy views over the library's documents ------------- */

/*
 * A Result is a view of one value of a document (gpuplan/doc.h): an object
 * (mapping: r["key"], r.key, keys(), items(), get()) or an array (sequence).
 * Scalars come out as Python values; containers as further views, made on
 * access, so a call costs what the caller reads.  The root view owns the
 * document and frees it under the catalog's lock (the context is shared).
 * to_dict() gives plain dicts and lists; results pickle as plain values.
 */
typedef struct NodeObject {
  PyObject_HEAD
  PyObject *root;        /* the root view; NULL for the root itself */
  gpuplan_doc *doc;      /* root only */
  PyObject *cat;         /* root only: the CatalogObject (its lock) */
  const gpuplan_value *v;
} NodeObject;

static PyObject *node_new(PyTypeObject *tp, PyObject *root, const gpuplan_value *v) {
  NodeObject *n = PyObject_New(NodeObject, tp);
  if (!n) return NULL;
  n->root = Py_NewRef(root);
  n->doc = NULL;
  n->cat = NULL;
  n->v = v;
  return (PyObject *)n;
}

static void Node_dealloc(NodeObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->doc) {
    CatalogObject *c = (CatalogObject *)self->cat;
    if (!PyThread_acquire_lock(c->lock, NOWAIT_LOCK)) {
      Py_BEGIN_ALLOW_THREADS
      PyThread_acquire_lock(c->lock, WAIT_LOCK);
      Py_END_ALLOW_THREADS
    }
    gpuplan_doc_free(self->doc);
    PyThread_release_lock(c->lock);
  }
  Py_XDECREF(self->root);
  Py_XDECREF(self->cat);
  PyObject_Free(self);
  Py_DECREF(tp);
}

static PyObject *node_root(NodeObject *self) { return self->root ? self->root : (PyObject *)self; }

static PyObject *value_py(NodeObject *self, const gpuplan_value *v) {
  size_t len;
  const char *s;
  switch (gpuplan_value_type_of(v)) {
  case GPUPLAN_VALUE_NULL: Py_RETURN_NONE;
  case GPUPLAN_VALUE_BOOL: return PyBool_FromLong(gpuplan_value_bool(v));
  case GPUPLAN_VALUE_INT: return PyLong_FromLongLong(gpuplan_value_int(v));
  case GPUPLAN_VALUE_REAL: return PyFloat_FromDouble(gpuplan_value_real(v));
  case GPUPLAN_VALUE_STRING:
    s = gpuplan_value_string(v, &len);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "replace");
  default: return node_new(Py_TYPE(self), node_root(self), v);
  }
}

/* Plain Python values (dicts, lists, scalars) of a document value. */
static PyObject *value_plain(const gpuplan_value *v) {
  size_t i, n, len;
  const char *s;
  PyObject *out;
  switch (gpuplan_value_type_of(v)) {
  case GPUPLAN_VALUE_NULL: Py_RETURN_NONE;
  case GPUPLAN_VALUE_BOOL: return PyBool_FromLong(gpuplan_value_bool(v));
  case GPUPLAN_VALUE_INT: return PyLong_FromLongLong(gpuplan_value_int(v));
  case GPUPLAN_VALUE_REAL: return PyFloat_FromDouble(gpuplan_value_real(v));
  case GPUPLAN_VALUE_STRING:
    s = gpuplan_value_string(v, &len);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "replace");
  case GPUPLAN_VALUE_ARRAY:
    n = gpuplan_value_count(v);
    if (!(out = PyList_New((Py_ssize_t)n))) return NULL;
    for (i = 0; i < n; i++) {
      PyObject *x = value_plain(gpuplan_value_at(v, i));
      if (!x) {
        Py_DECREF(out);
        return NULL;
      }
      PyList_SET_ITEM(out, (Py_ssize_t)i, x);
    }
    return out;
  case GPUPLAN_VALUE_OBJECT:
    n = gpuplan_value_count(v);
    if (!(out = PyDict_New())) return NULL;
    for (i = 0; i < n; i++) {
      PyObject *x = value_plain(gpuplan_value_at(v, i));
      if (!x || PyDict_SetItemString(out, gpuplan_value_key(v, i), x) < 0) {
        Py_XDECREF(x);
        Py_DECREF(out);
        return NULL;
      }
      Py_DECREF(x);
    }
    return out;
  }
  Py_RETURN_NONE;
}

static int is_object(NodeObject *self) { return gpuplan_value_type_of(self->v) == GPUPLAN_VALUE_OBJECT; }

static PyObject *Node_getattro(NodeObject *self, PyObject *name) {
  if (is_object(self)) {
    const char *k = PyUnicode_AsUTF8(name);
    const gpuplan_value *v;
    if (!k) return NULL;
    if (k[0] != '_' && (v = gpuplan_value_get(self->v, k))) return value_py(self, v);
  }
  return PyObject_GenericGetAttr((PyObject *)self, name);
}

static int Node_setattro(NodeObject *self, PyObject *name, PyObject *value) {
  (void)self;
  (void)name;
  (void)value;
  PyErr_SetString(PyExc_AttributeError, "gpuplan results are read-only");
  return -1;
}

static Py_ssize_t Node_length(NodeObject *self) { return (Py_ssize_t)gpuplan_value_count(self->v); }

static PyObject *Node_subscript(NodeObject *self, PyObject *key) {
  if (is_object(self)) {
    const char *k;
    const gpuplan_value *v;
    if (!PyUnicode_Check(key)) {
      PyErr_SetObject(PyExc_KeyError, key);
      return NULL;
    }
    if (!(k = PyUnicode_AsUTF8(key))) return NULL;
    if (!(v = gpuplan_value_get(self->v, k))) {
      PyErr_SetObject(PyExc_KeyError, key);
      return NULL;
    }
    return value_py(self, v);
  }
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step, n, i, k;
    PyObject *list;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
    n = PySlice_AdjustIndices(Node_length(self), &start, &stop, step);
    if (!(list = PyList_New(n))) return NULL;
    for (i = 0, k = start; i < n; i++, k += step) {
      PyObject *x = value_py(self, gpuplan_value_at(self->v, (size_t)k));
      if (!x) {
        Py_DECREF(list);
        return NULL;
      }
      PyList_SET_ITEM(list, i, x);
    }
    return list;
  }
  {
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError), n = Node_length(self);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      PyErr_SetString(PyExc_IndexError, "result index out of range");
      return NULL;
    }
    return value_py(self, gpuplan_value_at(self->v, (size_t)i));
  }
}

static PyObject *Node_keys(NodeObject *self, PyObject *unused) {
  size_t i, n = is_object(self) ? gpuplan_value_count(self->v) : 0;
  PyObject *list = PyList_New((Py_ssize_t)n);
  (void)unused;
  for (i = 0; list && i < n; i++) {
    PyObject *k = PyUnicode_FromString(gpuplan_value_key(self->v, i));
    if (!k) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, k);
  }
  return list;
}

static PyObject *Node_values(NodeObject *self, PyObject *unused) {
  size_t i, n = gpuplan_value_count(self->v);
  PyObject *list = PyList_New((Py_ssize_t)n);
  (void)unused;
  for (i = 0; list && i < n; i++) {
    PyObject *x = value_py(self, gpuplan_value_at(self->v, i));
    if (!x) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, x);
  }
  return list;
}

static PyObject *Node_items(NodeObject *self, PyObject *unused) {
  size_t i, n = is_object(self) ? gpuplan_value_count(self->v) : 0;
  PyObject *list = PyList_New((Py_ssize_t)n);
  (void)unused;
  for (i = 0; list && i < n; i++) {
    PyObject *x = value_py(self, gpuplan_value_at(self->v, i));
    PyObject *t = x ? Py_BuildValue("(sN)", gpuplan_value_key(self->v, i), x) : NULL;
    if (!t) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, t);
  }
  return list;
}

static PyObject *Node_iter(NodeObject *self) {
  PyObject *list = is_object(self) ? Node_keys(self, NULL) : Node_values(self, NULL), *it;
  if (!list) return NULL;
  it = PyObject_GetIter(list);
  Py_DECREF(list);
  return it;
}

static int Node_contains(NodeObject *self, PyObject *key) {
  if (is_object(self)) {
    const char *k;
    if (!PyUnicode_Check(key)) return 0;
    if (!(k = PyUnicode_AsUTF8(key))) return -1;
    return gpuplan_value_get(self->v, k) != NULL;
  }
  {
    PyObject *vals = Node_values(self, NULL);
    int r;
    if (!vals) return -1;
    r = PySequence_Contains(vals, key);
    Py_DECREF(vals);
    return r;
  }
}

static PyObject *Node_get(NodeObject *self, PyObject *const *args, Py_ssize_t nargs) {
  const char *k;
  const gpuplan_value *v;
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
    return NULL;
  }
  if (!is_object(self) || !PyUnicode_Check(args[0]) || !(k = PyUnicode_AsUTF8(args[0])) ||
      !(v = gpuplan_value_get(self->v, k)) || gpuplan_value_type_of(v) == GPUPLAN_VALUE_NULL) {
    if (PyErr_Occurred()) return NULL;
    return Py_NewRef(nargs == 2 ? args[1] : Py_None);
  }
  return value_py(self, v);
}

static PyObject *Node_to_dict(NodeObject *self, PyObject *unused) {
  (void)unused;
  return value_plain(self->v);
}

static PyObject *Node_json(NodeObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"pretty", NULL};
  int pretty = 1;
  NodeObject *root = (NodeObject *)node_root(self);
  const char *s;
  size_t n;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:json", kwlist, &pretty)) return NULL;
  if (root != self) {
    PyErr_SetString(PyExc_TypeError, "json(): only the whole document (the result itself) has a JSON text");
    return NULL;
  }
  s = gpuplan_doc_json(root->doc, pretty ? GPUPLAN_JSON_PRETTY : 0, &n);
  if (!s) return PyErr_NoMemory();
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
}

static PyObject *Node_richcompare(NodeObject *self, PyObject *other, int op) {
  PyObject *a, *b, *r;
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  if (!(a = value_plain(self->v))) return NULL;
  if (PyObject_HasAttrString(other, "to_dict")) b = PyObject_CallMethod(other, "to_dict", NULL);
  else b = Py_NewRef(other);
  if (!b) {
    Py_DECREF(a);
    return NULL;
  }
  r = PyObject_RichCompare(a, b, op);
  Py_DECREF(a);
  Py_DECREF(b);
  return r;
}

static PyObject *Node_repr(NodeObject *self) {
  PyObject *plain = value_plain(self->v), *r;
  if (!plain) return NULL;
  r = PyUnicode_FromFormat("Result(%R)", plain);
  Py_DECREF(plain);
  return r;
}

static PyObject *Node_reduce(NodeObject *self, PyObject *unused) {
  modstate *st = PyType_GetModuleState(Py_TYPE(self));
  PyObject *plain;
  (void)unused;
  if (!st || !st->result_factory) {
    PyErr_SetString(PyExc_TypeError, "gpuplan results pickle once the gpuplan package is imported");
    return NULL;
  }
  if (!(plain = value_plain(self->v))) return NULL;
  return Py_BuildValue("(O(N))", st->result_factory, plain);
}

static PyObject *Node_dir(NodeObject *self, PyObject *unused) {
  PyObject *keys = Node_keys(self, unused);
  static const char *const methods[] = {"keys", "values", "items", "get", "to_dict", "json", "schema"};
  size_t i;
  for (i = 0; keys && i < sizeof methods / sizeof methods[0]; i++) {
    PyObject *m = PyUnicode_FromString(methods[i]);
    if (!m || PyList_Append(keys, m) < 0) Py_CLEAR(keys);
    Py_XDECREF(m);
  }
  return keys;
}

static PyObject *Node_schema(NodeObject *self, void *unused) {
  NodeObject *root = (NodeObject *)node_root(self);
  (void)unused;
  return PyUnicode_FromString(gpuplan_doc_schema(root->doc));
}

static PyMethodDef Node_methods[] = {
  {"keys", (PyCFunction)Node_keys, METH_NOARGS, "keys() -> list of the object's keys"},
  {"values", (PyCFunction)Node_values, METH_NOARGS, "values() -> list"},
  {"items", (PyCFunction)Node_items, METH_NOARGS, "items() -> list of (key, value)"},
  {"get", (PyCFunction)(void (*)(void))Node_get, METH_FASTCALL,
   "get(key, default=None): the value, or default when absent or null (not known)"},
  {"to_dict", (PyCFunction)Node_to_dict, METH_NOARGS, "to_dict() -> plain dicts, lists and scalars"},
  {"json", (PyCFunction)(void (*)(void))Node_json, METH_VARARGS | METH_KEYWORDS,
   "json(pretty=True) -> the library's JSON text of the document (as `gpuplan ... --json`)"},
  {"__reduce__", (PyCFunction)Node_reduce, METH_NOARGS, NULL},
  {"__dir__", (PyCFunction)Node_dir, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL}
};

static PyGetSetDef Node_getset[] = {
  {"schema_id", (getter)Node_schema, NULL, "the document's schema, gpuplan.<kind>/<version>", NULL},
  {NULL, NULL, NULL, NULL, NULL}
};

static PyType_Slot Node_slots[] = {
  {Py_tp_dealloc, Node_dealloc},
  {Py_tp_getattro, Node_getattro},
  {Py_tp_setattro, Node_setattro},
  {Py_tp_iter, Node_iter},
  {Py_tp_richcompare, Node_richcompare},
  {Py_tp_repr, Node_repr},
  {Py_tp_methods, Node_methods},
  {Py_tp_getset, Node_getset},
  {Py_mp_length, Node_length},
  {Py_mp_subscript, Node_subscript},
  {Py_sq_contains, Node_contains},
  {Py_tp_hash, PyObject_HashNotImplemented},
  {Py_tp_doc, "A gpuplan result: a read-only view of the library's document (keys as attributes)."},
  {0, NULL}
};

static PyType_Spec Node_spec = {
  "gpuplan.Result", sizeof(NodeObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE, Node_slots
};

/* --- running a command -------------------------------------------------------- */

/* One keyword argument, converted with the GIL held, applied without it. */
typedef struct job_arg {
  const char *name;
  int kind;            /* 0 int, 1 real, 2 bool, 3 text */
  int64_t i;
  double r;
  const char *s;
  Py_ssize_t n;
  char num[48]; /* an int too wide for int64, in its digits (the option's error quotes it as given) */
} job_arg;

#define MAX_ARGS 96

static int add_arg(job_arg *a, int *n, const char *name, PyObject *v) {
  if (*n >= MAX_ARGS) {
    PyErr_SetString(PyExc_TypeError, "too many options");
    return -1;
  }
  a[*n].name = name;
  if (PyBool_Check(v)) {
    a[*n].kind = 2;
    a[*n].i = v == Py_True;
  } else if (PyLong_Check(v)) {
    int overflow = 0;
    a[*n].kind = 0;
    a[*n].i = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
      /* As text, so that the option's error shows the value given (was
       * '1.84467e+19' for 2**64). */
      PyObject *txt = PyObject_Str(v);
      const char *u = txt ? PyUnicode_AsUTF8(txt) : NULL;
      if (!u) {
        Py_XDECREF(txt);
        return -1;
      }
      snprintf(a[*n].num, sizeof a[*n].num, "%s", u);
      if (strlen(u) >= sizeof a[*n].num) memcpy(a[*n].num + sizeof a[*n].num - 4, "...", 4); /* (cut: marked) */
      Py_DECREF(txt);
      a[*n].kind = 3;
      a[*n].s = a[*n].num;
      a[*n].n = (Py_ssize_t)strlen(a[*n].num);
    }
  } else if (PyFloat_Check(v)) {
    a[*n].kind = 1;
    a[*n].r = PyFloat_AS_DOUBLE(v);
  } else if (PyUnicode_Check(v)) {
    a[*n].kind = 3;
    if (!(a[*n].s = PyUnicode_AsUTF8AndSize(v, &a[*n].n))) return -1;
  } else if (PyBytes_Check(v)) {
    a[*n].kind = 3;
    a[*n].s = PyBytes_AS_STRING(v);
    a[*n].n = PyBytes_GET_SIZE(v);
  } else if (PyObject_HasAttrString(v, "__fspath__")) {
    PyErr_Format(PyExc_TypeError, "%s: pass the path as a str (os.fspath(path))", name);
    return -1;
  } else {
    PyErr_Format(PyExc_TypeError, "%s: %.80s is not a number, a bool or a str", name, Py_TYPE(v)->tp_name);
    return -1;
  }
  (*n)++;
  return 0;
}

/* Keyword arguments into job_args: None is "unset"; a list or tuple repeats
 * the option (faults=["thermal@3", "ecc"]). */
static int args_from(PyObject *kw, job_arg *a, int *n) {
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  if (!kw) return 0;
  while (PyDict_Next(kw, &pos, &k, &v)) {
    const char *name = PyUnicode_AsUTF8(k);
    if (!name) return -1;
    if (v == Py_None) continue;
    if (PyList_Check(v) || PyTuple_Check(v)) {
      Py_ssize_t i, m = PySequence_Fast_GET_SIZE(v);
      for (i = 0; i < m; i++)
        if (add_arg(a, n, name, PySequence_Fast_GET_ITEM(v, i))) return -1;
      continue;
    }
    if (add_arg(a, n, name, v)) return -1;
  }
  return 0;
}

/* Run a command; the lock is taken and the job used without the GIL.  With
 * data (replay of a snapshot held in memory), gpuplan_job_run_snapshot. */
static PyObject *run_command_data(CatalogObject *self, const char *command, job_arg *a, int n, const char *data,
                                  Py_ssize_t len);
static PyObject *run_command(CatalogObject *self, const char *command, job_arg *a, int n) {
  return run_command_data(self, command, a, n, NULL, 0);
}

static PyObject *run_command_data(CatalogObject *self, const char *command, job_arg *a, int n, const char *data,
                                  Py_ssize_t len) {
  modstate *st = state_of_module(self->module);
  gpuplan_doc *doc = NULL;
  int rc = GPUPLAN_OK, failed_arg = -1, closed = 0, i;
  char msg[1024];
  NodeObject *root;
  msg[0] = 0;
  Py_BEGIN_ALLOW_THREADS
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) PyThread_acquire_lock(self->lock, WAIT_LOCK);
  if (!self->cat) {
    closed = 1;
  } else {
    gpuplan_job_reset(self->job);
    for (i = 0; i < n && !rc; i++) {
      switch (a[i].kind) {
      case 0: rc = gpuplan_job_set_int(self->job, a[i].name, a[i].i); break;
      case 1: rc = gpuplan_job_set_real(self->job, a[i].name, a[i].r); break;
      case 2: rc = gpuplan_job_set_bool(self->job, a[i].name, (int)a[i].i); break;
      default: rc = gpuplan_job_set_text(self->job, a[i].name, a[i].s, (size_t)a[i].n); break;
      }
      if (rc) failed_arg = i;
    }
    if (!rc) rc = data ? gpuplan_job_run_snapshot(self->job, data, (size_t)len, &doc)
                       : gpuplan_job_run(self->job, command, &doc);
    if (rc) snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(self->ctx));
  }
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS
  if (closed) {
    PyErr_SetString(st->Error, "gpuplan: the catalog is closed");
    return NULL;
  }
  if (rc) {
    if (failed_arg >= 0 && rc == GPUPLAN_ENOTFOUND && !gpuplan_job_option_find(a[failed_arg].name, NULL)) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s' (%s)", command,
                   a[failed_arg].name, msg);
      return NULL;
    }
    return raise_code(st, rc, msg);
  }
  root = PyObject_New(NodeObject, st->NodeType);
  if (!root) {
    /* free under the lock: the context is shared */
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    gpuplan_doc_free(doc);
    PyThread_release_lock(self->lock);
    return NULL;
  }
  root->root = NULL;
  root->doc = doc;
  root->cat = Py_NewRef((PyObject *)self);
  root->v = gpuplan_doc_root(doc);
  return (PyObject *)root;
}

/* replay_bytes(data, **options): a snapshot held in memory (Dask workers
 * have bytes, not paths). */
static PyObject *Catalog_replay_bytes(CatalogObject *self, PyObject *args, PyObject *kw) {
  job_arg a[MAX_ARGS];
  int n = 0;
  Py_buffer buf;
  PyObject *r;
  if (!PyArg_ParseTuple(args, "y*:replay_bytes", &buf)) return NULL;
  if (args_from(kw, a, &n)) {
    PyBuffer_Release(&buf);
    return NULL;
  }
  r = run_command_data(self, "replay", a, n, (const char *)buf.buf, buf.len);
  PyBuffer_Release(&buf);
  return r;
}

static PyObject *Catalog_run(CatalogObject *self, PyObject *args, PyObject *kw) {
  job_arg a[MAX_ARGS];
  int n = 0;
  const char *command;
  if (PyTuple_GET_SIZE(args) != 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_SetString(PyExc_TypeError, "run(command, **options): command is a str such as 'plan'");
    return NULL;
  }
  if (!(command = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0)))) return NULL;
  if (args_from(kw, a, &n)) return NULL;
  return run_command(self, command, a, n);
}

/* plan/perf/search/simulate(model, gpu=None, **options) */
static PyObject *run_model(CatalogObject *self, const char *command, PyObject *args, PyObject *kw) {
  job_arg a[MAX_ARGS];
  int n = 0;
  Py_ssize_t np = PyTuple_GET_SIZE(args);
  if (np < 1 || np > 2) {
    PyErr_Format(PyExc_TypeError, "%s(model, gpu=None, **options) takes 1 or 2 positional arguments", command);
    return NULL;
  }
  if (add_arg(a, &n, "model", PyTuple_GET_ITEM(args, 0))) return NULL;
  if (np == 2 && PyTuple_GET_ITEM(args, 1) != Py_None && add_arg(a, &n, "gpu", PyTuple_GET_ITEM(args, 1)))
    return NULL;
  if (args_from(kw, a, &n)) return NULL;
  return run_command(self, command, a, n);
}

static PyObject *Catalog_plan(CatalogObject *self, PyObject *args, PyObject *kw) {
  return run_model(self, "plan", args, kw);
}
static PyObject *Catalog_perf(CatalogObject *self, PyObject *args, PyObject *kw) {
  return run_model(self, "perf", args, kw);
}
static PyObject *Catalog_search(CatalogObject *self, PyObject *args, PyObject *kw) {
  return run_model(self, "search", args, kw);
}
static PyObject *Catalog_simulate(CatalogObject *self, PyObject *args, PyObject *kw) {
  return run_model(self, "simulate", args, kw);
}
static PyObject *Catalog_serve(CatalogObject *self, PyObject *args, PyObject *kw) {
  return run_model(self, "serve", args, kw);
}

/* The option table, for docs, stubs and introspection. */
static PyObject *mod_options(PyObject *module, PyObject *unused) {
  static const char *const types[] = {"int", "real", "bool", "enum", "str", "bytes", "list"};
  PyObject *list = PyList_New(0);
  const gpuplan_option_info *o;
  size_t i, c;
  (void)module;
  (void)unused;
  for (i = 0; list && (o = gpuplan_job_option(i)); i++) {
    PyObject *cmds = PyList_New(0), *d;
    for (c = 0; cmds && gpuplan_command_name(c); c++)
      if (o->commands & (1u << c)) {
        PyObject *s = PyUnicode_FromString(gpuplan_command_name(c));
        if (!s || PyList_Append(cmds, s) < 0) Py_CLEAR(cmds);
        Py_XDECREF(s);
      }
    if (!cmds) {
      Py_CLEAR(list);
      break;
    }
    d = Py_BuildValue("{s:s,s:s,s:s,s:s,s:d,s:d,s:z,s:z,s:s,s:N,s:s,s:O}", "name", o->name, "flag", o->flag,
                      "type", types[o->type], "unit", o->unit, "min", o->min, "max", o->max, "choices", o->choices,
                      "default", o->default_text, "help", o->help, "commands", cmds, "group", o->group,
                      "positional", (o->flags & GPUPLAN_OPTF_POSITIONAL) ? Py_True : Py_False);
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

/* The field description of a result kind. */
static PyObject *mod_result_fields(PyObject *module, PyObject *arg) {
  static const char *const types[] = {"null", "bool", "int", "real", "str", "list", "dict"};
  const char *kind = PyUnicode_AsUTF8(arg);
  const gpuplan_result_field *f;
  size_t n, i;
  int version;
  PyObject *list;
  (void)module;
  if (!kind) return NULL;
  if (!(f = gpuplan_result_fields(kind, &n, &version))) {
    PyErr_Format(PyExc_KeyError, "no result kind '%s'", kind);
    return NULL;
  }
  list = PyList_New(0);
  for (i = 0; list && i < n; i++) {
    PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:s}", "path", f[i].path, "type", types[f[i].type], "unit", f[i].unit,
                                "help", f[i].help);
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *mod_result_kinds(PyObject *module, PyObject *unused) {
  PyObject *list = PyList_New(0);
  size_t i;
  const char *k;
  (void)module;
  (void)unused;
  for (i = 0; list && (k = gpuplan_result_kind(i)); i++) {
    PyObject *d = Py_BuildValue("(sz)", k, gpuplan_result_table(k));
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *mod_register(PyObject *module, PyObject *factory) {
  modstate *st = state_of_module(module);
  Py_XSETREF(st->result_factory, Py_NewRef(factory));
  Py_RETURN_NONE;
}

static PyMethodDef Catalog_methods[] = {
  {"run", (PyCFunction)(void (*)(void))Catalog_run, METH_VARARGS | METH_KEYWORDS,
   "run(command, **options) -> Result: any command of the job API (gpuplan.options() lists the options)"},
  {"replay_bytes", (PyCFunction)(void (*)(void))Catalog_replay_bytes, METH_VARARGS | METH_KEYWORDS,
   "replay_bytes(data, **options) -> Result (gpuplan.replay/1) of a snapshot held in memory"},
  {"plan", (PyCFunction)(void (*)(void))Catalog_plan, METH_VARARGS | METH_KEYWORDS,
   "plan(model, gpu=None, **options) -> Result (gpuplan.plan/1)"},
  {"perf", (PyCFunction)(void (*)(void))Catalog_perf, METH_VARARGS | METH_KEYWORDS,
   "perf(model, gpu=None, **options) -> Result (gpuplan.perf/1)"},
  {"search", (PyCFunction)(void (*)(void))Catalog_search, METH_VARARGS | METH_KEYWORDS,
   "search(model, gpu=None, **options) -> Result (gpuplan.search/1 or gpuplan.search-across/1)"},
  {"simulate", (PyCFunction)(void (*)(void))Catalog_simulate, METH_VARARGS | METH_KEYWORDS,
   "simulate(model, gpu=None, **options) -> Result (gpuplan.simulate/1)"},
  {"serve", (PyCFunction)(void (*)(void))Catalog_serve, METH_VARARGS | METH_KEYWORDS,
   "serve(model, gpu=None, **options) -> Result (gpuplan.serve/1)"},
  {"close", (PyCFunction)Catalog_close, METH_NOARGS, "close() (idempotent)"},
  {"__enter__", (PyCFunction)Catalog_enter, METH_NOARGS, NULL},
  {"__exit__", (PyCFunction)Catalog_exit, METH_VARARGS, NULL},
  {"__reduce_ex__", (PyCFunction)Catalog_reduce_ex, METH_O, NULL},
  {NULL, NULL, 0, NULL}
};

static PyType_Slot Catalog_slots[] = {
  {Py_tp_new, Catalog_new},
  {Py_tp_dealloc, Catalog_dealloc},
  {Py_tp_traverse, Catalog_traverse},
  {Py_tp_methods, Catalog_methods},
  {Py_tp_doc, "Catalog(path=None, layer=None): the hardware and model catalog, and the planners."},
  {0, NULL}
};

static PyType_Spec Catalog_spec = {
  "gpuplan._gpuplan.Catalog", sizeof(CatalogObject), 0,
  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE, Catalog_slots
};

/* --- module functions ------------------------------------------------------- */

static PyMethodDef module_methods[] = {
  {"options", (PyCFunction)mod_options, METH_NOARGS, "options() -> the option table (list of dicts)"},
  {"result_fields", (PyCFunction)mod_result_fields, METH_O, "result_fields(kind) -> the kind's field description"},
  {"result_kinds", (PyCFunction)mod_result_kinds, METH_NOARGS, "result_kinds() -> [(kind, table key or None)]"},
  {"_register", (PyCFunction)mod_register, METH_O, NULL},
  {NULL, NULL, 0, NULL}
};

static int add_exc(PyObject *m, PyObject **slot, const char *name, PyObject *bases) {
  char full[96];
  snprintf(full, sizeof full, "gpuplan.%s", name);
  *slot = PyErr_NewException(full, bases, NULL);
  if (!*slot) return -1;
  return PyModule_AddObjectRef(m, name, *slot);
}

static int module_exec(PyObject *m) {
  modstate *st = state_of_module(m);
  PyObject *b;
  if (gpuplan_version_number() != GPUPLAN_VERSION_NUMBER) {
    PyErr_Format(PyExc_ImportError, "gpuplan: built against %s, loaded %s", GPUPLAN_VERSION_STRING,
                 gpuplan_version_string());
    return -1;
  }
  if (add_exc(m, &st->Error, "Error", PyExc_Exception)) return -1;
#define SUB(slot, name, builtin)                                   \
  b = PyTuple_Pack(2, st->Error, builtin);                         \
  if (!b || add_exc(m, &st->slot, name, b)) {                      \
    Py_XDECREF(b);                                                 \
    return -1;                                                     \
  }                                                                \
  Py_DECREF(b)
  SUB(NotFoundError, "NotFoundError", PyExc_KeyError);
  SUB(InvalidError, "InvalidError", PyExc_ValueError);
  SUB(UnsupportedError, "UnsupportedError", PyExc_NotImplementedError);
  SUB(StorageError, "StorageError", PyExc_OSError);
  SUB(OutOfMemoryError, "OutOfMemoryError", PyExc_RuntimeError);
#undef SUB
  b = PyTuple_Pack(1, st->NotFoundError);
  if (!b || add_exc(m, &st->AmbiguousError, "AmbiguousError", b)) {
    Py_XDECREF(b);
    return -1;
  }
  Py_DECREF(b);
  b = PyTuple_Pack(1, st->Error);
  if (!b || add_exc(m, &st->CatalogError, "CatalogError", b)) {
    Py_XDECREF(b);
    return -1;
  }
  Py_DECREF(b);
  st->CatalogType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Catalog_spec, NULL);
  if (!st->CatalogType || PyModule_AddType(m, st->CatalogType) < 0) return -1;
  st->NodeType = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Node_spec, NULL);
  if (!st->NodeType || PyModule_AddObjectRef(m, "Document", (PyObject *)st->NodeType) < 0) return -1;
  if (PyModule_AddStringConstant(m, "__version__", gpuplan_version_string()) < 0) return -1;
  return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg) {
  modstate *st = state_of_module(m);
  Py_VISIT(st->Error);
  Py_VISIT(st->NotFoundError);
  Py_VISIT(st->AmbiguousError);
  Py_VISIT(st->InvalidError);
  Py_VISIT(st->UnsupportedError);
  Py_VISIT(st->StorageError);
  Py_VISIT(st->CatalogError);
  Py_VISIT(st->OutOfMemoryError);
  Py_VISIT(st->CatalogType);
  Py_VISIT(st->NodeType);
  Py_VISIT(st->result_factory);
  return 0;
}

static int module_clear(PyObject *m) {
  modstate *st = state_of_module(m);
  Py_CLEAR(st->Error);
  Py_CLEAR(st->NotFoundError);
  Py_CLEAR(st->AmbiguousError);
  Py_CLEAR(st->InvalidError);
  Py_CLEAR(st->UnsupportedError);
  Py_CLEAR(st->StorageError);
  Py_CLEAR(st->CatalogError);
  Py_CLEAR(st->OutOfMemoryError);
  Py_CLEAR(st->CatalogType);
  Py_CLEAR(st->NodeType);
  Py_CLEAR(st->result_factory);
  return 0;
}

static void module_free(void *m) { module_clear((PyObject *)m); }

static PyModuleDef_Slot module_slots[] = {
  {Py_mod_exec, module_exec},
#if PY_VERSION_HEX >= 0x030C0000
  {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#if PY_VERSION_HEX >= 0x030D0000
  {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
  {0, NULL}
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT, "gpuplan._gpuplan",
  "C core of gpuplan: catalog, memory planning, performance, search, simulation, replay.",
  sizeof(modstate), module_methods, module_slots, module_traverse, module_clear, module_free
};

PyMODINIT_FUNC PyInit__gpuplan(void) { return PyModuleDef_Init(&module_def); }
