/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for elf.c: arbitrary bytes as an ELF image.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
 *       tests/fuzz/fuzz_elf.c user/proc/elf.c -lelf -o /tmp/fe
 *   /tmp/fe -max_total_time=60 -max_len=65536 /tmp/fe-corpus tests/fuzz/corpus/elf
 *
 * Each input goes through both the in-memory API (elf_memory) and the file
 * API (the same bytes in a memfd, read by libelf with pread): the two must
 * agree, and every result must be well-formed.
 *
 * Seeds (tests/fuzz/corpus/elf/, also fixtures of tests/unit/test_elf.c),
 * each from one small C file compiled with
 *   F="-O1 -nostdlib -fno-asynchronous-unwind-tables -Wl,--build-id=none
 *      -Wl,-z,noseparate-code -Wl,--hash-style=gnu"
 *
 * lib312_pyruntime_section.so: gcc $F -shared -fPIC -Wl,-soname,libpython3.12.so.1.0
 *     __attribute__((section(".PyRuntime"), used)) char _PyRuntime[256] = "xdebugpy";
 *     const unsigned int Py_Version = 0x030c04f0;
 *     char PyCode_Type[64] = { 1 };
 *     const char strs[] = "\0/opt/python/3.12.4\0unidata 3.2.0\0";
 * lib39_bss_decoys.so: gcc $F -shared -fPIC -Wl,-soname,libpython3.9.so.1.0
 *     char _PyRuntime[512];
 *     char PyCode_Type[64] = { 1 };
 *     const char strs[] = "\0" "13.9.1\0" "v3.9.2\0" "3.9.3 is not\0" "1.3.9.4\0"
 *                         "3.10.5\0" "/usr/local/3.9.7\0" "3.9.\0" "3.9.8x\0";
 * lib311_stripped.so: gcc $F -shared -fPIC -Wl,-soname,libpython3.11.so.1.0, then strip --strip-all
 *     __attribute__((section(".PyRuntime"), used)) static char rt[128] = "x";
 *     const char strs[] = "\0" "3.11.9rc1\0" "3.11.9rc1\0" "/x/3.11.8\0";
 * exec_static: gcc $F -no-pie -static
 *     char _PyRuntime[128];
 *     const unsigned int Py_Version = 0x030a0ef0;
 *     const char strs[] = "\0" "3.10.14+\0";
 *     void _start(void) { for (;;) ; }
 * exec39_landmark: gcc $F -no-pie -static
 *     char _PyRuntime[128];
 *     const char strs[] = "\0" "lib/python3.9\0" "3.9.16\0" "3.2.0\0";
 *     void _start(void) { for (;;) ; }
 * nopython.so: gcc $F -shared -fPIC
 *     int something[16] = { 1 };
 *     const char strs[] = "\0" "3.8.1\0" "3.9.2\0";
 * lib39_elf32.so: objcopy -O elf32-i386 lib39_bss_decoys.so (an ELFCLASS32 image)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* memfd_create */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/errors.h"
#include "proc/elf.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

static int memfd = -2;
static char memfd_path[64];

static bool is_digits(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static void check_info(int r, const struct elf_info *ei)
{
	const char *dot;
	size_t n = strnlen(ei->soname_version, sizeof(ei->soname_version));

	MUST(r == 0 || r == -PBP_E_NOTPY);
	MUST((r == 0) == (ei->runtime_vaddr != 0));
	MUST(!ei->runtime_from_section || ei->runtime_vaddr != 0);
	MUST(ei->version_vaddr != 0 || ei->version_hex == 0);
	/* soname_version: "" or <digits>.<digits> */
	MUST(n < sizeof(ei->soname_version));
	if (n) {
		dot = strchr(ei->soname_version, '.');
		MUST(dot != NULL);
		MUST(is_digits(ei->soname_version, (size_t)(dot - ei->soname_version)));
		MUST(is_digits(dot + 1, strlen(dot + 1)));
	}
}

/* ^3\.[0-9]+\.[0-9]+([abc]|rc)?[0-9]*\+?$ */
static void check_version_string(const char *v)
{
	const char *p = v;

	MUST(strlen(v) < 32);
	MUST(p[0] == '3' && p[1] == '.');
	p += 2;
	MUST(*p >= '0' && *p <= '9');
	while (*p >= '0' && *p <= '9')
		p++;
	MUST(*p == '.');
	p++;
	MUST(*p >= '0' && *p <= '9');
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == 'a' || *p == 'b' || *p == 'c')
		p++;
	else if (p[0] == 'r' && p[1] == 'c')
		p += 2;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '+')
		p++;
	MUST(*p == '\0');
}

static int to_memfd(const uint8_t *data, size_t size)
{
	if (memfd == -2) {
		memfd = memfd_create("fuzz_elf", MFD_CLOEXEC);
		snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	}
	if (memfd < 0 || ftruncate(memfd, 0) != 0)
		return -1;
	if (size && pwrite(memfd, data, size, 0) != (ssize_t)size)
		return -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_info m, f;
	char vm[64], vf[64];
	int rm, rf, sm, sf;

	rm = elf_find_python_mem(data, size, &m);
	check_info(rm, &m);
	sm = elf_find_version_string_mem(data, size, vm, sizeof(vm));
	MUST(sm == 0 || sm == -PBP_E_NOTPY);
	if (sm == 0)
		check_version_string(vm);
	/* too small an output buffer is refused, never overrun */
	if (sm == 0) {
		char small[4];

		MUST(elf_find_version_string_mem(data, size, small, sizeof(small)) == -PBP_E_INVAL);
	}

	if (to_memfd(data, size) != 0)
		return 0;
	rf = elf_find_python(memfd_path, &f);
	check_info(rf, &f);
	MUST(rf == rm);
	MUST(f.runtime_vaddr == m.runtime_vaddr && f.runtime_size == m.runtime_size);
	MUST(f.version_vaddr == m.version_vaddr && f.version_hex == m.version_hex);
	MUST(f.pycode_type_vaddr == m.pycode_type_vaddr);
	MUST(f.is_shared == m.is_shared && f.runtime_from_section == m.runtime_from_section);
	MUST(f.first_load_vaddr == m.first_load_vaddr);
	MUST(strcmp(f.soname_version, m.soname_version) == 0);
	sf = elf_find_version_string(memfd_path, vf, sizeof(vf));
	MUST(sf == sm);
	MUST(sf != 0 || strcmp(vf, vm) == 0);
	return 0;
}
