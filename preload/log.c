/* log.c - one-line, signal-safe diagnostics for libanchor.so. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "ring_env.h"
#include "ring_writer.h"

int anchor_debug;

static size_t put(char *buf, size_t n, size_t cap, const char *s)
{
	size_t k = strlen(s);
	if (k > cap - n)
		k = cap - n;
	memcpy(buf + n, s, k);
	return n + k;
}

static size_t put_u(char *buf, size_t n, size_t cap, unsigned long v)
{
	char tmp[24];
	int i = (int)sizeof tmp;
	tmp[--i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	return put(buf, n, cap, tmp + i);
}

int anchor_log(const char *first, ...)
{
	char buf[1024];
	size_t n = 0, cap = sizeof buf - 1;
	int saved = errno;
	va_list ap;

	n = put(buf, n, cap, "anchor[");
	n = put_u(buf, n, cap, (unsigned long)getpid());
	n = put(buf, n, cap, "]: ");
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *))
		n = put(buf, n, cap, s);
	va_end(ap);
	buf[n++] = '\n';
	ssize_t w = write(2, buf, n);
	errno = saved;
	return w == (ssize_t)n;
}

void anchor_disable_once(const char *why, const char *detail)
{
	static int said;
	int was_attached = ring_writer_attached();
	ring_writer_disable();
	/* Once per process, and once per run (ring_env_say). */
	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) || !ring_env_say(anchor_debug))
		return;
	/* Marked only when the line is out: a stderr that failed said nothing. */
	if (anchor_log(why, detail ? detail : "", was_attached ? "; anchoring stopped" : "; anchoring disabled",
		       NULL))
		ring_env_said();
}

int anchor_fmt_kv(char *buf, const char *key, unsigned v)
{
	char digits[12];
	int n = 0, k = 0;
	while (*key && n < 12)
		buf[n++] = *key++;
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k)
		buf[n++] = digits[--k];
	return n;
}
