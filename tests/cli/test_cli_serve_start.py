"""`tunemem serve` loads the model and the index before it serves (issue 31: a warm
`make run`'s first retrieve took 16.5 s), and a failing warm-up does not stop it serving."""

from __future__ import annotations

import numpy as np

from tunemem.cli import serve


class Spy:
    def __init__(self, wrapped, calls: list[str], name: str, fail: bool = False) -> None:
        self.wrapped, self.calls, self.name, self.fail = wrapped, calls, name, fail

    def __getattr__(self, attribute):
        method = getattr(self.wrapped, attribute)

        def called(*args, **kwargs):
            self.calls.append(f"{self.name}.{attribute}")
            if self.fail:
                raise RuntimeError("the index is not there")
            return method(*args, **kwargs)

        return called


def test_serve_embeds_and_queries_once_before_serving(make_service, capsys) -> None:
    service = make_service(index="memory", embedder="hashing")
    calls: list[str] = []
    service.embedder = Spy(service.embedder, calls, "embedder")
    service.index = Spy(service.index, calls, "index")
    serve.warm_up(service)
    assert calls == ["embedder.embed", "index.query"]
    assert "model and index loaded" in capsys.readouterr().err


def test_a_failing_warm_up_only_says_so(make_service, capsys) -> None:
    service = make_service(index="memory", embedder="hashing")
    service.index = Spy(service.index, [], "index", fail=True)
    serve.warm_up(service)
    assert "warm-up failed (the index is not there)" in capsys.readouterr().err
    assert isinstance(service.embedder.embed(["still works"]), np.ndarray)
