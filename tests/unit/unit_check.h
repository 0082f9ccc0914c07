/*
 * unit_check.h - the one check macro of the unit tests: CHECK(cond, fmt,
 * ...) prints "FAIL file:line: message" and counts the failure, so a test
 * reports every broken case in one run (not only the first) and exits
 * non-zero when `failures` is not 0.  Include once, in the test's .c.
 */
#ifndef ANCHOR_UNIT_CHECK_H
#define ANCHOR_UNIT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                               \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

#endif
