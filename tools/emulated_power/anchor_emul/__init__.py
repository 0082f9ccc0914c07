"""anchor_emul: an emulated RAPL power sensor for testing anchor against real perun.

Only the hardware is emulated.  perun reads a powercap tree (``energy_uj``
counters) that this package creates and advances at a power we choose, so
tests know the exact joules that went into the counters.  Every file the
package writes says so in plain words (``EMULATED_NOTICE``).

Modules
  powercap   the fake /sys/class/powercap tree and its counter files
  phasefile  a shared mmap file where a workload publishes phase changes
  cputime    CPU time of a process tree from /proc (the CPU-activity model)
  updater    the process that advances the counters (python -m anchor_emul.updater)
  perun      real perun's CLI with the RAPL path redirected (python -m anchor_emul.perun)
"""

EMULATED_NOTICE = "emulated sensor, not a measurement"
MARKER_FILE = "EMULATED_SENSOR.txt"
