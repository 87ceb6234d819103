/* UTF-8, as both trace encoders need it: the file must hold well-formed
 * UTF-8 (JSON requires it, and protobuf's string fields), whatever bytes a
 * program named its ranges and threads with. */
#ifndef NVS_UTF8_H
#define NVS_UTF8_H

#include <stddef.h>

/* The length of the well-formed UTF-8 character at C (before END), or 0. */
static inline size_t nvs_utf8_length(const unsigned char *c, const unsigned char *end)
{
    size_t length;
    unsigned char low = 0x80, high = 0xbf;      /* the second byte's range */
    if (*c >= 0xc2 && *c <= 0xdf)
        length = 2;
    else if (*c >= 0xe0 && *c <= 0xef) {
        length = 3;
        if (*c == 0xe0) low = 0xa0;             /* no overlong forms */
        if (*c == 0xed) high = 0x9f;            /* no surrogates */
    } else if (*c >= 0xf0 && *c <= 0xf4) {
        length = 4;
        if (*c == 0xf0) low = 0x90;
        if (*c == 0xf4) high = 0x8f;            /* nothing past U+10FFFF */
    } else
        return 0;
    if ((size_t)(end - c) < length || c[1] < low || c[1] > high)
        return 0;
    for (size_t i = 2; i < length; i++)
        if (c[i] < 0x80 || c[i] > 0xbf)
            return 0;
    return length;
}

#endif
