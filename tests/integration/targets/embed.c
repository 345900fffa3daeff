/*
 * A program that is not Python when it starts: it loads libpython with
 * dlopen after a delay (as uWSGI or an embedding application does), then
 * runs Python code. Build: cc embed.c -o embed -ldl; run: embed LIBPYTHON.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void (*init)(void);
	int (*run)(const char *);
	void *lib;

	if (argc < 2)
		return 2;
	usleep(1500 * 1000);
	lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	init = (void (*)(void))dlsym(lib, "Py_Initialize");
	run = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
	if (!init || !run)
		return 1;
	init();
	return run("def embedded_spin():\n    while True:\n        sum(range(1000))\nembedded_spin()\n");
}
