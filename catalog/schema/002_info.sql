-- gpuplan catalog schema, version 2: a key/value table that says where the
-- catalog's data came from and when, so that `gpuplan catalog info` and a
-- layered user file can tell their provenance.

CREATE TABLE catalog_info (
  key                   TEXT PRIMARY KEY,
  value                 TEXT NOT NULL
);

PRAGMA user_version = 2;
