"""Probe a running server against a stored run's reference answers: drift, not only facts.

``stored_reference(store, run)`` finds the reference answers a run was judged against (the
store keeps them per fingerprint and reference launch) and the run's spec, whose accuracy
thresholds apply. ``run_reference_probe(url, reference, spec)`` runs the plain probe
(:func:`bringup.checks.probe.run_probe`: health, one known answer, garbage), then asks the
reference's accuracy prompts greedily, has the server score the reference's own tokens and
compares the two as the ``accurate`` stage does (:func:`judge_accuracy`: the spec's
``accuracy_prompts`` first, more of the reference's while the verdict is inconclusive).
A server that answers the known fact but drifts fails, and its verdict carries the drift
figure (token agreement, logprob MAD with its interval). Everything runs within one overall timeout.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import ValidationError

from bringup.checks.accuracy_budget import judge_accuracy
from bringup.checks.probe import ProbeResult, run_probe
from bringup.checks.reference import ReferenceAnswers
from bringup.errors import BringupError
from bringup.http import OpenAIClient, RequestError
from bringup.spec import Spec
from bringup.store import Store, launch_key


def stored_reference(store: Store, run_ref: str) -> tuple[ReferenceAnswers, Spec, str]:
    """The reference answers of run ``run_ref`` (an id or its prefix), its spec, its id."""
    run = store.run(run_ref)
    if run is None:
        raise BringupError(f"no run matches {run_ref!r} in {store.path}; name a stored run.")
    try:
        spec = Spec.model_validate(run.get("spec") or {})
    except ValidationError as exc:
        raise BringupError(
            f"run {run['id']} stored a spec this bringup cannot read ({exc.errors()[0]['msg']})."
        ) from None
    keys = [t.config_key for t in store.trials(run["id"]) if t.purpose == "reference"]
    model = (run.get("fingerprint") or {}).get("model_sha256") or spec.model.path
    keys.append(launch_key(run["engine"], model, spec.launch.args, spec.reference_config()))
    for key in keys:
        answers = store.reference(run["fingerprint_key"], key)
        if answers is not None:
            return ReferenceAnswers.from_dict(answers), spec, str(run["id"])
    raise BringupError(
        f"run {run['id']} has no stored reference answers (its reference never passed the "
        "correctness stage, or the accuracy check was off); name a run whose reference passed."
    )


def _subset(reference: ReferenceAnswers, prompts: int | None) -> ReferenceAnswers:
    if prompts is None or prompts >= len(reference.prompts):
        return reference
    n = max(1, prompts)
    return ReferenceAnswers(
        reference.prompts[:n], reference.max_tokens, reference.answers[:n], None, reference.meta
    )


async def _drift(
    url: str,
    reference: ReferenceAnswers,
    spec: Spec,
    res: ProbeResult,
    extra: dict[str, Any],
    api_key: str | None,
    timeout_s: float,
) -> None:
    async with OpenAIClient(url, api_key=api_key, timeout_s=timeout_s + 5) as client:
        report, answers = await judge_accuracy(client, reference, spec)
    extra["reference_prompts"] = len(answers.prompts)  # those compared, measured more or not
    extra["accuracy"] = report.to_dict()
    res.steps["drift"] = report.passed
    if report.passed:
        res.verdict += f"; matches the reference ({report.summary()})"
        return
    res.passed = False
    res.verdict = f"fail: drifts from the reference: {report.evidence[0]}"


async def run_reference_probe(
    url: str,
    reference: ReferenceAnswers,
    spec: Spec,
    *,
    timeout_s: float = 120.0,
    prompts: int | None = None,
    api_key: str | None = None,
    health_path: str = "/health",
    model: str | None = None,
) -> tuple[ProbeResult, dict[str, Any]]:
    """The plain probe, then drift against ``reference`` (its first ``prompts`` prompts)."""
    start = time.perf_counter()
    res = await run_probe(
        url, timeout_s=timeout_s, api_key=api_key, health_path=health_path, model=model
    )
    extra: dict[str, Any] = {"reference_prompts": 0}
    if not res.passed:
        return res, extra
    ref = _subset(reference, prompts)
    extra["reference_prompts"] = len(ref.prompts)
    left = max(1.0, timeout_s - (time.perf_counter() - start))
    try:
        await asyncio.wait_for(_drift(url, ref, spec, res, extra, api_key, left), left)
    except TimeoutError:
        res.passed = False
        res.verdict = f"fail: the drift check against the reference took over {timeout_s:g}s"
    except RequestError as exc:
        res.passed = False
        res.verdict = f"fail: a reference prompt got no answer: {exc}"
    res.elapsed_s = round(time.perf_counter() - start, 3)
    return res, extra
