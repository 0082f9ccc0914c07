"""Hugging Face Trainer callback: the Trainer's own phases as anchor ranges.

    import anchor.hf
    from transformers import Trainer
    cb = anchor.hf.AnchorCallback(measure=True)
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb])
    trainer.train()   # ring: train.epoch, train.step, train.batch, ...; cb.epoch_joules

Ranges written (names):
  train.epoch           on_epoch_begin .. on_epoch_end
  train.step            on_step_begin .. on_step_end: one optimizer step, with
                        all its gradient-accumulation micro-batches; the mark
                        ``train.substep`` at each accumulation boundary
                        (on_substep_end)
  train.batch           ``Trainer.training_step``: one micro-batch
  train.forward         ``Trainer.compute_loss`` inside training_step
  train.backward        from compute_loss's return to training_step's return
                        (``accelerator.backward`` and the loss bookkeeping)
  train.optimizer_step  on_pre_optimizer_step .. on_optimizer_step
  validation            ``Trainer.evaluate``
  checkpoint.save       ``Trainer._save_checkpoint``
The Trainer has no callback event before evaluation, before a checkpoint is
written, or around forward/backward, so those four are wrappers of the
Trainer's methods (installed once, on the class, when the first callback is
made; they write nothing for a Trainer that does not hold an
AnchorCallback).  A Trainer subclass that overrides compute_loss or
training_step without calling super() loses that range, not the others.

measure=True: each epoch's live energy (anchor.measure: RAPL / NVML
counters; a live estimate that ``anchorpost phases`` supersedes) goes to
``cb.epoch_joules``, into ``state.log_history`` as
``{"epoch": E, "anchor/epoch_joules": J}``, and to ``on_joules(epoch, J)``
when given (e.g. ``lambda e, j: wandb.log({"epoch_joules": j})``).

This module imports ``transformers`` when imported; ``import anchor`` never
does.
"""
import functools
import threading

from ._anchor import mark as _mark
from ._cbutil import EpochEnergy, Ranges

try:
    import transformers as _tf
    from transformers import TrainerCallback as _Base
except ImportError:
    _tf = _Base = None

_installed = False
_lock = threading.Lock()
_tls = threading.local()


def _callback_of(trainer):
    h = getattr(trainer, "callback_handler", None)
    for cb in getattr(h, "callbacks", ()):
        if isinstance(cb, AnchorCallback):
            return cb
    return None


def _wrap_range(orig, name):
    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        cb = _callback_of(self)
        if cb is None:
            return orig(self, *args, **kwargs)
        cb._r.begin(name)
        try:
            return orig(self, *args, **kwargs)
        finally:
            cb._r.end(name)

    return wrapper


def _wrap_training_step(orig):
    @functools.wraps(orig)
    def training_step(self, *args, **kwargs):
        cb = _callback_of(self)
        if cb is None:
            return orig(self, *args, **kwargs)
        cb._r.begin("train.batch")
        _tls.cb = cb
        try:
            return orig(self, *args, **kwargs)
        finally:
            _tls.cb = None
            cb._r.end("train.forward")
            cb._r.end("train.backward")
            cb._r.end("train.batch")

    return training_step


def _wrap_compute_loss(orig):
    @functools.wraps(orig)
    def compute_loss(self, *args, **kwargs):
        cb = getattr(_tls, "cb", None)
        if cb is None:  # evaluation's prediction_step, or no callback
            return orig(self, *args, **kwargs)
        cb._r.begin("train.forward")
        out = orig(self, *args, **kwargs)
        cb._r.end("train.forward")
        cb._r.begin("train.backward")
        return out

    return compute_loss


def _install():
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    T = _tf.Trainer
    T.training_step = _wrap_training_step(T.training_step)
    T.compute_loss = _wrap_compute_loss(T.compute_loss)
    T.evaluate = _wrap_range(T.evaluate, "validation")
    if hasattr(T, "_save_checkpoint"):
        T._save_checkpoint = _wrap_range(T._save_checkpoint, "checkpoint.save")


if _Base is None:

    class AnchorCallback:  # noqa: D101 - stands in so `import anchor.hf` works
        def __init__(self, *args, **kwargs):
            raise ImportError("anchor.hf.AnchorCallback needs transformers (pip install transformers)")

else:

    class AnchorCallback(_Base):
        """Anchor the Trainer's phases (see the module doc).  measure: live
        joules per epoch; powercap: RAPL root for it; on_joules(epoch, J):
        called after each measured epoch."""

        def __init__(self, measure=False, powercap=None, on_joules=None):
            _install()
            self._r = Ranges()
            self._energy = EpochEnergy(measure, powercap)
            self.on_joules = on_joules

        @property
        def epoch_joules(self):
            """Live joules per finished epoch (None: no readable counter)."""
            return list(self._energy.joules)

        def on_epoch_begin(self, args, state, control, **kwargs):
            self._energy.start()
            self._r.begin("train.epoch")

        def on_epoch_end(self, args, state, control, **kwargs):
            self._r.end("train.epoch")
            j = self._energy.stop()
            if j is not None:
                state.log_history.append({"epoch": state.epoch, "anchor/epoch_joules": j})
                if self.on_joules is not None:
                    self.on_joules(state.epoch, j)

        def on_step_begin(self, args, state, control, **kwargs):
            self._r.begin("train.step")

        def on_substep_end(self, args, state, control, **kwargs):
            _mark("train.substep")

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            self._r.begin("train.optimizer_step")

        def on_optimizer_step(self, args, state, control, **kwargs):
            self._r.end("train.optimizer_step")

        def on_step_end(self, args, state, control, **kwargs):
            self._r.end("train.optimizer_step")
            self._r.end("train.step")

        def on_train_end(self, args, state, control, **kwargs):
            self._r.close_all()
