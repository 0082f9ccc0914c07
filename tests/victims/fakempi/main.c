/* main.c - call user_call() from libuser.so, linked at start-up ("link")
 * or dlopen'ed RTLD_LOCAL ("local": libmpi then invisible to RTLD_NEXT). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	void *h;
	int (*fn)(void);
	if (argc < 3) {
		fprintf(stderr, "usage: main link|local LIBUSER\n");
		return 2;
	}
	h = dlopen(argv[2], RTLD_NOW | (strcmp(argv[1], "local") ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	*(void **)&fn = dlsym(h, "user_call");
	if (!fn)
		return 2;
	if (fn())
		return 1;
	printf("ok\n");
	return 0;
}
