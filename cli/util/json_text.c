/* JSON written (json_text.h): strings quoted, text built piece by piece. */
#define _GNU_SOURCE
#include "util/json_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing strings -------------------------------------------------------- */

size_t nvs_json_utf8_length(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    if (p[0] < 0x80)
        return 1;
    size_t length;
    unsigned long code;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        length = 2;
        code = p[0] & 0x1Fu;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        length = 3;
        code = p[0] & 0x0Fu;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        length = 4;
        code = p[0] & 0x07u;
    } else {
        return 0;
    }
    for (size_t i = 1; i < length; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        code = code << 6 | (p[i] & 0x3Fu);
    }
    static const unsigned long smallest[] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
        return 0;
    return length;
}

/* The length of the well-formed UTF-8 character at AT (before END), or 0. */
static size_t utf8_length_within(const char *at, const char *end)
{
    char character[5] = { 0 };
    memcpy(character, at, (size_t)(end - at) < 4 ? (size_t)(end - at) : 4);
    return nvs_json_utf8_length(character);
}

bool nvs_utf8_valid(const char *at, const char *end)
{
    size_t taken;
    while (at < end && (taken = utf8_length_within(at, end)) != 0)
        at += taken;
    return at == end;
}

char *nvs_utf8_clean(const char *at, const char *end, size_t *length)
{
    char *copy = malloc((size_t)(end - at) * 3);
    size_t used = 0, taken;
    for (; copy && at < end; at += taken) {
        if (!(taken = utf8_length_within(at, end))) {
            memcpy(copy + used, "\xef\xbf\xbd", 3);
            used += 3;
            taken = 1;
        } else {
            memcpy(copy + used, at, taken);
            used += taken;
        }
    }
    *length = used;
    return copy;
}

size_t nvs_json_quote(char *out, size_t size, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    if (size < 3)
        return size;
    out[used++] = '"';
    for (const char *p = text; *p;) {
        char piece[8];
        size_t length, advance;
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            piece[0] = '\\';
            piece[1] = (char)c;
            length = 2;
            advance = 1;
        } else if (c < 0x20 || c == 0x7F) {
            memcpy(piece, "\\u00", 4);
            piece[4] = hex[c >> 4];
            piece[5] = hex[c & 15];
            length = 6;
            advance = 1;
        } else if ((advance = nvs_json_utf8_length(p)) == 0) {
            memcpy(piece, "\\ufffd", 6);
            length = 6;
            advance = 1;
        } else {
            memcpy(piece, p, advance);
            length = advance;
        }
        if (used + length + 2 > size)
            return size;
        memcpy(out + used, piece, length);
        used += length;
        p += advance;
    }
    out[used++] = '"';
    out[used] = '\0';
    return used;
}

/* ---- building JSON text ----------------------------------------------------- */

static void text_reserve(struct nvs_json_text *text, size_t more)
{
    if (text->failed || text->length + more + 1 <= text->capacity)
        return;
    size_t capacity = text->capacity ? text->capacity * 2 : 256;
    while (capacity < text->length + more + 1)
        capacity *= 2;
    char *grown = realloc(text->bytes, capacity);
    if (!grown) {
        text->failed = true;
        return;
    }
    text->bytes = grown;
    text->capacity = capacity;
}

void nvs_json_text_add(struct nvs_json_text *text, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(NULL, 0, format, arguments);
    va_end(arguments);
    if (length < 0)
        return;
    text_reserve(text, (size_t)length);
    if (text->failed)
        return;
    va_start(arguments, format);
    vsnprintf(text->bytes + text->length, text->capacity - text->length, format, arguments);
    va_end(arguments);
    text->length += (size_t)length;
}

void nvs_json_text_add_string_member(struct nvs_json_text *text, const char *key, const char *value)
{
    nvs_json_text_add(text, "%s\"%s\":", text->length ? "," : "", key);
    size_t most = strlen(value) * 6 + 3;
    text_reserve(text, most);
    if (!text->failed)
        text->length += nvs_json_quote(text->bytes + text->length, most + 1, value);
}
