#include <stdlib.h>
#include "broker/fetch.h"
struct bk_fetch_state { int x; };
bk_fetch_state_t *bk_fetch_new(bk_node_t *n) { (void)n; return calloc(1, sizeof(bk_fetch_state_t)); }
void bk_fetch_free(bk_fetch_state_t *f) { free(f); }
void bk_fetch_flush(bk_fetch_state_t *f) { (void)f; }
void bk_fetch_notify(bk_fetch_state_t *f, const bk_part_t *p) { (void)f; (void)p; }
