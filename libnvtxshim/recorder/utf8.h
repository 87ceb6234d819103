/* UTF-8, as both trace encoders need it: the file must hold well-formed
 * UTF-8 (JSON requires it, and protobuf's string fields), whatever bytes a
 * program named its ranges and threads with. */
#ifndef NVS_UTF8_H
#define NVS_UTF8_H

#include <stddef.h>
#include <string.h>

/* The length of the well-formed UTF-8 character at C (before END), or 0. */
static inline size_t nvs_utf8_length(const unsigned char *c, const unsigned char *end)
{
    size_t length;
    unsigned char low = 0x80, high = 0xbf; /* the second byte's range */
    if (*c >= 0xc2 && *c <= 0xdf)
        length = 2;
    else if (*c >= 0xe0 && *c <= 0xef) {
        length = 3;
        if (*c == 0xe0)
            low = 0xa0; /* no overlong forms */
        if (*c == 0xed)
            high = 0x9f; /* no surrogates */
    } else if (*c >= 0xf0 && *c <= 0xf4) {
        length = 4;
        if (*c == 0xf0)
            low = 0x90;
        if (*c == 0xf4)
            high = 0x8f; /* nothing past U+10FFFF */
    } else
        return 0;
    if ((size_t)(end - c) < length || c[1] < low || c[1] > high)
        return 0;
    for (size_t i = 2; i < length; i++)
        if (c[i] < 0x80 || c[i] > 0xbf)
            return 0;
    return length;
}

/* How nvs_utf8_clean writes its text. */
enum nvs_utf8_form {
    NVS_UTF8_BARE, /* as it is, made well-formed (protobuf's string fields) */
    NVS_UTF8_JSON, /* as the inside of a JSON string: quotes, backslashes and
                           control bytes escaped, U+FFFD written \ufffd */
};

/* TEXT (LENGTH bytes) into OUT in FORM, at most SIZE bytes of whole pieces
 * (never half a character or half an escape); the bytes written. A byte
 * that begins no well-formed UTF-8 character (a Latin-1 name, a name cut
 * inside a character) becomes U+FFFD, so that the file stays UTF-8.
 * The one cleaner of both encoders, called where events are written:
 * async-signal-safe (no lock, no allocation, nothing of libc but memcpy),
 * and inline, FORM being a constant at each call, so that the other form's
 * branches fold away. */
static inline size_t nvs_utf8_clean(char *out, size_t size, const char *text, size_t length,
                                    enum nvs_utf8_form form)
{
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    const unsigned char *c = (const unsigned char *)text, *end = c + length;
    while (c < end) {
        char escape[6];
        const char *piece = (const char *)c;
        size_t piece_length = 1, taken = 1;
        if (*c >= 0x80) {
            taken = piece_length = nvs_utf8_length(c, end);
            if (!taken) {
                taken = 1;
                piece = form == NVS_UTF8_JSON ? "\\ufffd" : "\xef\xbf\xbd";
                piece_length = form == NVS_UTF8_JSON ? 6 : 3;
            }
        } else if (form == NVS_UTF8_JSON && (*c == '"' || *c == '\\')) {
            escape[0] = '\\';
            escape[1] = (char)*c;
            piece = escape;
            piece_length = 2;
        } else if (form == NVS_UTF8_JSON && *c < 0x20) {
            memcpy(escape, "\\u00", 4);
            escape[4] = hex[*c >> 4];
            escape[5] = hex[*c & 15];
            piece = escape;
            piece_length = 6;
        }
        if (used + piece_length > size)
            break;
        memcpy(out + used, piece, piece_length);
        used += piece_length;
        c += taken;
    }
    return used;
}

#endif
