/* chakra_internal.h - what the Chakra reader (chakra_read.c) and writer
 * (chakra.c) share: the node and collective types of Chakra's et_def.proto. */
#ifndef NPUSIM_CHAKRA_INTERNAL_H
#define NPUSIM_CHAKRA_INTERNAL_H

/* NodeType of et_def.proto. */
enum {
  CHAKRA_NODE_INVALID,
  CHAKRA_NODE_METADATA,
  CHAKRA_NODE_MEM_LOAD,
  CHAKRA_NODE_MEM_STORE,
  CHAKRA_NODE_COMP,
  CHAKRA_NODE_SEND,
  CHAKRA_NODE_RECV,
  CHAKRA_NODE_COLL,
  CHAKRA_NODE_STORAGE,
  CHAKRA_NODE_BATCH,
  CHAKRA_NODE_CHECKPOINT,
  CHAKRA_NODE_TYPE_COUNT
};
extern const char *const chakra_node_type_names[CHAKRA_NODE_TYPE_COUNT];

/* CollectiveCommType of et_def.proto, and npusim's collective for each (NULL
 * where it has none). */
enum { CHAKRA_COLL_ALL_GATHER = 2, CHAKRA_COLL_TYPE_COUNT = 10 }; /* et_def.proto's numbers */
extern const char *const chakra_coll_type_names[CHAKRA_COLL_TYPE_COUNT];
extern const char *const chakra_coll_npusim[CHAKRA_COLL_TYPE_COUNT];

/* npusim's own attribute: an op's time at the chip model's speed (seconds,
 * before chip.variation), which npusim's replay takes instead of
 * duration_micros. */
#define CHAKRA_ATTR_NOMINAL_S "npusim_nominal_duration_s"

#endif
