"""Type stubs for the anchor package (see anchor/__init__.py for the docs)."""
from types import TracebackType
from typing import Any, Awaitable, Callable, Literal, Optional, Type, TypeVar, Union

_F = TypeVar("_F", bound=Callable[..., Any])

NAME_MAX: int
__version__: str

def mark(name: str, value: Union[int, float, None] = None) -> None:
    """Record an instant named `name`, optionally with an int64 or float value."""

def begin(name: str) -> None:
    """Open a range named `name` on this thread (recorded as called, not checked)."""

def end(name: str) -> None:
    """Close a range named `name` (recorded as called; anchorpost pairs by name per thread)."""

class phase:
    """`with anchor.phase(name):` or `@anchor.phase(name)`: BEGIN on entry, END on exit."""

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> int: ...
    def __init__(self, name: str, device: bool = False) -> None: ...
    def __enter__(self) -> "phase": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...
    def __aenter__(self) -> Awaitable["phase"]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[Literal[False]]: ...
    def __call__(self, func: _F) -> _F: ...

def enabled() -> bool:
    """True when records reach a ring file (a query: creates no ring)."""

def preloaded() -> bool:
    """True when writing through a preloaded libanchor.so."""

def ring_path() -> str:
    """Path of the ring file ('' when not enabled); creates nothing."""

def sync() -> None:
    """Write a CLOCK_MONOTONIC/CLOCK_REALTIME SYNC record now."""

def sync_pulse(bursts: int = 3, busy_ms: float = 20.0, idle_ms: float = 20.0) -> float:
    """Run the recognisable busy/idle pattern (100 ms by default); returns ms taken."""

def auto(target: Literal["torch", "perun", "record_function", "nvtx"] = "torch") -> None:
    """Automatic anchors: "torch" (forward/backward/step/data), "perun" (its sample clock),
    "record_function" / "nvtx" (bridges: those ranges become anchor ranges)."""

def nvtx(on: bool = True) -> bool:
    """`with anchor.phase(name)` also pushes/pops an NVTX range; True when NVTX was found."""

class measure:
    """`with anchor.measure(name) as m:` -> m.joules: live energy estimate from RAPL/NVML counters."""

    name: Optional[str]
    joules: Optional[float]
    seconds: Optional[float]
    watts: Optional[float]
    by_sensor: dict
    skipped: dict
    def __init__(self, name: Optional[str] = None, powercap: Optional[str] = None, nvml: bool = True) -> None: ...
    def start(self, _task_id: bool = False) -> "measure": ...
    def stop(self) -> Optional[float]: ...
    def __enter__(self) -> "measure": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...
    async def __aenter__(self) -> "measure": ...
    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...

def device_edges(on: bool = True, backend: Any = None, all_phases: bool = True) -> Any:
    """Device-side phase edges on the current CUDA/ROCm stream (True when active; on=False: stats)."""

