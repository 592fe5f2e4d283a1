/*
 * _gpuplan.c: the C extension behind the `gpuplan` Python package.
 *
 * House style (style.md 9.8): multi-phase init with module state, heap
 * types, exceptions in module state that also inherit the natural builtins,
 * the GIL released around every call that can take more than microseconds,
 * a per-object lock so that "one thread per context" holds from Python.
 * Results are plain Python dicts and lists; the pure-Python layer turns them
 * into objects with attributes (gpuplan/__init__.py).
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
  PyTypeObject *CatalogType;
} modstate;

static modstate *state_of_module(PyObject *m) { return (modstate *)PyModule_GetState(m); }

typedef struct CatalogObject {
  PyObject_HEAD
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
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

/* --- locking: the GIL is released while waiting and while working -------- */

static int lock_catalog(CatalogObject *self, modstate *st) {
  if (!self->cat) {
    PyErr_SetString(st->Error, "gpuplan: the catalog is closed");
    return -1;
  }
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
  }
  return 0;
}

static void unlock_catalog(CatalogObject *self) { PyThread_release_lock(self->lock); }

/* --- records as dicts, from the field descriptors ------------------------- */

static PyObject *record_dict(gpuplan_kind kind, const void *rec) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  for (i = 0; i < n; i++) {
    const char *p = (const char *)rec + fd[i].offset;
    PyObject *v = NULL;
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING:
      if (*(const char *const *)p) v = PyUnicode_FromString(*(const char *const *)p);
      else v = Py_NewRef(Py_None);
      break;
    case GPUPLAN_FIELD_INT: v = PyLong_FromLongLong(*(const int64_t *)p); break;
    case GPUPLAN_FIELD_UINT: v = PyLong_FromUnsignedLongLong(*(const uint64_t *)p); break;
    case GPUPLAN_FIELD_REAL:
      v = isfinite(*(const double *)p) ? PyFloat_FromDouble(*(const double *)p) : Py_NewRef(Py_None);
      break;
    case GPUPLAN_FIELD_BOOL: v = PyBool_FromLong(*(const int *)p); break;
    }
    if (!v || PyDict_SetItemString(d, fd[i].name, v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(v);
  }
  return d;
}

static int kind_of(const char *s, gpuplan_kind *out) {
  static const char *const names[] = {"gpu", "fabric", "node", "model"};
  static const char *const plural[] = {"gpus", "fabrics", "nodes", "models"};
  int k;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++)
    if (strcmp(s, names[k]) == 0 || strcmp(s, plural[k]) == 0) {
      *out = (gpuplan_kind)k;
      return 1;
    }
  return 0;
}

/* --- Catalog --------------------------------------------------------------- */

static PyObject *Catalog_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "layer", NULL};
  const char *path = NULL, *layer = NULL;
  CatalogObject *self;
  PyObject *module = PyType_GetModule(type);
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
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void Catalog_release(CatalogObject *self) {
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

static PyObject *Catalog_close(CatalogObject *self, PyObject *unused) {
  if (self->cat) {
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Catalog_release(self);
    PyThread_release_lock(self->lock);
  }
  Py_RETURN_NONE;
}

static PyObject *Catalog_enter(CatalogObject *self, PyObject *unused) { return Py_NewRef(self); }
static PyObject *Catalog_exit(CatalogObject *self, PyObject *args) { return Catalog_close(self, NULL); }

static PyObject *Catalog_reduce_ex(CatalogObject *self, PyObject *proto) {
  PyErr_SetString(PyExc_TypeError, "gpuplan.Catalog is a handle and cannot be pickled; pickle its results");
  return NULL;
}

static PyObject *Catalog_records(CatalogObject *self, PyObject *arg) {
  modstate *st = state_of_module(self->module);
  const char *k = PyUnicode_AsUTF8(arg);
  gpuplan_kind kind;
  PyObject *list;
  size_t i, n;
  if (!k) return NULL;
  if (!kind_of(k, &kind)) {
    PyErr_Format(st->InvalidError, "kind: '%s' is not one of gpus, nodes, models, fabrics", k);
    return NULL;
  }
  if (lock_catalog(self, st)) return NULL;
  n = gpuplan_catalog_count(self->cat, kind);
  list = PyList_New((Py_ssize_t)n);
  for (i = 0; list && i < n; i++) {
    PyObject *d = record_dict(kind, gpuplan_catalog_at(self->cat, kind, i));
    if (!d) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, d);
  }
  unlock_catalog(self);
  return list;
}

static PyObject *Catalog_find(CatalogObject *self, PyObject *args) {
  modstate *st = state_of_module(self->module);
  const char *k, *name;
  gpuplan_kind kind;
  const void *rec = NULL;
  PyObject *res;
  int rc;
  if (!PyArg_ParseTuple(args, "ss:find", &k, &name)) return NULL;
  if (!kind_of(k, &kind)) {
    PyErr_Format(st->InvalidError, "kind: '%s' is not one of gpu, node, model, fabric", k);
    return NULL;
  }
  if (lock_catalog(self, st)) return NULL;
  rc = gpuplan_catalog_find(self->cat, kind, name, &rec);
  res = rc ? raise_code(st, rc, gpuplan_errmsg(self->ctx)) : record_dict(kind, rec);
  unlock_catalog(self);
  return res;
}

/* Memory options from keyword arguments, by the library's option names
 * (gpuplan_option_kind); keys in extra belong to the caller. */
static int options_from(CatalogObject *self, modstate *st, PyObject *kw, gpuplan_memory_options *o,
                        const char *const *extra) {
  gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  *o = d;
  if (!kw) return 0;
  while (PyDict_Next(kw, &pos, &key, &val)) {
    const char *k = PyUnicode_AsUTF8(key);
    size_t i;
    int skip = 0, rc = GPUPLAN_OK;
    if (!k) return -1;
    for (i = 0; extra && extra[i]; i++)
      if (strcmp(k, extra[i]) == 0) skip = 1;
    if (skip) continue;
    switch (gpuplan_option_kind(k)) {
    case GPUPLAN_OPTION_INT: {
      long long v;
      if (!PyLong_Check(val)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %.80s", k, Py_TYPE(val)->tp_name);
        return -1;
      }
      v = PyLong_AsLongLong(val);
      if (v == -1 && PyErr_Occurred()) return -1;
      rc = gpuplan_option_set_int(self->ctx, o, k, v);
      break;
    }
    case GPUPLAN_OPTION_BOOL: {
      int v = PyObject_IsTrue(val);
      if (v < 0) return -1;
      rc = gpuplan_option_set_int(self->ctx, o, k, v);
      break;
    }
    case GPUPLAN_OPTION_REAL: {
      double v = PyFloat_AsDouble(val);
      if (v == -1 && PyErr_Occurred()) return -1;
      rc = gpuplan_option_set_real(self->ctx, o, k, v);
      break;
    }
    case GPUPLAN_OPTION_ENUM: {
      const char *v;
      if (!PyUnicode_Check(val)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str, got %.80s", k, Py_TYPE(val)->tp_name);
        return -1;
      }
      if (!(v = PyUnicode_AsUTF8(val))) return -1;
      rc = gpuplan_option_set_string(self->ctx, o, k, v);
      break;
    }
    default:
      PyErr_Format(PyExc_TypeError, "unexpected keyword argument '%s'", k);
      return -1;
    }
    if (rc) {
      raise_code(st, rc, gpuplan_errmsg(self->ctx));
      return -1;
    }
  }
  return 0;
}

/* --- building result dicts ------------------------------------------------- */

/* Set d[key] = v, stealing v; -1 on error (v NULL included). */
static int dset(PyObject *d, const char *key, PyObject *v) {
  int rc;
  if (!v) return -1;
  rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc;
}

/* A number as the CLI's JSON writes it: None when not finite. */
static PyObject *num(double v) { return isfinite(v) ? PyFloat_FromDouble(v) : Py_NewRef(Py_None); }
static PyObject *i64(int64_t v) { return PyLong_FromLongLong(v); }
static PyObject *u64(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }
static PyObject *str(const char *s) { return s ? PyUnicode_FromString(s) : Py_NewRef(Py_None); }

/* One stage of the memory model, keys as `gpuplan plan --json` "worst". */
static PyObject *memory_dict(const gpuplan_memory *r) {
  PyObject *comps = PyList_New(0), *d = PyDict_New();
  int i;
  if (!comps || !d) goto fail;
  for (i = 0; i < GPUPLAN_MEM_COUNT; i++) {
    PyObject *c;
    if (!r->item[i].bytes) continue;
    c = Py_BuildValue("{s:s,s:K,s:s}", "name", r->item[i].name, "bytes",
                      (unsigned long long)r->item[i].bytes, "formula", r->item[i].formula);
    if (!c || PyList_Append(comps, c) < 0) {
      Py_XDECREF(c);
      goto fail;
    }
    Py_DECREF(c);
  }
  if (dset(d, "stage", i64(r->stage)) || dset(d, "layers", i64(r->layers)) ||
      dset(d, "microbatches_in_flight", num(r->microbatches_in_flight)) ||
      dset(d, "params_rank", num(r->params_rank)) || dset(d, "components", Py_NewRef(comps)) ||
      dset(d, "total_bytes", u64(r->total)) || dset(d, "capacity_bytes", u64(r->capacity)) ||
      dset(d, "fits", PyBool_FromLong(r->fits)) || dset(d, "headroom_bytes", i64(r->headroom)) ||
      dset(d, "host_bytes", u64(r->host_bytes)))
    goto fail;
  if (r->kv_bytes_per_token &&
      (dset(d, "kv_bytes_per_token", u64(r->kv_bytes_per_token)) ||
       dset(d, "kv_waste_bytes", u64(r->kv_waste_bytes)) || dset(d, "max_sequences", i64(r->max_sequences))))
    goto fail;
  Py_DECREF(comps);
  return d;
fail:
  Py_XDECREF(comps);
  Py_XDECREF(d);
  return NULL;
}

static PyObject *options_dict(const gpuplan_memory_options *o, const gpuplan_model *m) {
  return Py_BuildValue("{s:s,s:s,s:s,s:s,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:s,s:s,s:O}", "precision",
                       gpuplan_precision_name(o->precision), "optimizer", gpuplan_optimizer_name(o->optimizer),
                       "convention", gpuplan_convention_name(o->convention), "recompute",
                       gpuplan_recompute_name(o->recompute), "micro_batch", (long long)o->micro_batch,
                       "seq_len", (long long)(o->seq_len ? o->seq_len : m->seq_len), "tp", (long long)o->tp,
                       "pp", (long long)o->pp, "dp", (long long)o->dp, "cp", (long long)o->cp, "ep",
                       (long long)o->ep, "dp_mode", gpuplan_dp_mode_name(o->dp_mode), "schedule",
                       gpuplan_schedule_name(o->schedule), "flash_attention",
                       o->flash_attention ? Py_True : Py_False);
}

/* Performance, keys as `gpuplan perf --json`. */
static PyObject *perf_dict(const gpuplan_perf *p, double tokens) {
  PyObject *d = PyDict_New(), *bd = PyDict_New(), *by = PyDict_New();
  if (!d || !bd || !by) goto fail;
  if (dset(bd, "compute", num(p->compute_s)) || dset(bd, "bubble", num(p->bubble_s)) ||
      dset(bd, "tp_comm", num(p->tp_comm_s)) || dset(bd, "cp_comm", num(p->cp_comm_s)) ||
      dset(bd, "pp_comm", num(p->pp_comm_s)) || dset(bd, "dp_comm", num(p->dp_comm_s)) ||
      dset(bd, "optimizer", num(p->optimizer_s)) || dset(by, "nvlink", num(p->bytes_nvlink_per_gpu)) ||
      dset(by, "pcie", num(p->bytes_pcie_per_gpu)) || dset(by, "network", num(p->bytes_network_per_gpu)))
    goto fail;
  if (dset(d, "gpus", i64(p->gpus)) || dset(d, "global_batch", i64(p->global_batch)) ||
      dset(d, "step_s", num(p->step_s)) || dset(d, "breakdown_s", Py_NewRef(bd)) ||
      dset(d, "tokens_per_s", num(p->tokens_per_s)) || dset(d, "mfu", num(p->mfu)) ||
      dset(d, "hfu", num(p->hfu)) || dset(d, "model_flops_per_token", num(p->model_flops_per_token)) ||
      dset(d, "bytes_per_step_per_gpu", Py_NewRef(by)) || dset(d, "cost_per_hour", num(p->cost_per_hour)) ||
      dset(d, "cost_per_mtok", num(p->cost_per_mtok)) || dset(d, "train_tokens", num(tokens)) ||
      dset(d, "train_seconds", num(p->train_seconds)) || dset(d, "train_cost", num(p->train_cost)) ||
      dset(d, "peak_flops", num(p->peak_flops)))
    goto fail;
  Py_DECREF(bd);
  Py_DECREF(by);
  return d;
fail:
  Py_XDECREF(d);
  Py_XDECREF(bd);
  Py_XDECREF(by);
  return NULL;
}

/* --- a job: model, hardware, options, from the call's arguments ------------ */

typedef gpuplan_jobspec job;

static int64_t kw_int(PyObject *kw, const char *key, int64_t dflt) {
  PyObject *v = kw ? PyDict_GetItemString(kw, key) : NULL;
  if (!v || v == Py_None) return dflt;
  return PyLong_AsLongLong(v);
}

static double kw_num(PyObject *kw, const char *key, double dflt) {
  PyObject *v = kw ? PyDict_GetItemString(kw, key) : NULL;
  if (!v || v == Py_None) return dflt;
  return PyFloat_AsDouble(v);
}

/* Resolve the model and hardware and parse the options, under the lock
 * (gpuplan_job_resolve: the CLI's rules).  gpu may be NULL when node=
 * names a catalog VM. */
static int job_from(CatalogObject *self, modstate *st, const char *model, const char *gpu, PyObject *kw,
                    const char *const *extra, job *j) {
  PyObject *nodev = kw ? PyDict_GetItemString(kw, "node") : NULL;
  const char *node = NULL;
  int64_t gpus = kw_int(kw, "gpus", 0), nodes = kw_int(kw, "nodes", 1), per_node = kw_int(kw, "per_node", 8);
  int rc;
  if (PyErr_Occurred()) return -1;
  if (nodev && nodev != Py_None && !(node = PyUnicode_AsUTF8(nodev))) return -1;
  if (options_from(self, st, kw, &j->options, extra)) return -1;
  rc = gpuplan_job_resolve(self->ctx, self->cat, model, gpu, node, gpus, nodes, per_node,
                           kw && PyDict_GetItemString(kw, "dp") != NULL, j);
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    return -1;
  }
  return 0;
}

static int cluster_of(CatalogObject *self, modstate *st, const job *j, gpuplan_cluster *cl) {
  int rc = gpuplan_job_cluster(self->ctx, self->cat, j, cl);
  if (rc) raise_code(st, rc, gpuplan_errmsg(self->ctx));
  return rc ? -1 : 0;
}

/* The head of every job result: model, params, gpu, gpus, workload, options. */
static PyObject *job_head(const job *j, double params) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dset(d, "model", str(j->model_name)) || dset(d, "params", num(params)) || dset(d, "gpu", str(j->gpu->id)) ||
      dset(d, "gpus", i64(j->gpus)) ||
      dset(d, "workload", str(j->options.workload == GPUPLAN_TRAIN ? "train" : "infer")) ||
      dset(d, "options", options_dict(&j->options, j->model))) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static const char *const plan_keys[] = {"gpus", "node", "nodes", "per_node", "max_gpus", "per_rank", NULL};

static PyObject *Catalog_plan(CatalogObject *self, PyObject *args, PyObject *kw) {
  modstate *st = state_of_module(self->module);
  const char *model, *gpu = NULL;
  job j;
  gpuplan_memory worst;
  gpuplan_fix fixes[16];
  size_t nfix = 0, k;
  int64_t max_gpus = kw_int(kw, "max_gpus", 0);
  PyObject *prv = kw ? PyDict_GetItemString(kw, "per_rank") : NULL;
  int per_rank = prv ? PyObject_IsTrue(prv) : 0, rc;
  PyObject *d = NULL, *ladder = NULL, *stages = NULL;
  if (PyErr_Occurred() || per_rank < 0 || !PyArg_ParseTuple(args, "s|z:plan", &model, &gpu)) return NULL;
  if (lock_catalog(self, st)) return NULL;
  if (job_from(self, st, model, gpu, kw, plan_keys, &j)) goto done;
  if (!max_gpus) max_gpus = j.gpus > 8 ? j.gpus : 8;
  /* microseconds each: the GIL stays held */
  rc = gpuplan_memory_eval(self->ctx, j.model, j.gpu, &j.options, GPUPLAN_STAGE_WORST, &worst);
  if (!rc && !worst.fits)
    rc = gpuplan_memory_ladder(self->ctx, self->cat, j.model, j.gpu, &j.options, max_gpus, fixes,
                               sizeof fixes / sizeof fixes[0], &nfix);
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    goto done;
  }
  if (!(d = job_head(&j, worst.params_total)) || dset(d, "worst", memory_dict(&worst))) goto fail;
  if (per_rank) {
    int64_t s;
    if (!(stages = PyList_New(0))) goto fail;
    for (s = 0; s < j.options.pp; s++) {
      gpuplan_memory r;
      PyObject *x;
      if ((rc = gpuplan_memory_eval(self->ctx, j.model, j.gpu, &j.options, s, &r))) {
        raise_code(st, rc, gpuplan_errmsg(self->ctx));
        goto fail;
      }
      x = memory_dict(&r);
      if (!x || PyList_Append(stages, x) < 0) {
        Py_XDECREF(x);
        goto fail;
      }
      Py_DECREF(x);
    }
    if (dset(d, "stages", stages)) {
      stages = NULL;
      goto fail;
    }
    stages = NULL;
  }
  if (!(ladder = PyList_New(0))) goto fail;
  for (k = 0; k < nfix; k++) {
    PyObject *x = Py_BuildValue("{s:n,s:s,s:s,s:L,s:K,s:K,s:O}", "step", (Py_ssize_t)(k + 1), "change",
                                fixes[k].what, "gpu", fixes[k].gpu->id, "gpus", (long long)fixes[k].gpus,
                                "total_bytes", (unsigned long long)fixes[k].total, "capacity_bytes",
                                (unsigned long long)fixes[k].capacity, "fits", fixes[k].fits ? Py_True : Py_False);
    if (!x || PyList_Append(ladder, x) < 0) {
      Py_XDECREF(x);
      goto fail;
    }
    Py_DECREF(x);
  }
  if (dset(d, "ladder", ladder)) {
    ladder = NULL;
    goto fail;
  }
  ladder = NULL;
  goto done;
fail:
  Py_CLEAR(d);
  Py_XDECREF(ladder);
  Py_XDECREF(stages);
done:
  unlock_catalog(self);
  return d;
}

static const char *const perf_keys[] = {"gpus", "node", "nodes", "per_node", "global_batch", "tokens", NULL};

static PyObject *Catalog_perf(CatalogObject *self, PyObject *args, PyObject *kw) {
  modstate *st = state_of_module(self->module);
  const char *model, *gpu = NULL;
  job j;
  gpuplan_cluster cl;
  gpuplan_perf p;
  gpuplan_memory worst;
  int64_t G = kw_int(kw, "global_batch", 0);
  double D = kw_num(kw, "tokens", 0);
  PyObject *d = NULL;
  int rc;
  if (PyErr_Occurred() || !PyArg_ParseTuple(args, "s|z:perf", &model, &gpu)) return NULL;
  if (lock_catalog(self, st)) return NULL;
  if (job_from(self, st, model, gpu, kw, perf_keys, &j) || cluster_of(self, st, &j, &cl)) goto done;
  rc = gpuplan_memory_eval(self->ctx, j.model, j.gpu, &j.options, GPUPLAN_STAGE_WORST, &worst);
  if (!rc) rc = gpuplan_perf_eval(self->ctx, j.model, &cl, &j.options, G, D, NULL, &p);
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    goto done;
  }
  d = perf_dict(&p, D);
  if (d && (dset(d, "fits", PyBool_FromLong(worst.fits)) || dset(d, "memory_bytes", u64(worst.total))))
    Py_CLEAR(d);
done:
  unlock_catalog(self);
  return d;
}

static const char *const search_keys[] = {"gpus", "node", "nodes", "per_node", "global_batch", "top",
                                          "objective", NULL};

static PyObject *Catalog_search(CatalogObject *self, PyObject *args, PyObject *kw) {
  modstate *st = state_of_module(self->module);
  const char *model, *gpu = NULL;
  job j;
  gpuplan_cluster cl;
  gpuplan_candidate best[100];
  gpuplan_search_stats stats;
  size_t n = 0, i;
  int64_t G = kw_int(kw, "global_batch", 0), top = kw_int(kw, "top", 5);
  PyObject *obj = kw ? PyDict_GetItemString(kw, "objective") : NULL;
  const char *objective = obj && obj != Py_None ? PyUnicode_AsUTF8(obj) : "time";
  gpuplan_objective ob;
  PyObject *list = NULL, *d = NULL;
  int rc;
  if (PyErr_Occurred() || !objective || !PyArg_ParseTuple(args, "s|z:search", &model, &gpu)) return NULL;
  if (strcmp(objective, "time") == 0) ob = GPUPLAN_OBJ_TIME;
  else if (strcmp(objective, "cost") == 0) ob = GPUPLAN_OBJ_COST;
  else {
    PyErr_Format(st->InvalidError, "objective: '%s' is not time or cost", objective);
    return NULL;
  }
  if (G < 1) {
    PyErr_SetString(st->InvalidError, "global_batch: search needs a global batch of at least 1 sequence");
    return NULL;
  }
  if (top < 1 || top > 100) {
    PyErr_Format(st->InvalidError, "top: %lld is not in 1..100", (long long)top);
    return NULL;
  }
  if (lock_catalog(self, st)) return NULL;
  if (job_from(self, st, model, gpu, kw, search_keys, &j) || cluster_of(self, st, &j, &cl)) {
    unlock_catalog(self);
    return NULL;
  }
  /* milliseconds to seconds: other Python threads run meanwhile */
  Py_BEGIN_ALLOW_THREADS
  rc = gpuplan_search(self->ctx, j.model, &cl, &j.options, G, ob, best, (size_t)top, &n, &stats, NULL, NULL);
  Py_END_ALLOW_THREADS
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    unlock_catalog(self);
    return NULL;
  }
  unlock_catalog(self);
  if (!(d = PyDict_New()) || !(list = PyList_New(0))) goto fail;
  for (i = 0; i < n; i++) {
    const gpuplan_memory_options *q = &best[i].options;
    PyObject *x = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:s,s:s,s:N,s:N,s:N,s:K,s:N,s:s,s:N}", "tp",
                                (long long)q->tp, "pp", (long long)q->pp, "cp", (long long)q->cp, "dp",
                                (long long)q->dp, "vpp", (long long)q->vpp, "micro_batch",
                                (long long)q->micro_batch, "recompute", gpuplan_recompute_name(q->recompute),
                                "dp_mode", gpuplan_dp_mode_name(q->dp_mode), "step_s", num(best[i].perf.step_s),
                                "tokens_per_s", num(best[i].perf.tokens_per_s), "mfu", num(best[i].perf.mfu),
                                "memory_bytes", (unsigned long long)best[i].memory_bytes, "cost_per_mtok",
                                num(best[i].perf.cost_per_mtok), "why", best[i].why, "perf",
                                perf_dict(&best[i].perf, 0));
    if (!x || PyList_Append(list, x) < 0) {
      Py_XDECREF(x);
      goto fail;
    }
    Py_DECREF(x);
  }
  if (dset(d, "evaluated", u64(stats.evaluated)) || dset(d, "too_big", u64(stats.too_big)) ||
      dset(d, "invalid", u64(stats.invalid)) || dset(d, "best", Py_NewRef(list)))
    goto fail;
  Py_DECREF(list);
  return d;
fail:
  Py_XDECREF(list);
  Py_XDECREF(d);
  return NULL;
}

static const char *const sim_keys[] = {"gpus", "node", "nodes", "per_node", "steps", "alloc_conf",
                                       "keep_grads", "snapshot", "other_procs", NULL};

static PyObject *Catalog_simulate(CatalogObject *self, PyObject *args, PyObject *kw) {
  modstate *st = state_of_module(self->module);
  const char *model, *gpu = NULL;
  job j;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result r;
  int64_t other;
  PyObject *conf = kw ? PyDict_GetItemString(kw, "alloc_conf") : NULL;
  PyObject *keep = kw ? PyDict_GetItemString(kw, "keep_grads") : NULL;
  PyObject *snap = kw ? PyDict_GetItemString(kw, "snapshot") : NULL, *snapb = NULL;
  char confbuf[512] = "";
  PyObject *d = NULL;
  int rc;
  if (!PyArg_ParseTuple(args, "s|z:simulate", &model, &gpu)) return NULL;
  so.steps = kw_int(kw, "steps", 2);
  other = kw_int(kw, "other_procs", 0);
  if (PyErr_Occurred()) return NULL;
  if (other < 0) {
    PyErr_Format(st->InvalidError, "other_procs: %lld bytes is negative", (long long)other);
    return NULL;
  }
  if (so.steps < 1 || so.steps > 1000) {
    PyErr_Format(st->InvalidError, "steps: %lld is not in 1..1000", (long long)so.steps);
    return NULL;
  }
  if (keep) {
    int v = PyObject_IsTrue(keep);
    if (v < 0) return NULL;
    so.set_to_none = !v;
  }
  if (conf && conf != Py_None) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(conf, &len);
    if (!s) return NULL;
    if ((size_t)len >= sizeof confbuf) {
      PyErr_SetString(st->InvalidError, "alloc_conf: longer than 511 bytes");
      return NULL;
    }
    memcpy(confbuf, s, (size_t)len + 1); /* copied: the GIL is released below */
    so.alloc_conf = confbuf;
  }
  if (snap && snap != Py_None) {
    if (!PyUnicode_FSConverter(snap, &snapb)) return NULL;
    so.snapshot_path = PyBytes_AS_STRING(snapb);
  }
  if (lock_catalog(self, st)) {
    Py_XDECREF(snapb);
    return NULL;
  }
  if (job_from(self, st, model, gpu, kw, sim_keys, &j)) goto done;
  Py_BEGIN_ALLOW_THREADS
  rc = gpuplan_mock_simulate(self->ctx, j.model, j.gpu, &j.options, &so, (uint64_t)other, &r);
  Py_END_ALLOW_THREADS
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    goto done;
  }
  d = Py_BuildValue("{s:L,s:N,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:K,s:N,s:L,s:L,s:O}", "steps",
                    (long long)r.steps_done, "alloc_conf", str(so.alloc_conf), "set_to_none",
                    so.set_to_none ? Py_True : Py_False, "ops", (unsigned long long)r.ops, "capacity_bytes",
                    (unsigned long long)r.capacity, "peak_allocated_bytes", (unsigned long long)r.peak_allocated,
                    "peak_reserved_bytes", (unsigned long long)r.peak_reserved,
                    "allocated_at_peak_reserved_bytes", (unsigned long long)r.allocated_at_peak_reserved,
                    "largest_free_at_peak_bytes", (unsigned long long)r.largest_free_at_peak,
                    "total_free_at_peak_bytes", (unsigned long long)r.total_free_at_peak, "fragmentation",
                    num(r.fragmentation), "analytic_bytes", (unsigned long long)r.analytic_bytes, "vs_analytic",
                    num(r.vs_analytic), "num_alloc_retries", (long long)r.num_alloc_retries, "num_ooms",
                    (long long)r.num_ooms, "oom", r.oom ? Py_True : Py_False);
  if (d && r.oom &&
      (dset(d, "oom_step", i64(r.oom_step)) || dset(d, "oom_op", str(r.oom_op)) ||
       dset(d, "oom_message", str(r.oom_message))))
    Py_CLEAR(d);
done:
  unlock_catalog(self);
  Py_XDECREF(snapb);
  return d;
}

/* --- devices: the nvidia-smi view of real (CUDA + NVML) or mock GPUs ------- */

static PyObject *device_dict(gpuplan_backend *b, gpuplan_mock *sim, gpuplan_catalog *cat, int i) {
  gpuplan_device_info info;
  gpuplan_device_telemetry t;
  uint64_t used, others = 0;
  int tel;
  PyObject *d;
  char cc[16];
  if (gpuplan_backend_device_info(b, i, cat, &info)) return NULL;
  tel = gpuplan_backend_telemetry(b, i, &t) == GPUPLAN_OK;
  used = info.total_bytes - info.free_bytes;
  if (sim) {
    gpuplan_mock_memory mem;
    gpuplan_mock_memory_info(sim, i, &mem);
    used = mem.used;
    others = mem.others;
  }
  snprintf(cc, sizeof cc, "%d.%d", info.cc_major, info.cc_minor);
  if (!(d = PyDict_New())) return NULL;
#define NUMF(k, v) dset(d, k, tel ? num(v) : Py_NewRef(Py_None))
#define INTF(k, v) dset(d, k, tel && (v) >= 0 ? i64(v) : Py_NewRef(Py_None))
  if (dset(d, "index", i64(i)) || dset(d, "name", str(info.name)) || dset(d, "uuid", str(info.uuid)) ||
      dset(d, "pci_bus_id", str(info.pci_bus_id)) || dset(d, "sku", str(info.sku ? info.sku->id : NULL)) ||
      dset(d, "compute_capability", str(cc)) || dset(d, "sm_count", i64(info.sm_count)) ||
      dset(d, "memory_total_bytes", u64(info.total_bytes)) || dset(d, "memory_used_bytes", u64(used)) ||
      dset(d, "memory_free_bytes", u64(info.free_bytes)) || dset(d, "other_processes_bytes", u64(others)) ||
      NUMF("temperature_c", t.temperature_c) || NUMF("power_w", t.power_w) ||
      NUMF("power_limit_w", t.power_limit_w) || INTF("sm_clock_mhz", t.sm_clock_mhz) ||
      INTF("max_sm_clock_mhz", t.max_sm_clock_mhz) || INTF("pstate", t.pstate) || NUMF("gpu_util", t.gpu_util) ||
      NUMF("mem_util", t.mem_util) || INTF("throttle_reasons", t.throttle) ||
      INTF("ecc_uncorrected", t.ecc_uncorrected) || INTF("ecc_corrected", t.ecc_corrected) ||
      INTF("nvlink_links", t.nvlink_links) || INTF("nvlink_up", t.nvlink_up) ||
      dset(d, "driver_version", str(tel && t.driver_version[0] ? t.driver_version : NULL))) {
    Py_DECREF(d);
    return NULL;
  }
#undef NUMF
#undef INTF
  return d;
}

static PyObject *Catalog_devices(CatalogObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"sim", "faults", "load", "busy", "mem", NULL};
  modstate *st = state_of_module(self->module);
  const char *simspec = NULL;
  PyObject *faults = NULL, *list = NULL, *seq = NULL;
  double load = 600, busy = 0.95, memfrac = 0.87;
  gpuplan_mock *sim = NULL;
  gpuplan_backend *b = NULL;
  int rc, n = 0, i;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zOddd:devices", kwlist, &simspec, &faults, &load, &busy, &memfrac))
    return NULL;
  if (!(load >= 0 && load <= 1e6) || !(busy >= 0 && busy <= 1) || !(memfrac >= 0 && memfrac <= 1)) {
    PyErr_SetString(st->InvalidError, "load, busy, mem: load in 0..1e6 seconds, busy and mem fractions in 0..1");
    return NULL;
  }
  if (faults && faults != Py_None && !(seq = PySequence_Fast(faults, "faults: expected a list of fault names")))
    return NULL;
  if (seq && !simspec) {
    Py_DECREF(seq);
    PyErr_SetString(st->InvalidError, "faults: only simulated GPUs (sim=...) take faults");
    return NULL;
  }
  if (lock_catalog(self, st)) {
    Py_XDECREF(seq);
    return NULL;
  }
  if (!simspec) {
    Py_BEGIN_ALLOW_THREADS
    rc = gpuplan_backend_open_cuda(self->ctx, NULL, &b); /* cuInit can take a while */
    Py_END_ALLOW_THREADS
    if (rc) {
      raise_code(st, rc, gpuplan_errmsg(self->ctx));
      goto done;
    }
  } else {
    const char *names[16];
    Py_ssize_t nf = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
    if (nf > 16) {
      PyErr_SetString(st->InvalidError, "faults: at most 16");
      goto done;
    }
    for (i = 0; i < nf; i++)
      if (!(names[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) goto done;
    if ((rc = gpuplan_mock_node(self->ctx, self->cat, simspec, names, (size_t)nf, load, busy, memfrac, &sim))) {
      raise_code(st, rc, gpuplan_errmsg(self->ctx));
      goto done;
    }
    if ((rc = gpuplan_mock_backend(sim, &b))) {
      raise_code(st, rc, gpuplan_errmsg(self->ctx));
      goto done;
    }
  }
  if ((rc = gpuplan_backend_device_count(b, &n))) {
    raise_code(st, rc, gpuplan_errmsg(self->ctx));
    goto done;
  }
  if (!(list = PyList_New(0))) goto done;
  for (i = 0; i < n; i++) {
    PyObject *d = device_dict(b, sim, self->cat, i);
    if (!d) {
      if (!PyErr_Occurred()) raise_code(st, gpuplan_errcode(self->ctx), gpuplan_errmsg(self->ctx));
      Py_CLEAR(list);
      break;
    }
    if (PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_DECREF(d);
    if (!list) break;
  }
done:
  gpuplan_backend_free(b);
  gpuplan_mock_free(sim);
  unlock_catalog(self);
  Py_XDECREF(seq);
  return list;
}

static PyMethodDef Catalog_methods[] = {
  {"records", (PyCFunction)Catalog_records, METH_O, "records(kind) -> list of dicts (gpus, nodes, models, fabrics)"},
  {"find", (PyCFunction)Catalog_find, METH_VARARGS, "find(kind, name) -> dict (id, name or alias)"},
  {"plan", (PyCFunction)(void (*)(void))Catalog_plan, METH_VARARGS | METH_KEYWORDS, "plan(model, gpu, **options) -> dict"},
  {"perf", (PyCFunction)(void (*)(void))Catalog_perf, METH_VARARGS | METH_KEYWORDS, "perf(model, gpu=None, **options) -> dict"},
  {"search", (PyCFunction)(void (*)(void))Catalog_search, METH_VARARGS | METH_KEYWORDS, "search(model, gpu=None, **options) -> list"},
  {"simulate", (PyCFunction)(void (*)(void))Catalog_simulate, METH_VARARGS | METH_KEYWORDS, "simulate(model, gpu, **options) -> dict"},
  {"devices", (PyCFunction)(void (*)(void))Catalog_devices, METH_VARARGS | METH_KEYWORDS,
   "devices(sim=None, faults=(), load=600, busy=0.95, mem=0.87) -> list of dicts"},
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
  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE, Catalog_slots
};

/* --- module functions ------------------------------------------------------- */

/* Memory over the replay, one point per allocator trace entry: bytes
 * requested by live tensors and bytes reserved from the driver.  Collected
 * without the GIL (PyMem_Raw*), turned into lists after. */
typedef struct timeline {
  int64_t allocated, reserved;
  size_t n, cap;
  int64_t *a, *r;
  int failed;
} timeline;

static void timeline_add(void *payload, const gpuplan_alloc_event *ev) {
  timeline *t = (timeline *)payload;
  switch (ev->action) {
  case GPUPLAN_ACT_ALLOC: t->allocated += (int64_t)ev->size; break;
  case GPUPLAN_ACT_FREE_COMPLETED: t->allocated -= (int64_t)ev->size; break;
  case GPUPLAN_ACT_SEGMENT_ALLOC:
  case GPUPLAN_ACT_SEGMENT_MAP: t->reserved += (int64_t)ev->size; break;
  case GPUPLAN_ACT_SEGMENT_FREE:
  case GPUPLAN_ACT_SEGMENT_UNMAP: t->reserved -= (int64_t)ev->size; break;
  default: return;
  }
  if (t->failed) return;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    int64_t *a = (int64_t *)PyMem_RawRealloc(t->a, cap * sizeof *a);
    int64_t *r = a ? (int64_t *)PyMem_RawRealloc(t->r, cap * sizeof *r) : NULL;
    if (a) t->a = a;
    if (!a || !r) {
      t->failed = 1;
      return;
    }
    t->r = r;
    t->cap = cap;
  }
  t->a[t->n] = t->allocated;
  t->r[t->n] = t->reserved;
  t->n++;
}

static PyObject *int_list(const int64_t *v, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  size_t i;
  for (i = 0; l && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, x);
  }
  return l;
}

static PyObject *mod_replay(PyObject *module, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "alloc_conf", "capacity", "device", "timeline", NULL};
  timeline tl;
  int want_timeline = 0;
  modstate *st = state_of_module(module);
  const char *conf = NULL;
  long long capacity = 0;
  int device = 0, rc;
  PyObject *pathb = NULL;
  gpuplan_ctx *ctx = NULL;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  PyObject *res = NULL;
  memset(&tl, 0, sizeof tl);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|zLip:replay", kwlist, PyUnicode_FSConverter, &pathb, &conf,
                                   &capacity, &device, &want_timeline))
    return NULL;
  if (capacity < 0 || device < 0) {
    Py_DECREF(pathb);
    PyErr_Format(st->InvalidError, "%s: %lld is negative", capacity < 0 ? "capacity" : "device",
                 capacity < 0 ? capacity : (long long)device);
    return NULL;
  }
  if (gpuplan_ctx_new(&ctx, NULL)) {
    Py_DECREF(pathb);
    return PyErr_NoMemory();
  }
  o.alloc_conf = conf;
  o.capacity = (uint64_t)capacity;
  /* loading megabytes of pickle and replaying millions of events: no GIL */
  Py_BEGIN_ALLOW_THREADS
  rc = gpuplan_snapshot_load(ctx, PyBytes_AS_STRING(pathb), device, &s);
  if (!rc && want_timeline) {
    o.trace = timeline_add;
    o.trace_payload = &tl;
  }
  if (!rc) rc = gpuplan_snapshot_replay(ctx, s, &o, &r);
  Py_END_ALLOW_THREADS
  if (rc) {
    raise_code(st, rc, gpuplan_errmsg(ctx));
    goto done;
  }
  /* keys as `gpuplan replay --json` */
  if (!(res = PyDict_New())) goto done;
  if (dset(res, "file", PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(pathb))) ||
      dset(res, "mode", str(o.alloc_conf || o.capacity ? "what-if" : "exact")) ||
      dset(res, "alloc_conf", str(o.alloc_conf)) || dset(res, "capacity_bytes", u64(o.capacity)) ||
      dset(res, "events", u64(r.events)) || dset(res, "trace_events", u64(gpuplan_snapshot_event_count(s))) ||
      dset(res, "segments_in_file", u64(gpuplan_snapshot_segment_count(s))) ||
      dset(res, "rebuilt_start", PyBool_FromLong(r.rebuilt_start)) ||
      dset(res, "exact", PyBool_FromLong(r.exact)) || dset(res, "allocs", u64(r.allocs)) ||
      dset(res, "segment_allocs", u64(r.segment_allocs)) ||
      dset(res, "diverged_at", r.diverged_at == SIZE_MAX ? Py_NewRef(Py_None) : u64(r.diverged_at)) ||
      dset(res, "divergence", str(r.diverged_at == SIZE_MAX ? NULL : r.divergence)) ||
      dset(res, "start_allocated_bytes", u64(r.start_allocated)) ||
      dset(res, "start_reserved_bytes", u64(r.start_reserved)) ||
      dset(res, "peak_allocated_bytes", u64(r.peak_allocated)) ||
      dset(res, "peak_reserved_bytes", u64(r.peak_reserved)) ||
      dset(res, "final_allocated_bytes", u64(r.final_allocated)) ||
      dset(res, "final_reserved_bytes", u64(r.final_reserved)) ||
      dset(res, "allocated_at_peak_reserved_bytes", u64(r.allocated_at_peak_reserved)) ||
      dset(res, "largest_free_at_peak_bytes", u64(r.largest_free_at_peak)) ||
      dset(res, "total_free_at_peak_bytes", u64(r.total_free_at_peak)) ||
      dset(res, "fragmentation", num(r.fragmentation)) ||
      dset(res, "num_alloc_retries", i64(r.num_alloc_retries)) || dset(res, "num_ooms", i64(r.num_ooms)) ||
      dset(res, "oom_event", r.oom_event == SIZE_MAX ? Py_NewRef(Py_None) : u64(r.oom_event)) ||
      dset(res, "oom_message", str(r.oom_event == SIZE_MAX ? NULL : r.oom_message)))
    Py_CLEAR(res);
  if (res && want_timeline) {
    /* start from the state the replay began with (rebuilt for ring buffers) */
    size_t i;
    PyObject *t;
    if (tl.failed) {
      Py_CLEAR(res);
      PyErr_NoMemory();
      goto done;
    }
    for (i = 0; i < tl.n; i++) {
      tl.a[i] += (int64_t)r.start_allocated;
      tl.r[i] += (int64_t)r.start_reserved;
    }
    t = PyDict_New();
    if (!t || dset(t, "allocated_bytes", int_list(tl.a, tl.n)) || dset(t, "reserved_bytes", int_list(tl.r, tl.n)) ||
        dset(res, "timeline", t))
      Py_CLEAR(res);
  }
done:
  PyMem_RawFree(tl.a);
  PyMem_RawFree(tl.r);
  gpuplan_snapshot_free(s);
  gpuplan_ctx_free(ctx);
  Py_DECREF(pathb);
  return res;
}

static PyObject *mod_explain_oom(PyObject *module, PyObject *arg) {
  modstate *st = state_of_module(module);
  const char *text = PyUnicode_AsUTF8(arg);
  static const char *const verdicts[] = {"fragmentation", "mixed", "demand", "other-process", "fraction"};
  gpuplan_ctx *ctx = NULL;
  gpuplan_oom_info o;
  gpuplan_oom_verdict v;
  char *expl = NULL;
  PyObject *res = NULL;
  int rc;
  if (!text) return NULL;
  if (gpuplan_ctx_new(&ctx, NULL)) return PyErr_NoMemory();
  rc = gpuplan_oom_parse(ctx, text, &o);
  if (!rc) rc = gpuplan_oom_explain(ctx, &o, &v, &expl);
  if (rc) raise_code(st, rc, gpuplan_errmsg(ctx));
  else /* keys as `gpuplan explain-oom --json` */
    res = Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:s}", "verdict", verdicts[v], "tried_bytes",
                        (unsigned long long)o.tried, "total_bytes", (unsigned long long)o.total,
                        "free_bytes", (unsigned long long)o.free, "allocated_bytes",
                        (unsigned long long)o.allocated, "reserved_unallocated_bytes",
                        (unsigned long long)o.unallocated, "process_bytes", (unsigned long long)o.process,
                        "other_processes_bytes", (unsigned long long)o.others, "allowed_bytes",
                        (unsigned long long)o.allowed, "explanation", expl);
  gpuplan_free(ctx, expl);
  gpuplan_ctx_free(ctx);
  return res;
}

static PyMethodDef module_methods[] = {
  {"replay", (PyCFunction)(void (*)(void))mod_replay, METH_VARARGS | METH_KEYWORDS,
   "replay(path, alloc_conf=None, capacity=0, device=0) -> dict"},
  {"explain_oom", (PyCFunction)mod_explain_oom, METH_O, "explain_oom(text) -> dict"},
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
