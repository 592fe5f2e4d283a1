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
  gpuplan_job *job; /* reused by every call */
} lcatalog;

/* --- results --------------------------------------------------------------- */

/* nil, message, code: the run-time failure convention. */
static int fail(lua_State *L, int rc, const char *msg) {
  lua_pushnil(L);
  lua_pushstring(L, msg && *msg ? msg : gpuplan_errstr(rc));
  lua_pushstring(L, gpuplan_errname(rc));
  return 3;
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


/* --- the catalog handle ------------------------------------------------------ */

static lcatalog *check_catalog(lua_State *L) {
  lcatalog *c = (lcatalog *)luaL_checkudata(L, 1, CATALOG_MT);
  if (!c->cat) luaL_argerror(L, 1, "the catalog is closed");
  return c;
}

/* __gc, __close and close(): idempotent. */
static int catalog_close(lua_State *L) {
  lcatalog *c = (lcatalog *)luaL_checkudata(L, 1, CATALOG_MT);
  gpuplan_job_free(c->job);
  c->job = NULL;
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
  c->job = NULL;
  luaL_setmetatable(L, CATALOG_MT);
  if ((rc = gpuplan_ctx_new(&c->ctx, NULL))) return fail(L, rc, "cannot create a context");
  if (path) rc = gpuplan_catalog_open(c->ctx, path, 0, &c->cat);
  else if (layer) rc = gpuplan_catalog_open(c->ctx, layer, GPUPLAN_CATALOG_LAYER, &c->cat);
  else rc = gpuplan_catalog_open_default(c->ctx, &c->cat);
  if (!rc && (rc = gpuplan_job_new(c->ctx, c->cat, &c->job))) {
    gpuplan_catalog_free(c->cat);
    c->cat = NULL;
  }
  if (rc) {
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
    gpuplan_ctx_free(c->ctx); /* the userdata is collected later; __gc sees NULLs */
    c->ctx = NULL;
    return fail(L, rc, msg);
  }
  return 1;
}

/* --- the job API: every command is (options table) -> document table ------ */

/* A document value as a Lua value: objects and arrays as tables, null as nil
 * (absent), integers as integers where Lua has them. */
static void push_value(lua_State *L, const gpuplan_value *v) {
  size_t i, n, len;
  const char *s;
  switch (gpuplan_value_type_of(v)) {
  case GPUPLAN_VALUE_NULL: lua_pushnil(L); break;
  case GPUPLAN_VALUE_BOOL: lua_pushboolean(L, gpuplan_value_bool(v)); break;
  case GPUPLAN_VALUE_INT: lua_pushinteger(L, (lua_Integer)gpuplan_value_int(v)); break;
  case GPUPLAN_VALUE_REAL: lua_pushnumber(L, (lua_Number)gpuplan_value_real(v)); break;
  case GPUPLAN_VALUE_STRING:
    s = gpuplan_value_string(v, &len);
    lua_pushlstring(L, s, len);
    break;
  case GPUPLAN_VALUE_ARRAY:
    n = gpuplan_value_count(v);
    luaL_checkstack(L, 4, "document too deep");
    lua_createtable(L, (int)n, 0);
    for (i = 0; i < n; i++) {
      push_value(L, gpuplan_value_at(v, i));
      lua_rawseti(L, -2, (int)i + 1);
    }
    break;
  case GPUPLAN_VALUE_OBJECT:
    n = gpuplan_value_count(v);
    luaL_checkstack(L, 4, "document too deep");
    lua_createtable(L, 0, (int)n);
    for (i = 0; i < n; i++) {
      push_value(L, gpuplan_value_at(v, i));
      lua_setfield(L, -2, gpuplan_value_key(v, i));
    }
    break;
  }
}

/* Set one option from a Lua value; returns a status code. */
static int set_one(lua_State *L, gpuplan_job *job, const char *name, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN: return gpuplan_job_set_bool(job, name, lua_toboolean(L, idx));
  case LUA_TNUMBER: {
#if LUA_VERSION_NUM >= 503
    if (lua_isinteger(L, idx)) return gpuplan_job_set_int(job, name, (int64_t)lua_tointeger(L, idx));
#endif
    {
      lua_Number x = lua_tonumber(L, idx);
      if (x == (lua_Number)(int64_t)x && x > -9.2e18 && x < 9.2e18) return gpuplan_job_set_int(job, name, (int64_t)x);
      return gpuplan_job_set_real(job, name, (double)x);
    }
  }
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    return gpuplan_job_set_text(job, name, s, len);
  }
  default:
    return GPUPLAN_EMISUSE;
  }
}

/* Options from the table at index opts into the job: a list (array table)
 * repeats the option.  On failure: the message in msg. */
static int options_into(lua_State *L, lcatalog *c, int opts, char *msg, size_t cap) {
  int rc = GPUPLAN_OK;
  if (lua_isnoneornil(L, opts)) return GPUPLAN_OK;
  if (lua_type(L, opts) != LUA_TTABLE)
    return luaL_argerror(L, opts, "a table of option = value (gpuplan.options() lists them)");
  lua_pushnil(L);
  while (!rc && lua_next(L, opts)) {
    const char *name;
    const gpuplan_option_info *o;
    if (lua_type(L, -2) != LUA_TSTRING) return luaL_error(L, "options: keys are option names (strings)");
    name = lua_tostring(L, -2);
    /* misuse raises (as a wrong argument type would): an unknown option */
    if (!(o = gpuplan_job_option_find(name, NULL))) {
      gpuplan_job_set(c->job, name, ""); /* the library's message, with the nearest name */
      return luaL_error(L, "%s", gpuplan_errmsg(c->ctx));
    }
    if (lua_type(L, -1) == LUA_TTABLE && o->type != GPUPLAN_OPT_LIST)
      return luaL_error(L, "%s: takes one value, not a table (only list options repeat)", name);
    if (lua_type(L, -1) == LUA_TTABLE) {
      size_t i, n = (size_t)lua_rawlen(L, -1);
      for (i = 1; !rc && i <= n; i++) {
        lua_rawgeti(L, -1, (int)i);
        rc = set_one(L, c->job, name, lua_gettop(L));
        lua_pop(L, 1);
      }
    } else {
      rc = set_one(L, c->job, name, lua_gettop(L));
    }
    if (rc == GPUPLAN_EMISUSE)
      return luaL_error(L, "%s: a %s is not a number, a boolean or a string", name, luaL_typename(L, -1));
    if (rc) {
      snprintf(msg, cap, "%s", gpuplan_errmsg(c->ctx));
    }
    lua_pop(L, 1);
  }
  if (rc) lua_pop(L, 1); /* the key lua_next left */
  return rc;
}

/* Run command with the options at opts (and model/gpu when given). */
static int run_job(lua_State *L, lcatalog *c, const char *command, int model, int gpu, int opts) {
  gpuplan_doc *doc = NULL;
  char msg[1024];
  int rc = GPUPLAN_OK;
  msg[0] = 0;
  gpuplan_job_reset(c->job);
  if (model) {
    size_t len;
    const char *s = luaL_checklstring(L, model, &len);
    if ((rc = gpuplan_job_set_text(c->job, "model", s, len))) snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
  }
  if (!rc && gpu && !lua_isnoneornil(L, gpu)) {
    size_t len;
    const char *s = luaL_checklstring(L, gpu, &len);
    if ((rc = gpuplan_job_set_text(c->job, "gpu", s, len))) snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
  }
  if (!rc) rc = options_into(L, c, opts, msg, sizeof msg);
  if (!rc && (rc = gpuplan_job_run(c->job, command, &doc))) snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
  if (rc) return fail(L, rc, msg);
  push_value(L, gpuplan_doc_root(doc));
  gpuplan_doc_free(doc);
  return 1;
}

/* cat:run(command, opts) -> document | nil, msg, code */
static int catalog_run(lua_State *L) {
  lcatalog *c = check_catalog(L);
  return run_job(L, c, luaL_checkstring(L, 2), 0, 0, 3);
}

/* cat:plan(model, gpu, opts), cat:perf(...), cat:search(...), cat:simulate(...):
 * gpu may be nil (with opts.node). */
static int catalog_plan(lua_State *L) { return run_job(L, check_catalog(L), "plan", 2, 3, 4); }
static int catalog_perf(lua_State *L) { return run_job(L, check_catalog(L), "perf", 2, 3, 4); }
static int catalog_search(lua_State *L) { return run_job(L, check_catalog(L), "search", 2, 3, 4); }
static int catalog_simulate(lua_State *L) { return run_job(L, check_catalog(L), "simulate", 2, 3, 4); }
static int catalog_serve(lua_State *L) { return run_job(L, check_catalog(L), "serve", 2, 3, 4); }

/* cat:fits(model, gpu, opts) -> fits, plan | nil, msg, code */
static int catalog_fits(lua_State *L) {
  int n = catalog_plan(L);
  if (n != 1) return n;
  lua_getfield(L, -1, "worst");
  lua_getfield(L, -1, "fits");
  lua_remove(L, -2);
  lua_insert(L, -2);
  return 2;
}

/* gpuplan.options() -> the option table (name, flag, type, unit, min, max,
 * choices, default, help, commands, group) */
static int l_options(lua_State *L) {
  static const char *const types[] = {"int", "real", "bool", "enum", "str", "bytes", "list"};
  const gpuplan_option_info *o;
  size_t i, k;
  lua_newtable(L);
  for (i = 0; (o = gpuplan_job_option(i)); i++) {
    int nc = 0;
    lua_createtable(L, 0, 12);
    set_str(L, "name", o->name);
    set_str(L, "flag", o->flag);
    set_str(L, "type", types[o->type]);
    set_str(L, "unit", o->unit);
    set_num(L, "min", o->min);
    set_num(L, "max", o->max);
    set_str(L, "choices", o->choices);
    set_str(L, "default", o->default_text);
    set_str(L, "help", o->help);
    set_str(L, "group", o->group);
    lua_newtable(L);
    for (k = 0; gpuplan_command_name(k); k++)
      if (o->commands & (1u << k)) {
        lua_pushstring(L, gpuplan_command_name(k));
        lua_rawseti(L, -2, ++nc);
      }
    lua_setfield(L, -2, "commands");
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

/* cat:devices([{sim=, faults=, load=, busy=, mem=, ...}]) -> array | nil, msg, code:
 * the GPUs of the smi document (`gpuplan smi --json`'s gpus), real (CUDA +
 * NVML, loaded at run time) or mock ("SKU[:N]" with faults after a training
 * load).  faults and mem are the smi options fault and mem_fraction; any
 * other smi option passes through. */
static int catalog_devices(lua_State *L) {
  lcatalog *c = check_catalog(L);
  int t, n;
  lua_newtable(L);
  t = lua_gettop(L);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
      if (k && strcmp(k, "faults") == 0) lua_setfield(L, t, "fault");
      else if (k && strcmp(k, "mem") == 0) lua_setfield(L, t, "mem_fraction");
      else {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, t);
      }
    }
  }
  n = run_job(L, c, "smi", 0, 0, t);
  if (n != 1) return n;
  lua_getfield(L, -1, "driver");
  lua_getfield(L, -1, "available");
  if (!lua_toboolean(L, -1)) {
    lua_getfield(L, -2, "error");
    lua_pushnil(L);
    lua_insert(L, -2);
    lua_pushstring(L, "GPUPLAN_EUNSUPPORTED");
    return 3;
  }
  lua_pop(L, 2);
  lua_getfield(L, -1, "gpus");
  return 1;
}

/* --- catalog, replay and explain-oom through the job API ---------------------- */

/* Run command with a table of options built here: pairs of key, value
 * strings at the stack top are set first (count pairs), then the user's
 * options at opts (0: none). */
static int run_with(lua_State *L, lcatalog *c, const char *command, const char *const *kv, int opts) {
  int t, i;
  lua_newtable(L);
  t = lua_gettop(L);
  if (opts && !lua_isnoneornil(L, opts)) {
    luaL_checktype(L, opts, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, opts)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_settable(L, t);
    }
  }
  for (i = 0; kv[i]; i += 2) {
    if (!kv[i + 1]) continue;
    lua_pushstring(L, kv[i + 1]);
    lua_setfield(L, t, kv[i]);
  }
  return run_job(L, c, command, 0, 0, t);
}

/* The field of the document on top, in its place (nil, msg, code pass through). */
static int field_of(lua_State *L, int n, const char *field) {
  if (n != 1) return n;
  lua_getfield(L, -1, field);
  lua_remove(L, -2);
  return 1;
}

static const char *singular(const char *k) {
  if (strcmp(k, "gpus") == 0) return "gpu";
  if (strcmp(k, "nodes") == 0) return "node";
  if (strcmp(k, "models") == 0) return "model";
  if (strcmp(k, "fabrics") == 0) return "fabric";
  return k;
}

/* cat:find(kind, name) -> record | nil, msg, code */
static int catalog_find(lua_State *L) {
  lcatalog *c = check_catalog(L);
  const char *kv[] = {"subcommand", "show", "kind", singular(luaL_checkstring(L, 2)), "name", luaL_checkstring(L, 3),
                      NULL};
  return field_of(L, run_with(L, c, "catalog", kv, 0), "record");
}

/* cat:list(kind) -> array of records | nil, msg, code */
static int catalog_list(lua_State *L) {
  lcatalog *c = check_catalog(L);
  const char *kind = luaL_checkstring(L, 2);
  char plural[16];
  const char *kv[3];
  snprintf(plural, sizeof plural, "%s%s", kind, kind[0] && kind[strlen(kind) - 1] == 's' ? "" : "s");
  kv[0] = "subcommand";
  kv[1] = plural;
  kv[2] = NULL;
  return field_of(L, run_with(L, c, "catalog", kv, 0), "rows");
}

/* cat:explain_oom(message) -> explanation | nil, msg, code */
/* The string argument at idx for option name, or NULL with nil, msg, code
 * pushed when it holds a NUL byte (as the library refuses it from the CLI and
 * Python: a C string would have cut it there, review 2026-12-02). */
static const char *whole_string(lua_State *L, int idx, const char *name, int *nret) {
  size_t len;
  const char *s = luaL_checklstring(L, idx, &len);
  if (memchr(s, 0, len)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s: the value contains a NUL byte", name);
    *nret = fail(L, GPUPLAN_EINVAL, msg);
    return NULL;
  }
  return s;
}

static int catalog_explain_oom(lua_State *L) {
  lcatalog *c = check_catalog(L);
  int n;
  const char *m = whole_string(L, 2, "message", &n);
  const char *kv[] = {"message", m, NULL};
  if (!m) return n;
  return run_with(L, c, "explain-oom", kv, 0);
}

/* cat:replay(path [, opts]) -> replay | nil, msg, code */
static int catalog_replay(lua_State *L) {
  lcatalog *c = check_catalog(L);
  int n;
  const char *f = whole_string(L, 2, "file", &n);
  const char *kv[] = {"file", f, NULL};
  if (!f) return n;
  return run_with(L, c, "replay", kv, 3);
}

/* cat:replay_bytes(data [, opts]) -> replay | nil, msg, code: a snapshot held
 * in a Lua string (Lua strings hold bytes). */
static int catalog_replay_bytes(lua_State *L) {
  lcatalog *c = check_catalog(L);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  gpuplan_doc *doc = NULL;
  char msg[1024];
  int rc;
  gpuplan_job_reset(c->job);
  msg[0] = 0;
  rc = options_into(L, c, 3, msg, sizeof msg);
  if (!rc && (rc = gpuplan_job_run_snapshot(c->job, data, len, &doc)))
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(c->ctx));
  if (rc) return fail(L, rc, msg);
  push_value(L, gpuplan_doc_root(doc));
  gpuplan_doc_free(doc);
  return 1;
}

/* gpuplan.explain_oom(message), gpuplan.replay(path [, opts]): on the built-in
 * catalog, opened for the call. */
static int with_default(lua_State *L, lua_CFunction f) {
  int n, base = lua_gettop(L);
  lua_pushcfunction(L, l_open);
  lua_call(L, 0, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2);
  lua_insert(L, 1); /* the catalog as self */
  n = f(L);
  /* close it now rather than at collection */
  lua_pushcfunction(L, catalog_close);
  lua_pushvalue(L, 1);
  lua_call(L, 1, 0);
  (void)base;
  return n;
}
/* (the user's arguments checked where they are, before the catalog goes in
 * front of them: an error names the argument the user gave as #1) */
static int l_explain_oom(lua_State *L) {
  luaL_checkstring(L, 1);
  return with_default(L, catalog_explain_oom);
}
static int l_replay(lua_State *L) {
  luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  return with_default(L, catalog_replay);
}

static const luaL_Reg catalog_methods[] = {
  {"find", catalog_find},         {"list", catalog_list},       {"plan", catalog_plan},
  {"fits", catalog_fits},         {"perf", catalog_perf},       {"search", catalog_search},
  {"simulate", catalog_simulate}, {"devices", catalog_devices}, {"close", catalog_close},
  {"run", catalog_run},            {"serve", catalog_serve},
  {"explain_oom", catalog_explain_oom}, {"replay", catalog_replay},
  {"replay_bytes", catalog_replay_bytes},
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
  {"open", l_open}, {"explain_oom", l_explain_oom}, {"replay", l_replay}, {"options", l_options}, {NULL, NULL}
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
