/*
 * lgpuplan.c: require "gpuplan" for Lua 5.4, 5.3, 5.2, 5.1 and LuaJIT.
 *
 * House style (style.md 9.9): written against the 5.4 API, with compat.h
 * for 5.1/LuaJIT; handles are full userdata holding pointers (closing sets
 * them to NULL) with one registry metatable per type and __gc, __close and
 * __tostring; misuse raises, run-time failures return nil, message, code
 * where code is gpuplan_errname().  No C globals: every call works on the
 * catalog object it is given.  Results are plain tables with the keys of
 * the CLI's --json documents (JSON null is an absent key).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compat.h"
#include "gpuplan.h"
#include "gpuplan/mock.h"

#define CATALOG_MT "gpuplan.Catalog"

typedef struct lcatalog {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
} lcatalog;

/* --- results --------------------------------------------------------------- */

/* nil, message, code: the run-time failure convention. */
static int fail(lua_State *L, int rc, const char *msg) {
  lua_pushnil(L);
  lua_pushstring(L, msg && *msg ? msg : gpuplan_errstr(rc));
  lua_pushstring(L, gpuplan_errname(rc));
  return 3;
}

static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_u64(lua_State *L, const char *k, uint64_t v) {
  if (v <= (uint64_t)INT64_MAX) lua_pushinteger(L, (lua_Integer)v);
  else lua_pushnumber(L, (lua_Number)v);
  lua_setfield(L, -2, k);
}

/* A real number; integral values as integers (5.3+), absent when not finite. */
static void set_num(lua_State *L, const char *k, double v) {
  if (!isfinite(v)) return;
  if (v == floor(v) && fabs(v) < 9.007199254740992e15) lua_pushinteger(L, (lua_Integer)v);
  else lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

static void push_record(lua_State *L, gpuplan_kind kind, const void *rec) {
  size_t n, i;
  const gpuplan_field *fd = gpuplan_kind_fields(kind, &n);
  lua_createtable(L, 0, (int)n);
  for (i = 0; i < n; i++) {
    const char *p = (const char *)rec + fd[i].offset;
    switch (fd[i].type) {
    case GPUPLAN_FIELD_STRING: set_str(L, fd[i].name, *(const char *const *)p); break;
    case GPUPLAN_FIELD_INT: set_int(L, fd[i].name, *(const int64_t *)p); break;
    case GPUPLAN_FIELD_UINT: set_u64(L, fd[i].name, *(const uint64_t *)p); break;
    case GPUPLAN_FIELD_REAL: set_num(L, fd[i].name, *(const double *)p); break;
    case GPUPLAN_FIELD_BOOL: set_bool(L, fd[i].name, *(const int *)p); break;
    }
  }
}

static void push_memory(lua_State *L, const gpuplan_memory *r) {
  int i, n = 0;
  lua_createtable(L, 0, 12);
  set_int(L, "stage", r->stage);
  set_int(L, "layers", r->layers);
  set_num(L, "microbatches_in_flight", r->microbatches_in_flight);
  set_num(L, "params_rank", r->params_rank);
  lua_newtable(L);
  for (i = 0; i < GPUPLAN_MEM_COUNT; i++) {
    if (!r->item[i].bytes) continue;
    lua_createtable(L, 0, 3);
    set_str(L, "name", r->item[i].name);
    set_u64(L, "bytes", r->item[i].bytes);
    set_str(L, "formula", r->item[i].formula);
    lua_rawseti(L, -2, ++n);
  }
  lua_setfield(L, -2, "components");
  set_u64(L, "total_bytes", r->total);
  set_u64(L, "capacity_bytes", r->capacity);
  set_bool(L, "fits", r->fits);
  set_int(L, "headroom_bytes", r->headroom);
  set_u64(L, "host_bytes", r->host_bytes);
  if (r->kv_bytes_per_token) {
    set_u64(L, "kv_bytes_per_token", r->kv_bytes_per_token);
    set_u64(L, "kv_waste_bytes", r->kv_waste_bytes);
    set_int(L, "max_sequences", r->max_sequences);
  }
}

static void push_perf(lua_State *L, const gpuplan_perf *p, double tokens) {
  lua_createtable(L, 0, 18);
  set_int(L, "gpus", p->gpus);
  set_int(L, "global_batch", p->global_batch);
  set_num(L, "step_s", p->step_s);
  lua_createtable(L, 0, 7);
  set_num(L, "compute", p->compute_s);
  set_num(L, "bubble", p->bubble_s);
  set_num(L, "tp_comm", p->tp_comm_s);
  set_num(L, "cp_comm", p->cp_comm_s);
  set_num(L, "pp_comm", p->pp_comm_s);
  set_num(L, "dp_comm", p->dp_comm_s);
  set_num(L, "optimizer", p->optimizer_s);
  lua_setfield(L, -2, "breakdown_s");
  set_num(L, "tokens_per_s", p->tokens_per_s);
  set_num(L, "mfu", p->mfu);
  set_num(L, "hfu", p->hfu);
  set_num(L, "model_flops_per_token", p->model_flops_per_token);
  lua_createtable(L, 0, 3);
  set_num(L, "nvlink", p->bytes_nvlink_per_gpu);
  set_num(L, "pcie", p->bytes_pcie_per_gpu);
  set_num(L, "network", p->bytes_network_per_gpu);
  lua_setfield(L, -2, "bytes_per_step_per_gpu");
  set_num(L, "cost_per_hour", p->cost_per_hour);
  set_num(L, "cost_per_mtok", p->cost_per_mtok);
  set_num(L, "train_tokens", tokens);
  set_num(L, "train_seconds", p->train_seconds);
  set_num(L, "train_cost", p->train_cost);
  set_num(L, "peak_flops", p->peak_flops);
}

/* --- the catalog handle ------------------------------------------------------ */

static lcatalog *check_catalog(lua_State *L) {
  lcatalog *c = (lcatalog *)luaL_checkudata(L, 1, CATALOG_MT);
  if (!c->cat) luaL_argerror(L, 1, "the catalog is closed");
  return c;
}

/* __gc, __close and close(): idempotent. */
static int catalog_close(lua_State *L) {
  lcatalog *c = (lcatalog *)luaL_checkudata(L, 1, CATALOG_MT);
  gpuplan_catalog_free(c->cat);
  gpuplan_ctx_free(c->ctx);
  c->cat = NULL;
  c->ctx = NULL;
  return 0;
}

static int catalog_tostring(lua_State *L) {
  lcatalog *c = (lcatalog *)luaL_checkudata(L, 1, CATALOG_MT);
  if (!c->cat)
    lua_pushstring(L, "gpuplan.Catalog (closed)");
  else
    lua_pushfstring(L, "gpuplan.Catalog (%d GPUs, %d nodes, %d models, %d fabrics)",
                    (int)gpuplan_catalog_count(c->cat, GPUPLAN_KIND_GPU),
                    (int)gpuplan_catalog_count(c->cat, GPUPLAN_KIND_NODE),
                    (int)gpuplan_catalog_count(c->cat, GPUPLAN_KIND_MODEL),
                    (int)gpuplan_catalog_count(c->cat, GPUPLAN_KIND_FABRIC));
  return 1;
}

/* gpuplan.open([path [, layer]]): the built-in catalog, a catalog file, or a
 * user file layered over the built-in one. */
static int l_open(lua_State *L) {
  const char *path = luaL_optstring(L, 1, NULL);
  const char *layer = luaL_optstring(L, 2, NULL);
  lcatalog *c;
  int rc;
  char msg[512];
  if (path && layer) return luaL_argerror(L, 2, "give a path or a layer, not both");
  c = (lcatalog *)lua_newuserdatauv(L, sizeof *c, 0);
  c->ctx = NULL;
  c->cat = NULL;
  luaL_setmetatable(L, CATALOG_MT);
  if ((rc = gpuplan_ctx_new(&c->ctx, NULL))) return fail(L, rc, "cannot create a context");
  if (path) rc = gpuplan_catalog_open(c->ctx, path, 0, &c->cat);
  else if (layer) rc = gpuplan_catalog_open(c->ctx, layer, GPUPLAN_CATALOG_LAYER, &c->cat);
  else rc = gpuplan_catalog_open_default(c->ctx, &c->cat);
  if (rc) {
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
    gpuplan_ctx_free(c->ctx); /* the userdata is collected later; __gc sees NULLs */
    c->ctx = NULL;
    return fail(L, rc, msg);
  }
  return 1;
}

static int kind_of(lua_State *L, int arg) {
  static const char *const names[] = {"gpu", "fabric", "node", "model", NULL};
  static const char *const plural[] = {"gpus", "fabrics", "nodes", "models", NULL};
  const char *s = luaL_checkstring(L, arg);
  int k;
  for (k = 0; names[k]; k++)
    if (strcmp(s, names[k]) == 0 || strcmp(s, plural[k]) == 0) return k;
  return luaL_argerror(L, arg, lua_pushfstring(L, "'%s' is not gpu, node, model or fabric", s));
}

/* cat:find(kind, name) -> record | nil, msg, code */
static int catalog_find(lua_State *L) {
  lcatalog *c = check_catalog(L);
  int kind = kind_of(L, 2);
  const char *name = luaL_checkstring(L, 3);
  const void *rec;
  int rc = gpuplan_catalog_find(c->cat, (gpuplan_kind)kind, name, &rec);
  if (rc) return fail(L, rc, gpuplan_errmsg(c->ctx));
  push_record(L, (gpuplan_kind)kind, rec);
  return 1;
}

/* cat:list(kind) -> array of records */
static int catalog_list(lua_State *L) {
  lcatalog *c = check_catalog(L);
  int kind = kind_of(L, 2);
  size_t n = gpuplan_catalog_count(c->cat, (gpuplan_kind)kind), i;
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    push_record(L, (gpuplan_kind)kind, gpuplan_catalog_at(c->cat, (gpuplan_kind)kind, i));
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

/* --- a job: model, hardware and options from (model, gpu, opts) ------------- */

/* A job, and the message of its failure (copied before anything can raise). */
typedef struct job {
  gpuplan_jobspec j;
  char msg[512];
} job;

/* Keys of the options table that are not memory options. */
static const char *const job_keys[] = {"gpus", "node", "nodes", "per_node", "max_gpus", "per_rank",
                                       "global_batch", "tokens", "top", "objective", "steps",
                                       "alloc_conf", "keep_grads", "other_procs", NULL};

static int is_job_key(const char *k) {
  int i;
  for (i = 0; job_keys[i]; i++)
    if (strcmp(k, job_keys[i]) == 0) return 1;
  return 0;
}

static int64_t opt_int(lua_State *L, int opts, const char *k, int64_t dflt) {
  int64_t v = dflt;
  if (lua_isnoneornil(L, opts)) return dflt;
  lua_getfield(L, opts, k);
  if (!lua_isnil(L, -1)) {
    lua_Number x;
    if (!lua_isnumber(L, -1)) luaL_error(L, "option '%s' must be a number", k);
    x = lua_tonumber(L, -1);
    if (x != floor(x) || !(fabs(x) < 9.2e18)) luaL_error(L, "option '%s' must be an integer", k);
    v = lua_isinteger(L, -1) ? (int64_t)lua_tointeger(L, -1) : (int64_t)x;
  }
  lua_pop(L, 1);
  return v;
}

static double opt_num(lua_State *L, int opts, const char *k, double dflt) {
  double v = dflt;
  if (lua_isnoneornil(L, opts)) return dflt;
  lua_getfield(L, opts, k);
  if (!lua_isnil(L, -1)) {
    if (!lua_isnumber(L, -1)) luaL_error(L, "option '%s' must be a number", k);
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* A string option, copied into buf (the table may change later). */
static const char *opt_str(lua_State *L, int opts, const char *k, char *buf, size_t cap) {
  const char *v = NULL;
  if (lua_isnoneornil(L, opts)) return NULL;
  lua_getfield(L, opts, k);
  if (!lua_isnil(L, -1)) {
    size_t len;
    const char *s;
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "option '%s' must be a string", k);
    s = lua_tolstring(L, -1, &len);
    if (len >= cap) luaL_error(L, "option '%s' is longer than %d bytes", k, (int)cap - 1);
    memcpy(buf, s, len + 1);
    v = buf;
  }
  lua_pop(L, 1);
  return v;
}

static int opt_bool(lua_State *L, int opts, const char *k) {
  int v = 0;
  if (lua_isnoneornil(L, opts)) return 0;
  lua_getfield(L, opts, k);
  v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Memory options from the opts table.  Unknown keys and wrong Lua types
 * raise (misuse); bad values return GPUPLAN_EINVAL with j->msg. */
static int options_from(lua_State *L, lcatalog *c, int opts, job *j) {
  gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
  j->j.options = d;
  if (lua_isnoneornil(L, opts)) return 0;
  luaL_checktype(L, opts, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    const char *k;
    int rc = GPUPLAN_OK, kind;
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "option names must be strings");
    k = lua_tostring(L, -2);
    if (is_job_key(k)) {
      lua_pop(L, 1);
      continue;
    }
    kind = gpuplan_option_kind(k);
    switch (kind) {
    case GPUPLAN_OPTION_INT:
    case GPUPLAN_OPTION_REAL:
      if (lua_type(L, -1) != LUA_TNUMBER) luaL_error(L, "option '%s' must be a number", k);
      if (lua_isinteger(L, -1)) rc = gpuplan_option_set_int(c->ctx, &j->j.options, k, (int64_t)lua_tointeger(L, -1));
      else rc = gpuplan_option_set_real(c->ctx, &j->j.options, k, (double)lua_tonumber(L, -1));
      break;
    case GPUPLAN_OPTION_BOOL:
      if (lua_type(L, -1) != LUA_TBOOLEAN) luaL_error(L, "option '%s' must be a boolean", k);
      rc = gpuplan_option_set_int(c->ctx, &j->j.options, k, lua_toboolean(L, -1));
      break;
    case GPUPLAN_OPTION_ENUM:
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "option '%s' must be a string", k);
      rc = gpuplan_option_set_string(c->ctx, &j->j.options, k, lua_tostring(L, -1));
      break;
    default:
      luaL_error(L, "unknown option '%s'", k);
    }
    lua_pop(L, 1);
    if (rc) {
      lua_pop(L, 1); /* the key: iteration stops */
      snprintf(j->msg, sizeof j->msg, "%s", gpuplan_errmsg(c->ctx));
      return rc;
    }
  }
  return 0;
}

/* The CLI's rules (gpuplan_job_resolve): model by name or size, gpu or
 * opts.node, gpus = dp*tp*pp*cp with dp inferred unless given. */
static int job_from(lua_State *L, lcatalog *c, job *j) {
  const char *model = luaL_checkstring(L, 2);
  const char *gpu = luaL_optstring(L, 3, NULL);
  const int opts = 4;
  char node_name[256];
  const char *node;
  int dp_given = 0, rc;
  int64_t gpus, nodes, per_node;
  memset(j, 0, sizeof *j);
  if (!lua_isnoneornil(L, opts)) luaL_checktype(L, opts, LUA_TTABLE);
  gpus = opt_int(L, opts, "gpus", 0);
  nodes = opt_int(L, opts, "nodes", 1);
  per_node = opt_int(L, opts, "per_node", 8);
  node = opt_str(L, opts, "node", node_name, sizeof node_name);
  if (!node && !gpu) return luaL_argerror(L, 3, "a GPU SKU (or opts.node) is needed");
  if (node && gpu) return luaL_argerror(L, 3, "give a GPU or opts.node, not both");
  if (!lua_isnoneornil(L, opts)) {
    lua_getfield(L, opts, "dp");
    dp_given = !lua_isnil(L, -1);
    lua_pop(L, 1);
  }
  if ((rc = options_from(L, c, opts, j))) return rc;
  rc = gpuplan_job_resolve(c->ctx, c->cat, model, gpu, node, gpus, nodes, per_node, dp_given, &j->j);
  if (rc) snprintf(j->msg, sizeof j->msg, "%s", gpuplan_errmsg(c->ctx));
  return rc;
}

static int cluster_of(lcatalog *c, job *j, gpuplan_cluster *cl) {
  int rc = gpuplan_job_cluster(c->ctx, c->cat, &j->j, cl);
  if (rc) snprintf(j->msg, sizeof j->msg, "%s", gpuplan_errmsg(c->ctx));
  return rc;
}

static void push_head(lua_State *L, const job *jb, double params) {
  const gpuplan_jobspec *j = &jb->j;
  const gpuplan_memory_options *o = &j->options;
  lua_createtable(L, 0, 10);
  set_str(L, "model", j->model_name);
  set_num(L, "params", params);
  set_str(L, "gpu", j->gpu->id);
  set_int(L, "gpus", j->gpus);
  set_str(L, "workload", o->workload == GPUPLAN_TRAIN ? "train" : "infer");
  lua_createtable(L, 0, 14);
  set_str(L, "precision", gpuplan_precision_name(o->precision));
  set_str(L, "optimizer", gpuplan_optimizer_name(o->optimizer));
  set_str(L, "convention", gpuplan_convention_name(o->convention));
  set_str(L, "recompute", gpuplan_recompute_name(o->recompute));
  set_int(L, "micro_batch", o->micro_batch);
  set_int(L, "seq_len", o->seq_len ? o->seq_len : j->model->seq_len);
  set_int(L, "tp", o->tp);
  set_int(L, "pp", o->pp);
  set_int(L, "dp", o->dp);
  set_int(L, "cp", o->cp);
  set_int(L, "ep", o->ep);
  set_str(L, "dp_mode", gpuplan_dp_mode_name(o->dp_mode));
  set_str(L, "schedule", gpuplan_schedule_name(o->schedule));
  set_bool(L, "flash_attention", o->flash_attention);
  lua_setfield(L, -2, "options");
}

/* cat:plan(model, gpu, opts) -> plan | nil, msg, code.  Memory by component
 * for the worst rank, and the fix ladder when it does not fit. */
static int plan_impl(lua_State *L, int want_fits) {
  lcatalog *c = check_catalog(L);
  job j;
  gpuplan_memory worst;
  gpuplan_fix fixes[16];
  size_t nfix = 0, k;
  int64_t max_gpus;
  int rc, per_rank;
  if ((rc = job_from(L, c, &j))) return fail(L, rc, j.msg);
  max_gpus = opt_int(L, 4, "max_gpus", 0);
  per_rank = opt_bool(L, 4, "per_rank");
  if (!max_gpus) max_gpus = j.j.gpus > 8 ? j.j.gpus : 8;
  rc = gpuplan_memory_eval(c->ctx, j.j.model, j.j.gpu, &j.j.options, GPUPLAN_STAGE_WORST, &worst);
  if (!rc && !worst.fits)
    rc = gpuplan_memory_ladder(c->ctx, c->cat, j.j.model, j.j.gpu, &j.j.options, max_gpus, fixes, sizeof fixes / sizeof fixes[0],
                               &nfix);
  if (rc) return fail(L, rc, gpuplan_errmsg(c->ctx));
  if (want_fits) lua_pushboolean(L, worst.fits);
  push_head(L, &j, worst.params_total);
  push_memory(L, &worst);
  lua_setfield(L, -2, "worst");
  if (per_rank) {
    int64_t s;
    lua_newtable(L);
    for (s = 0; s < j.j.options.pp; s++) {
      gpuplan_memory r;
      if ((rc = gpuplan_memory_eval(c->ctx, j.j.model, j.j.gpu, &j.j.options, s, &r))) return fail(L, rc, gpuplan_errmsg(c->ctx));
      push_memory(L, &r);
      lua_rawseti(L, -2, (int)s + 1);
    }
    lua_setfield(L, -2, "stages");
  }
  lua_createtable(L, (int)nfix, 0);
  for (k = 0; k < nfix; k++) {
    lua_createtable(L, 0, 7);
    set_int(L, "step", (int64_t)k + 1);
    set_str(L, "change", fixes[k].what);
    set_str(L, "gpu", fixes[k].gpu->id);
    set_int(L, "gpus", fixes[k].gpus);
    set_u64(L, "total_bytes", fixes[k].total);
    set_u64(L, "capacity_bytes", fixes[k].capacity);
    set_bool(L, "fits", fixes[k].fits);
    lua_rawseti(L, -2, (int)k + 1);
  }
  lua_setfield(L, -2, "ladder");
  return want_fits ? 2 : 1;
}

static int catalog_plan(lua_State *L) { return plan_impl(L, 0); }

/* cat:fits(model, gpu, opts) -> fits, plan | nil, msg, code */
static int catalog_fits(lua_State *L) { return plan_impl(L, 1); }

/* cat:perf(model, gpu, opts) -> perf | nil, msg, code */
static int catalog_perf(lua_State *L) {
  lcatalog *c = check_catalog(L);
  job j;
  gpuplan_cluster cl;
  gpuplan_perf p;
  gpuplan_memory worst;
  int rc;
  int64_t G = opt_int(L, 4, "global_batch", 0);
  double D = opt_num(L, 4, "tokens", 0);
  if ((rc = job_from(L, c, &j)) || (rc = cluster_of(c, &j, &cl))) return fail(L, rc, j.msg);
  rc = gpuplan_memory_eval(c->ctx, j.j.model, j.j.gpu, &j.j.options, GPUPLAN_STAGE_WORST, &worst);
  if (!rc) rc = gpuplan_perf_eval(c->ctx, j.j.model, &cl, &j.j.options, G, D, NULL, &p);
  if (rc) return fail(L, rc, gpuplan_errmsg(c->ctx));
  push_perf(L, &p, D);
  set_bool(L, "fits", worst.fits);
  set_u64(L, "memory_bytes", worst.total);
  return 1;
}

/* cat:search(model, gpu, opts) -> {evaluated, too_big, invalid, best = {...}} */
static int catalog_search(lua_State *L) {
  lcatalog *c = check_catalog(L);
  job j;
  gpuplan_cluster cl;
  gpuplan_candidate best[100];
  gpuplan_search_stats stats;
  size_t n = 0, i;
  char objbuf[16];
  int rc;
  int64_t G = opt_int(L, 4, "global_batch", 0), top = opt_int(L, 4, "top", 5);
  const char *objective = opt_str(L, 4, "objective", objbuf, sizeof objbuf);
  gpuplan_objective ob = GPUPLAN_OBJ_TIME;
  if (objective && strcmp(objective, "cost") == 0) ob = GPUPLAN_OBJ_COST;
  else if (objective && strcmp(objective, "time") != 0) return luaL_error(L, "option 'objective' must be time or cost");
  if (G < 1) return luaL_error(L, "option 'global_batch' (sequences per step, at least 1) is needed");
  if (top < 1 || top > 100) return luaL_error(L, "option 'top' must be in 1..100");
  if ((rc = job_from(L, c, &j)) || (rc = cluster_of(c, &j, &cl))) return fail(L, rc, j.msg);
  rc = gpuplan_search(c->ctx, j.j.model, &cl, &j.j.options, G, ob, best, (size_t)top, &n, &stats, NULL, NULL);
  if (rc) return fail(L, rc, gpuplan_errmsg(c->ctx));
  lua_createtable(L, 0, 4);
  set_u64(L, "evaluated", stats.evaluated);
  set_u64(L, "too_big", stats.too_big);
  set_u64(L, "invalid", stats.invalid);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const gpuplan_memory_options *q = &best[i].options;
    lua_createtable(L, 0, 15);
    set_int(L, "tp", q->tp);
    set_int(L, "pp", q->pp);
    set_int(L, "cp", q->cp);
    set_int(L, "dp", q->dp);
    set_int(L, "vpp", q->vpp);
    set_int(L, "micro_batch", q->micro_batch);
    set_str(L, "recompute", gpuplan_recompute_name(q->recompute));
    set_str(L, "dp_mode", gpuplan_dp_mode_name(q->dp_mode));
    set_num(L, "step_s", best[i].perf.step_s);
    set_num(L, "tokens_per_s", best[i].perf.tokens_per_s);
    set_num(L, "mfu", best[i].perf.mfu);
    set_u64(L, "memory_bytes", best[i].memory_bytes);
    set_num(L, "cost_per_mtok", best[i].perf.cost_per_mtok);
    set_str(L, "why", best[i].why);
    push_perf(L, &best[i].perf, 0);
    lua_setfield(L, -2, "perf");
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "best");
  return 1;
}

/* cat:simulate(model, gpu, opts) -> run | nil, msg, code: training steps on
 * the caching-allocator model and a mock GPU, as `gpuplan simulate`. */
static int catalog_simulate(lua_State *L) {
  lcatalog *c = check_catalog(L);
  job j;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result r;
  char confbuf[512];
  int64_t other = opt_int(L, 4, "other_procs", 0);
  int rc;
  so.steps = opt_int(L, 4, "steps", 2);
  so.alloc_conf = opt_str(L, 4, "alloc_conf", confbuf, sizeof confbuf);
  so.set_to_none = !opt_bool(L, 4, "keep_grads");
  if (so.steps < 1 || so.steps > 1000) return luaL_error(L, "option 'steps' must be in 1..1000");
  if (other < 0) return luaL_error(L, "option 'other_procs' (bytes) must not be negative");
  if ((rc = job_from(L, c, &j))) return fail(L, rc, j.msg);
  rc = gpuplan_mock_simulate(c->ctx, j.j.model, j.j.gpu, &j.j.options, &so, (uint64_t)other, &r);
  if (rc) return fail(L, rc, gpuplan_errmsg(c->ctx));
  lua_createtable(L, 0, 20);
  set_int(L, "steps", r.steps_done);
  set_str(L, "alloc_conf", so.alloc_conf);
  set_bool(L, "set_to_none", so.set_to_none);
  set_u64(L, "ops", r.ops);
  set_u64(L, "capacity_bytes", r.capacity);
  set_u64(L, "peak_allocated_bytes", r.peak_allocated);
  set_u64(L, "peak_reserved_bytes", r.peak_reserved);
  set_u64(L, "allocated_at_peak_reserved_bytes", r.allocated_at_peak_reserved);
  set_u64(L, "largest_free_at_peak_bytes", r.largest_free_at_peak);
  set_u64(L, "total_free_at_peak_bytes", r.total_free_at_peak);
  set_num(L, "fragmentation", r.fragmentation);
  set_u64(L, "analytic_bytes", r.analytic_bytes);
  set_num(L, "vs_analytic", r.vs_analytic);
  set_int(L, "num_alloc_retries", r.num_alloc_retries);
  set_int(L, "num_ooms", r.num_ooms);
  set_bool(L, "oom", r.oom);
  if (r.oom) {
    set_int(L, "oom_step", r.oom_step);
    set_str(L, "oom_op", r.oom_op);
    set_str(L, "oom_message", r.oom_message);
  }
  return 1;
}

/* cat:devices([{sim=, faults=, load=, busy=, mem=}]) -> array | nil, msg, code:
 * the GPUs as `gpuplan smi` sees them, real (CUDA + NVML, loaded at run
 * time) or mock ("SKU[:N]" with faults after a training load). */
static int catalog_devices(lua_State *L) {
  lcatalog *c = check_catalog(L);
  char spec[128], fbuf[16][64], msg[512];
  const char *faults[16];
  const char *simspec;
  size_t nf = 0;
  double load, busy, memf;
  gpuplan_mock *sim = NULL;
  gpuplan_backend *b = NULL;
  int rc, n = 0, i;
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  simspec = opt_str(L, 2, "sim", spec, sizeof spec);
  load = opt_num(L, 2, "load", 600);
  busy = opt_num(L, 2, "busy", 0.95);
  memf = opt_num(L, 2, "mem", 0.87);
  if (!lua_isnoneornil(L, 2)) {
    lua_getfield(L, 2, "faults");
    if (!lua_isnil(L, -1)) {
      size_t k, len;
      luaL_checktype(L, -1, LUA_TTABLE);
      len = lua_rawlen(L, -1);
      if (len > 16) luaL_error(L, "option 'faults': at most 16");
      for (k = 1; k <= len; k++) {
        const char *f;
        lua_rawgeti(L, -1, (int)k);
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "option 'faults' must be a list of strings");
        f = lua_tostring(L, -1);
        snprintf(fbuf[nf], sizeof fbuf[nf], "%s", f);
        faults[nf] = fbuf[nf];
        nf++;
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  if (nf && !simspec) return luaL_error(L, "option 'faults' needs 'sim': only simulated GPUs take faults");
  /* nothing below raises until every C resource is freed */
  if (simspec) {
    rc = gpuplan_mock_node(c->ctx, c->cat, simspec, faults, nf, load, busy, memf, &sim);
    if (!rc) rc = gpuplan_mock_backend(sim, &b);
  } else {
    rc = gpuplan_backend_open_cuda(c->ctx, NULL, &b);
  }
  if (!rc) rc = gpuplan_backend_device_count(b, &n);
  if (rc) {
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
    gpuplan_backend_free(b);
    gpuplan_mock_free(sim);
    return fail(L, rc, msg);
  }
  {
    /* copy everything out first, then build the tables */
    gpuplan_device_info info[64];
    gpuplan_device_telemetry tel[64];
    int has_tel[64];
    uint64_t used[64], others[64];
    if (n > 64) n = 64;
    for (i = 0; i < n; i++) {
      if ((rc = gpuplan_backend_device_info(b, i, c->cat, &info[i]))) break;
      has_tel[i] = gpuplan_backend_telemetry(b, i, &tel[i]) == GPUPLAN_OK;
      used[i] = info[i].total_bytes - info[i].free_bytes;
      others[i] = 0;
      if (sim) {
        gpuplan_mock_memory mem;
        gpuplan_mock_memory_info(sim, i, &mem);
        used[i] = mem.used;
        others[i] = mem.others;
      }
    }
    if (rc) snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
    gpuplan_backend_free(b);
    gpuplan_mock_free(sim);
    if (rc) return fail(L, rc, msg);
    lua_createtable(L, n, 0);
    for (i = 0; i < n; i++) {
      const gpuplan_device_telemetry *t = &tel[i];
      char cc[16];
      snprintf(cc, sizeof cc, "%d.%d", info[i].cc_major, info[i].cc_minor);
      lua_createtable(L, 0, 28);
      set_int(L, "index", i);
      set_str(L, "name", info[i].name);
      set_str(L, "uuid", info[i].uuid);
      set_str(L, "pci_bus_id", info[i].pci_bus_id);
      set_str(L, "sku", info[i].sku ? info[i].sku->id : NULL);
      set_str(L, "compute_capability", cc);
      set_int(L, "sm_count", info[i].sm_count);
      set_u64(L, "memory_total_bytes", info[i].total_bytes);
      set_u64(L, "memory_used_bytes", used[i]);
      set_u64(L, "memory_free_bytes", info[i].free_bytes);
      set_u64(L, "other_processes_bytes", others[i]);
      if (has_tel[i]) {
        set_num(L, "temperature_c", t->temperature_c);
        set_num(L, "power_w", t->power_w);
        set_num(L, "power_limit_w", t->power_limit_w);
        if (t->sm_clock_mhz >= 0) set_int(L, "sm_clock_mhz", t->sm_clock_mhz);
        if (t->max_sm_clock_mhz >= 0) set_int(L, "max_sm_clock_mhz", t->max_sm_clock_mhz);
        if (t->pstate >= 0) set_int(L, "pstate", t->pstate);
        set_num(L, "gpu_util", t->gpu_util);
        set_num(L, "mem_util", t->mem_util);
        if (t->throttle >= 0) set_int(L, "throttle_reasons", t->throttle);
        if (t->ecc_uncorrected >= 0) set_int(L, "ecc_uncorrected", t->ecc_uncorrected);
        if (t->ecc_corrected >= 0) set_int(L, "ecc_corrected", t->ecc_corrected);
        if (t->nvlink_links >= 0) set_int(L, "nvlink_links", t->nvlink_links);
        if (t->nvlink_up >= 0) set_int(L, "nvlink_up", t->nvlink_up);
        if (t->driver_version[0]) set_str(L, "driver_version", t->driver_version);
      }
      lua_rawseti(L, -2, i + 1);
    }
  }
  return 1;
}

/* --- module functions ---------------------------------------------------------- */

/* gpuplan.explain_oom(text) -> {verdict, ..., explanation} | nil, msg, code */
static int l_explain_oom(lua_State *L) {
  static const char *const verdicts[] = {"fragmentation", "mixed", "demand", "other-process", "fraction"};
  const char *text = luaL_checkstring(L, 1);
  gpuplan_ctx *ctx = NULL;
  gpuplan_oom_info o;
  gpuplan_oom_verdict v;
  char *expl = NULL;
  char msg[512];
  int rc;
  if ((rc = gpuplan_ctx_new(&ctx, NULL))) return fail(L, rc, NULL);
  rc = gpuplan_oom_parse(ctx, text, &o);
  if (!rc) rc = gpuplan_oom_explain(ctx, &o, &v, &expl);
  if (rc) {
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(ctx));
    gpuplan_ctx_free(ctx);
    return fail(L, rc, msg);
  }
  {
    /* copied out and freed before anything that can raise */
    char text_out[4096];
    gpuplan_oom_info info = o;
    snprintf(text_out, sizeof text_out, "%s", expl ? expl : "");
    gpuplan_free(ctx, expl);
    gpuplan_ctx_free(ctx);
    lua_createtable(L, 0, 10);
    set_str(L, "verdict", verdicts[v]);
    set_u64(L, "tried_bytes", info.tried);
    set_u64(L, "total_bytes", info.total);
    set_u64(L, "free_bytes", info.free);
    set_u64(L, "allocated_bytes", info.allocated);
    set_u64(L, "reserved_unallocated_bytes", info.unallocated);
    set_u64(L, "process_bytes", info.process);
    set_u64(L, "other_processes_bytes", info.others);
    set_u64(L, "allowed_bytes", info.allowed);
    lua_pushstring(L, text_out);
  }
  lua_setfield(L, -2, "explanation");
  return 1;
}

/* gpuplan.replay(path [, {alloc_conf=, capacity=, device=}]) -> run | nil, msg, code */
static int l_replay(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char confbuf[512], msg[512];
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  gpuplan_ctx *ctx = NULL;
  gpuplan_snapshot *s = NULL;
  int64_t capacity, device;
  int rc;
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  capacity = opt_int(L, 2, "capacity", 0);
  device = opt_int(L, 2, "device", 0);
  o.alloc_conf = opt_str(L, 2, "alloc_conf", confbuf, sizeof confbuf);
  if (capacity < 0) return luaL_error(L, "option 'capacity' (bytes) must not be negative");
  if (device < 0 || device > 1024) return luaL_error(L, "option 'device' must be in 0..1024");
  o.capacity = (uint64_t)capacity;
  if ((rc = gpuplan_ctx_new(&ctx, NULL))) return fail(L, rc, NULL);
  rc = gpuplan_snapshot_load(ctx, path, (int)device, &s);
  if (!rc) rc = gpuplan_snapshot_replay(ctx, s, &o, &r);
  if (rc) {
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(ctx));
    gpuplan_snapshot_free(s);
    gpuplan_ctx_free(ctx);
    return fail(L, rc, msg);
  }
  /* every value is copied out before anything that can raise */
  {
    size_t trace_events = gpuplan_snapshot_event_count(s), segs = gpuplan_snapshot_segment_count(s);
    char divergence[sizeof r.divergence], oom[sizeof r.oom_message];
    snprintf(divergence, sizeof divergence, "%s", r.divergence);
    snprintf(oom, sizeof oom, "%s", r.oom_message);
    gpuplan_snapshot_free(s);
    gpuplan_ctx_free(ctx);
    lua_createtable(L, 0, 28);
    set_str(L, "file", path);
    set_str(L, "mode", o.alloc_conf || o.capacity ? "what-if" : "exact");
    set_str(L, "alloc_conf", o.alloc_conf);
    set_u64(L, "capacity_bytes", o.capacity);
    set_u64(L, "events", r.events);
    set_u64(L, "trace_events", trace_events);
    set_u64(L, "segments_in_file", segs);
    set_bool(L, "rebuilt_start", r.rebuilt_start);
    set_bool(L, "exact", r.exact);
    set_u64(L, "allocs", r.allocs);
    set_u64(L, "segment_allocs", r.segment_allocs);
    if (r.diverged_at != SIZE_MAX) {
      set_u64(L, "diverged_at", r.diverged_at);
      set_str(L, "divergence", divergence);
    }
    set_u64(L, "start_allocated_bytes", r.start_allocated);
    set_u64(L, "start_reserved_bytes", r.start_reserved);
    set_u64(L, "peak_allocated_bytes", r.peak_allocated);
    set_u64(L, "peak_reserved_bytes", r.peak_reserved);
    set_u64(L, "final_allocated_bytes", r.final_allocated);
    set_u64(L, "final_reserved_bytes", r.final_reserved);
    set_u64(L, "allocated_at_peak_reserved_bytes", r.allocated_at_peak_reserved);
    set_u64(L, "largest_free_at_peak_bytes", r.largest_free_at_peak);
    set_u64(L, "total_free_at_peak_bytes", r.total_free_at_peak);
    set_num(L, "fragmentation", r.fragmentation);
    set_int(L, "num_alloc_retries", r.num_alloc_retries);
    set_int(L, "num_ooms", r.num_ooms);
    if (r.oom_event != SIZE_MAX) {
      set_u64(L, "oom_event", r.oom_event);
      set_str(L, "oom_message", oom);
    }
  }
  return 1;
}

static const luaL_Reg catalog_methods[] = {
  {"find", catalog_find},         {"list", catalog_list},       {"plan", catalog_plan},
  {"fits", catalog_fits},         {"perf", catalog_perf},       {"search", catalog_search},
  {"simulate", catalog_simulate}, {"devices", catalog_devices}, {"close", catalog_close},
  {NULL, NULL}
};

static const luaL_Reg catalog_meta[] = {
  {"__gc", catalog_close},
#if LUA_VERSION_NUM >= 504
  {"__close", catalog_close},
#endif
  {"__tostring", catalog_tostring},
  {NULL, NULL}
};

static const luaL_Reg module_functions[] = {
  {"open", l_open}, {"explain_oom", l_explain_oom}, {"replay", l_replay}, {NULL, NULL}
};

#if defined(_WIN32)
#define GPUPLAN_LUA_EXPORT __declspec(dllexport)
#else
#define GPUPLAN_LUA_EXPORT __attribute__((visibility("default")))
#endif

GPUPLAN_LUA_EXPORT int luaopen_gpuplan(lua_State *L);

GPUPLAN_LUA_EXPORT int luaopen_gpuplan(lua_State *L) {
  if (gpuplan_version_number() != GPUPLAN_VERSION_NUMBER)
    return luaL_error(L, "gpuplan: built against %s, loaded %s", GPUPLAN_VERSION_STRING,
                      gpuplan_version_string());
  if (luaL_newmetatable(L, CATALOG_MT)) {
    luaL_setfuncs(L, catalog_meta, 0);
    luaL_newlib(L, catalog_methods);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, CATALOG_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  luaL_newlib(L, module_functions);
  lua_pushstring(L, gpuplan_version_string());
  lua_setfield(L, -2, "_VERSION");
  return 1;
}
