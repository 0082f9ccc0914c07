"""anchor's start-up hook: imported at every interpreter start by
``anchor_auto.pth`` (``pip install .``) and by anchor's ``sitecustomize.py``
(build tree, ``make install`` prefix).

Cheap by design, since it runs in every interpreter of the environment: it
reads three environment variables and returns unless auto mode was asked
for (ANCHOR_AUTO, ANCHOR_SYNC_PULSE) or libanchor.so is preloaded (then
perun's sample stamps reach the ring without any variable).  Importing
anchor writes nothing: the ring is touched at the first anchor event.
A failure prints one line and never stops the interpreter.
"""
import os


def _start():
    env = os.environ
    asked = env.get("ANCHOR_AUTO") or env.get("ANCHOR_SYNC_PULSE")
    if not (asked or "libanchor" in env.get("LD_PRELOAD", "")):
        return
    try:
        import anchor._autoload

        anchor._autoload.start()
    except Exception as e:  # never break the user's interpreter
        # Only preloaded, nothing asked: an interpreter the module was not
        # built for (another Python version under the same LD_PRELOAD) stays
        # quiet; a script that imports anchor gets the error itself.
        if asked or not isinstance(e, ImportError):
            import sys

            sys.stderr.write("anchor: auto mode not started: %r\n" % (e,))


_start()
