/* errors.c — names and retriability of Kafka error codes (table in kp_errors.h). */
#include "protocol/kp_errors.h"

#include <stddef.h>

typedef struct {
    int16_t code;
    const char *name;
    bool retriable;
} err_row_t;

static const err_row_t rows[] = {
#define ROW_(code, name, retriable) { (code), #name, (retriable) != 0 },
    KP_ERROR_LIST(ROW_)
#undef ROW_
};

/* Codes run from -1 up without gaps, so the row of code c is rows[c + 1];
 * find() still checks the code it lands on. */
static const err_row_t *find(int16_t code) {
    int idx = code + 1;
    if (idx < 0 || (size_t)idx >= sizeof rows / sizeof rows[0]) return NULL;
    return rows[idx].code == code ? &rows[idx] : NULL;
}

const char *kp_error_name(int16_t code) {
    const err_row_t *r = find(code);
    return r ? r->name : "UNKNOWN";
}

bool kp_error_retriable(int16_t code) {
    const err_row_t *r = find(code);
    return r && r->retriable;
}

bool kp_error_known(int16_t code) { return find(code) != NULL; }
