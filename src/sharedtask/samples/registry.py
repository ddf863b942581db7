"""The registry of sample generators: a name (as task specs name it in ``sample:``) to a
function returning the sample's files. Generators register themselves on import."""

from __future__ import annotations

from typing import Callable

Generator = Callable[[], dict[str, str]]

GENERATORS: dict[str, Generator] = {}


def register(name: str) -> Callable[[Generator], Generator]:
    """Declare the generator of sample ``name`` (one line per sample, beside its generator)."""
    def add(generator: Generator) -> Generator:
        if name in GENERATORS:
            raise ValueError(f"sample {name!r} is registered twice")
        GENERATORS[name] = generator
        return generator
    return add
