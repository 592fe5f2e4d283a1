/*
 * snapshot_fields.h: what a snapshot load reads of a torch snapshot's
 * pickle, for replay.c's convert and for the tests and fuzz targets that
 * check the loader with the same tables (they compile pickle.c, not
 * replay.c).  Not installed.
 *
 * The fields convert reads of segments, blocks, trace events and
 * annotations, in the order of their SF_, BF_, EF_ indices, and their
 * kinds where the loader decodes them as records
 * (gpuplan__pickle_load_decode); the keys whose values a load skips.
 */
#ifndef GPUPLAN_REPLAY_SNAPSHOT_FIELDS_H
#define GPUPLAN_REPLAY_SNAPSHOT_FIELDS_H

#include <string.h>

#include "replay/pickle.h"

static const char *const seg_fields[] = {"device", "is_expandable", "address", "total_size", "stream",
                                         "segment_type", "blocks", "segment_pool_id", NULL};
enum { SF_DEVICE, SF_EXPANDABLE, SF_ADDRESS, SF_TOTAL_SIZE, SF_STREAM, SF_TYPE, SF_BLOCKS, SF_POOL };
static const char *const block_fields[] = {"size", "requested_size", "history", "state", NULL};
enum { BF_SIZE, BF_REQUESTED, BF_HISTORY, BF_STATE };
static const char *const event_fields[] = {"action", "device_free", "addr", "size", "stream", NULL};
enum { EF_ACTION, EF_DEVICE_FREE, EF_ADDR, EF_SIZE, EF_STREAM };
static const char *const ann_fields[] = {"device", NULL};
enum { AF_DEVICE };

enum { SK_INT = GPUPLAN__PF_INT, SK_VAL = GPUPLAN__PF_VALUE, SK_REC = GPUPLAN__PF_RECORDS };
static const unsigned char block_kinds[] = {SK_INT, SK_INT, SK_VAL, SK_VAL};
static const gpuplan__pickle_schema block_schema = {block_fields, block_kinds, NULL};
static const unsigned char seg_kinds[] = {SK_INT, SK_INT, SK_INT, SK_INT, SK_INT, SK_VAL, SK_REC, SK_VAL};
static const gpuplan__pickle_schema *const seg_sub[] = {NULL, NULL, NULL, NULL, NULL, NULL, &block_schema, NULL};
static const gpuplan__pickle_schema seg_schema = {seg_fields, seg_kinds, seg_sub};
static const unsigned char event_kinds[] = {SK_VAL, SK_INT, SK_INT, SK_INT, SK_INT};
static const gpuplan__pickle_schema event_schema = {event_fields, event_kinds, NULL};
static const unsigned char ann_kinds[] = {SK_INT};
static const gpuplan__pickle_schema ann_schema = {ann_fields, ann_kinds, NULL};

/* What a load decodes: the lists of dicts convert reads a few fields of. */
static const gpuplan__pickle_decode snapshot_decoded[] = {{"segments", 1, &seg_schema},
                                                          {"device_traces", 2, &event_schema},
                                                          {"external_annotations", 1, &ann_schema},
                                                          {NULL, 0, NULL}};

/* The entry of snapshot_decoded whose key is the str k, or NULL (the
 * tests' and fuzz targets' look-up; the loader marks keys itself). */
static inline const gpuplan__pickle_decode *snapshot_decode_of(const gpuplan__pv *k) {
  size_t i;
  for (i = 0; k->type == GPUPLAN__PV_STR && snapshot_decoded[i].key; i++)
    if (k->u.str.len == strlen(snapshot_decoded[i].key) &&
        memcmp(k->u.str.s, snapshot_decoded[i].key, k->u.str.len) == 0)
      return &snapshot_decoded[i];
  return NULL;
}

/* What a replay never reads: the stack frames of every block and trace
 * event, most of a snapshot's bytes (see gpuplan__pickle_load_skip). */
static const char *const snapshot_skipped[] = {"frames", NULL};

#endif /* GPUPLAN_REPLAY_SNAPSHOT_FIELDS_H */
