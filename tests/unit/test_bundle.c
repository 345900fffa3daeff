/* SPDX-License-Identifier: MIT */
/*
 * bundle_parse on config.json texts as containerd and CRI-O write them, and
 * on hostile ones; bundle_read on both runtimes' layouts built in a
 * temporary directory used as the root, and on what must be refused there
 * (symbolic links, FIFOs, huge files, ids that are not ids).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"
#include "proc/bundle.h"
#include "unit.h"

#define ID1 "3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e"
#define ID2 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define ID3 "0000000000000000000000000000000000000000000000000000000000000003"
#define UID "8a0f1c2e-5b7d-4e3a-9c1f-2d4b6a8e0c13"

#define CTRD_DIR "run/containerd/io.containerd.runtime.v2.task/k8s.io"
#define CRIO_DIR "run/containers/storage/overlay-containers"

/* Trimmed from what containerd 1.7 writes for a container of a Deployment's pod. */
static const char CONTAINERD_JSON[] =
	"{\"ociVersion\":\"1.1.0\",\"process\":{\"args\":[\"python3\",\"app.py\"]},"
	"\"annotations\":{"
	"\"io.kubernetes.cri.container-name\":\"web\","
	"\"io.kubernetes.cri.container-type\":\"container\","
	"\"io.kubernetes.cri.image-name\":\"docker.io/library/python:3.12\","
	"\"io.kubernetes.cri.sandbox-id\":\"" ID2 "\","
	"\"io.kubernetes.cri.sandbox-name\":\"shop-7d9c6b5f4-x2x7q\","
	"\"io.kubernetes.cri.sandbox-namespace\":\"prod\","
	"\"io.kubernetes.cri.sandbox-uid\":\"" UID "\"}}";

/* Trimmed from CRI-O's: its own keys, the kubelet's labels, a pod annotation. */
static const char CRIO_JSON[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"annotations\":{"
	"\"io.container.manager\":\"cri-o\","
	"\"io.kubernetes.cri-o.ContainerType\":\"container\","
	"\"io.kubernetes.cri-o.Labels\":\"{\\\"io.kubernetes.pod.name\\\":\\\"shop-7d9c6b5f4-x2x7q\\\"}\","
	"\"io.kubernetes.container.name\":\"worker\","
	"\"io.kubernetes.pod.name\":\"shop-7d9c6b5f4-x2x7q\","
	"\"io.kubernetes.pod.namespace\":\"staging\","
	"\"io.kubernetes.pod.uid\":\"" UID "\","
	"\"kubectl.kubernetes.io/default-container\":\"worker\"}}";

/* The pause container of a pod (containerd): no container name. */
static const char SANDBOX_JSON[] =
	"{\"annotations\":{\"io.kubernetes.cri.container-type\":\"sandbox\","
	"\"io.kubernetes.cri.sandbox-name\":\"shop-7d9c6b5f4-x2x7q\","
	"\"io.kubernetes.cri.sandbox-namespace\":\"prod\","
	"\"io.kubernetes.cri.sandbox-log-directory\":\"/var/log/pods/x\"}}";

static struct kube_meta km;
static char tmp[64];

static int parse(const char *text)
{
	memset(&km, 0x5a, sizeof(km));
	return bundle_parse(text, strlen(text), &km);
}

#define EXPECT_META(ns_, pod_, ctr_, uid_, rt_) do { \
	CHECK_EQ_STR(km.namespace_, ns_); \
	CHECK_EQ_STR(km.pod, pod_); \
	CHECK_EQ_STR(km.container, ctr_); \
	CHECK_EQ_STR(km.pod_uid, uid_); \
	CHECK_EQ_STR(km.runtime, rt_); \
} while (0)

static bool all_empty(void)
{
	return !km.namespace_[0] && !km.pod[0] && !km.container[0] && !km.pod_uid[0] && !km.runtime[0];
}

static void test_parse_runtimes(void)
{
	CHECK_EQ_INT(parse(CONTAINERD_JSON), 0);
	EXPECT_META("prod", "shop-7d9c6b5f4-x2x7q", "web", UID, "containerd");
	CHECK_EQ_INT(parse(CRIO_JSON), 0);
	EXPECT_META("staging", "shop-7d9c6b5f4-x2x7q", "worker", UID, "cri-o");
	/* a sandbox: what is there, the container name empty */
	CHECK_EQ_INT(parse(SANDBOX_JSON), 0);
	EXPECT_META("prod", "shop-7d9c6b5f4-x2x7q", "", "", "containerd");
	/* annotations, but none of Kubernetes (a plain runc or Docker bundle): 0, nothing */
	CHECK_EQ_INT(parse("{\"annotations\":{\"org.opencontainers.image.title\":\"x\"}}"), 0);
	CHECK(all_empty());
	CHECK_EQ_INT(parse("{\"annotations\":{}}"), 0);
	CHECK(all_empty());
}

static void test_parse_refused(void)
{
	static const char *bad[] = {
		"", "   ", "{", "{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"a\"}",
		"null", "[]", "\"annotations\"", "42",
		"{\"ociVersion\":\"1.1.0\"}",                   /* no annotations */
		"{\"annotations\":[\"io.kubernetes.cri.sandbox-name=a\"]}",
		"{\"annotations\":\"io.kubernetes.cri.sandbox-name\"}",
		"{\"annotations\":null}",
		"{\"annotations\":{\"a\":\"b\"}} trailing",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(parse(bad[i]), -PBP_E_CORRUPT);
		CHECK(all_empty());
	}
	memset(&km, 0x5a, sizeof(km));
	CHECK_EQ_INT(bundle_parse(NULL, 0, &km), -PBP_E_CORRUPT);
	CHECK(all_empty());
	/* the length is what counts: a valid prefix is not read past len */
	memset(&km, 0x5a, sizeof(km));
	CHECK_EQ_INT(bundle_parse(SANDBOX_JSON, 10, &km), -PBP_E_CORRUPT);
}

static void test_parse_values(void)
{
	/* not strings: ignored; keys are case-sensitive */
	CHECK_EQ_INT(parse("{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":7,"
			   "\"io.kubernetes.cri.sandbox-namespace\":\"ns\","
			   "\"IO.KUBERNETES.CRI.CONTAINER-NAME\":\"x\","
			   "\"io.kubernetes.cri.container-name\":{\"a\":\"b\"}}}"), 0);
	EXPECT_META("ns", "", "", "", "containerd");
	/* containerd's keys in a CRI-O-looking bundle still win: parse has no layout to go by */
	CHECK_EQ_INT(parse("{\"annotations\":{\"io.kubernetes.pod.name\":\"real\","
			   "\"io.kubernetes.cri.sandbox-name\":\"claimed\"}}"), 0);
	EXPECT_META("", "claimed", "", "", "containerd");
	/* escapes decoded; an embedded NUL ends the value */
	CHECK_EQ_INT(parse("{\"annotations\":{\"io.kubernetes.pod.name\":\"caf\\u00e9\","
			   "\"io.kubernetes.container.name\":\"a\\u0000b\"}}"), 0);
	EXPECT_META("", "caf\xc3\xa9", "a", "", "cri-o");
	/* invalid UTF-8 the runtime passed on: scrubbed */
	CHECK_EQ_INT(parse("{\"annotations\":{\"io.kubernetes.pod.name\":\"a\xff\xfe" "b\","
			   "\"io.kubernetes.pod.namespace\":\"\xc3\"}}"), 0);
	EXPECT_META("?", "a??b", "", "", "cri-o");
}

/* A value of n copies of unit (a UTF-8 character) in a container-name annotation. */
static char *huge_json(const char *key, const char *unit, size_t n)
{
	size_t u = strlen(unit), len = 64 + strlen(key) + n * u;
	char *s = malloc(len), *p;

	if (!s)
		abort();
	p = s + sprintf(s, "{\"annotations\":{\"%s\":\"", key);
	for (size_t i = 0; i < n; i++, p += u)
		memcpy(p, unit, u);
	strcpy(p, "\"}}");
	return s;
}

static void test_parse_huge(void)
{
	char *s = huge_json("io.kubernetes.cri.sandbox-name", "p", 100000);

	CHECK_EQ_INT(parse(s), 0);
	CHECK_EQ_INT(strlen(km.pod), sizeof(km.pod) - 1);
	free(s);
	/* 3-byte characters: cut before the one that does not fit, never inside it */
	s = huge_json("io.kubernetes.cri.container-name", "\xe2\x82\xac", 1000);
	CHECK_EQ_INT(parse(s), 0);
	CHECK_EQ_INT(strlen(km.container), 63);
	CHECK(strchr(km.container, '?') == NULL);
	free(s);
	s = huge_json("io.kubernetes.cri.sandbox-uid", "\xf0\x9f\x90\x8d", 50);
	CHECK_EQ_INT(parse(s), 0);
	CHECK_EQ_INT(strlen(km.pod_uid), 36);
	free(s);
	s = huge_json("io.kubernetes.pod.namespace", "n", 64);
	CHECK_EQ_INT(parse(s), 0);
	CHECK_EQ_INT(strlen(km.namespace_), 63);
	free(s);
}

/* --- bundle_read in a temporary root ------------------------------------------ */

static void put(const char *rel, const char *text, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void sh(const char *fmt, const char *arg)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), fmt, tmp, arg);
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

static int rd(const char *id)
{
	memset(&km, 0x5a, sizeof(km));
	return bundle_read(tmp, id, &km);
}

static void test_read_layouts(void)
{
	/* nothing of either runtime yet */
	CHECK_EQ_INT(rd(ID1), -PBP_E_NOENT);
	CHECK(all_empty());
	sh("mkdir -p %s/" CTRD_DIR "/%s", ID1);
	put(CTRD_DIR "/" ID1 "/config.json", CONTAINERD_JSON, strlen(CONTAINERD_JSON));
	sh("mkdir -p %s/" CRIO_DIR "/%s/userdata", ID2);
	put(CRIO_DIR "/" ID2 "/userdata/config.json", CRIO_JSON, strlen(CRIO_JSON));
	CHECK_EQ_INT(rd(ID1), 0);
	EXPECT_META("prod", "shop-7d9c6b5f4-x2x7q", "web", UID, "containerd");
	CHECK_EQ_INT(rd(ID2), 0);
	EXPECT_META("staging", "shop-7d9c6b5f4-x2x7q", "worker", UID, "cri-o");
	CHECK_EQ_INT(rd(ID3), -PBP_E_NOENT);
	/* a trailing slash on the root is fine */
	{
		char root[80];

		snprintf(root, sizeof(root), "%s/", tmp);
		memset(&km, 0, sizeof(km));
		CHECK_EQ_INT(bundle_read(root, ID1, &km), 0);
		CHECK_EQ_STR(km.container, "web");
	}
	/* a bundle is read with its own runtime's keys: containerd's in a CRI-O bundle say nothing */
	sh("mkdir -p %s/" CRIO_DIR "/%s/userdata", ID3);
	put(CRIO_DIR "/" ID3 "/userdata/config.json", CONTAINERD_JSON, strlen(CONTAINERD_JSON));
	CHECK_EQ_INT(rd(ID3), 0);
	EXPECT_META("", "", "", "", "cri-o");
	sh("rm -r %s/" CRIO_DIR "/%s", ID3);
}

static void test_read_refused(void)
{
	static const char *ids[] = {
		"", "3f4b", ID1 "0", "3F4B8E1C9A2D7F6E5B4A39281706F5E4D3C2B1A09F8E7D6C5B4A392817065F4E",
		"../../../../../../../../../../../../../../../../../../../../../etc",
		"3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4/",
		"./4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e",
		" 3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e",
	};

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		CHECK_EQ_INT(rd(ids[i]), -PBP_E_NOENT);
		CHECK(all_empty());
	}
	CHECK_EQ_INT(bundle_read(tmp, NULL, &km), -PBP_E_NOENT);
	CHECK_EQ_INT(bundle_read(NULL, ID1, &km), -PBP_E_NOENT);
	/* the id directory a symbolic link to a real bundle: refused */
	sh("ln -s %s/" CTRD_DIR "/" ID1 " %s/" CTRD_DIR "/" ID3, tmp);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	CHECK(all_empty());
	sh("rm %s/" CTRD_DIR "/%s", ID3);
	/* config.json a symbolic link, a FIFO (no wait for a writer), a directory */
	sh("mkdir -p %s/" CRIO_DIR "/%s/userdata", ID3);
	sh("ln -s %s/" CTRD_DIR "/" ID1 "/config.json %s/" CRIO_DIR "/" ID3 "/userdata/config.json", tmp);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rm %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	sh("mkfifo %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rm %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	sh("mkdir %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rmdir %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	/* userdata a symbolic link */
	sh("rmdir %s/" CRIO_DIR "/%s/userdata", ID3);
	sh("ln -s %s/" CRIO_DIR "/" ID2 "/userdata %s/" CRIO_DIR "/" ID3 "/userdata", tmp);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rm -r %s/" CRIO_DIR "/%s", ID3);
	/* not JSON: said so, and the error of the layout that has the id wins over the other's NOENT */
	sh("mkdir -p %s/" CRIO_DIR "/%s/userdata", ID3);
	put(CRIO_DIR "/" ID3 "/userdata/config.json", "{\"annotations\":", 15);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	/* larger than 4 MiB (sparse): refused unread */
	sh("truncate -s 4194305 %s/" CRIO_DIR "/%s/userdata/config.json", ID3);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rm -r %s/" CRIO_DIR "/%s", ID3);
}

/* A config.json of exactly the cap, padded with spaces, is read. */
static void test_read_at_cap(void)
{
	size_t cap = 4u << 20;
	char *s = malloc(cap);
	const char *j = CRIO_JSON;

	if (!s)
		abort();
	memset(s, ' ', cap);
	memcpy(s, j, strlen(j));
	sh("mkdir -p %s/" CRIO_DIR "/%s/userdata", ID3);
	put(CRIO_DIR "/" ID3 "/userdata/config.json", s, cap);
	CHECK_EQ_INT(rd(ID3), 0);
	CHECK_EQ_STR(km.container, "worker");
	free(s);
	sh("rm -r %s/" CRIO_DIR "/%s", ID3);
}

/* Files where directories should be. */
static void test_read_not_dirs(void)
{
	/* the id a file: something is there, and it is not a bundle */
	put(CTRD_DIR "/" ID3, "x", 1);
	CHECK_EQ_INT(rd(ID3), -PBP_E_CORRUPT);
	sh("rm %s/" CTRD_DIR "/%s", ID3);
	/* a runtime's directory a file (the other runtime's is gone): no runtime here */
	sh("rm -r %s/%s", "run");
	sh("mkdir -p %s/%s", "run/containerd");
	put("run/containerd/io.containerd.runtime.v2.task", "", 0);
	CHECK_EQ_INT(rd(ID1), -PBP_E_NOENT);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/pbp-bundle-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse_runtimes();
	test_parse_refused();
	test_parse_values();
	test_parse_huge();
	test_read_layouts();
	test_read_refused();
	test_read_at_cap();
	test_read_not_dirs();
	sh("rm -rf %s%s", "");
	return unit_done("test_bundle");
}
