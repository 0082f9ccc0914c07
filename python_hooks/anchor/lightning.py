"""PyTorch Lightning callback: the framework's own phases as anchor ranges.

    import anchor.lightning, lightning as L
    trainer = L.Trainer(callbacks=[anchor.lightning.AnchorCallback(measure=True)])
    trainer.fit(model, train_loader, val_loader)
    # ring: train.epoch, train.batch, train.forward, train.backward,
    # train.optimizer_step, validation, checkpoint.save; log: anchor/epoch_joules

Ranges written (names), from Lightning's callback hooks:
  train.epoch           on_train_epoch_start .. on_train_epoch_end (holds
                        the epoch-end validation, which Lightning runs first)
  train.batch           on_train_batch_start .. on_train_batch_end
  train.forward         batch start .. on_before_zero_grad / on_before_backward
                        (training_step; Lightning runs it inside
                        optimizer.step's closure)
  train.backward        on_before_backward .. on_after_backward
  train.optimizer_step  on_before_optimizer_step .. on_train_batch_end (only
                        on gradient-accumulation boundaries)
  validation            on_validation_start .. on_validation_end
                        (``validation.sanity`` during the sanity check)
  checkpoint.save       around ``trainer.save_checkpoint`` (the file write;
                        ModelCheckpoint calls it)
measure=True: each training epoch's live energy (anchor.measure: RAPL /
NVML counters, a live estimate that ``anchorpost phases`` supersedes) is
logged as ``anchor/epoch_joules`` through ``pl_module.log`` and kept in
``callback.epoch_joules``.  Without readable counters nothing is logged.

This module imports ``lightning`` (or ``pytorch_lightning``) when imported;
``import anchor`` never does.  Use it with ``ANCHOR_AUTO=torch`` too, if you
like: torch's ``forward``/``backward``/``optimizer.step`` nest inside these.
"""
import functools

from ._cbutil import EpochEnergy, Ranges

try:
    from lightning.pytorch import Callback as _Base
except ImportError:  # the older package name
    try:
        from pytorch_lightning import Callback as _Base
    except ImportError:
        _Base = None

if _Base is None:

    class AnchorCallback:  # noqa: D101 - stands in so `import anchor.lightning` works
        def __init__(self, *args, **kwargs):
            raise ImportError("anchor.lightning.AnchorCallback needs lightning (pip install lightning) "
                              "or pytorch_lightning")

else:

    class AnchorCallback(_Base):
        """Anchor Lightning's phases (see the module doc).  measure: log each
        epoch's live joules; powercap: RAPL root for it (default
        $ANCHOR_POWERCAP or /sys/class/powercap); log_key: the metric name."""

        def __init__(self, measure=False, powercap=None, log_key="anchor/epoch_joules"):
            super().__init__()
            self._r = Ranges()
            self._energy = EpochEnergy(measure, powercap)
            self.log_key = log_key
            self._saved = None

        @property
        def epoch_joules(self):
            """Live joules per finished training epoch (None: no counter)."""
            return list(self._energy.joules)

        def setup(self, trainer, pl_module, stage):
            if self._saved is not None:
                return
            orig = trainer.save_checkpoint
            r = self._r

            @functools.wraps(orig)
            def save_checkpoint(*args, **kwargs):
                r.begin("checkpoint.save")
                try:
                    return orig(*args, **kwargs)
                finally:
                    r.end("checkpoint.save")

            self._saved = (trainer, orig)
            trainer.save_checkpoint = save_checkpoint

        def teardown(self, trainer, pl_module, stage):
            self._r.close_all()
            if self._saved is not None:
                t, _ = self._saved
                try:
                    del t.save_checkpoint  # the class's method again
                except AttributeError:
                    pass
                self._saved = None

        def on_train_epoch_start(self, trainer, pl_module):
            self._energy.start()
            self._r.begin("train.epoch")

        def on_train_epoch_end(self, trainer, pl_module):
            self._r.end("train.epoch")
            j = self._energy.stop()
            if j is not None:
                pl_module.log(self.log_key, float(j), on_step=False, on_epoch=True)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self._r.begin("train.batch")
            self._r.begin("train.forward")

        def on_before_zero_grad(self, trainer, pl_module, optimizer):
            self._r.end("train.forward")

        def on_before_backward(self, trainer, pl_module, loss):
            self._r.end("train.forward")
            self._r.begin("train.backward")

        def on_after_backward(self, trainer, pl_module):
            self._r.end("train.backward")

        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            self._r.end("train.forward")
            self._r.begin("train.optimizer_step")

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self._r.end("train.forward")
            self._r.end("train.optimizer_step")
            self._r.end("train.batch")

        def on_validation_start(self, trainer, pl_module):
            self._r.begin("validation.sanity" if trainer.sanity_checking else "validation")

        def on_validation_end(self, trainer, pl_module):
            self._r.end("validation.sanity")
            self._r.end("validation")

        def on_exception(self, trainer, pl_module, exception):
            self._r.close_all()

        def on_train_end(self, trainer, pl_module):
            self._r.close_all()
