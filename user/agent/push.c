/* SPDX-License-Identifier: MIT */
/*
 * The pusher thread. The queue's head is the window being sent; it stays at
 * the head until the server took it or refused it for good, so a window is
 * never sent twice once accepted and never lost to a retry. When the queue
 * overflows, the oldest window that is not being sent right now is dropped.
 * Facts from Pyroscope's ingest handler: format=pprof takes the raw (gzipped)
 * body; 400 is a bad name, 422 a profile it will never take, 408/429 ask to
 * come back later.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/log.h"
#include "agent/push.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/file.h"
#include "core/stagecpu.h"

#define BACKOFF_MIN_NS 1000000000ull
#define BACKOFF_MAX_NS 30000000000ull
#define REQUEST_TIMEOUT_MS 10000L
#define CONNECT_TIMEOUT_MS 3000L
#define REFUSED_LOG_EVERY_NS 60000000000ull     /* a refused push is logged once a minute */
#define TOKEN_MAX 8192
#define REPLY_KEEP 128          /* of a push's answer, this much is read and logged: it is the server's text */
/* Pyroscope refuses a profile whose time is over an hour old: no use sending it. */
#define MAX_AGE_S 3600

struct item {
	char *name;
	uint64_t from_s, until_s;
	void *body;
	size_t len;
};

struct pusher {
	struct push_opts o;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct item *q;                 /* ring of o.queue_size, q[head] the oldest */
	uint32_t head, n;
	size_t bytes;                   /* of the queued bodies */
	bool sending;                   /* q[head] is being sent: not to be dropped */
	bool stopping;
	uint64_t deadline_ns;
	uint64_t backoff_ns, last_refused_log;
	struct push_stats st;
	CURL *curl;
};

static void item_free(struct item *it)
{
	free(it->name);
	free(it->body);
	memset(it, 0, sizeof(*it));
}

static struct item *at(struct pusher *p, uint32_t i)
{
	return &p->q[(p->head + i) % p->o.queue_size];
}

static void pop(struct pusher *p)
{
	p->bytes -= at(p, 0)->len;
	item_free(at(p, 0));
	p->head = (p->head + 1) % p->o.queue_size;
	p->n--;
}

/* Drop the oldest window not being sent (the queue is full). */
static void drop_one(struct pusher *p)
{
	uint32_t victim = p->sending ? 1 : 0;

	p->bytes -= at(p, victim)->len;
	item_free(at(p, victim));
	for (uint32_t i = victim; i + 1 < p->n; i++)
		*at(p, i) = *at(p, i + 1);
	memset(at(p, p->n - 1), 0, sizeof(struct item));
	p->n--;
	p->st.dropped++;
}

int push_enqueue(struct pusher *p, const char *name, uint64_t from_s, uint64_t until_s, void *body, size_t len)
{
	struct item it = { strdup(name), from_s, until_s, body, len };

	if (!it.name) {
		free(body);
		return -PBP_E_NOMEM;
	}
	pthread_mutex_lock(&p->lock);
	while (p->n > (p->sending ? 1u : 0u) && (p->n == p->o.queue_size || p->bytes + len > p->o.queue_bytes)) {
		drop_one(p);
		alog(LOG_WARN, "push queue full: oldest window dropped", "queue_size=%u queue_bytes=%zu dropped_total=%llu",
		     p->o.queue_size, p->bytes, (unsigned long long)p->st.dropped);
	}
	if (p->n < p->o.queue_size) {
		*at(p, p->n++) = it;
		p->bytes += len;
		it.name = NULL, it.body = NULL;
	} else {
		p->st.dropped++;        /* a queue of one, busy sending: the new window goes */
	}
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	item_free(&it);
	return 0;
}

/*
 * "Bearer TOKEN" from the file, read now: a projected token is rotated by
 * the kubelet. One that cannot be read (gone, not a regular file: a FIFO
 * would hold the push thread forever, longer than TOKEN_MAX) fails the push
 * rather than send it without: *why says why, and the window is retried
 * like any push that got no answer, so a token that comes later is used.
 */
static struct curl_slist *auth_header(const struct push_opts *o, struct curl_slist *h, const char **why)
{
	char line[TOKEN_MAX + 32], *tok = NULL;
	size_t len;
	int err;

	*why = NULL;
	if (!o->bearer_token_file)
		return h;
	err = file_read(o->bearer_token_file, TOKEN_MAX - 1, &tok, &len);
	if (err) {
		*why = err == -PBP_E_IO && errno == ENOENT ? "bearer token file missing" :
		       err == -PBP_E_INVAL ? "bearer token file not a regular file" :
		       err == -PBP_E_LIMIT ? "bearer token longer than 8191 bytes" : "bearer token unreadable";
		return h;
	}
	tok[strcspn(tok, "\r\n")] = '\0';
	if (*tok) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
		h = curl_slist_append(h, line);
	} else {
		*why = "bearer token file empty";
	}
	free(tok);
	return h;
}

/* URL/ingest?name=...&from=&until=&format=pprof&sampleRate=&spyName=pybpfprof, every value escaped. */
static char *ingest_url(struct pusher *p, const struct item *it)
{
	char *name = curl_easy_escape(p->curl, it->name, 0), *url = NULL;
	size_t base = strlen(p->o.url);

	while (base && p->o.url[base - 1] == '/')
		base--;
	if (name && asprintf(&url, "%.*s/ingest?name=%s&from=%llu&until=%llu&format=pprof&sampleRate=%u"
			     "&spyName=pybpfprof", (int)base, p->o.url, name, (unsigned long long)it->from_s,
			     (unsigned long long)it->until_s, p->o.sample_rate) < 0)
		url = NULL;
	curl_free(name);
	return url;
}

/* The start of the answer's body; the rest is not read (the transfer stops there). */
struct reply {
	char text[REPLY_KEEP];
	size_t len;
	bool cut;
};

static size_t keep_reply(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t room = sizeof(r->text) - r->len, take = n < room ? n : room;

	(void)size;     /* always 1 (libcurl's documentation) */
	memcpy(r->text + r->len, data, take);
	r->len += take;
	if (take < n) {
		r->cut = true;
		return 0;       /* a 10 MB error page is not read: libcurl stops with a write error */
	}
	return n;
}

/*
 * The answer as one log value: bytes that are not printable ASCII, '=' (a
 * forged " key=" would start a pair of its own in alog), quotes and
 * backslashes as \xNN; "..." when it was longer.
 */
static void reply_text(const struct reply *r, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < r->len && o + 5 < len; i++) {
		unsigned char ch = (unsigned char)r->text[i];

		if (ch < 0x20 || ch >= 0x7f || ch == '=' || ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	if (r->cut && o + 4 < len)
		memcpy(out + o, "...", 3), o += 3;
	out[o] = '\0';
	if (!o)
		snprintf(out, len, "-");
}

/* Once SIGTERM's deadline passed, a transfer under way stops (a hung server would hold it for REQUEST_TIMEOUT_MS). */
static int check_deadline(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct pusher *p = arg;
	bool late;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	pthread_mutex_lock(&p->lock);
	late = p->stopping && mono_ns() >= p->deadline_ns;
	pthread_mutex_unlock(&p->lock);
	return late;    /* non-zero: libcurl aborts (CURLE_ABORTED_BY_CALLBACK) */
}

/*
 * Why a push failed, in our words: libcurl's own (its error buffer) go
 * after it as detail, as they name the host and port but word the cause
 * by its code ("Couldn't connect to server" for a refusal).
 */
static const struct {
	CURLcode rc;
	const char *cause;
} causes[] = {
	{ CURLE_COULDNT_RESOLVE_HOST, "host name not found" },
	{ CURLE_OPERATION_TIMEDOUT, "timed out" },
	{ CURLE_ABORTED_BY_CALLBACK, "cut at shutdown" },
	{ CURLE_SSL_CONNECT_ERROR, "TLS failed" },
	{ CURLE_PEER_FAILED_VERIFICATION, "TLS failed" },
	{ CURLE_SSL_CERTPROBLEM, "TLS failed" },
	{ CURLE_SSL_CIPHER, "TLS failed" },
	{ CURLE_SSL_CACERT_BADFILE, "TLS failed" },
	{ CURLE_SSL_ISSUER_ERROR, "TLS failed" },
	{ CURLE_SSL_PINNEDPUBKEYNOTMATCH, "TLS failed" },
	{ CURLE_SSL_INVALIDCERTSTATUS, "TLS failed" },
	{ CURLE_GOT_NOTHING, "connection lost before an answer" },
	{ CURLE_RECV_ERROR, "connection lost before an answer" },
	{ CURLE_SEND_ERROR, "connection lost before an answer" },
	{ CURLE_PARTIAL_FILE, "connection lost before an answer" },
	{ CURLE_OUT_OF_MEMORY, "out of memory" },
};

static const char *failure_cause(CURLcode rc, long os_errno, long status, char *out, size_t len)
{
	const char *cause = curl_easy_strerror(rc);

	if (rc == CURLE_OK || rc == CURLE_WRITE_ERROR) {  /* an answer, maybe cut after its start (keep_reply) */
		snprintf(out, len, "HTTP status %ld", status);
		return out;
	}
	if (rc == CURLE_COULDNT_CONNECT)
		cause = os_errno == ECONNREFUSED ? "connection refused" : os_errno ? strerror((int)os_errno)
			: "cannot connect";
	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (causes[i].rc == rc)
			cause = causes[i].cause;
	snprintf(out, len, "%s", cause);
	return out;
}

/* One POST: the HTTP status, or 0 when no answer came; *cause says why it failed, if it did. */
static long post(struct pusher *p, const struct item *it, long timeout_ms, char *err, size_t errlen,
		 struct reply *r, char *cause, size_t causelen)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
	char tenant[512], *url = ingest_url(p, it);
	const char *no_token;
	long status = 0, os_errno = 0;
	CURLcode rc;

	if (p->o.tenant) {
		snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", p->o.tenant);
		h = curl_slist_append(h, tenant);
	}
	h = auth_header(&p->o, h, &no_token);
	if (no_token) {         /* not sent: settled as a push that got no answer, retried */
		*r = (struct reply){ .len = 0 };
		snprintf(cause, causelen, "%s", no_token);
		snprintf(err, errlen, "file=%s", p->o.bearer_token_file);
		curl_slist_free_all(h);
		free(url);
		return 0;
	}
	curl_easy_reset(p->curl);
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, it->body);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms :
			 CONNECT_TIMEOUT_MS);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, keep_reply);
	curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, check_deadline);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
	if (p->o.basic_auth) {
		curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(p->curl, CURLOPT_USERPWD, p->o.basic_auth);
	}
	err[0] = '\0';
	*r = (struct reply){ .len = 0 };
	rc = url ? curl_easy_perform(p->curl) : CURLE_OUT_OF_MEMORY;
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && r->cut))
		curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	else if (!err[0])
		snprintf(err, errlen, "%s", curl_easy_strerror(rc));
	if (rc == CURLE_WRITE_ERROR && !r->cut)
		rc = CURLE_RECV_ERROR;  /* not ours: the write callback takes every byte it keeps */
	curl_easy_getinfo(p->curl, CURLINFO_OS_ERRNO, &os_errno);
	failure_cause(rc, os_errno, status, cause, causelen);
	curl_slist_free_all(h);
	free(url);
	return status;
}

static bool retryable(long status)
{
	return status == 0 || status == 408 || status == 429 || status >= 500;
}

/* Doubling from 1 s to 30 s, each wait drawn in [half, whole] so that agents do not come back together. */
static uint64_t next_backoff(struct pusher *p)
{
	uint64_t b = p->backoff_ns ? p->backoff_ns * 2 : BACKOFF_MIN_NS;

	p->backoff_ns = b > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : b;
	return p->backoff_ns / 2 + (uint64_t)rand() % (p->backoff_ns / 2 + 1);
}

/* The head was sent with this outcome (lock held): pop it, or keep it and say when to retry. */
static uint64_t settle(struct pusher *p, long status, const char *cause, const char *err, const struct reply *r)
{
	struct item *it = at(p, 0);
	uint64_t now = mono_ns(), wait = 0;
	char body[REPLY_KEEP * 4 + 8];

	reply_text(r, body, sizeof(body));
	if (status >= 200 && status < 300) {
		p->st.pushes++;
		p->st.bytes += it->len;
		p->backoff_ns = 0;
		alog(LOG_DEBUG, "pushed", "name=%s bytes=%zu body=%s", it->name, it->len, body);
	} else if (retryable(status)) {
		p->st.errors++;
		wait = next_backoff(p);
		alog(LOG_WARN, "push failed, will retry",
		     "cause=%s name=%s status=%ld retry_in_ms=%llu body=%s detail=%s", cause, it->name, status,
		     (unsigned long long)(wait / 1000000), body, status ? "-" : err[0] ? err : "-");
		return now + wait;
	} else {
		p->st.errors++;
		p->st.rejected++;
		if (!p->last_refused_log || now - p->last_refused_log >= REFUSED_LOG_EVERY_NS) {
			p->last_refused_log = now;
			alog(LOG_ERROR, "push refused, window dropped (said once a minute)",
			     "cause=%s name=%s status=%ld rejected_total=%llu body=%s", cause, it->name, status,
			     (unsigned long long)p->st.rejected, body);
		}
	}
	pop(p);
	return 0;
}

/* Wait for work, a retry time or the deadline (lock held): false when the thread is done. */
static bool wait_turn(struct pusher *p, uint64_t retry_at)
{
	for (;;) {
		uint64_t now = mono_ns(), until = retry_at;
		struct timespec ts;

		if (p->stopping && (now >= p->deadline_ns || !p->n))
			return false;
		if (p->n && now >= retry_at)
			return true;
		if (p->stopping && (!until || until > p->deadline_ns))
			until = p->deadline_ns;
		if (!until) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)((until - now) / 1000000000ull);
		ts.tv_nsec += (long)((until - now) % 1000000000ull);
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
}

static void *push_thread(void *arg)
{
	struct pusher *p = arg;
	uint64_t retry_at = 0;
	char err[CURL_ERROR_SIZE], cause[64];
	struct reply r;

	stagecpu_thread(STAGE_HTTP);       /* the whole thread is pushing */
	pthread_mutex_lock(&p->lock);
	while (wait_turn(p, retry_at)) {
		struct item it = *at(p, 0);
		long timeout = REQUEST_TIMEOUT_MS, status;

		if (it.until_s + MAX_AGE_S < (uint64_t)time(NULL)) {
			p->st.dropped++;
			alog(LOG_WARN, "window older than an hour dropped unsent", "name=%s", it.name);
			pop(p);
			continue;
		}
		if (p->stopping)
			timeout = (long)((p->deadline_ns - mono_ns()) / 1000000) + 1;
		p->sending = true;
		pthread_mutex_unlock(&p->lock);
		status = post(p, &it, timeout, err, sizeof(err), &r, cause, sizeof(cause));
		stagecpu_flush();
		pthread_mutex_lock(&p->lock);
		p->sending = false;
		retry_at = settle(p, status, cause, err, &r);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

bool push_url_valid(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
		  curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
		  (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);

	curl_free(scheme);
	curl_url_cleanup(u);
	return ok;
}

/* Waits are on the monotonic clock: a wall-clock step must not stall or rush retries. */
static void init_sync(struct pusher *p)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
}

int push_start(const struct push_opts *o, struct pusher **out)
{
	struct pusher *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto fail;
	p->o = *o;
	p->q = calloc(o->queue_size, sizeof(*p->q));
	p->curl = curl_easy_init();
	init_sync(p);
	if (p->q && p->curl && pthread_create(&p->thread, NULL, push_thread, p) == 0) {
		*out = p;
		return 0;
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
fail:
	if (p) {
		curl_easy_cleanup(p->curl);
		free(p->q);
	}
	free(p);
	return -PBP_E_NOMEM;
}

void push_stats(struct pusher *p, struct push_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->queued = p->n;
	st->queued_bytes = p->bytes;
	pthread_mutex_unlock(&p->lock);
}

void push_stop(struct pusher *p, uint64_t deadline_ns)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->deadline_ns = deadline_ns;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (p->n)
		alog(LOG_WARN, "stopping: windows not pushed", "windows=%u", p->n);
	while (p->n)
		pop(p);
	curl_easy_cleanup(p->curl);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->q);
	free(p);
}
