/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_ELF_H
#define PBP_PROC_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { ELF_GIL_LOCKED, ELF_GIL_HOLDER, ELF_GIL_MUTEX, ELF_GIL_COND, ELF_SWITCH_MUTEX,
       ELF_SWITCH_COND, ELF_GIL_STATICS };

struct elf_info {
	uint64_t runtime_vaddr;     /* st_value of _PyRuntime or .PyRuntime sh_addr, 0 if none */
	uint64_t runtime_size;      /* st_size of that symbol or sh_size of the section, 0 if unknown */
	uint64_t version_vaddr;     /* Py_Version (3.11+), 0 if none */
	uint32_t version_hex;       /* Py_Version's value as stored in the file, 0 if none */
	uint64_t pycode_type_vaddr; /* PyCode_Type, 0 if none */
	uint64_t code_count_vaddr;  /* 3.12's _Py_next_func_version (.symtab only), 0 if none */
	bool is_shared;             /* ET_DYN */
	bool runtime_from_section;  /* no _PyRuntime symbol: runtime_vaddr is .PyRuntime's address */
	bool runtime_is_interp_head;/* 3.6: runtime_vaddr is the static interp_head of pystate.c */
	/* 3.6: gil_locked, gil_last_holder, gil_mutex, gil_cond, switch_mutex, switch_cond; 0 if not found */
	uint64_t gil_statics[ELF_GIL_STATICS];
	/*
	 * p_vaddr of the PT_LOAD with p_offset 0 (if no PT_LOAD maps offset 0:
	 * p_vaddr - p_offset of the one with the lowest offset). Load bias of a
	 * shared object = start of its offset-0 mapping - (first_load_vaddr
	 * rounded down to the page size).
	 */
	uint64_t first_load_vaddr;
	/* "3.11" from the file name (python3.11, libpython3.11d.so.1.0), else from DT_SONAME; "" if none */
	char soname_version[16];
};

/*
 * Look up the CPython symbols of one ELF file (ET_EXEC or ET_DYN). 0 found
 * _PyRuntime, -PBP_E_NOTPY not (or the file cannot be read as ELF),
 * -PBP_E_INVAL without out; out is zeroed first and filled as far as found.
 */
int elf_find_python(const char *path, struct elf_info *out);
/* Same, from an in-memory image (for fuzzing). */
int elf_find_python_mem(const void *buf, size_t len, struct elf_info *out);
/*
 * CPython <= 3.10 has no Py_Version: find the PY_VERSION literal ("3.8.18")
 * in the file's read-only data instead (see elf.c for how). out gets the
 * string, NUL-terminated. 0 on a single unambiguous match, -PBP_E_NOTPY
 * without one, -PBP_E_INVAL when out has no room for it.
 */
int elf_find_version_string(const char *path, char *out, size_t outlen);
/* Same, from an in-memory image (no file name to take major.minor from). */
int elf_find_version_string_mem(const void *buf, size_t len, char *out, size_t outlen);

/* One allocated section of an ELF file, and where the file expects to be loaded. */
struct elf_section {
	uint64_t addr, size;        /* sh_addr, sh_size */
	uint64_t first_load_vaddr;  /* as in struct elf_info: for the load bias */
	bool is_shared;             /* ET_DYN: addr is relative to the load bias */
};

/*
 * The allocated section named name (".AsyncioDebug") of the ELF file at
 * path. 0 found; -PBP_E_NOENT absent; -PBP_E_NOTPY not readable as ELF.
 */
int elf_find_section(const char *path, const char *name, struct elf_section *out);

#endif /* PBP_PROC_ELF_H */
