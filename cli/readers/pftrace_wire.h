/* Protocol buffers' wire format as the .pftrace reader (trace_pftrace.c)
 * walks it: a message's fields one at a time, checked against the bytes
 * there (a file cut short, or made by another writer, is read as far as it
 * goes). Field numbers are pftrace_proto.h's. */
#ifndef NVS_CLI_PFTRACE_WIRE_H
#define NVS_CLI_PFTRACE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pftrace_proto.h"

/* What nvs_pb_next_field found. */
enum {
    FIELD_OK = 1,
    FIELD_END = 0,          /* the bytes end between fields */
    FIELD_CUT = -1,         /* ... inside one: a varint or a length runs past their end */
    FIELD_LONG_VARINT = -2, /* a varint of more than 10 bytes */
    FIELD_BAD_WIRE = -3,    /* wire type 3, 4 (groups), 6 or 7 */
    FIELD_NUMBER_ZERO = -4,
};

struct bytes {
    const unsigned char *at, *end;
};

struct field {
    uint32_t number;
    unsigned wire;
    uint64_t value;     /* a varint's, or a fixed64's or fixed32's bits */
    struct bytes bytes; /* a length-delimited one's */
};

/* A varint at IN, IN moved past it: FIELD_OK, FIELD_CUT or FIELD_LONG_VARINT. */
int nvs_pb_read_varint(struct bytes *in, uint64_t *value);
/* The next field of IN, IN moved past it. */
int nvs_pb_next_field(struct bytes *in, struct field *field);
/* What a negative nvs_pb_next_field means, in words. */
const char *nvs_pb_field_problem(int got);
bool nvs_pb_is_varint(const struct field *field, uint32_t number);
bool nvs_pb_is_message(const struct field *field, uint32_t number);

/* Whether BYTES (the first LENGTH of a file) start a Perfetto Trace: field 1
 * (0x0a), a length and a whole packet. */
bool nvs_pb_starts_trace(const unsigned char *bytes, size_t length);

/* Each field of MESSAGE in turn as FIELD (CURSOR walks it); a corrupt one ends the
 * loop with GOT < 0. */
#define FOR_EACH_FIELD(cursor, message, field, got)                                                \
    for (struct bytes cursor = (message); ((got) = nvs_pb_next_field(&cursor, &(field))) > 0;)

#endif
