/*
 * cmd_dump.c - `anchorpost dump RING [-o FILE.csv]`: one CSV row per event
 * (the columns: output/dump_csv.h).  A whole command: options, open,
 * one writer, done.
 */
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/ringload.h"
#include "output/dump_csv.h"
#include "util/diag.h"

static const struct cmd_usage dump_usage = {
	.name = "dump",
	.usage = "[--ring] RING [-o FILE.csv] [--stacks]",
	.about = "  one CSV row per event: utc_iso,unix_ns,mono_ns,pid,tid,kind,name,value,host,rank\n",
};

int cmd_dump(int argc, char **argv)
{
	const char *ring = NULL, *out = "-";
	int stacks = 0;
	struct ringload rl;
	struct em_error e;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &ring, "RING", "the ring (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (-: stdout) [-]"),
		OPT_BOOL(0, "stacks", &stacks, "add a column 'stack': native return addresses (ANCHOR_STACKS=1), "
					    "innermost first, hex, ';'-separated"),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &dump_usage, 0);

	ring = options_input(&dump_usage, npos, argv, ring, "--ring");
	ringload_open(&rl, ring);
	if (dump_csv_write(&rl, out, stacks, &e))
		diag_fatal(e.file, "%s", e.msg);
	ringload_close(&rl);
	return 0;
}
