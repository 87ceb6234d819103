/* Protocol buffers' wire format, read (pftrace_wire.h). */
#include "readers/pftrace_wire.h"

#include <stddef.h>
#include <string.h>

int nvs_pb_read_varint(struct bytes *in, uint64_t *value)
{
    uint64_t result = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (in->at == in->end)
            return FIELD_CUT;
        unsigned byte = *in->at++;
        result |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *value = result;
            return FIELD_OK;
        }
    }
    return FIELD_LONG_VARINT;
}

int nvs_pb_next_field(struct bytes *in, struct field *field)
{
    if (in->at == in->end)
        return FIELD_END;
    uint64_t key, length;
    int got = nvs_pb_read_varint(in, &key);
    if (got != FIELD_OK)
        return got;
    if (key >> 3 == 0 || key >> 3 > UINT32_MAX)
        return FIELD_NUMBER_ZERO;
    field->number = (uint32_t)(key >> 3);
    field->wire = (unsigned)(key & 7);
    field->value = 0;
    switch (field->wire) {
    case PF_WIRE_VARINT: return nvs_pb_read_varint(in, &field->value);
    case PF_WIRE_FIXED64:
    case PF_WIRE_FIXED32: {
        size_t size = field->wire == PF_WIRE_FIXED64 ? 8 : 4;
        if ((size_t)(in->end - in->at) < size)
            return FIELD_CUT;
        for (size_t i = size; i-- > 0;)
            field->value = field->value << 8 | in->at[i];
        in->at += size;
        return FIELD_OK;
    }
    case PF_WIRE_LENGTH:
        if ((got = nvs_pb_read_varint(in, &length)) != FIELD_OK)
            return got;
        if (length > (uint64_t)(in->end - in->at))
            return FIELD_CUT;
        field->bytes = (struct bytes){ in->at, in->at + length };
        in->at += length;
        return FIELD_OK;
    default: return FIELD_BAD_WIRE;
    }
}

const char *nvs_pb_field_problem(int got)
{
    switch (got) {
    case FIELD_CUT: return "a field runs past the end of its message";
    case FIELD_LONG_VARINT: return "a varint longer than 10 bytes";
    case FIELD_BAD_WIRE: return "a field of an unknown wire type";
    default: return "a field numbered 0";
    }
}

bool nvs_pb_is_varint(const struct field *field, uint32_t number)
{
    return field->number == number && field->wire == PF_WIRE_VARINT;
}

bool nvs_pb_is_message(const struct field *field, uint32_t number)
{
    return field->number == number && field->wire == PF_WIRE_LENGTH;
}

/* Whether BYTES (a file's first LENGTH) start a binary trace: 0x0a, a length
 * and a whole packet. "\n[" or "\n{" begins a JSON trace too (a packet of 91
 * or 123 bytes): those must hold a packet that parses. */
bool nvs_pb_starts_trace(const unsigned char *bytes, size_t length)
{
    if (!length || bytes[0] != 0x0a)
        return false;
    size_t blank = 0;
    while (blank < length && strchr(" \t\r\n", bytes[blank]) && bytes[blank])
        blank++;
    if (blank == length || (bytes[blank] != '[' && bytes[blank] != '{'))
        return true;
    struct bytes in = { bytes, bytes + length };
    struct field field;
    if (nvs_pb_next_field(&in, &field) != FIELD_OK)
        return false;
    int got;
    struct field inner;
    FOR_EACH_FIELD(cursor, field.bytes, inner, got)
    {
    }
    return got == FIELD_END;
}
