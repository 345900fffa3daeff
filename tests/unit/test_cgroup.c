/* SPDX-License-Identifier: MIT */
/*
 * cgroup_parse on /proc/PID/cgroup contents as each runtime and cgroup
 * driver writes them, v1, v2 and hybrid, and on malformed input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>

#include "core/errors.h"
#include "proc/cgroup.h"
#include "unit.h"

/* Ids as runtimes make them: 64 lower-case hex digits. */
#define ID1 "3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e"
#define ID2 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define UID "8a0f1c2e-5b7d-4e3a-9c1f-2d4b6a8e0c13"
#define UID_ "8a0f1c2e_5b7d_4e3a_9c1f_2d4b6a8e0c13"
#define STATIC_UID "6f1d2a3b4c5d6e7f8091a2b3c4d5e6f7"

static struct cgroup_info cg;

static int parse(const char *text)
{
	memset(&cg, 0x5a, sizeof(cg));
	return cgroup_parse(text, strlen(text), &cg);
}

#define EXPECT(text, path_, id_, pod_, rt_) do { \
	CHECK_EQ_INT(parse(text), 0); \
	CHECK_EQ_STR(cg.path, path_); \
	CHECK_EQ_STR(cg.container_id, id_); \
	CHECK_EQ_STR(cg.pod_uid, pod_); \
	CHECK_EQ_STR(cg.runtime, rt_); \
} while (0)

static void test_v2_kubernetes_systemd(void)
{
	EXPECT("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID1 ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID1 ".scope", ID1, UID, "containerd");
	EXPECT("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/"
	       "crio-" ID2 ".scope\n",
	       "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/"
	       "crio-" ID2 ".scope", ID2, UID, "cri-o");
	/* guaranteed QoS: no QoS level slice */
	EXPECT("0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID2 ".scope\n",
	       "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID2 ".scope",
	       ID2, UID, "containerd");
	/* dockershim era */
	EXPECT("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "docker-" ID1 ".scope",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "docker-" ID1 ".scope", ID1, UID, "docker");
	/* static pod (UID hashed from the manifest), systemd inside the container */
	EXPECT("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice/"
	       "cri-containerd-" ID1 ".scope/init.scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice/"
	       "cri-containerd-" ID1 ".scope/init.scope", ID1, STATIC_UID, "containerd");
	/* CRI-O's monitor lives beside the container: a pod, no container */
	EXPECT("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "crio-conmon-" ID2 ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "crio-conmon-" ID2 ".scope", "", UID, "");
}

static void test_v2_kubernetes_cgroupfs(void)
{
	/* the cgroupfs driver says nothing of the runtime */
	EXPECT("0::/kubepods/burstable/pod" UID "/" ID1 "\n",
	       "/kubepods/burstable/pod" UID "/" ID1, ID1, UID, "");
	EXPECT("0::/kubepods/besteffort/pod" UID "/" ID2 "\n",
	       "/kubepods/besteffort/pod" UID "/" ID2, ID2, UID, "");
	EXPECT("0::/kubepods/pod" UID "/" ID1 "\n", "/kubepods/pod" UID "/" ID1, ID1, UID, "");
	EXPECT("0::/kubepods/burstable/pod" UID "/crio-" ID2 "\n",
	       "/kubepods/burstable/pod" UID "/crio-" ID2, ID2, UID, "cri-o");
	/* a profiler in its own cgroup namespace sees the path from its root */
	EXPECT("0::/../../kubepods/burstable/pod" UID "/" ID1 "\n",
	       "/../../kubepods/burstable/pod" UID "/" ID1, ID1, UID, "");
	/* "pod..." outside kubepods is anybody's name */
	EXPECT("0::/system.slice/pod" UID ".service\n", "/system.slice/pod" UID ".service", "", "", "");
	EXPECT("0::/user/pod" UID "\n", "/user/pod" UID, "", "", "");
}

static void test_v2_other_runtimes(void)
{
	EXPECT("0::/system.slice/docker-" ID1 ".scope\n",
	       "/system.slice/docker-" ID1 ".scope", ID1, "", "docker");
	EXPECT("0::/docker/" ID2 "\n", "/docker/" ID2, ID2, "", "docker");
	/* Docker in Docker: the outer container, the one the host knows */
	EXPECT("0::/docker/" ID1 "/docker/" ID2 "\n", "/docker/" ID1 "/docker/" ID2, ID1, "", "docker");
	/* podman, rootful and rootless (with its "container" child cgroup) */
	EXPECT("0::/machine.slice/libpod-" ID1 ".scope\n",
	       "/machine.slice/libpod-" ID1 ".scope", ID1, "", "podman");
	EXPECT("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2
	       ".scope/container\n",
	       "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2 ".scope/container",
	       ID2, "", "podman");
	EXPECT("0::/machine.slice/libpod-conmon-" ID1 ".scope\n",
	       "/machine.slice/libpod-conmon-" ID1 ".scope", "", "", "");
	/* containerd without Kubernetes: nerdctl (systemd), ctr (namespace directory) */
	EXPECT("0::/system.slice/nerdctl-" ID1 ".scope\n",
	       "/system.slice/nerdctl-" ID1 ".scope", ID1, "", "containerd");
	EXPECT("0::/default/" ID2 "\n", "/default/" ID2, ID2, "", "containerd");
	/* an unknown parent: still a container, runtime unknown */
	EXPECT("0::/actions_job/" ID1 "\n", "/actions_job/" ID1, ID1, "", "");
	/* no container at all */
	EXPECT("0::/user.slice/user-1000.slice/session-3.scope\n",
	       "/user.slice/user-1000.slice/session-3.scope", "", "", "");
	EXPECT("0::/init.scope\n", "/init.scope", "", "", "");
	EXPECT("0::/\n", "/", "", "", "");
	/* near misses: one digit short, upper case, junk after the id */
	EXPECT("0::/docker/" "3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4\n",
	       "/docker/3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4", "", "", "");
	EXPECT("0::/docker/3F4B8E1C9A2D7F6E5B4A39281706F5E4D3C2B1A09F8E7D6C5B4A392817065F4E\n",
	       "/docker/3F4B8E1C9A2D7F6E5B4A39281706F5E4D3C2B1A09F8E7D6C5B4A392817065F4E", "", "", "");
	EXPECT("0::/system.slice/docker-" ID1 ".service\n",
	       "/system.slice/docker-" ID1 ".service", "", "", "");
	/* a cgroup name may hold ':' */
	EXPECT("0::/odd:name/x\n", "/odd:name/x", "", "", "");
}

static void test_v1(void)
{
	/* Docker, cgroupfs driver: every controller says the same */
	EXPECT("12:pids:/docker/" ID1 "\n"
	       "11:hugetlb:/docker/" ID1 "\n"
	       "10:net_cls,net_prio:/docker/" ID1 "\n"
	       "9:perf_event:/docker/" ID1 "\n"
	       "8:memory:/docker/" ID1 "\n"
	       "7:devices:/docker/" ID1 "\n"
	       "6:cpu,cpuacct:/docker/" ID1 "\n"
	       "5:freezer:/docker/" ID1 "\n"
	       "4:blkio:/docker/" ID1 "\n"
	       "3:cpuset:/docker/" ID1 "\n"
	       "2:rdma:/\n"
	       "1:name=systemd:/docker/" ID1 "\n"
	       "0::/system.slice/containerd.service\n",
	       "/docker/" ID1, ID1, "", "docker");
	/* Kubernetes on v1, systemd driver */
	EXPECT("11:cpuset:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID2 ".scope\n"
	       "6:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID2 ".scope\n"
	       "4:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID2 ".scope\n"
	       "1:name=systemd:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID2 ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	       "cri-containerd-" ID2 ".scope", ID2, UID, "containerd");
	/* hybrid host, not in a container: the systemd line ties with v2, v2 wins */
	EXPECT("9:name=systemd:/system.slice/ssh.service\n"
	       "4:memory:/system.slice/ssh.service\n"
	       "1:cpu,cpuacct:/\n"
	       "0::/system.slice/ssh.service\n",
	       "/system.slice/ssh.service", "", "", "");
	/* v2 uninformative ("/"): the first preferred v1 line that says something */
	EXPECT("9:name=systemd:/\n4:memory:/process_api/3fb3283ecdac\n1:cpu:/\n0::/\n",
	       "/process_api/3fb3283ecdac", "", "", "");
	EXPECT("4:memory:/a\n3:cpu,cpuacct:/b\n", "/b", "", "", "");
	/* only one controller holds the container: take that line, path and all */
	EXPECT("9:name=systemd:/\n6:memory:/docker/" ID2 "\n3:cpu:/\n",
	       "/docker/" ID2, ID2, "", "docker");
	/* everything at the root */
	EXPECT("3:cpu:/\n2:memory:/\n1:name=systemd:/\n", "/", "", "", "");
}

static void test_malformed(void)
{
	static const char *bad[] = {
		"", "\n", "\n\n\n", "garbage", "0:", "0::", "0::\n", "::/x", "x::/x",
		"0:/x", "-1::/x", "0::relative/path", "12345678901::/x", "0 ::/x",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(parse(bad[i]), -PBP_E_CORRUPT);
		CHECK_EQ_STR(cg.path, "");
		CHECK_EQ_STR(cg.container_id, "");
	}
	/* a bad line among good ones is skipped */
	EXPECT("junk\n0::/docker/" ID1 "\n:::\n", "/docker/" ID1, ID1, "", "docker");
	/* CRLF: the '\r' stays in the last component, so no id there */
	EXPECT("0::/docker/" ID1 "\r\n", "/docker/" ID1 "\r", "", "", "");
	/* no trailing newline */
	EXPECT("0::/docker/" ID1, "/docker/" ID1, ID1, "", "docker");
	/* a pod slice with a bad UID */
	EXPECT("0::/kubepods.slice/kubepods-podnotauid.slice\n", "/kubepods.slice/kubepods-podnotauid.slice",
	       "", "", "");
	EXPECT("0::/kubepods.slice/kubepods-pod" UID ".slice\n", "/kubepods.slice/kubepods-pod" UID ".slice",
	       "", "", "");  /* dashes inside a slice name cannot be */

	/* a NUL inside a line makes it malformed; len, not the NUL, ends the text */
	{
		static const char t[] = "0::/docker/x\0yz\n1:cpu:/docker/" ID2;

		CHECK_EQ_INT(cgroup_parse(t, sizeof(t) - 1, &cg), 0);
		CHECK_EQ_STR(cg.path, "/docker/" ID2);
		CHECK_EQ_STR(cg.container_id, ID2);
		CHECK_EQ_INT(cgroup_parse(t, 5, &cg), 0);  /* "0::/d" */
		CHECK_EQ_STR(cg.path, "/d");
		CHECK_EQ_INT(cgroup_parse(NULL, 0, &cg), -PBP_E_CORRUPT);
		CHECK_EQ_INT(cgroup_parse(t, 0, &cg), -PBP_E_CORRUPT);
	}
}

/* A path longer than the field is cut; the ids still come from all of it. */
static void test_long(void)
{
	size_t n = 4000;
	char *t = malloc(n + 200);
	size_t at;

	strcpy(t, "0::");
	at = 3;
	while (at < n) {
		memcpy(t + at, "/aaaaaaa", 8);
		at += 8;
	}
	strcpy(t + at, "/docker-" ID1 ".scope\n");
	CHECK_EQ_INT(parse(t), 0);
	CHECK_EQ_INT(strlen(cg.path), sizeof(cg.path) - 1);
	CHECK(strncmp(cg.path, t + 3, sizeof(cg.path) - 1) == 0);
	CHECK_EQ_STR(cg.container_id, ID1);
	CHECK_EQ_STR(cg.runtime, "docker");
	free(t);
}

static void test_read(void)
{
	struct cgroup_info me;

	CHECK_EQ_INT(cgroup_read(getpid(), &me), 0);
	CHECK(me.path[0] == '/');
	CHECK_EQ_INT(cgroup_read(-5, &me), -PBP_E_NOENT);
	CHECK_EQ_STR(me.path, "");
}

int main(void)
{
	test_v2_kubernetes_systemd();
	test_v2_kubernetes_cgroupfs();
	test_v2_other_runtimes();
	test_v1();
	test_malformed();
	test_long();
	test_read();
	return unit_done("cgroup");
}
