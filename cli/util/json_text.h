/* JSON written: a string quoted (its bytes that are not UTF-8 replaced), and
 * text built piece by piece. For the readers that make JSON args (the nsys
 * export's, the .pftrace reader's names) and the writers (convert's trace,
 * diff --json). */
#ifndef NVS_CLI_JSON_TEXT_H
#define NVS_CLI_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the valid UTF-8 character at TEXT (1 to 4), or 0 when the
 * bytes there are not one (a writer puts U+FFFD in its place). */
size_t nvs_json_utf8_length(const char *text);

/* Whether the bytes AT..END (no NUL needed) are well-formed UTF-8. */
bool nvs_utf8_valid(const char *at, const char *end);

/* The bytes AT..END with each byte that does not begin a well-formed UTF-8
 * character written as U+FFFD, as nvs_json_quote writes it: a copy of
 * *LENGTH bytes to free, or NULL when out of memory. */
char *nvs_utf8_clean(const char *at, const char *end, size_t *length);

/* TEXT as a JSON string, quotes included, into OUT (at most SIZE bytes with
 * the NUL; 6 * strlen(TEXT) + 3 is always enough): '"', '\\' and control
 * characters escaped, bytes that are not UTF-8 replaced by \ufffd. Returns
 * the length written, or SIZE when it did not fit. */
size_t nvs_json_quote(char *out, size_t size, const char *text);

/* Text built piece by piece, such as the args of converted events; start from
 * {0}. After any add, bytes[length] is a NUL; once memory runs out FAILED is
 * set and nothing more is added. The caller frees BYTES. */
struct nvs_json_text {
    char *bytes;
    size_t length, capacity;
    bool failed;
};

/* FORMAT, as printf writes it, added at the end of TEXT. */
void nvs_json_text_add(struct nvs_json_text *text, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* "KEY":"VALUE" with VALUE quoted by nvs_json_quote; a comma first unless TEXT
 * is empty. */
void nvs_json_text_add_string_member(struct nvs_json_text *text, const char *key,
                                     const char *value);

#endif
