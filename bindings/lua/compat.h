/*
 * compat.h: Lua 5.1 (and LuaJIT) mapped onto the Lua 5.2+ API, so that
 * lgpuplan.c is written against the 5.4 API only (style.md 9.9).
 */
#ifndef GPUPLAN_LUA_COMPAT_H
#define GPUPLAN_LUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502
#ifndef LUA_OK
#define LUA_OK 0
#endif
#define lua_rawlen(L, i) lua_objlen((L), (i))
#endif

/* LuaJIT 2.1 already has these 5.2 functions (and defines luaL_newlib). */
#if LUA_VERSION_NUM < 502 && !defined(luaL_newlib)
#define luaL_newlibtable(L, l) lua_createtable((L), 0, (int)(sizeof(l) / sizeof((l)[0]) - 1))
#define luaL_newlib(L, l) (luaL_newlibtable((L), (l)), luaL_setfuncs((L), (l), 0))

/* luaL_setfuncs: register l into the table on top, with nup upvalues. */
static void luaL_setfuncs(lua_State *L, const luaL_Reg *l, int nup) {
  luaL_checkstack(L, nup + 1, "too many upvalues");
  for (; l->name; l++) {
    int i;
    for (i = 0; i < nup; i++) lua_pushvalue(L, -nup);
    lua_pushcclosure(L, l->func, nup);
    lua_setfield(L, -(nup + 2), l->name);
  }
  lua_pop(L, nup);
}

static void luaL_setmetatable(lua_State *L, const char *tname) {
  luaL_getmetatable(L, tname);
  lua_setmetatable(L, -2);
}

#endif

#if LUA_VERSION_NUM < 503
#define lua_isinteger(L, i) 0
#endif

#if LUA_VERSION_NUM < 504
/* lua_newuserdatauv: user values are not needed by this module. */
#define lua_newuserdatauv(L, sz, nuv) lua_newuserdata((L), (sz))
#endif

#endif /* GPUPLAN_LUA_COMPAT_H */
