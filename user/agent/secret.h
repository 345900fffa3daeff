/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_SECRET_H
#define PBP_AGENT_SECRET_H

#include <gnutls/abstract.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * What the agent's server is locked with, each read from files that a
 * Kubernetes Secret mounts and rotates (a new file swapped in through a
 * symbolic link): looked at again at most once a second, taken again when
 * its inode, size or time changed. A rotation that cannot be read keeps the
 * one before and is logged.
 */

/* The bearer token every request but /healthz must carry. */
struct token;
/* Read it now: 0, -PBP_E_IO (errno kept: what to say), -PBP_E_INVAL (empty). */
int token_open(const char *path, struct token **out);
/* An "Authorization" header's value: is it "Bearer " and the token? */
bool token_accepts(struct token *t, const char *authorization);
void token_free(struct token *t);

/*
 * The TLS certificate (chain) and key, served through libmicrohttpd's
 * certificate callback so that a rotated pair is used without a restart.
 * One pair per process (GnuTLS's callback carries no context).
 */
struct tls_pair;
/* Load both now: 0, -PBP_E_IO (errno kept), -PBP_E_INVAL (not PEM, or the key not the certificate's). */
int tls_pair_open(const char *cert, const char *key, struct tls_pair **out);
/* The gnutls_certificate_retrieve_function2 to give MHD_OPTION_HTTPS_CERT_CALLBACK. */
gnutls_certificate_retrieve_function2 *tls_pair_callback(void);
void tls_pair_free(struct tls_pair *p);

#endif /* PBP_AGENT_SECRET_H */
