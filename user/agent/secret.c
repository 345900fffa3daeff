/* SPDX-License-Identifier: MIT */
/*
 * Files re-read when they change, for the token and the TLS pair. Both are
 * read on libmicrohttpd's one thread (a request, a handshake), so their
 * state needs no lock; a TLS pair replaced stays allocated until the end,
 * because a handshake under way may still hold it (rotations are rare: a
 * few pairs a year).
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/secret.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/file.h"

#define FILE_MAX (1 << 20)      /* a token, a certificate chain or a key is far smaller */
#define RECHECK_NS 1000000000ull
#define CHAIN_MAX 16

/* What says a file changed: a swapped symbolic link gives another inode. */
struct stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

static int stamp_of(const char *path, struct stamp *s)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return -PBP_E_IO;
	*s = (struct stamp){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
	return 0;
}

static bool stamp_same(const struct stamp *a, const struct stamp *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/*
 * The whole file, NUL-terminated: 0, or -PBP_E_IO with errno saying why
 * for the one message (EFBIG over FILE_MAX, EINVAL not a regular file).
 */
static int slurp(const char *path, char **out, size_t *len)
{
	int err = file_read(path, FILE_MAX, out, len);

	if (err == -PBP_E_LIMIT || err == -PBP_E_INVAL)
		errno = err == -PBP_E_LIMIT ? EFBIG : EINVAL;
	else if (err == -PBP_E_NOMEM)
		errno = ENOMEM;
	return err ? -PBP_E_IO : 0;
}

/* ------------------------------------------------------------- token */

struct token {
	const char *path;
	char *value;
	size_t len;
	struct stamp stamp;
	uint64_t checked_ns;
	bool warned;
};

/*
 * The file's first line, without its end and the blanks around it (as
 * Prometheus' and Alloy's credentials_file are read: a token a scraper
 * sends trimmed must match): 0, -PBP_E_IO or -PBP_E_INVAL (empty).
 */
static int token_read(struct token *t)
{
	struct stamp s;
	char *buf;
	size_t len, lead;
	int err = stamp_of(t->path, &s);

	if (!err)
		err = slurp(t->path, &buf, &len);
	if (err)
		return err;
	len = strcspn(buf, "\r\n");
	lead = strspn(buf, " \t");
	if (lead > len)
		lead = len;
	memmove(buf, buf + lead, len - lead);
	len -= lead;
	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	buf[len] = '\0';
	if (!len) {
		free(buf);
		return -PBP_E_INVAL;
	}
	free(t->value);
	t->value = buf;
	t->len = len;
	t->stamp = s;
	return 0;
}

int token_open(const char *path, struct token **out)
{
	struct token *t = calloc(1, sizeof(*t));
	int err;

	*out = NULL;
	if (!t)
		return -PBP_E_NOMEM;
	t->path = path;
	t->checked_ns = mono_ns();
	err = token_read(t);
	if (err) {
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

/* A rotation: the new token once it reads; until then the old one holds. */
static void token_refresh(struct token *t)
{
	uint64_t now = mono_ns();
	struct stamp s;
	int err;

	if (now - t->checked_ns < RECHECK_NS)
		return;
	t->checked_ns = now;
	if (stamp_of(t->path, &s) == 0 && stamp_same(&s, &t->stamp))
		return;
	err = token_read(t);
	if (!err) {
		t->warned = false;
		alog(LOG_INFO, "listen token reloaded", "file=%s", t->path);
	} else if (!t->warned) {
		t->warned = true;
		alog(LOG_WARN, "listen token unreadable, the previous one still holds", "file=%s error=%s", t->path,
		     err == -PBP_E_INVAL ? "empty" : strerror(errno));
	}
}

bool token_accepts(struct token *t, const char *authorization)
{
	static const char scheme[] = "Bearer ";
	unsigned char diff = 0;
	size_t n;

	token_refresh(t);
	if (!authorization || strncasecmp(authorization, scheme, sizeof(scheme) - 1) != 0)
		return false;
	authorization += sizeof(scheme) - 1;
	n = strlen(authorization);
	if (n != t->len)
		return false;
	/* every byte compared: the time taken says nothing of how much matched */
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(authorization[i] ^ t->value[i]);
	return diff == 0;
}

void token_free(struct token *t)
{
	if (!t)
		return;
	free(t->value);
	free(t);
}

/* ------------------------------------------------------------- TLS pair */

struct keys {
	struct keys *older;
	gnutls_pcert_st chain[CHAIN_MAX];
	unsigned n;
	gnutls_privkey_t key;
};

struct tls_pair {
	const char *cert_path, *key_path;
	struct stamp cert_stamp, key_stamp;
	struct keys *keys;              /* the newest; older ones behind it */
	uint64_t checked_ns;
	bool warned;
};

static struct tls_pair *the_pair;

static void keys_free(struct keys *k)
{
	while (k) {
		struct keys *older = k->older;

		for (unsigned i = 0; i < k->n; i++)
			gnutls_pcert_deinit(&k->chain[i]);
		if (k->key)
			gnutls_privkey_deinit(k->key);
		free(k);
		k = older;
	}
}

/* Is key the private half of the leaf's public key? A pair caught half rotated is not. */
static bool key_matches(gnutls_pcert_st *leaf, gnutls_privkey_t key)
{
	gnutls_datum_t a = { NULL, 0 }, b = { NULL, 0 };
	gnutls_pubkey_t pub;
	bool same = false;

	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
	    gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) == 0 &&
	    gnutls_pubkey_export2(leaf->pubkey, GNUTLS_X509_FMT_DER, &b) == 0)
		same = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
	gnutls_free(a.data);
	gnutls_free(b.data);
	gnutls_pubkey_deinit(pub);
	return same;
}

/* Both files as they are now: 0, -PBP_E_IO (errno), -PBP_E_INVAL, -PBP_E_NOMEM. */
static int keys_load(const char *cert_path, const char *key_path, struct keys **out)
{
	struct keys *k = calloc(1, sizeof(*k));
	char *cert = NULL, *key = NULL;
	size_t cert_len = 0, key_len = 0;
	int err = k ? slurp(cert_path, &cert, &cert_len) : -PBP_E_NOMEM;

	if (!err)
		err = slurp(key_path, &key, &key_len);
	if (!err) {
		gnutls_datum_t c = { (unsigned char *)cert, (unsigned)cert_len };
		gnutls_datum_t p = { (unsigned char *)key, (unsigned)key_len };

		k->n = CHAIN_MAX;
		if (gnutls_pcert_list_import_x509_raw(k->chain, &k->n, &c, GNUTLS_X509_FMT_PEM, 0) < 0)
			k->n = 0;
		if (!k->n || gnutls_privkey_init(&k->key) < 0 ||
		    gnutls_privkey_import_x509_raw(k->key, &p, GNUTLS_X509_FMT_PEM, NULL, 0) < 0 ||
		    !key_matches(&k->chain[0], k->key))
			err = -PBP_E_INVAL;
	}
	if (key)
		memset(key, 0, key_len);        /* the key's text is not left in freed memory */
	free(cert);
	free(key);
	if (err) {
		keys_free(k);
		return err;
	}
	*out = k;
	return 0;
}

int tls_pair_open(const char *cert, const char *key, struct tls_pair **out)
{
	struct tls_pair *p = calloc(1, sizeof(*p));
	int err = p ? 0 : -PBP_E_NOMEM;

	*out = NULL;
	if (!err) {
		p->cert_path = cert;
		p->key_path = key;
		p->checked_ns = mono_ns();
		err = stamp_of(cert, &p->cert_stamp);
	}
	if (!err)
		err = stamp_of(key, &p->key_stamp);
	if (!err)
		err = keys_load(cert, key, &p->keys);
	if (err) {
		free(p);
		return err;
	}
	the_pair = p;
	*out = p;
	return 0;
}

static void pair_refresh(struct tls_pair *p)
{
	uint64_t now = mono_ns();
	struct stamp cs, ks;
	struct keys *k;
	int err;

	if (now - p->checked_ns < RECHECK_NS)
		return;
	p->checked_ns = now;
	if (stamp_of(p->cert_path, &cs) == 0 && stamp_of(p->key_path, &ks) == 0 &&
	    stamp_same(&cs, &p->cert_stamp) && stamp_same(&ks, &p->key_stamp))
		return;
	err = keys_load(p->cert_path, p->key_path, &k);
	if (!err) {
		k->older = p->keys;
		p->keys = k;
		p->cert_stamp = cs;
		p->key_stamp = ks;
		p->warned = false;
		alog(LOG_INFO, "TLS certificate reloaded", "cert=%s", p->cert_path);
	} else if (!p->warned) {
		/* a pair half rotated (the certificate new, the key not yet) reads again next time */
		p->warned = true;
		alog(LOG_WARN, "TLS certificate unreadable, the previous one still holds", "cert=%s error=%s",
		     p->cert_path, err == -PBP_E_IO ? strerror(errno) : "not a PEM certificate and key");
	}
}

static int retrieve(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
		    const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **chain, unsigned *n,
		    gnutls_privkey_t *key)
{
	(void)s, (void)req_ca_dn, (void)nreqs, (void)algos, (void)nalgos;
	if (!the_pair)
		return -1;
	pair_refresh(the_pair);
	*chain = the_pair->keys->chain;
	*n = the_pair->keys->n;
	*key = the_pair->keys->key;
	return 0;
}

gnutls_certificate_retrieve_function2 *tls_pair_callback(void)
{
	return retrieve;
}

void tls_pair_free(struct tls_pair *p)
{
	if (!p)
		return;
	if (the_pair == p)
		the_pair = NULL;
	keys_free(p->keys);
	free(p);
}
