"""The transfer audit's advice: what its n/a cells lack and the commands that fill them, each
spelled to run as printed against the store the audit read (`store_option`)."""

from __future__ import annotations

import re
import shlex
from html import escape
from pathlib import Path

from tunemem.memory_service.core.schemas.audit import TransferAuditPublic


def store_option(url: str | None = None, data_dir: Path | None = None) -> str:
    """The option a printed command needs to reach the same store: `--url` of the server that
    served the audit, `--data-dir` of the store a command opened, nothing for the default."""
    if url:
        return f"--url {shlex.quote(url.rstrip('/'))}"
    if data_dir is not None:
        return f"--data-dir {shlex.quote(str(data_dir))}"
    return ""


def code_spans(text: str) -> str:
    """Escaped text whose `backticked` spans (commands in the advice) become <code> elements."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))


def fill_advice(audit: TransferAuditPublic, store: str = "--url URL") -> list[str]:
    """What the n/a cells of the heat maps lack and what to run to fill them, from the audit's
    own counts (one sentence per map). `store` is how the commands reach the store the audit
    read (`store_option`): the page's own server, a data directory, or the default store."""
    word = "chips" if audit.level == "chip" else "backends"
    agent = ".venv/bin/tunemem agent run --task tunemem/ingest/samples/targets/convolution"
    at = f" {store}" if store else ""
    if not audit.pairs:
        return [
            f"Fewer than two {word} hold lessons here: ingest the runs of a second one "
            f"(`.venv/bin/tunemem ingest tunemem/ingest/samples/targets{at}`) or run the "
            f"agent on it (`{agent} --chip w6600{at}`)."
        ]
    advice = []
    if all(pair.spearman is None for pair in audit.pairs):
        most = max(pair.n_common for pair in audit.pairs)
        if most == 0:
            advice.append(
                f"The rank correlations are n/a: no lesson has outcomes on two {word} yet. Run "
                "the agent on two of them against this store, so the same lessons are tried on "
                f"both: `{agent} --chip w6600{at}`, then `.venv/bin/tunemem agent run "
                f"--task tunemem/ingest/samples/kerneltuner/convolution --chip mi250x{at}`. Their "
                "draft outcomes tie (every feasible attempt earns +1); the refine stage rewards "
                "the speed-up, and this view shows it once it holds more evidence than draft."
            )
        elif most == 1:
            advice.append(
                "The rank correlations are n/a: a correlation needs at least two lessons with "
                f"outcomes on both {word} of a pair, and the most any pair shares is one. Run "
                f"the agent again on one of them (`{agent} --chip w6600 --plateau 0{at}` "
                "tries more lessons)."
            )
        else:
            advice.append(
                f"The rank correlations are n/a: up to {most} lessons have outcomes on both "
                f"{word} of a pair, but their values tie on one side"
                + (
                    " (in the draft stage every feasible attempt earns +1, so draft values "
                    "tie; the refine stage rewards the speed-up: choose stage refine, or add "
                    "`--stage refine`)."
                    if audit.stage == "draft"
                    else "; more outcomes on either side will separate them."
                )
            )
    if all(pair.optimum is None for pair in audit.pairs):
        advice.append(
            "The optimum map is n/a: it needs configuration lessons from one chip and the "
            "recorded search space of another; ingest two chips' Kernel Tuner caches "
            f"(`.venv/bin/tunemem ingest tunemem/ingest/samples/targets{at}`)."
        )
    return advice
