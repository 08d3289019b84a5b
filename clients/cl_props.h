/* cl_props.h — client security settings and the properties file that holds
 * them (skiffctl --command-config FILE).
 *
 * The file is a Java/librdkafka-style properties file: one `key=value` per
 * line, lines starting with '#' or '!' and blank lines ignored, whitespace
 * around the key and around the value dropped (no backslash escapes or
 * continuation lines). Keys are librdkafka's names:
 *
 *   security.protocol                      plaintext|ssl|sasl_plaintext|sasl_ssl (any case)
 *   sasl.mechanism (or sasl.mechanisms)    PLAIN|SCRAM-SHA-256|SCRAM-SHA-512
 *   sasl.username, sasl.password
 *   ssl.ca.location                        PEM file of trusted CAs (else the system's)
 *   ssl.certificate.location, ssl.key.location, ssl.key.password   mutual TLS
 *   ssl.endpoint.identification.algorithm  https (default: the broker's name or
 *                                          address must match its certificate) | none
 *   admin.username, admin.password         HTTP Basic credentials for the admin port
 *
 * An unknown key, a bad value, a key given for a protocol that would not use
 * it, or a missing one the protocol needs is refused as "FILE:LINE: ...".
 * Bounds: the file is at most CL_PROPS_FILE_MAX_BYTES, a line at most
 * CL_PROPS_LINE_MAX_BYTES, a value at most CL_PROPS_VALUE_BYTES - 1 bytes.
 */
#ifndef SKIFF_CL_PROPS_H
#define SKIFF_CL_PROPS_H

#include <stdbool.h>
#include <stddef.h>

#include "clients/cl_err.h"

#define CL_PROPS_FILE_MAX_BYTES ((size_t)64 << 10)
#define CL_PROPS_LINE_MAX_BYTES 4096
#define CL_PROPS_VALUE_BYTES 1024

typedef enum cl_sec_proto {
    CL_SEC_PLAINTEXT = 0,
    CL_SEC_SSL,
    CL_SEC_SASL_PLAINTEXT,
    CL_SEC_SASL_SSL,
} cl_sec_proto_t;

typedef enum cl_sasl_mech {
    CL_SASL_NONE = 0,
    CL_SASL_PLAIN,
    CL_SASL_SCRAM_SHA_256,
    CL_SASL_SCRAM_SHA_512,
} cl_sasl_mech_t;

/* How a client connects. Zeroed (cl_sec_init) = PLAINTEXT, no SASL. */
typedef struct cl_sec {
    cl_sec_proto_t protocol;
    cl_sasl_mech_t mechanism;
    bool verify_hostname;                 /* ssl.endpoint.identification.algorithm=https */
    char username[CL_PROPS_VALUE_BYTES];
    char password[CL_PROPS_VALUE_BYTES];
    char ca_location[CL_PROPS_VALUE_BYTES];   /* "" = the system's trust store */
    char cert_location[CL_PROPS_VALUE_BYTES]; /* "" = no client certificate */
    char key_location[CL_PROPS_VALUE_BYTES];
    char key_password[CL_PROPS_VALUE_BYTES];
    char admin_username[CL_PROPS_VALUE_BYTES]; /* "" = no Basic auth on the admin port */
    char admin_password[CL_PROPS_VALUE_BYTES];
} cl_sec_t;

/* PLAINTEXT, no SASL, hostname verification on (as librdkafka). */
void cl_sec_init(cl_sec_t *s);
static inline bool cl_sec_tls(const cl_sec_t *s) {
    return s && (s->protocol == CL_SEC_SSL || s->protocol == CL_SEC_SASL_SSL);
}
static inline bool cl_sec_sasl(const cl_sec_t *s) {
    return s && (s->protocol == CL_SEC_SASL_PLAINTEXT || s->protocol == CL_SEC_SASL_SSL);
}
/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL". */
const char *cl_sec_proto_name(cl_sec_proto_t p);
/* Kafka's mechanism name ("PLAIN", "SCRAM-SHA-256", ...), "" for NONE. */
const char *cl_sasl_mech_name(cl_sasl_mech_t m);
/* Mechanism by Kafka name (case-insensitive); CL_SASL_NONE when unknown. */
cl_sasl_mech_t cl_sasl_mech_parse(const char *name);

/* Parses buf[0..len) (need not be NUL-terminated) into *out, which starts
 * from cl_sec_init. `fname` only names the file in messages. On error
 * returns CL_E_USAGE with "FILE:LINE: ..." and leaves *out unspecified. */
CL_MUST_CHECK int cl_props_parse(const char *buf, size_t len, const char *fname, cl_sec_t *out, cl_err_t *e);
/* Reads `path` (at most CL_PROPS_FILE_MAX_BYTES) and parses it. A file that
 * cannot be read is CL_E_USAGE naming it and the reason. */
CL_MUST_CHECK int cl_props_load(const char *path, cl_sec_t *out, cl_err_t *e);

#endif
