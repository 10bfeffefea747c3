"""Types of the pass-through wrappers' C extension (``_passthrough.c``)."""

from typing import Any, Callable

class Guard:
    func: Callable[..., Any]
    def __init__(self, func: Callable[..., Any], catch: Any = None,
                 on_error: Callable[[BaseException], Any] | None = None, check: Callable[[], Any] | None = None,
                 fix: Callable[[], Any] | None = None) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...

class Fork:
    func: Callable[..., Any]
    slow: Callable[..., Any]
    attr: str | None
    slow_when: Any
    cls: type | None
    test: Callable[[Any], Any] | None
    def __init__(self, func: Callable[..., Any], slow: Callable[..., Any], attr: str | None = None,
                 slow_when: Any = None, cls: type | None = None, unless: Any = None,
                 test: Callable[[Any], Any] | None = None) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...

class GradRead:
    def __init__(self, value: str, leaf: str, requires: str, retained: str, warn: Callable[[int], Any]) -> None: ...
    def __call__(self, obj: Any, /) -> Any: ...

class AttrWrite:
    def __init__(self, name: str) -> None: ...
    def __call__(self, obj: Any, value: Any, /) -> None: ...

class Mark:
    func: Callable[..., Any]
    def __init__(self, func: Callable[..., Any], name: str, value: Any = ..., *, shape: str | None = None,
                 ndim: int = -1) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...

ABI: int

def calls() -> dict[str, int]:
    """Calls the objects of each type have taken: {type name: count}."""
