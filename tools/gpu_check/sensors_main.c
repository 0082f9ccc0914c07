/*
 * sensors_main.c - `anchor-sensors`: anchorpost's `sensors` command alone,
 * for the device check's bundle (make gpu-check).  anchorpost links HDF5,
 * cairo, yajl and cJSON, which a GPU machine with only its driver may
 * lack; this command reads only the ring, so it links none of them and
 * travels as one small file.
 */
#include "cmd/commands.h"

int main(int argc, char **argv)
{
	return cmd_sensors(argc, argv);
}
