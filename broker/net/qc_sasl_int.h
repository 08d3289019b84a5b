/* broker/net/qc_sasl_int.h — private to quorum_client.c and qc_sasl.c: the
 * client side of SASL on a peer connection (SaslHandshake v1, then
 * SaslAuthenticate v1 with PLAIN or SCRAM-SHA-256/512 tokens from
 * protocol/kp_sasl.h), before any other request goes out. */
#ifndef SKIFF_BK_NET_QC_SASL_INT_H
#define SKIFF_BK_NET_QC_SASL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "broker/net/quorum_client.h"
#include "protocol/kp_sasl.h"

struct evbuffer;

typedef struct qc_sasl {
    int step;               /* 0 handshake sent, 1.. authenticate rounds */
    kp_sasl_mech_t mech;
    kp_scram_client_t scram;
    int32_t corr;
} qc_sasl_t;

/* Queues the SaslHandshake request (size prefix included) on out. 0, or
 * -1 with why (unknown mechanism, no user). */
int qc_sasl_start(qc_sasl_t *s, const bk_net_qc_security_t *sec, struct evbuffer *out, char *why, size_t why_len);
/* One response frame (after the size prefix). 1: authenticated; 0: the
 * next request is queued on out; -1: refused or malformed (why). */
int qc_sasl_on_frame(qc_sasl_t *s, const bk_net_qc_security_t *sec, const uint8_t *frame, size_t len,
                     struct evbuffer *out, char *why, size_t why_len);

#endif
